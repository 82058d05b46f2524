"""`zerojit migrate` over a whole vLLM tree vs a plain libcst parse of every file, in one run.

Both sides use the same number of processes (-j). The migrate side is a dry run of the
built-in fa4-mla-prefill and inkling-rel-attention specs on vLLM 0.29.0 (where they have
work to do) and of rocm-nvfp4 on 0.33.0 with the bundled legacy layout added; the parse
side parses every `.py` of the same tree with libcst.

    .venv/bin/python bench/migrate_vs_parse.py [--version 0.33.0] [-j 2]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import libcst as cst

from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.codemods.runner import migrate
from zerojit.migrate.families import migration_specs
from zerojit.migrate.rocm_nvfp4.example import add_legacy_layout


def parse(path: Path) -> int:
    cst.parse_module(path.read_text(encoding="utf-8"))
    return 1


def parse_all(tree: Path, jobs: int) -> tuple[float, int]:
    files = sorted(tree.rglob("*.py"))
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        parsed = sum(pool.map(parse, files, chunksize=16))
    return time.perf_counter() - start, parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.33.0", help="vLLM release for the rocm-nvfp4 run")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    specs = migration_specs()
    with tempfile.TemporaryDirectory() as scratch:
        rocm_repo = Path(scratch) / "repo"
        shutil.copytree(vllm_tree(args.version), rocm_repo)
        add_legacy_layout(rocm_repo)
        runs = [("fa4-mla-prefill + inkling-rel-attention", vllm_tree("0.29.0"),
                 [specs["fa4-mla-prefill"], specs["inkling-rel-attention"]]),
                (f"rocm-nvfp4 ({args.version} + legacy layout wired in)", rocm_repo, [specs["rocm-nvfp4"]])]
        for label, repo, chosen in runs:
            start = time.perf_counter()
            result = migrate(repo, chosen, jobs=args.jobs)
            migrate_s = time.perf_counter() - start
            parse_s, parsed = parse_all(repo, args.jobs)
            report = result.report()
            print(f"{label}: {report['files_scanned']} files, {len(result.changes)} changes")
            print(f"  zerojit migrate (dry run)  {migrate_s:8.2f} s   (ast-parsed {report['files_parsed']} files)")
            print(f"  libcst parse of every file {parse_s:8.2f} s   ({parsed} files, -j {args.jobs})")
            print(f"  migrate / parse-all ratio  {migrate_s / parse_s:8.3f}   ({parse_s / migrate_s:.0f}x faster)")


if __name__ == "__main__":
    main()
