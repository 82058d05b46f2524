#!/usr/bin/env bash
# On a lent H200 host (one `device` call): bake the fla-layer-norm preset compile-only (zerojit's Triton
# driver stand-in, no launch), move the bake away (the original folder is gone) and make it read-only, then
# serve real launches of vLLM's kernel from it with Triton's real driver: with zerojit's relocatable cache
# manager (what the vLLM plugin sets), with Triton's stock file cache (the control that shows why), and from an
# empty cache. WHEELS: cp312 wheels of what the host lacks (libcst, pyflakes, pyyaml, einops); TREES: a
# $ZEROJIT_CACHE holding trees/vllm-0.33.0 (the kernel's module, math_utils and vllm/__init__.py suffice).
set -eu
WHEELS=$1 TREES=$2
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/zj . "$WHEELS"/*.whl
export PYTHONPATH=/tmp/zj ZEROJIT_CACHE=$TREES PYTHONUNBUFFERED=1
repo=$PWD
cd /tmp  # the checkout holds a zerojit/ folder: import the installed package
python3 -m zerojit warmup -p qwen3-next-h200 --cache-dir /tmp/bake --json > "$OUT/bake.json"
python3 -m zerojit verify -p qwen3-next-h200 --cache-dir /tmp/bake --launches 2000 --json > "$OUT/verify.json"
mv /tmp/bake /tmp/shipped && cp -r /tmp/shipped /tmp/shipped-stock && chmod -R a-w /tmp/shipped && mkdir -p /tmp/empty
python3 -m zerojit warmup -p qwen3-next-h200 --cache-dir /tmp/shipped --require-baked --json > "$OUT/rewarm_moved.json"
manager=zerojit.contract.backends.triton_cache:RelocatableCacheManager
TRITON_CACHE_MANAGER=$manager python3 "$repo/bench/h200_triton_serve.py" /tmp/shipped 8192 | tee "$OUT/serve_moved_bake.json"
env -u TRITON_CACHE_MANAGER python3 "$repo/bench/h200_triton_serve.py" /tmp/shipped-stock 8192 | tee "$OUT/serve_moved_bake_stock_triton.json"
TRITON_CACHE_MANAGER=$manager python3 "$repo/bench/h200_triton_serve.py" /tmp/empty 8192 | tee "$OUT/serve_cold.json"
