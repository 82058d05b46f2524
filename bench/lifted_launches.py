"""The built-in Triton lifts proven on a GPU: vLLM 0.33.0 as `zerojit migrate` rewrote it, each lifted
kernel warmed through the tree's own registry, then random real launches through its engine launcher
(migrate/triton_lifts/launches.py) while Triton's compilation listener counts what still compiles.

    python bench/lifted_launches.py keys  TREE [--launches N]  # the launches' keys, recorded on the CPU
    python bench/lifted_launches.py bake  TREE CACHE            # compile-only for sm90: any machine, no GPU
    python bench/lifted_launches.py serve TREE CACHE [--warm] [--launches N] [--seed S]   # a GPU host

TREE is a 0.33.0 tree the eight lift families were written into (`zerojit migrate fla-fused-post-conv
fla-sigmoid-gating mamba-causal-conv1d mamba-batch-memcpy kimi-k3-attn-res kimi-k3-recurrent-kda fla-gdn-mtp-update
fla-gdn-mtp-rmsnorm --repo TREE --write`). `bake`
runs the registrations and the registry warmup with zerojit's compile-only Triton driver; `serve` (Triton's real
driver) optionally warms the same way first, then launches. One JSON line per family and serving configuration;
launches are counted "in range" or "beyond" the key classes the legacy step warmed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import torch

from zerojit.migrate.triton_lifts import equivalence as lifts
from zerojit.migrate.triton_lifts.launches import launch_coverage, launched, serving_trees
from zerojit.migrate.triton_lifts.meta_memory import MetaAllocations


class Compiles:
    """Triton's compilation listener: compiles and disk-cache loads per kernel name."""

    def __init__(self) -> None:
        self.compiled: collections.Counter[str] = collections.Counter()
        self.loaded: collections.Counter[str] = collections.Counter()

    def __call__(self, *, src: Any, cache_hit: bool, **_: Any) -> None:
        (self.loaded if cache_hit else self.compiled)[src.name] += 1


def bake(root: Path, cache: Path) -> None:
    from zerojit.contract.backends import triton as triton_backend

    triton_backend.configure(lifts.ARCH, cache)
    for family, _, tree, config in serving_trees(root):
        started = time.perf_counter()
        with MetaAllocations():
            tree.registered_keys(config)
        seconds = round(time.perf_counter() - started, 2)
        print(json.dumps({"bake": family, "config": repr(config), "seconds": seconds}), flush=True)


def keys(root: Path, launches: int, seed: int) -> None:
    for line in launch_coverage(root, launches, seed):
        print(json.dumps(line), flush=True)


def serve(root: Path, cache: Path, warm: bool, launches: int, seed: int) -> None:
    import triton

    triton.knobs.cache.dir = str(cache)
    compiles = Compiles()
    triton.knobs.compilation.listener = compiles
    rng = random.Random(seed)
    torch.manual_seed(seed)
    manager = os.environ.get("TRITON_CACHE_MANAGER", "Triton's stock FileCacheManager")
    host = {"device": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__}
    print(json.dumps({**host, "cache": str(cache), "cache_manager": manager, "warm": warm}), flush=True)
    for family, spec, tree, config in serving_trees(root):
        kernel = spec.kernel.name
        before = (compiles.compiled[kernel], compiles.loaded[kernel])
        if warm:
            with MetaAllocations():
                tree.registered_keys(config)
        at_warm = (compiles.compiled[kernel], compiles.loaded[kernel])
        seen = compiles.compiled[kernel]

        def cold(kernel: str = kernel) -> int:
            nonlocal seen
            torch.cuda.synchronize()
            before, seen = seen, compiles.compiled[kernel]
            return seen - before

        by_range = launched(family, spec, tree, config, rng, launches, cold)
        line = {
            "family": family,
            "kernel": kernel,
            "config": repr(config),
            "warmup": {"compiles": at_warm[0] - before[0], "loads": at_warm[1] - before[1]} if warm else None,
            "loaded_by_launches": compiles.loaded[kernel] - at_warm[1],
            **by_range,
        }
        print(json.dumps(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("bake", "serve", "keys"))
    parser.add_argument("tree", type=Path)
    parser.add_argument("cache", type=Path, nargs="?", help="bake, serve: Triton's cache folder")
    parser.add_argument("--warm", action="store_true", help="serve: warm through the registry first")
    parser.add_argument("--launches", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.mode != "keys" and args.cache is None:
        parser.error(f"{args.mode} needs the cache folder")
    if args.mode == "keys":
        keys(args.tree, args.launches, args.seed)
    elif args.mode == "bake":
        bake(args.tree, args.cache)
    else:
        serve(args.tree, args.cache, args.warm, args.launches, args.seed)


if __name__ == "__main__":
    main()
