#!/usr/bin/env bash
# On a lent H200 host (the second of two `device` calls; DESIGN.md §8): serve real launches from a bake
# made on the CPU machine (carried as .dev/bake312, made with `zerojit bake` under Python 3.12).
set -u
cd "$(dirname "$0")/.."
cat ~/stash/part_aa .dev/part_ab > /tmp/wheels.tar && mkdir -p /tmp/wh && tar xf /tmp/wheels.tar -C /tmp/wh || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/wh/*.whl || exit 4
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/zj . || exit 5
export PYTHONPATH=/tmp/zj:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages PYTHONUNBUFFERED=1
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
