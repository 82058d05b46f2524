#!/usr/bin/env bash
# On a lent 16-core H200 host (the second of two `device` calls; DESIGN.md §8): install the carried
# CuTe DSL wheels and zerojit itself, then run bench/variant_warmup.py for the CuTe DSL presets.
# The first call copied .dev/part_aa to ~/stash; this one carries .dev/part_ab.
set -u
cd "$(dirname "$0")/.."
cat ~/stash/part_aa .dev/part_ab > /tmp/wheels.tar && mkdir -p /tmp/wh && tar xf /tmp/wheels.tar -C /tmp/wh || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/wh/*.whl || exit 4
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/zj . || exit 5
export PYTHONPATH=/tmp/zj:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages PYTHONUNBUFFERED=1
repo=$PWD
cd /tmp && python3 "$repo/bench/variant_warmup.py" --jobs "${JOBS:-14}" \
  --preset deepseek-v3-b200 --preset deepseek-v3-h200 --preset inkling-h200 2>&1 | tee "$OUT/variant_bench.txt"
