"""Cold vs disk-cached warmup of a preset, measured side by side in one run.

Each phase runs in a fresh process (`zerojit warmup --json`), as a server start would:
  cold    empty FlyDSL disk cache: every key compiles;
  cached  the same cache again: every key loads (FlyDSL still re-traces each variant).
Prints wall time of each, the cached/cold ratio, and seconds per compiled variant.

    .venv/bin/python bench/warmup_cold_vs_cached.py [--preset NAME ...] [--repeats N]

FA4 presets compile seconds per variant (deepseek-v3-b200 takes minutes cold); the
default is the ROCm preset, whose cold warmup takes about a second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time


def warmup(preset: str, cache_dir: str) -> tuple[float, dict]:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "zerojit", "warmup", "--preset", preset, "--json", "--cache-dir", cache_dir],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - start, json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append", help="repeatable; default minimax-m3-nvfp4-mi355x-tp4")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for preset in args.preset or ["minimax-m3-nvfp4-mi355x-tp4"]:
        measure(preset, args.repeats)


def measure(preset: str, repeats: int) -> None:
    cold, cached = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache_dir:
            wall, report = warmup(preset, cache_dir)
            cold.append((wall, report))
            wall, report = warmup(preset, cache_dir)
            cached.append((wall, report))
    cold_in = statistics.median(r["wall_s"] for _, r in cold)
    cached_in = statistics.median(r["wall_s"] for _, r in cached)
    cold_proc = statistics.median(w for w, _ in cold)
    cached_proc = statistics.median(w for w, _ in cached)
    compiled = cold[0][1]["compiled"]
    print(f"preset {preset}: {cold[0][1]['total_keys']} keys, {compiled} real compiles cold, median of {repeats} runs")
    print(
        f"  warmup (in process)   cold {cold_in:7.3f} s   cached {cached_in:7.3f} s   "
        f"cached/cold {cached_in / cold_in:5.2f}"
    )
    print(
        f"  whole process         cold {cold_proc:7.3f} s   cached {cached_proc:7.3f} s   "
        f"cached/cold {cached_proc / cold_proc:5.2f}"
    )
    if compiled:
        print(f"  seconds per compiled variant (cold): {cold_in / compiled:.3f}")
    print(f"  compiled on the cached run: {cached[0][1]['compiled']} (cached {cached[0][1]['cached']})")


if __name__ == "__main__":
    main()
