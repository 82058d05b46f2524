"""Output that more than one command prints: a plan (plan, demo), a warmup (warmup, demo), a migration diff
(migrate, demo).

Every text that comes from the user, a preset or an engine tree is escaped: it prints as written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from ..families import WarmupRun

if TYPE_CHECKING:
    from zerojit.codemods.results import MigrationResult


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


def print_warmup(run: WarmupRun, console: Console) -> None:
    console.print(run.report.table())
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
