#!/usr/bin/env bash
# On a lent H200 host (one `device` call): the built-in Triton lifts of vLLM 0.33.0 on Triton's real driver.
# LIFTED: a tarball of a 0.33.0 tree migrated with the lift families (--write), its top folder the tree;
# BAKE: a Triton cache that `bench/lifted_launches.py bake` made on the CPU machine with the host's Triton wheel
# and Python minor (every key holds the sha256 of libtriton.so, which differs per CPython minor: a venv of pyenv's
# 3.12 with torch==2.11.0 triton==3.6.0 hypothesis tqdm einops and zerojit installed, run from outside the
# checkout); WHEELS: cp312 wheels of what the host lacks (libcst, hypothesis, sortedcontainers, einops; its image
# has tqdm). Three runs of bench/lifted_launches.py serve (RUNS="moved warmed" picks some, in that order):
#   1. warmed through the migrated tree's own registry on this GPU, then LAUNCHES random launches per kernel and
#      configuration;
#   2. from the CPU bake, moved here and made read-only, with zerojit's relocatable cache manager, no warmup,
#      LAUNCHES launches;
#   3. control: an empty cache, no warmup, 20 launches (what compiles when nothing was warmed).
set -euo pipefail
LIFTED=$(realpath "$1") BAKE=$(realpath "$2") WHEELS=$(realpath "$3") LAUNCHES=${LAUNCHES:-2000}
cd "$(dirname "$0")/.."
repo=$PWD site=$(mktemp -d) trees=$(mktemp -d) shipped=$(mktemp -d) warmed=$(mktemp -d) empty=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target "$site" . "$WHEELS"/*.whl
export PYTHONPATH=$site PYTHONUNBUFFERED=1
tar xzf "$LIFTED" -C "$trees"
tree=$(find "$trees" -mindepth 1 -maxdepth 1 -type d)
cp -r "$BAKE"/. "$shipped" && chmod -R a-w "$shipped"
cd /tmp  # the checkout holds a zerojit/ folder: import the installed package
serve() { python3 "$repo/bench/lifted_launches.py" serve "$tree" "$@"; }
for run in ${RUNS:-warmed moved cold}; do  # RUNS: a subset, in the order given (a short lease: the bake first)
  case $run in
    warmed) serve "$warmed" --warm --launches "$LAUNCHES" | tee "$OUT/serve_warmed_here.jsonl" ;;
    moved) TRITON_CACHE_MANAGER=zerojit.contract.backends.triton_cache:RelocatableCacheManager \
      serve "$shipped" --launches "$LAUNCHES" | tee "$OUT/serve_moved_cpu_bake.jsonl" ;;
    cold) serve "$empty" --launches 20 | tee "$OUT/serve_cold.jsonl" ;;
    *) echo "unknown run $run (warmed, moved, cold)" >&2; exit 2 ;;
  esac
done
