"""The commands that compile: `zerojit warmup`, `bake` (warmups into caches to ship), `verify` (warmup, then proof)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from zerojit.contract.executor import default_jobs
from zerojit.contract.storage import cache_root
from zerojit.contract.workers import die_with_parent

from ..families import MAX_LAUNCHES, get_preset, verify_preset, warm_preset
from .outputs import Outputs
from .plots import check_timeline, timeline_file
from .render import WarmupProgress, print_warmup
from .services import BakeError, bake_in_own_process, bake_processes
from .shared import (
    USER_ERRORS,
    CacheOption,
    JsonOption,
    PresetOption,
    err,
    exit_now,
    fail,
    out,
    print_json,
    user_errors,
    warning_line,
    worker_design,
)
from .tables import coverage_table


@user_errors()
def warmup(
    preset: str = PresetOption,
    jobs: int = typer.Option(
        default_jobs(),
        "--jobs",
        "-j",
        min=1,
        help="Parallel compiles (threads or worker processes, as the backend allows).",
    ),
    timeline: Path | None = typer.Option(
        None,
        "--timeline",
        help="Write the warmup's timeline: a drawing "
        "(.png, .svg, .pdf; needs zerojit[plots]) or its data (.json: "
        "phases, and each key's start, wall and CPU seconds and worker).",
    ),
    ranks: int = typer.Option(
        1,
        "--ranks",
        min=1,
        help="Cooperative warmup: N local rank processes "
        "(torch.distributed, gloo; at most 64) split the keys and share one disk "
        "cache.",
    ),
    cache_dir: Path | None = CacheOption,
    as_json: bool = JsonOption,
    require_baked: bool = typer.Option(
        False,
        "--require-baked",
        help="The cache is a bake (zerojit bake) made "
        "for this environment: a fingerprint mismatch or a planned key it lacks "
        "is an error before anything compiles (exit 2), and any compile during "
        "the warmup exits 1.",
    ),
) -> None:
    """Compile every planned key for real (compile-only); exit 1 if any key fails."""
    family, chosen = get_preset(preset)
    start, time_slice = worker_design()
    if ranks > 1:
        # The rank processes warm with their own settings and report only counts: refused rather than dropped.
        for given, option in ((timeline, "--timeline"), (require_baked, "--require-baked")):
            if given:
                raise fail(f"{option} is not available with --ranks: run it in one process (without --ranks)")
        raise typer.Exit(_cooperative_warmup(chosen.name, ranks, cache_dir, as_json))
    outputs = Outputs(cache_dir or cache_root())
    if timeline is not None:
        outputs.claim(timeline, "--timeline")
        check_timeline(timeline)
    run = warm_preset(
        family,
        chosen,
        jobs=jobs,
        cache_dir=cache_dir,
        progress=WarmupProgress(err),
        require_baked=require_baked,
        start=start,
        time_slice=time_slice,
        on_wait=lambda: err.print("waiting for another warmup of this cache to finish ...", highlight=False),
    )
    if run.bake:
        err.print(escape(run.bake), highlight=False)
    if as_json:
        summary = run.report.to_dict()
        summary["recompiled_artifacts"] = [str(problem) for problem in run.artifact_problems]
        print_json(summary)
    else:
        print_warmup(run, out)
    if timeline is not None:  # after the report: the warmup is done and recorded whatever becomes of the drawing
        outputs.write(timeline, timeline_file(run.report, timeline.suffix))
    if run.unbaked_compiles:
        raise fail(f"--require-baked: {run.unbaked_compiles} keys compiled although the bake should hold them", 1)
    raise typer.Exit(0 if run.report.ok else 1)


def _cooperative_warmup(preset: str, ranks: int, cache_dir: Path | None, as_json: bool) -> int:
    """--ranks N: N local rank processes warm the preset together; one row per rank. Exit code 1 if a key failed."""
    from ..ranks import cooperative_warmup  # torch.distributed: only for a cooperative warmup

    summaries = cooperative_warmup(preset, ranks, cache_dir)
    failed = sum(r["failed"] for r in summaries)
    if as_json:
        print_json({"ranks": summaries, "compiled": sum(r["compiled"] for r in summaries), "failed": failed})
    else:
        table = Table(title=f"cooperative warmup: {ranks} ranks")
        for column in ("rank", "compiled", "loaded from disk", "failed", "variants", "wall s"):
            table.add_column(column, justify="right")
        for r in summaries:
            table.add_row(
                str(r["rank"]),
                str(r["compiled"]),
                str(r["cached"]),
                str(r["failed"]),
                str(r["variants"]),
                f"{r['wall_s']:.2f}",
            )
        out.print(table)
    return 0 if not failed else 1


@user_errors(BakeError)
def bake(
    presets: list[str] = typer.Option(
        ..., "--preset", "-p", help="A serving configuration to bake; repeatable (see `zerojit families`)."
    ),
    out_dir: Path = typer.Option(
        ...,
        "--out",
        help="The bake: one cache folder per backend (OUT/<backend>), "
        "each with a manifest of its fingerprint, keys and artifact digests.",
    ),
    jobs: int = typer.Option(default_jobs(), "--jobs", "-j", min=1, help="Parallel compiles per preset."),
    as_json: bool = JsonOption,
) -> None:
    """Compile presets on this (CPU) machine into caches that serving hosts load with zero compiles.

    Bake in the serving hosts' environment (the same Python minor, DSL and FA4 versions: in
    practice `pip install vllm==X zerojit[cuda13]` on the builder); the manifest records it, and
    `zerojit warmup --cache-dir OUT/<backend> --require-baked` on the host refuses a bake that
    does not apply. Presets of one backend and target bake in one process (one DSL import, one set
    of compile workers); other backends and targets each in a process of their own (they cannot
    share one).
    """
    start, time_slice = worker_design()
    baked = []
    for process, (backend, names) in enumerate(bake_processes(presets)):
        folder = out_dir / backend
        for name, report in zip(names, bake_in_own_process(names, folder, jobs, start, time_slice)):
            baked.append({"preset": name, "cache": str(folder), "process": process, **report})
    failed = sum(row["failed"] for row in baked)
    if as_json:
        print_json({"out": str(out_dir), "failed": failed, "presets": baked})
        raise typer.Exit(1 if failed else 0)
    table = Table(title=f"bake: {escape(str(out_dir))}")
    for column in ("preset", "cache", "process", "keys", "compiled", "loaded", "failed"):
        table.add_column(column, justify="left" if column in ("preset", "cache") else "right")
    for row in baked:
        table.add_row(
            escape(row["preset"]),
            escape(row["cache"]),
            str(row["process"] + 1),
            str(row["total_keys"]),
            str(row["compiled"]),
            str(row["cached"]),
            str(row["failed"]),
        )
    out.print(table)
    raise typer.Exit(1 if failed else 0)


def bake_here() -> None:
    """The process `services.bake_in_own_process` starts (argv: the bake's pid, the cache folder, the jobs, the
    workers' start method and time slicing (on, off), the presets): warms the presets in turn and prints their
    reports as one JSON list; a user error is one `error:` line, exit 2. It dies with the bake (a kill, a SIGTERM),
    and its forkserver and workers with it."""
    bake, cache_dir, jobs, start, time_slice, *presets = sys.argv[1:]
    die_with_parent(int(bake))
    warnings.showwarning = warning_line
    runs = []
    for name in presets:
        try:
            runs.append(
                warm_preset(
                    *get_preset(name),
                    jobs=int(jobs),
                    cache_dir=Path(cache_dir),
                    start=start,
                    time_slice=time_slice == "on",
                )
            )
        except USER_ERRORS as exc:  # one line, naming the preset
            exit_now(fail(f"{name}: {exc}").exit_code)
    print_json([run.report.to_dict() for run in runs])
    exit_now(0)


@user_errors()
def verify(
    preset: str = PresetOption,
    launches: int = typer.Option(
        40, "--launches", "-n", help=f"Random in-range launches per launcher (1 to {MAX_LAUNCHES})."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the random launches."),
    cache_dir: Path | None = CacheOption,
    as_json: bool = JsonOption,
) -> None:
    """Warm up, then prove in-range launches compile nothing; exit 1 on any cache growth or failed key."""
    family, chosen = get_preset(preset)
    run, coverage = verify_preset(
        family, chosen, launches=launches, seed=seed, cache_dir=cache_dir, progress=WarmupProgress(err)
    )
    if as_json:
        print_json(coverage.to_dict())
    else:
        out.print(coverage_table(coverage))
        for entry in coverage.kernels:
            for miss in entry.missed_keys:
                out.print(
                    f"[red]compiled after warmup[/] {escape(entry.name)}: {escape(str(miss['key']))} "
                    f"from {escape(str(miss['inputs']))}"
                )
    raise typer.Exit(0 if coverage.ok and run.report.ok else 1)
