"""Variant-level warmup as whole processes, measured side by side in one run: serial, --jobs N, the floor.

Per preset, every run a fresh `zerojit warmup` process on a fresh cache:
  --jobs 1     the serial warmup: each distinct variant's compile wall and CPU seconds (its timeline);
  --jobs N     the parallel warmup (workers fork from one forkserver and, with more variants than
               N, are time-sliced so that N compile at any instant: contract/workers.py);
  unsliced     the same with ZEROJIT_TIME_SLICE=off (N workers, one compile each at a time; run only
               when there are more variants than N);
  spawned      the same with ZEROJIT_WORKER_START=spawn (each worker imports the DSL itself);
  restart      --jobs N again on the parallel run's full cache.
For each: the process's wall time, when its first compile started and its last one ended (from
`--timeline FILE.json`), and what came after (loads, report, exit).

The floor a parallel warmup could reach as a whole process: one start-up (a fresh Python process
importing and configuring the DSL, up to configured, measured here in the same run; its exit is
not start-up) + the larger of the variants' compile CPU (the serial run's) / N and the longest
compile. `process / floor` is the parallel run's wall time over that.

    .venv/bin/python bench/variant_warmup.py [--preset NAME ...] [--jobs N] [--no-spawned]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_PRESETS = ("deepseek-v3-h200", "inkling-h200", "deepseek-v3-b200", "minimax-m3-nvfp4-mi355x-tp4")
START_UP = {  # what start-up means per backend: start Python, import and configure the DSL
    "cutedsl": "from zerojit.contract.backends import cutedsl as backend; backend.configure({arch!r}, {cache!r}); "
    "import flash_attn.cute.interface",
    "flydsl": "from zerojit.contract.backends import flydsl as backend; backend.configure({arch!r}, {cache!r}); "
    "import flydsl.compiler",
}
CONFIGURED = "import os, sys, time; print(time.time(), flush=True); os._exit(0)"  # the instant it is configured


class Run:
    """One `zerojit warmup` process: its JSON report, wall seconds and timeline."""

    def __init__(self, preset: str, cache: Path, jobs: int, env: dict[str, str] | None = None):
        timeline = cache.with_suffix(".timeline.json")
        launched, start = time.time(), time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "zerojit",
                "warmup",
                "--preset",
                preset,
                "--jobs",
                str(jobs),
                "--cache-dir",
                str(cache),
                "--timeline",
                str(timeline),
                "--json",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.wall = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"zerojit warmup --preset {preset} --jobs {jobs} failed:\n{done.stderr[-3000:]}")
        self.report = json.loads(done.stdout)
        data = json.loads(timeline.read_text())
        self.compiles = [k for k in data["keys"] if k["outcome"] == "compiled"]
        origin = data["origin"] - launched  # the first key's start, in seconds after launch
        self.first = origin if self.compiles else None
        self.last = origin + max((k["start_s"] + k["seconds"] for k in self.compiles), default=0.0)
        self.compile_cpu = sum(k["cpu_s"] for k in self.compiles)

    def line(self, label: str) -> str:
        spans = (
            f"first compile at {self.first:6.2f} s, last ends {self.last:6.2f} s, then {self.wall - self.last:5.2f} s"
            if self.first is not None
            else "nothing compiled"
        )
        return f"  {label:<12} {self.report['compiled']:3d} compiles  process {self.wall:7.2f} s   ({spans})"


def start_up(backend: str, arch: str) -> float:
    """Seconds from launching a fresh Python until it has imported and configured the backend's DSL."""
    with tempfile.TemporaryDirectory() as cache:
        code = START_UP[backend].format(arch=arch, cache=cache) + "; " + CONFIGURED
        launched = time.time()
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1]) - launched


def measure(preset: str, jobs: int, spawned: bool) -> None:
    plan = json.loads(
        subprocess.run(
            [sys.executable, "-m", "zerojit", "plan", "--preset", preset, "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    backend, arch = plan["kernels"][0]["backend"], plan["limits"]["arch"]
    with tempfile.TemporaryDirectory() as scratch:
        serial = Run(preset, Path(scratch, "serial"), 1)
        parallel = Run(preset, Path(scratch, "parallel"), jobs)
        restart = Run(preset, Path(scratch, "parallel"), jobs)
        unsliced = (
            Run(preset, Path(scratch, "unsliced"), jobs, {"ZEROJIT_TIME_SLICE": "off"})
            if len(serial.compiles) > jobs
            else None
        )
        old = Run(preset, Path(scratch, "spawned"), jobs, {"ZEROJIT_WORKER_START": "spawn"}) if spawned else None
        begin = start_up(backend, arch)
    longest = max((k["seconds"] for k in serial.compiles), default=0.0)
    compiles = max(serial.compile_cpu / jobs, longest)
    floor = begin + compiles
    print(f"{preset} ({backend}): {plan['total_keys']} keys, {len(serial.compiles)} distinct variants")
    print(serial.line("--jobs 1"))
    print(parallel.line(f"--jobs {jobs}") + f"  {serial.wall / parallel.wall:.2f}x the serial process")
    for label, run in (("unsliced", unsliced), ("spawned", old)):
        if run is not None:
            print(run.line(label) + f"  process / floor = {run.wall / floor:.2f}")
    print(restart.line("restart") + f"  {restart.wall / parallel.wall:.2f} of the cold process")
    if parallel.first is None:
        print("  floor        nothing compiled")
        return
    print(
        f"  floor        start-up {begin:.2f} s + max(compile CPU {serial.compile_cpu:.1f} s / {jobs}, longest "
        f"compile {longest:.2f} s) = {floor:.2f} s;  process / floor = {parallel.wall / floor:.2f}"
    )
    print(
        f"               its compiles: {parallel.last - parallel.first:.2f} s from the first start to the last end, "
        f"against {compiles:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append", help=f"repeatable; default {', '.join(DEFAULT_PRESETS)}")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--no-spawned",
        dest="spawned",
        action="store_false",
        help="skip the run with every worker spawned (the design before the forkserver)",
    )
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, --jobs {args.jobs}, {time.strftime('%Y-%m-%d')}")
    for preset in args.preset or DEFAULT_PRESETS:
        measure(preset, args.jobs, args.spawned)


if __name__ == "__main__":
    main()
