"""`zerojit keys diff` over a full grid: one process vs --jobs N, side by side in one run, and whether a memo of the
legacy expansion could help instead.

Prints the wall time of `keys diff --family F --grid full` with --jobs 1 and with --jobs N (fresh
processes), their ratio, and whether the two reports are identical. Then, for a family whose legacy
side is vLLM's traced key expansion (`VllmJitKernel._trace_dispatch`), how many times the expansion
evaluates a compile key over the grid, and for how many distinct inputs (each evaluation's inputs
with the target arch; and restricted to the names the dispatch itself reads): the most a memo of
the legacy expansion could save.

    .venv/bin/python bench/keys_diff_parallel.py [--family inkling-rel-attention] [--jobs N]
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import time

JIT_WARMUP = "vllm.model_executor.warmup.jit_warmup"


def keys_diff(family: str, jobs: int) -> tuple[str, float]:
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "zerojit",
            "keys",
            "diff",
            "--family",
            family,
            "--grid",
            "full",
            "--jobs",
            str(jobs),
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):
        sys.exit(f"keys diff --jobs {jobs} failed: {done.stderr[-2000:]}")
    return done.stdout, time.perf_counter() - start


def distinct_inputs(family: str) -> tuple[int, int, int] | None:
    """(compile-key evaluations of the legacy expansion over the full grid, distinct inputs, distinct inputs the
    dispatch reads), counted by wrapping the tree's own trace; None when the legacy side has no such trace."""
    from zerojit.migrate.families import build_adapter

    adapter = build_adapter(family)
    legacy = getattr(adapter, "legacy", None)
    if legacy is None:
        return None
    seen: collections.Counter = collections.Counter()
    read: set = set()
    wrapped: set[int] = set()
    for config in adapter.grids["full"]():
        adapter.legacy_keys(config)
        for variant, modules in legacy.sources._loaded.items():
            module = modules.get(JIT_WARMUP)
            if module is None or id(module) in wrapped or not hasattr(module, "_CompileKeyDispatchTrace"):
                continue
            wrapped.add(id(module))
            trace = module._CompileKeyDispatchTrace
            original = trace.compile_key

            def counted(self, key_type, inputs, _original=original, _variant=variant):
                names = self.input_names_for(set(inputs))
                seen[(_variant, tuple(sorted((k, repr(v)) for k, v in inputs.items())))] += 1
                read.add((_variant, tuple(sorted((k, repr(v)) for k, v in inputs.items() if k in names))))
                return _original(self, key_type, inputs)

            trace.compile_key = counted
    # The first config of each import variant ran before its module was wrapped: its evaluations are not counted.
    return (sum(seen.values()), len(seen), len(read)) if seen else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="inkling-rel-attention")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, keys diff --family {args.family} --grid full, {time.strftime('%Y-%m-%d')}")
    serial, serial_s = keys_diff(args.family, 1)
    parallel, parallel_s = keys_diff(args.family, args.jobs)
    print(f"  --jobs 1          {serial_s:7.1f} s")
    print(
        f"  --jobs {args.jobs:<10} {parallel_s:7.1f} s   {serial_s / parallel_s:.2f}x faster, "
        f"report {'identical' if serial == parallel else 'DIFFERENT'}"
    )
    counted = distinct_inputs(args.family)
    if counted is None:
        print("  (the legacy side is not vLLM's traced expansion: no memo count)")
        return
    evaluations, distinct, dispatch_reads = counted
    print(
        f"  legacy expansion: {evaluations} compile-key evaluations, {distinct} distinct inputs "
        f"({evaluations / distinct:.2f} per input), {dispatch_reads} distinct in what the dispatch reads "
        f"({evaluations / dispatch_reads:.2f}): a memo saves at most {1 - dispatch_reads / evaluations:.0%}"
    )


if __name__ == "__main__":
    main()
