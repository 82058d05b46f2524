"""`zerojit survey`: the legacy warmups an engine still runs, what each compiles and whether a spec can move it."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from zerojit.codemods.engines import DEFAULT_ENGINE
from zerojit.codemods.jit_map import STATUSES, JitMap, jit_map_report
from zerojit.codemods.lift import missing_helpers
from zerojit.codemods.survey import Survey, survey_report
from zerojit.codemods.survey_specs import match_specs
from zerojit.contract.cache import CacheDirError

from ..families import migration_specs
from .outputs import Outputs
from .plots import DRAWING_FORMATS, plot_jit_map
from .services import write_draft_specs
from .shared import JsonOption, err, out, print_json, user_errors

STATUS_NAMES = ", ".join(STATUSES)
DRAWING_NAMES = ", ".join(DRAWING_FORMATS)


@user_errors(FileNotFoundError)
def survey_command(
    repo: Path = typer.Option(..., "--repo", help="Checkout root: the folder holding the engine package (vllm/)."),
    orchestrator: str = typer.Option(
        DEFAULT_ENGINE.orchestrator, "--orchestrator", help="The module whose entry function runs the warmups."
    ),
    entry: str = typer.Option(DEFAULT_ENGINE.orchestrator_entry, "--entry", help="The orchestrator's entry function."),
    draft_specs: Path | None = typer.Option(
        None,
        "--draft-specs",
        help="Write one TOML migration spec per "
        "kernel a spec or a lift can move, each with a `confirm` list a human "
        "empties.",
    ),
    kernels: bool = typer.Option(
        False,
        "--kernels",
        help="Map every JIT kernel of the tree instead (Triton, CuTe "
        "DSL, FlyDSL, TileLang, contract objects), each with its status: registered, on "
        "the contract but registered nowhere, reached by a legacy warmup, or warmed by "
        "nothing zerojit can see (with who launches it).",
    ),
    status: list[str] = typer.Option(
        [],
        "--status",
        help="With --kernels: the statuses whose kernels the "
        f"table lists ({STATUS_NAMES}; repeat it; default: unwarmed). --json lists every kernel.",
        show_default=False,
    ),
    plot: Path | None = typer.Option(
        None,
        "--plot",
        help=f"With --kernels: write a stacked bar per backend ({DRAWING_NAMES}; needs zerojit[plots]).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Map an engine's remaining legacy warmups: what each compiles, where its kernels are built, what moves by spec.

    Follows every standalone warmup call and inline warmup step of the orchestrator's entry
    (through its own helpers), finds the kernels each warms (@triton.jit-style functions,
    JitKernel objects), the engine classes that select them, whether they already register
    with the contract, and a verdict per kernel and per warmup: "spec" (a spec can move it),
    "lift" (a plain Triton kernel the lift puts on the contract: given only where the lift
    accepts its launcher and legacy step), or "manual" (with why). Each warmup is classified:
    migratable (it only compiles the engine's kernels), partly, or not compile keys, with the
    owner of each piece of work that stays (another library, a dummy run, tuning on the
    device, IPC); engine objects' methods are followed to their kernels. --draft-specs writes one
    spec per such kernel. --kernels maps the whole tree's JIT kernels instead (the legacy
    warmups' kernels carry their verdict there). Each kernel names zerojit's built-in migrations
    that move it, and a warmup says whether they move all it does. Reads the tree
    with ast; imports nothing.
    """
    if kernels:
        return _jit_map(repo, orchestrator, entry, status or ["unwarmed"], plot, as_json)
    if plot is not None:
        raise CacheDirError("--plot draws the JIT map: give --kernels too")
    if status:
        raise CacheDirError("--status chooses the JIT map's kernels: give --kernels too")
    from zerojit.codemods.runner import check_repo  # the codemods' runner loads only where a tree is read

    survey = Survey(check_repo(repo), orchestrator, entry)
    findings = survey.run()
    match_specs(findings, migration_specs().values(), lifts=not missing_helpers(survey.modules))
    written = write_draft_specs(findings, draft_specs, orchestrator) if draft_specs is not None else []
    if as_json:
        print_json(survey_report(repo, findings, orchestrator, entry))
    else:
        out.print(_survey_table(findings, orchestrator, entry))
    for path in written:
        err.print(f"drafted {escape(str(path))} (empty its confirm list to use it)", highlight=False)


