#!/usr/bin/env bash
# On a lent 16-core H200 host (the second of two `device` calls; DESIGN.md §8): run
# bench/variant_warmup.py for the CuTe DSL presets (deepseek-v3-b200 with every alternative, the
# two sm90 presets without the spawned one). The first call copied .dev/part_aa to ~/stash; this
# one carries .dev/part_ab.
source "$(dirname "$0")/h200_setup.sh"
install_zerojit /tmp/zj
export PYTHONPATH=/tmp/zj:$DSL
repo=$PWD
cd /tmp
# One import first: the page cache then holds the DSL, as on any host after its first import.
python3 -c "from zerojit.contract.backends import cutedsl; cutedsl.configure('sm100', '/tmp/warm')" 2>/dev/null
{ python3 "$repo/bench/variant_warmup.py" --jobs "${JOBS:-14}" --preset deepseek-v3-b200
  python3 "$repo/bench/variant_warmup.py" --jobs "${JOBS:-14}" --preset deepseek-v3-h200 --preset inkling-h200 \
    --no-spawned | tail -n +2
} 2>&1 | tee "$OUT/variant_bench.txt"
