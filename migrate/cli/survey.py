"""`zerojit survey`: the legacy warmups an engine still runs, what each compiles and whether a spec can move it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from zerojit.codemods.runner import check_repo
from zerojit.codemods.spec import VLLM_ORCHESTRATOR, VLLM_ORCHESTRATOR_ENTRY
from zerojit.codemods.survey import Survey, survey_report

from .services import write_draft_specs
from .shared import JsonOption, err, out, print_json, user_errors


@user_errors(FileNotFoundError)
def survey_command(
    repo: Path = typer.Option(..., "--repo", help="Checkout root: the folder holding the engine package (vllm/)."),
    orchestrator: str = typer.Option(VLLM_ORCHESTRATOR, "--orchestrator",
                                     help="The module whose entry function runs the warmups."),
    entry: str = typer.Option(VLLM_ORCHESTRATOR_ENTRY, "--entry", help="The orchestrator's entry function."),
    draft_specs: Optional[Path] = typer.Option(None, "--draft-specs", help="Write one TOML migration spec per "
                                               "kernel a spec or a lift can move, each with a `confirm` list a human "
                                               "empties."),
    as_json: bool = JsonOption,
) -> None:
    """Map an engine's remaining legacy warmups: what each compiles, where its kernels are built, what moves by spec.

    Follows every standalone warmup call and inline warmup step of the orchestrator's entry
    (through its own helpers), finds the kernels each warms (@triton.jit-style functions,
    JitKernel objects), the engine classes that select them, whether they already register
    with the contract, and a verdict per kernel and per warmup: "spec" (a spec can move it),
    "lift" (a plain Triton kernel the lift puts on the contract: given only where the lift
    accepts its launcher and legacy step), or "manual" (with why). --draft-specs writes one
    spec per such kernel. Reads the tree with ast; imports nothing.
    """
    findings = Survey(check_repo(repo), orchestrator, entry).run()
    written = write_draft_specs(findings, draft_specs, orchestrator) if draft_specs is not None else []
    if as_json:
        print_json(survey_report(repo, findings, orchestrator, entry))
    else:
        out.print(_survey_table(findings, orchestrator, entry))
    for path in written:
        err.print(f"drafted {escape(str(path))} (empty its confirm list to use it)", highlight=False)


def _survey_table(findings, orchestrator: str, entry: str) -> Table:
    table = Table(title=f"legacy warmups reached from {escape(orchestrator)}.{escape(entry)}(): {len(findings)}",
                  show_lines=True)
    for column in ("warmup", "called", "kernels (where selected)", "verdict"):
        table.add_column(column, overflow="fold")
    for finding in findings:
        called = ("via " + finding.via + "()" if finding.via else finding.kind) + \
            (f"\nif {finding.gate}" if finding.gate else "")
        kernels = "\n".join(f"{k.name} [{k.kind}{', registers' if k.registers_at else ''}]"
                            + (f" -> {', '.join(c.rpartition('.')[2] for c in k.constructed_in[:3])}"
                               if k.constructed_in else "") + f": {k.verdict}" for k in finding.kernels) or "-"
        verdict = f"[green]{finding.verdict}[/]" if finding.verdict != "manual" else \
            "[yellow]manual[/]: " + escape(finding.reasons[0])
        table.add_row(escape(f"{finding.module}.{finding.function}"), escape(called), escape(kernels), verdict)
    return table