def _survey_table(findings, orchestrator: str, entry: str) -> Table:
    table = Table(
        title=f"legacy warmups reached from {escape(orchestrator)}.{escape(entry)}(): {len(findings)}; "
        f"{sum(f.all_moved for f in findings)} moved whole by zerojit's built-in migrations",
        caption="built-in: zerojit migrate FAMILY... --repo REPO moves it (it checks the tree first); "
        "every JIT kernel of the tree, and what warms it: zerojit survey --kernels",
        show_lines=True,
    )
    for column in ("warmup", "called", "kernels (where selected)", "what it is", "verdict"):
        table.add_column(column, overflow="fold")
    for finding in findings:
        called = ("via " + finding.via + "()" if finding.via else finding.kind) + (
            f"\nif {finding.gate}" if finding.gate else ""
        )
        kernels = (
            "\n".join(
                f"{k.name} [{k.kind}{', registers' if k.registers_at else ''}]"
                + (f" -> {', '.join(c.rpartition('.')[2] for c in k.constructed_in[:3])}" if k.constructed_in else "")
                + f": {k.verdict}"
                + (f" (built-in: {', '.join(k.specs)})" if k.specs else "")
                + ("" if k.classification == "migratable" else " (tuned on the device)")
                for k in finding.kernels
            )
            or "-"
        )
        verdict = (
            f"[green]{finding.verdict}[/]"
            if finding.verdict != "manual"
            else "[yellow]manual[/]: " + escape(finding.reasons[0])
        )
        what = "\n".join(
            [finding.classification]
            + [f"stays: {w.owner} ({w.where})" for w in finding.stays]
            + (["moved whole by the built-ins"] if finding.all_moved else [])
        )
        table.add_row(
            escape(f"{finding.module}.{finding.function}"), escape(called), escape(kernels), escape(what), verdict
        )
    return table


def _jit_map(repo: Path, orchestrator: str, entry: str, statuses: list[str], plot: Path | None, as_json: bool) -> None:
    unknown = [s for s in statuses if s not in STATUSES]
    if unknown:
        raise CacheDirError(f"--status {unknown[0]}: not one of {STATUS_NAMES}")
    outputs = Outputs()
    if plot is not None:
        outputs.claim(plot, "--plot")  # before the tree is read
        if plot.suffix.lower() not in DRAWING_FORMATS:
            raise CacheDirError(f"--plot {plot}: name a {DRAWING_NAMES} file")
    from zerojit.codemods.runner import check_repo

    checked = check_repo(repo)
    package = orchestrator.split(".")[0]
    if not (checked / package).is_dir():
        raise FileNotFoundError(
            f"{repo} holds no {package}/ package: the map reads the orchestrator's package; name "
            "the engine's with --orchestrator PACKAGE.module"
        )
    survey = Survey(checked, orchestrator, entry, require_orchestrator=False)
    if survey.orchestrator_problem:
        err.print(
            f"[yellow]warning:[/] {escape(survey.orchestrator_problem)}: no kernel is listed as reached by a "
            "legacy warmup",
            highlight=False,
        )
    with err.status("reading every module of the tree for JIT kernels"):
        jit_map = JitMap(checked, survey)
        report = jit_map_report(repo, *jit_map.run(), survey.orchestrator_problem, jit_map.unreadable())
    for module, why in report["unreadable_modules"].items():
        err.print(f"[yellow]warning:[/] {escape(module)} is not mapped: {escape(why)}", highlight=False)
    if plot is not None:
        outputs.write(plot, plot_jit_map(report, plot.suffix))
        err.print(f"wrote {escape(str(plot))}", highlight=False)
    if as_json:
        print_json(report)
        return
    out.print(_counts_table(report))
    listed = [k for k in report["kernels"] if k["status"] in statuses]
    table = Table(title=f"{len(listed)} kernels {' / '.join(STATUSES[s] for s in statuses)}", show_lines=False)
    for column in ("kernel", "backend", "status", "launched by / registered at / warmed by"):
        table.add_column(column, overflow="fold")
    for kernel in listed:
        if kernel["status"] == "unwarmed":
            where = ", ".join(kernel["launched_by"][:2] + kernel["constructed_in"][:2]) or "nothing found"
        elif kernel["status"] == "legacy":
            where = f"{', '.join(kernel['warmed_by'])} (survey verdict: {kernel['verdict']})"
        else:
            where = ", ".join(r["site"] + (f" if {r['gate']}" if r["gate"] else "") for r in kernel["registered_at"])
        where += f" (via {kernel['via']})" if kernel["via"] else ""
        table.add_row(
            escape(f"{kernel['module']}:{kernel['name']}"), kernel["backend"], kernel["status"], escape(where or "-")
        )
    out.print(table)


def _counts_table(report: dict) -> Table:
    counts = report["counts"]
    table = Table(title=f"JIT kernels of {escape(str(report['repo']))}: {counts['kernels']}")
    for column in ("backend", *STATUSES, "total", "device helpers"):
        table.add_column(column, justify="right" if column != "backend" else "left")
    for backend, row in counts["by_backend"].items():
        table.add_row(backend, *(str(row[s]) for s in STATUSES), str(row["total"]), str(row["device_helpers"]))
    table.add_row("all", *(str(counts[s]) for s in STATUSES), str(counts["kernels"]), "", style="bold")
    return table
