"""Serial vs parallel warmup, and cooperative vs independent ranks, measured side by side in one run.

serial vs parallel   `zerojit warmup --jobs 1` vs `--jobs N` on an empty cache, per preset
ranks                N independent rank processes (each its own cold cache, all at once) vs
                     N cooperative ranks sharing one cache (`--ranks N`): mean wall per rank

  .venv/bin/python bench/parallel_and_cooperative.py [--preset NAME ...] [--ranks 2 4] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time


def warmup(preset: str, cache_dir: str, *flags: str) -> tuple[float, dict]:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "zerojit", "warmup", "--preset", preset, "--json", "--cache-dir", cache_dir, *flags],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - start, json.loads(result.stdout)


def serial_vs_parallel(preset: str, jobs: int) -> None:
    with tempfile.TemporaryDirectory() as serial_cache, tempfile.TemporaryDirectory() as parallel_cache:
        serial_wall, serial = warmup(preset, serial_cache, "--jobs", "1")
        parallel_wall, parallel = warmup(preset, parallel_cache, "--jobs", str(jobs))
    print(f"{preset}: {serial['total_keys']} keys, cold cache")
    print(
        f"  serial   warmup {serial['wall_s']:7.2f} s   process {serial_wall:7.2f} s   ({serial['compiled']} compiled)"
    )
    print(
        f"  --jobs {jobs} warmup {parallel['wall_s']:7.2f} s   process {parallel_wall:7.2f} s   "
        f"({parallel['compiled']} compiled)"
    )
    print(
        f"  speed-up (serial / parallel): warmup {serial['wall_s'] / parallel['wall_s']:.2f}x, "
        f"process {serial_wall / parallel_wall:.2f}x"
    )


def independent_vs_cooperative(preset: str, ranks: int) -> None:
    caches = [tempfile.TemporaryDirectory() for _ in range(ranks)]
    try:
        start = time.perf_counter()
        runs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "zerojit",
                    "warmup",
                    "--preset",
                    preset,
                    "--json",
                    "--jobs",
                    "1",
                    "--cache-dir",
                    cache.name,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for cache in caches
        ]
        independent = [json.loads(run.communicate()[0]) for run in runs]
        independent_wall = time.perf_counter() - start
    finally:
        for cache in caches:
            cache.cleanup()
    with tempfile.TemporaryDirectory() as shared:
        cooperative_wall, cooperative = warmup(preset, shared, "--ranks", str(ranks))
    independent_rank = statistics.mean(r["wall_s"] for r in independent)
    cooperative_rank = statistics.mean(r["wall_s"] for r in cooperative["ranks"])
    print(f"{preset}: {ranks} ranks")
    print(
        f"  independent  warmup per rank {independent_rank:7.2f} s   all ranks {independent_wall:7.2f} s   "
        f"compiles {sum(r['compiled'] for r in independent)}"
    )
    print(
        f"  cooperative  warmup per rank {cooperative_rank:7.2f} s   all ranks {cooperative_wall:7.2f} s   "
        f"compiles {cooperative['compiled']}"
    )
    print(f"  per-rank warmup, cooperative / independent: {cooperative_rank / independent_rank:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append")
    parser.add_argument("--ranks", type=int, nargs="*", default=[2, 4])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    presets = args.preset or ["minimax-m3-nvfp4-mi355x-tp4"]
    for preset in presets:
        serial_vs_parallel(preset, args.jobs)
    for preset in presets:
        for ranks in args.ranks:
            independent_vs_cooperative(preset, ranks)


if __name__ == "__main__":
    main()
