"""Output that more than one command prints: a plan (plan, demo), a warmup and its progress bar (warmup, verify,
demo), a migration diff (migrate, demo).

Every text that comes from the user, a preset or an engine tree is escaped: it prints as written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bar
from rich.syntax import Syntax
from rich.table import Table

from zerojit.contract.executor import Progress

from ..families import WarmupRun
from .tables import warmup_table

if TYPE_CHECKING:
    from zerojit.codemods.results import MigrationResult
    from zerojit.contract.report import KeyResult


def print_plan(plan, console: Console, variants: dict[str, int] | None = None) -> None:
    table = Table(title=f"plan: {plan.total_keys} keys")
    for column in ("kernel", "family", "backend", "keys", *(("variants",) if variants else ())):
        table.add_column(column, justify="right" if column in ("keys", "variants") else "left")
    for planned in plan.kernels:
        keys = "[red]0 (registered, empty)[/]" if planned.empty else str(len(planned.keys))
        table.add_row(
            escape(planned.kernel.name),
            escape(planned.kernel.family),
            escape(planned.kernel.backend),
            keys,
            *((str(variants[planned.kernel.name]),) if variants else ()),
        )
    console.print(table)
    for missed in plan.missed:
        console.print(f"[yellow]missed registration:[/] {escape(missed.kernel)} at {escape(missed.site)}")


class WarmupProgress(Progress):
    """The warmup's progress bar on `console`: keys done of all, time so far, and the last key's outcome."""

    def __init__(self, console: Console):
        self._bar = Bar(
            TextColumn("[bold]warmup[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}", markup=False),
            console=console,
            transient=False,
        )

    def start(self, total: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task("", total=total)

    def advance(self, result: KeyResult) -> None:
        self._bar.update(self._task, advance=1, description=f"{result.kernel} {result.outcome}")

    def stop(self) -> None:
        self._bar.stop()


def print_warmup(run: WarmupRun, console: Console) -> None:
    console.print(warmup_table(run.report))
    for problem in run.artifact_problems:
        console.print(f"[yellow]recompiled[/] {escape(str(problem))}")
    for failure in run.report.failures:
        console.print(
            f"[red]failed[/] {escape(failure.kernel)} {escape(str(failure.key))}: {escape(str(failure.cause))}"
        )


def print_diff(result: MigrationResult, console: Console) -> None:
    """A unified diff per changed file: highlighted on a terminal, plain text when piped."""
    for change in result.changes:
        text = change.diff(result.repo)
        if console.is_terminal:
            console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
        else:
            console.out(text, end="", highlight=False)
