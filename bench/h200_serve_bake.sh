#!/usr/bin/env bash
# On a lent H200 host (the second of two `device` calls; DESIGN.md §8): serve real launches from a bake
# made on the CPU machine (carried as .dev/bake312, made with `zerojit bake` under Python 3.12).
source "$(dirname "$0")/h200_setup.sh"
install_zerojit /tmp/zj
export PYTHONPATH=/tmp/zj:$DSL
repo=$PWD
cp -r .dev/bake312 /tmp/shipped
cd /tmp
for preset in deepseek-v3-h200 inkling-h200; do
  python3 -m zerojit warmup --preset $preset --cache-dir /tmp/shipped/cutedsl --require-baked --json \
    > "$OUT/fake-$preset.json" 2> "$OUT/fake-$preset.err"
  echo "$preset --require-baked exit $? $(python3 -c "import json; d=json.load(open('$OUT/fake-$preset.json')); print({k: d[k] for k in ('compiled', 'cached', 'failed')})")"
  python3 "$repo/bench/h200_real_bake_check.py" $preset /tmp/shipped/cutedsl 40 11 2>"$OUT/real-$preset.err" \
    | tee -a "$OUT/h200_serve_bake.txt"
done
