#!/usr/bin/env bash
# On a lent H200 host (one `device` call): the built-in Triton lifts of vLLM 0.33.0 on Triton's real driver.
# LIFTED: a tarball of a 0.33.0 tree migrated with the four lift families (--write); BAKE: a Triton cache that
# `bench/lifted_launches.py bake` made on the CPU machine with the host's Triton version (a key names it: e.g.
# `pip install --target /tmp/t36 triton==3.6.0` and PYTHONPATH=/tmp/t36 for the bake). Three runs of
# bench/lifted_launches.py serve, 1000 random launches per kernel and configuration:
#   1. warmed through the migrated tree's own registry on this GPU, then launched;
#   2. from the CPU bake, moved here and made read-only, with zerojit's relocatable cache manager, no warmup;
#   3. control: an empty cache, no warmup (what the launches compile when nothing was warmed).
set -eu
LIFTED=$1 BAKE=$2
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/zj .
export PYTHONPATH=/tmp/zj PYTHONUNBUFFERED=1
repo=$PWD
mkdir -p /tmp/trees && tar xzf "$LIFTED" -C /tmp/trees
tree=$(echo /tmp/trees/*)
cp -r "$BAKE" /tmp/shipped && chmod -R a-w /tmp/shipped
cd /tmp  # the checkout holds a zerojit/ folder: import the installed package
serve() { python3 "$repo/bench/lifted_launches.py" serve "$tree" "$@"; }
serve /tmp/warmed --warm | tee "$OUT/serve_warmed_here.jsonl"
TRITON_CACHE_MANAGER=zerojit.contract.backends.triton_cache:RelocatableCacheManager serve /tmp/shipped |
  tee "$OUT/serve_moved_cpu_bake.jsonl"
serve /tmp/empty --launches 100 | tee "$OUT/serve_cold.jsonl"
