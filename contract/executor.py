"""Execute a warmup plan: compile every key, time each one, isolate failures.

One key that fails to compile never stops the others; its kernel, key and cause are
kept for the report. How keys run depends on the kernel's backend:
  SERIAL     one at a time in this process;
  THREADS    on a pool of `jobs` threads;
  PROCESSES  (slow compiles, e.g. CuTe DSL) worker processes compile into the backend's
             shared disk cache, `jobs` at any instant (contract.workers time-slices more),
             then this process loads each variant from disk. Workers start with
             `process_setup` (the backend's configure function).
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
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .cache import recording_artifacts
from .kernel import Parallelism
from .keys import CompileKey
from .plan import WarmupPlan
from .report import KeyResult, WarmupReport

if TYPE_CHECKING:
    from .kernel import JitKernel
    from .workers import Setup, Workers

Work = tuple["JitKernel", CompileKey]


def _worker_name() -> str:
    return f"pid {os.getpid()} / {threading.current_thread().name}"


class Progress:
    """Where `execute` reports its keys as they finish. This one shows nothing (an engine's warmup); the CLI
    passes a progress bar of its own (migrate/cli/render.py), so the runtime never imports rich."""

    def start(self, total: int) -> None:
        """`total` keys are about to be compiled or loaded here."""

    def advance(self, result: KeyResult) -> None:
        """One key is done."""

    def stop(self) -> None:
        """Every key is done, or the warmup ended with an error."""


def compile_one(kernel: JitKernel, key: CompileKey) -> KeyResult:
    begin, start, cpu = time.time(), time.perf_counter(), time.thread_time()
    try:
        with recording_artifacts() as artifacts:
            outcome = kernel.compile(key)
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none may hide the rest
        cause = f"{type(exc).__name__}: {exc}".strip()
        return KeyResult(
            kernel.name,
            kernel.family,
            key,
            "failed",
            time.perf_counter() - start,
            cause,
            traceback.format_exc(limit=-3),
            begin,
            _worker_name(),
            cpu_s=time.thread_time() - cpu,
        )
    return KeyResult(
        kernel.name,
        kernel.family,
        key,
        outcome.value,
        time.perf_counter() - start,
        started=begin,
        worker=_worker_name(),
        artifacts=tuple(artifacts),
        cpu_s=time.thread_time() - cpu,
    )


def start_workers(
    jobs: int, process_setup: Setup, tasks: int, *, start: str = "forkserver", time_slice: bool = True
) -> Workers:
    """Start worker processes now for at most `tasks` compiles, `jobs` at a time, and return them.

    A caller that knows compiles are coming starts them before its own set-up: the forkserver
    (contract.workers) imports the DSL once, while this process does, and every worker forks from
    it; `execute(..., pool=...)` then uses them. With more variants to compile than `jobs`, the
    compiles take up to PROCESSES_PER_JOB x `jobs` processes, time-sliced to `jobs` at any instant.
    `start` and `time_slice`: the workers' design (`Workers`; the designs before are "spawn" and False).
    """
    # Imported here, not with this module: the forkserver imports it after the package, as the setup may need.
    from .workers import Workers

    return Workers(jobs, process_setup, min(tasks, jobs), start=start, time_slice=time_slice)


def _variants_of(work: Sequence[Work]) -> list[tuple[str, bool]]:
    """Each key's backend variant, and whether the backend's disk cache holds it (run where the backend is set up).

    A key whose variant cannot be resolved stands for itself, not cached: its compile fails the
    same way, in a worker, reported with its key.
    """
    resolved = []
    for kernel, key in work:
        try:
            variant = kernel.variant(key)
            resolved.append((variant, kernel.variant_cached(variant)))
        except Exception:  # noqa: BLE001 - reported by the compile, with its key
            resolved.append((key.digest(), False))
    return resolved


def _representatives(work: Sequence[Work], resolved: Sequence[tuple[str, bool]]) -> list[Work]:
    """One key per distinct backend variant the disk cache lacks: the first in `work`'s order (longest first)."""
    chosen: dict[tuple[str, str], Work] = {}
    for (kernel, key), (variant, cached) in zip(work, resolved):
        if (kernel.backend, variant) not in chosen and not cached:
            chosen[(kernel.backend, variant)] = (kernel, key)
    return list(chosen.values())


def _resolve_in(workers: Workers, work: Sequence[Work]) -> list[tuple[str, bool]]:
    """`_variants_of(work)` computed by the workers, a slice each (this process need not have set its backend up)."""
    size = -(-len(work) // min(workers.running, workers.processes or 1))
    slices = [work[start : start + size] for start in range(0, len(work), size)]
    resolved = []
    for part, answer in zip(slices, workers.map([(_variants_of, (part,)) for part in slices])):
        resolved += [(key.digest(), False) for _, key in part] if isinstance(answer, Exception) else answer
    return resolved


def _compile_in_workers(
    work: Sequence[Work],
    jobs: int,
    process_setup: Setup | None,
    pool: Workers | None,
    start: str,
    time_slice: bool,
) -> tuple[dict[tuple[str, str], KeyResult], dict[str, float]]:
    """Compile each distinct variant of `work` the disk cache lacks once, in worker processes, into that cache.

    With `pool` (workers started earlier) the workers also resolve the variants; without, this
    process does, and workers (of the design `start`, `time_slice` name) start only if some variant
    needs compiling. Returns the workers' results by (kernel, key digest), and the seconds spent
    choosing the variants and compiling them.
    """
    from .workers import PROCESSES_PER_JOB

    started = time.perf_counter()
    resolved = _variants_of(work) if pool is None else _resolve_in(pool, work)
    representatives = _representatives(work, resolved)
    resolving_from = max(started, pool.first_started or started) if pool is not None else started
    phases = {"workers_start": resolving_from - started} if resolving_from > started else {}  # the first worker
    phases["variants"] = time.perf_counter() - resolving_from
    if not representatives:
        return {}, phases
    with contextlib.ExitStack() as stack:
        if pool is None:
            pool = stack.enter_context(
                start_workers(jobs, process_setup, len(representatives), start=start, time_slice=time_slice)
            )
        compiled = pool.map(  # a pool that does not time-slice holds no more than `jobs` of these processes
            [(compile_one, representative) for representative in representatives], processes=jobs * PROCESSES_PER_JOB
        )
    phases["workers"] = time.perf_counter() - started - sum(phases.values())
    results = {}
    for (kernel, key), result in zip(representatives, compiled):
        if isinstance(result, Exception):  # its worker ended before answering
            result = KeyResult(kernel.name, kernel.family, key, "failed", 0.0, f"{type(result).__name__}: {result}")
        results[(kernel.name, key.digest())] = result
    return results, phases


def longest_first(work: Sequence[Work], history: dict[str, float]) -> list[Work]:
    """Order keys by their recorded compile time, longest first (unknown keys keep their order, first)."""
    return sorted(work, key=lambda item: -history.get(item[1].digest(), float("inf")))


def execute(
    plan: WarmupPlan,
    jobs: int = 1,
    progress: Progress | None = None,
    work: Sequence[Work] | None = None,
    history: dict[str, float] | None = None,
    process_setup: Setup | None = None,
    pool: Workers | None = None,
    meanwhile: Callable[[], Any] | None = None,
    start: str = "forkserver",
    time_slice: bool = True,
) -> WarmupReport:
    """Compile the plan's keys (or just `work`, a part of them) and return the report.

    `progress`: told of each key as it finishes (default: nothing is shown).
    `pool`: worker processes started earlier (`start_workers`), used instead of starting new ones;
    they resolve the variants too. Without it, workers of the design `start` and `time_slice` name
    (`start_workers`) start if some variant needs compiling in one. `meanwhile`: this process's own
    set-up (the backend's, which its loads need), run while such workers compile, else before
    anything compiles; an error it raises (or an interrupt) stops the workers and is raised.
    `history` maps key digests to seconds a compile took before (contract.cache keeps it per cache directory).
    Failures are in the report, never raised. The report's phases: configure (`meanwhile`),
    workers_start (waiting for the first worker), variants and workers (resolving and compiling in
    workers; configure runs beside these when `pool` is given), load (this process loading what
    workers compiled), in_process (compiles here).
    """
    work = longest_first(list(plan.work()) if work is None else list(work), history or {})
    results: list[KeyResult] = []
    started = time.perf_counter()
    progress = progress or Progress()

    def mode(kernel: JitKernel, key: CompileKey) -> Parallelism:
        if jobs == 1 or (kernel.parallelism is Parallelism.PROCESSES and process_setup is None and pool is None):
            return Parallelism.SERIAL
        return kernel.parallelism

    def record(result: KeyResult) -> None:
        results.append(result)
        progress.advance(result)

    phases: dict[str, float] = {}

    def set_up_here() -> None:
        begin = time.perf_counter()
        if meanwhile is not None:
            meanwhile()
        phases["configure"] = time.perf_counter() - begin

    in_processes = [w for w in work if mode(*w) is Parallelism.PROCESSES]
    if in_processes and pool is not None:  # the workers resolve and compile while this process sets up
        with ThreadPoolExecutor(1, thread_name_prefix="zerojit-dispatch") as dispatcher:
            remote = dispatcher.submit(_compile_in_workers, in_processes, jobs, process_setup, pool, start, time_slice)
            try:
                set_up_here()
                compiled, worker_phases = remote.result()
            except BaseException:  # this process's set-up failed, or it is interrupted: the workers stop now
                pool.cancel()
                raise
    else:
        set_up_here()  # an error it raises comes before anything compiles or shows
        compiled, worker_phases = ({}, {})
    progress.start(len(work))
    try:
        if in_processes and pool is None:
            compiled, worker_phases = _compile_in_workers(in_processes, jobs, process_setup, None, start, time_slice)
        phases.update(worker_phases)
        mark = time.perf_counter()
        for kernel, key in in_processes:
            worker = compiled.get((kernel.name, key.digest()))
            if worker is not None and worker.outcome == "failed":
                record(worker)
                continue
            # Load the variant a worker compiled into this process (a disk-cache hit); report the
            # worker's outcome for its own key unless the load itself fails.
            local = compile_one(kernel, key)
            record(worker if worker is not None and local.outcome != "failed" else local)
        if in_processes:
            phases["load"] = time.perf_counter() - mark
            mark = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as threads:
            futures = [threads.submit(compile_one, k, key) for k, key in work if mode(k, key) is Parallelism.THREADS]
            for k, key in work:
                if mode(k, key) is Parallelism.SERIAL:
                    record(compile_one(k, key))
            for future in futures:
                record(future.result())
        if len(results) > len(in_processes):
            phases["in_process"] = time.perf_counter() - mark
    finally:
        progress.stop()
    variants = {p.kernel.name: p.kernel.variant_count() for p in plan.kernels}
    return WarmupReport(
        plan=plan, results=results, wall_s=time.perf_counter() - started, variants=variants, phases=phases
    )


def default_jobs() -> int:
    return os.cpu_count() or 1
