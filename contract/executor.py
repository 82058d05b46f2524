"""Execute a warmup plan: compile every key, time each one, isolate failures.

One key that fails to compile never stops the others; its kernel, key and cause are
kept for the report. How keys run depends on the kernel's backend:
  SERIAL     one at a time in this process;
  THREADS    on a pool of `jobs` threads;
  PROCESSES  (slow compiles, e.g. CuTe DSL) `jobs` worker processes compile into the
             backend's shared disk cache, then this process loads each variant from disk.
             Workers start with `process_setup` (the backend's configure function).
Keys run longest first when a timing history from an earlier warmup knows their cost;
a key the history saw compiled into this cache is loaded here instead of sent to a worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .cache import recording_artifacts
from .kernel import Parallelism
from .keys import CompileKey
from .plan import WarmupPlan
from .report import KeyResult, WarmupReport

if TYPE_CHECKING:
    from rich.console import Console

    from .kernel import JitKernel

Work = tuple["JitKernel", CompileKey]


def _worker_name() -> str:
    import threading

    return f"pid {os.getpid()} / {threading.current_thread().name}"


class _NoProgress(contextlib.nullcontext):
    """Stands in for rich's progress bar when none is shown, so an engine never imports rich."""

    def add_task(self, *args: Any, **kwargs: Any) -> None:
        return None

    def update(self, *args: Any, **kwargs: Any) -> None:
        return None


def _progress_bar(console: Console | None) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]warmup[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.description}", markup=False), console=console, transient=False)


def compile_one(kernel: JitKernel, key: CompileKey) -> KeyResult:
    begin, start = time.time(), time.perf_counter()
    try:
        with recording_artifacts() as artifacts:
            outcome = kernel.compile(key)
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none may hide the rest
        cause = f"{type(exc).__name__}: {exc}".strip()
        return KeyResult(kernel.name, kernel.family, key, "failed", time.perf_counter() - start, cause,
                         traceback.format_exc(limit=-3), begin, _worker_name())
    return KeyResult(kernel.name, kernel.family, key, outcome.value, time.perf_counter() - start,
                     started=begin, worker=_worker_name(), artifacts=tuple(artifacts))


def _compile_in_worker(job: Work) -> KeyResult:
    return compile_one(*job)


def longest_first(work: Sequence[Work], history: dict[str, float]) -> list[Work]:
    """Order keys by their recorded compile time, longest first (unknown keys keep their order, first)."""
    return sorted(work, key=lambda item: -history.get(item[1].digest(), float("inf")))


def execute(
    plan: WarmupPlan,
    jobs: int = 1,
    console: Console | None = None,
    show_progress: bool = True,
    work: Sequence[Work] | None = None,
    history: dict[str, float] | None = None,
    process_setup: tuple[Callable[..., Any], tuple] | None = None,
) -> WarmupReport:
    """Compile the plan's keys (or just `work`, a part of them) and return the report.

    `history` maps key digests to seconds a compile took before (contract.cache keeps it per cache directory).
    Failures are in the report, never raised.
    """
    work = longest_first(list(plan.work()) if work is None else list(work), history or {})
    results: list[KeyResult] = []
    started = time.perf_counter()
    progress = _progress_bar(console) if show_progress else _NoProgress()

    known = history or {}

    def mode(kernel: JitKernel, key: CompileKey) -> Parallelism:
        if jobs == 1 or (kernel.parallelism is Parallelism.PROCESSES and (process_setup is None
                                                                          or key.digest() in known)):
            return Parallelism.SERIAL  # a key compiled into this cache before only needs loading
        return kernel.parallelism

    def record(result: KeyResult) -> None:
        results.append(result)
        progress.update(task, advance=1, description=f"{result.kernel} {result.outcome}")

    with progress:
        task = progress.add_task("", total=len(work))
        in_processes = [w for w in work if mode(*w) is Parallelism.PROCESSES]
        if in_processes:
            setup, args = process_setup
            context = multiprocessing.get_context("spawn")  # never fork a process holding a DSL runtime
            with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=setup,
                                     initargs=args) as pool:
                compiled = list(pool.map(_compile_in_worker, in_processes))
            for (kernel, key), remote in zip(in_processes, compiled):
                if remote.outcome != "failed":
                    # Load the worker's variant into this process (a disk-cache hit); report the
                    # worker's outcome unless the load itself fails.
                    local = compile_one(kernel, key)
                    remote = local if local.outcome == "failed" else remote
                record(remote)
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(compile_one, k, key) for k, key in work if mode(k, key) is Parallelism.THREADS]
            for k, key in work:
                if mode(k, key) is Parallelism.SERIAL:
                    record(compile_one(k, key))
            for future in futures:
                record(future.result())
    variants = {p.kernel.name: p.kernel.variant_count() for p in plan.kernels}
    return WarmupReport(plan=plan, results=results, wall_s=time.perf_counter() - started, variants=variants)


def default_jobs() -> int:
    return os.cpu_count() or 1
