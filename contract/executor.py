"""Execute a warmup plan: compile every key, time each one, isolate failures.

One key that fails to compile never stops the others; its kernel, key and cause are
kept for the report. How keys run depends on the kernel's backend:
  SERIAL     one at a time in this process;
  THREADS    on a pool of `jobs` threads;
  PROCESSES  (slow compiles, e.g. CuTe DSL) `jobs` worker processes compile into the
             backend's shared disk cache, then this process loads each variant from disk.
             Workers start with `process_setup` (the backend's configure function).
Many serving keys share one backend variant (`JitKernel.variant`, the backend's own compile
key, resolved without compiling): workers compile each distinct variant once, longest first
when a timing history from an earlier warmup knows the cost, and a variant already in the
disk cache needs no worker at all; this process then loads every key.
"""

from __future__ import annotations

import contextlib
import os
import threading
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


def _ready() -> int:
    return os.getpid()


def start_workers(jobs: int, process_setup: tuple[Callable[..., Any], tuple]) -> ProcessPoolExecutor:
    """Start `jobs` worker processes now (each runs `process_setup`, e.g. importing the DSL) and return the pool.

    A caller that knows compiles are coming starts them before its own set-up: the forkserver
    (contract.workers) imports the DSL once, while this process does, and every worker forks
    from it; `execute(..., pool=...)` then uses them.
    """
    setup, args = process_setup
    # Forked from the forkserver that runs this setup once (contract.workers), else spawned: never forked from
    # this process, which may hold a DSL runtime.
    # Imported here, not with this module: the forkserver imports it after the package, as the setup may need.
    from . import workers

    workers.prepare(process_setup)
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=workers.context(process_setup), initializer=setup,
                               initargs=args)
    # No worker is idle yet, so each submit starts one. A fork from the forkserver waits until the server has
    # imported the DSL, so they start from a thread: this process goes on with its own set-up meanwhile.
    threading.Thread(target=lambda: [pool.submit(_ready) for _ in range(jobs)], name="zerojit-start-workers",
                     daemon=True).start()
    return pool


def _compile_variants_in_workers(work: Sequence[Work], jobs: int, process_setup: tuple[Callable[..., Any], tuple],
                                 pool: ProcessPoolExecutor | None) -> dict[tuple[str, str], KeyResult]:
    """Compile each distinct backend variant of `work` once, in worker processes, into the shared disk cache.

    The first key of each variant (in `work`'s order: longest first) stands for it; variants
    the disk cache already holds need no worker, and no more workers start than there are
    variants to compile. Returns the workers' results by (kernel, key digest).
    """
    chosen: dict[tuple[str, str], Work] = {}
    for kernel, key in work:
        try:
            variant = kernel.variant(key)
            cached = kernel.variant_cached(variant)
        except Exception:  # noqa: BLE001 - its compile fails the same way, in a worker, reported with its key
            variant, cached = key.digest(), False
        if (kernel.backend, variant) not in chosen and not cached:
            chosen[(kernel.backend, variant)] = (kernel, key)
    representatives = list(chosen.values())
    if not representatives:
        return {}
    with contextlib.ExitStack() as stack:
        if pool is None:
            pool = stack.enter_context(start_workers(min(jobs, len(representatives)), process_setup))
        compiled = pool.map(_compile_in_worker, representatives)
        return {(kernel.name, key.digest()): result for (kernel, key), result in zip(representatives, compiled)}


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
    pool: ProcessPoolExecutor | None = None,
) -> WarmupReport:
    """Compile the plan's keys (or just `work`, a part of them) and return the report.

    `pool`: worker processes started earlier (`start_workers`), used instead of starting new ones.

    `history` maps key digests to seconds a compile took before (contract.cache keeps it per cache directory).
    Failures are in the report, never raised.
    """
    work = longest_first(list(plan.work()) if work is None else list(work), history or {})
    results: list[KeyResult] = []
    started = time.perf_counter()
    progress = _progress_bar(console) if show_progress else _NoProgress()

    def mode(kernel: JitKernel, key: CompileKey) -> Parallelism:
        if jobs == 1 or (kernel.parallelism is Parallelism.PROCESSES and process_setup is None and pool is None):
            return Parallelism.SERIAL
        return kernel.parallelism

    def record(result: KeyResult) -> None:
        results.append(result)
        progress.update(task, advance=1, description=f"{result.kernel} {result.outcome}")

    with progress:
        task = progress.add_task("", total=len(work))
        in_processes = [w for w in work if mode(*w) is Parallelism.PROCESSES]
        remote = _compile_variants_in_workers(in_processes, jobs, process_setup, pool) if in_processes else {}
        for kernel, key in in_processes:
            worker = remote.get((kernel.name, key.digest()))
            if worker is not None and worker.outcome == "failed":
                record(worker)
                continue
            # Load the variant a worker compiled into this process (a disk-cache hit); report the
            # worker's outcome for its own key unless the load itself fails.
            local = compile_one(kernel, key)
            record(worker if worker is not None and local.outcome != "failed" else local)
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
