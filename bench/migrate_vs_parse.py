"""Each built-in migration's dry run vs a plain libcst parse of its whole tree, side by side in one run.

Both sides use the same number of processes (-j). The migrations, each on the tree where it
has work to do: fa4-mla-prefill + inkling-rel-attention on vLLM 0.29.0; fla-layer-norm,
mamba-batch-memcpy, the five other Triton lifts, ll-bf16-router-gemm and the two CuTe DSL owners
(gemm-rs-ar, bf16x3-router-gemm) on 0.33.0; rocm-nvfp4
on 0.33.0 with the bundled legacy layout wired in. The parse side parses every `.py` of the same
tree with libcst. A dry run is `migrate` without writing and without --verify-keys; each is timed
`--repeat` times and the median is shown. The goal is a ratio (parse / dry run) of 30x or
more for every migration; the exit status is 1 when one falls short.

    .venv/bin/python bench/migrate_vs_parse.py [-j 2] [--repeat 3] [--only FAMILY ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import libcst as cst

from zerojit.codemods.runner import migrate
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import migration_specs
from zerojit.migrate.rocm_nvfp4.example import add_legacy_layout

GOAL = 30.0
ROCM_TREE = "0.33.0 + ROCm layout"
RUNS = (  # (tree, families migrated in one run)
    ("0.29.0", ("fa4-mla-prefill", "inkling-rel-attention")),
    ("0.33.0", ("fla-layer-norm",)),
    ("0.33.0", ("mamba-batch-memcpy",)),
    ("0.33.0", ("fla-fused-post-conv",)),
    ("0.33.0", ("fla-sigmoid-gating",)),
    ("0.33.0", ("mamba-causal-conv1d",)),
    ("0.33.0", ("kimi-k3-attn-res",)),
    ("0.33.0", ("kimi-k3-recurrent-kda",)),
    ("0.33.0", ("fla-gdn-mtp-update", "fla-gdn-mtp-rmsnorm")),
    ("0.33.0", ("ll-bf16-router-gemm",)),
    ("0.33.0", ("gemm-rs-ar",)),
    ("0.33.0", ("bf16x3-router-gemm",)),
    (ROCM_TREE, ("rocm-nvfp4",)),
)


def parse(path: Path) -> int:
    cst.parse_module(path.read_text(encoding="utf-8"))
    return 1


def parse_all(tree: Path, jobs: int) -> tuple[float, int]:
    files = sorted(tree.rglob("*.py"))
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        parsed = sum(pool.map(parse, files, chunksize=16))
    return time.perf_counter() - start, parsed


def dry_run(repo: Path, families: tuple[str, ...], jobs: int, repeat: int) -> tuple[float, dict]:
    specs = migration_specs()
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = migrate(repo, [specs[family] for family in families], jobs=jobs)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), {**result.report(), "changes": len(result.changes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="Dry runs per migration (the median is shown).")
    parser.add_argument("--only", nargs="+", metavar="FAMILY", help="Only the runs that migrate one of these.")
    args = parser.parse_args()
    runs = [run for run in RUNS if not args.only or set(run[1]) & set(args.only)]
    if not runs:
        parser.error(f"no run migrates {', '.join(args.only)}; the runs: {', '.join(f for _, fs in RUNS for f in fs)}")
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"0.29.0": vllm_tree("0.29.0"), "0.33.0": vllm_tree("0.33.0")}
        parses: dict[str, tuple[float, int]] = {}
        short = []
        for tree, families in runs:
            if tree not in trees:  # copied when its run comes, and written out before it is timed
                trees[ROCM_TREE] = Path(scratch) / "repo"
                shutil.copytree(trees["0.33.0"], trees[ROCM_TREE])
                add_legacy_layout(trees[ROCM_TREE])
                os.sync()
            migrate_s, report = dry_run(trees[tree], families, args.jobs, args.repeat)
            if tree not in parses:
                parses[tree] = parse_all(trees[tree], args.jobs)
            parse_s, parsed = parses[tree]
            ratio = parse_s / migrate_s
            label = " + ".join(families)
            print(f"{label} on vLLM {tree}: {report['files_scanned']} files, {report['changes']} changes", flush=True)
            print(
                f"  dry run (median of {args.repeat})       {migrate_s:8.2f} s   "
                f"(ast-parsed {report['files_parsed']} files)"
            )
            print(f"  libcst parse of every file  {parse_s:8.2f} s   ({parsed} files, -j {args.jobs})")
            print(f"  parse / dry run             {ratio:8.1f}x  (goal {GOAL:.0f}x)", flush=True)
            if ratio < GOAL:
                short.append(label)
    if short:
        sys.exit(f"below {GOAL:.0f}x: {', '.join(short)}")


if __name__ == "__main__":
    main()
