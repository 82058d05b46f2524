"""Variant-level warmup, measured side by side in one run: serial vs --jobs N vs the floor, and restart vs cold.

Per preset it prints: serving keys, distinct backend variants, compiles (serial and
parallel), the cold wall time of `zerojit warmup --jobs 1` and `--jobs N` (in-process
warmup and whole process), the floor the parallel warmup can reach — worker start-up plus
the distinct variants' compile CPU divided by N, and never below the longest single compile
(workers start while this process sets up, so for the whole process add one start-up), the
same `--jobs N` with every worker spawned (the design before the forkserver of
contract/workers.py: each worker imports the DSL itself) — and a restart from the disk cache
against the cold warmup. Every run is a fresh process on a fresh cache.

    .venv/bin/python bench/variant_warmup.py [--preset NAME ...] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_PRESETS = ("deepseek-v3-h200", "inkling-h200", "deepseek-v3-b200", "minimax-m3-nvfp4-mi355x-tp4")
BACKEND_START = {  # what one worker does before its first compile: start Python, import and configure the DSL
    "cutedsl": "from zerojit.contract.backends import cutedsl as cutedsl_backend; cutedsl_backend.configure('sm90', {cache!r})",
    "flydsl": "from zerojit.contract.backends import flydsl as flydsl_backend; flydsl_backend.configure('gfx950', {cache!r}); "
              "import flydsl.compiler",
}


def run(*args: str, env: dict[str, str] | None = None) -> tuple[dict, float, float]:
    """A zerojit command in a fresh process: its JSON, wall seconds, CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "zerojit", *args, "--json"], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"zerojit {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(done.stdout), wall, cpu


def start_up(backend: str) -> tuple[float, float]:
    """Wall and CPU seconds of a process that only imports and configures the backend (a worker's start-up)."""
    with tempfile.TemporaryDirectory() as cache:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", BACKEND_START[backend].format(cache=cache)], check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(preset: str, jobs: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        serial_cache, parallel_cache = Path(scratch, "serial"), Path(scratch, "parallel")
        spawned_cache = Path(scratch, "spawned")
        plan, _, _ = run("plan", "--preset", preset, "--variants", "--cache-dir", str(Path(scratch, "plan")))
        backend = plan["kernels"][0]["backend"]
        serial, serial_wall, serial_cpu = run("warmup", "--preset", preset, "--jobs", "1", "--cache-dir",
                                              str(serial_cache))
        parallel, parallel_wall, _ = run("warmup", "--preset", preset, "--jobs", str(jobs), "--cache-dir",
                                         str(parallel_cache))
        restart, restart_wall, _ = run("warmup", "--preset", preset, "--jobs", str(jobs), "--cache-dir",
                                       str(parallel_cache))
        # The previous design, side by side: every worker spawned, importing the DSL itself.
        spawned, spawned_wall, _ = run("warmup", "--preset", preset, "--jobs", str(jobs), "--cache-dir",
                                       str(spawned_cache), env={"ZEROJIT_WORKER_START": "spawn"})
    worker_wall, worker_cpu = start_up(backend)
    # The serial run's CPU beyond a bare start-up is its compiles' CPU (one compile may use more than a core).
    compile_cpu = max(serial_cpu - worker_cpu, 0.0)
    longest = serial["longest_compile_s"]
    # Workers start before this process configures its backend, so their start-up overlaps with
    # it: the in-process warmup's floor is the compile work alone; the whole process adds one start-up.
    floor = max(compile_cpu / jobs, longest)
    print(f"{preset} ({backend}): {plan['total_keys']} keys, {plan['total_variants']} distinct variants")
    print(f"  --jobs 1      {serial['compiled']:3d} compiles  warmup {serial['wall_s']:7.2f} s   "
          f"process {serial_wall:7.2f} s")
    print(f"  --jobs {jobs:<6d} {parallel['compiled']:3d} compiles  warmup {parallel['wall_s']:7.2f} s   "
          f"process {parallel_wall:7.2f} s   speed-up {serial['wall_s'] / parallel['wall_s']:.2f}x")
    print(f"  floor         compile CPU {compile_cpu:.1f} s / {jobs} (never below the longest compile, "
          f"{longest:.2f} s) = {floor:.2f} s: warmup / floor = {parallel['wall_s'] / floor:.2f};  with a worker's "
          f"start-up ({worker_wall:.2f} s) {worker_wall + floor:.2f} s: process / floor = "
          f"{parallel_wall / (worker_wall + floor):.2f}")
    print(f"  spawned       {spawned['compiled']:3d} compiles  warmup {spawned['wall_s']:7.2f} s   "
          f"process {spawned_wall:7.2f} s   process / floor = {spawned_wall / (worker_wall + floor):.2f} "
          "(ZEROJIT_WORKER_START=spawn: each worker imports the DSL)")
    print(f"  restart       {restart['compiled']:3d} compiles  warmup {restart['wall_s']:7.3f} s "
          f"({restart['wall_s'] / parallel['wall_s']:.3f} of cold)   process {restart_wall:7.2f} s "
          f"({restart_wall / parallel_wall:.2f} of cold)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append", help=f"repeatable; default {', '.join(DEFAULT_PRESETS)}")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, --jobs {args.jobs}, {time.strftime('%Y-%m-%d')}")
    for preset in args.preset or DEFAULT_PRESETS:
        measure(preset, args.jobs)


if __name__ == "__main__":
    main()
