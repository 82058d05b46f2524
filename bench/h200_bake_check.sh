#!/usr/bin/env bash
# On a lent H200 host (the second of two `device` calls; DESIGN.md §8): bake deepseek-v3-h200 and
# inkling-h200 compile-only (fake tensors) in one install layout, then serve real launches from a
# copy of the bake in another layout (zerojit installed elsewhere, the DSLs through other paths).
set -u
cd "$(dirname "$0")/.."
cat ~/stash/part_aa .dev/part_ab > /tmp/wheels.tar && mkdir -p /tmp/wh && tar xf /tmp/wheels.tar -C /tmp/wh || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/wh/*.whl || exit 4
for layout in A B; do
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/zj$layout . || exit 5
done
mkdir -p /tmp/other
ln -sfn /tmp/site/nvidia_cutlass_dsl/dsl_packages/cutlass /tmp/other/cutlass
for pkg in quack flash_attn tvm_ffi; do ln -sfn /tmp/site/$pkg /tmp/other/$pkg; done
A=/tmp/zjA:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
B=/tmp/zjB:/tmp/other:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
export PYTHONUNBUFFERED=1
probe='import cutlass, zerojit.contract; print("cutlass", cutlass.__file__, "zerojit", zerojit.contract.__file__)'
(cd /tmp && PYTHONPATH=$A python3 -c "$probe" && PYTHONPATH=$B python3 -c "$probe")  # from /tmp: the checkout holds a zerojit/ folder
repo=$PWD
(cd /tmp && PYTHONPATH=$A python3 -m zerojit bake -p deepseek-v3-h200 -p inkling-h200 --out /tmp/bake --jobs 14) || exit 6
cp -r /tmp/bake /tmp/shipped
for preset in deepseek-v3-h200 inkling-h200; do
  (cd /tmp && PYTHONPATH=$B python3 "$repo/bench/h200_real_bake_check.py" $preset /tmp/shipped/cutedsl 40 11) \
    2>"$OUT/real-$preset.err" | tee -a "$OUT/h200_bake_check.txt"
done
