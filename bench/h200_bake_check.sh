#!/usr/bin/env bash
# On a lent H200 host (the second of two `device` calls; DESIGN.md §8): bake deepseek-v3-h200 and
# inkling-h200 compile-only (fake tensors) in one install layout, then serve real launches from a
# copy of the bake in another layout (zerojit installed elsewhere, the DSLs through other paths).
source "$(dirname "$0")/h200_setup.sh"
for layout in A B; do
  install_zerojit /tmp/zj$layout
done
mkdir -p /tmp/other
ln -sfn /tmp/site/nvidia_cutlass_dsl/dsl_packages/cutlass /tmp/other/cutlass
for pkg in quack flash_attn tvm_ffi; do ln -sfn /tmp/site/$pkg /tmp/other/$pkg; done
A=/tmp/zjA:$DSL
B=/tmp/zjB:/tmp/other:$DSL
probe='import cutlass, zerojit.contract; print("cutlass", cutlass.__file__, "zerojit", zerojit.contract.__file__)'
(cd /tmp && PYTHONPATH=$A python3 -c "$probe" && PYTHONPATH=$B python3 -c "$probe")  # from /tmp: the checkout holds a zerojit/ folder
repo=$PWD
(cd /tmp && PYTHONPATH=$A python3 -m zerojit bake -p deepseek-v3-h200 -p inkling-h200 --out /tmp/bake --jobs 14) || exit 6
cp -r /tmp/bake /tmp/shipped
for preset in deepseek-v3-h200 inkling-h200; do
  (cd /tmp && PYTHONPATH=$B python3 "$repo/bench/h200_real_bake_check.py" $preset /tmp/shipped/cutedsl 40 11) \
    2>"$OUT/real-$preset.err" | tee -a "$OUT/h200_bake_check.txt"
done
