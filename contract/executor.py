"""Execute a warmup plan: compile every key, time each one, isolate failures.

One key that fails to compile never stops the others; its kernel, key and cause are
kept for the report. Kernels whose backend compiles safely on threads run on a pool of
`jobs` threads; the others compile one at a time.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .kernel import Parallelism
from .keys import CompileKey
from .plan import WarmupPlan
from .report import KeyResult, WarmupReport

if TYPE_CHECKING:
    from rich.console import Console

    from .kernel import JitKernel


def compile_one(kernel: JitKernel, key: CompileKey) -> KeyResult:
    start = time.perf_counter()
    try:
        outcome = kernel.compile(key)
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none may hide the rest
        cause = f"{type(exc).__name__}: {exc}".strip()
        return KeyResult(kernel.name, kernel.family, key, "failed", time.perf_counter() - start, cause,
                         traceback.format_exc(limit=-3))
    return KeyResult(kernel.name, kernel.family, key, outcome.value, time.perf_counter() - start)


def execute(
    plan: WarmupPlan,
    jobs: int = 1,
    console: Console | None = None,
    show_progress: bool = True,
    work: Sequence[tuple[JitKernel, CompileKey]] | None = None,
) -> WarmupReport:
    """Compile the plan's keys (or just `work`, a part of them) and return the report.

    Failures are in the report, never raised.
    """
    work = list(plan.work()) if work is None else list(work)
    results: list[KeyResult] = []
    started = time.perf_counter()
    progress = Progress(
        TextColumn("[bold]warmup[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.description}"), console=console, disable=not show_progress, transient=False,
    )

    def record(result: KeyResult) -> None:
        results.append(result)
        progress.update(task, advance=1, description=f"{result.kernel} {result.outcome}")

    with progress:
        task = progress.add_task("", total=len(work))
        on_threads = jobs > 1
        threaded = [(k, key) for k, key in work if on_threads and k.parallelism is Parallelism.THREADS]
        serial = [(k, key) for k, key in work if not (on_threads and k.parallelism is Parallelism.THREADS)]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(compile_one, k, key) for k, key in threaded]
            for k, key in serial:
                record(compile_one(k, key))
            for future in futures:
                record(future.result())
    variants = {p.kernel.name: p.kernel.variant_count() for p in plan.kernels}
    return WarmupReport(plan=plan, results=results, wall_s=time.perf_counter() - started, variants=variants)
