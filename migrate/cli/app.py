"""The `zerojit` typer app: every command's name and group, in the order `zerojit --help` lists them."""

from __future__ import annotations

import warnings

import typer

from . import demo, families, keys, migrate, plan, survey, warmup
from .shared import exit_now, warning_line

# rich_markup_mode=None: help texts are plain text, so `[[migration]]` and user input print as written.
app = typer.Typer(
    help="Zero JIT compilation at serving time: plan, warm up, verify and migrate kernel warmups. "
    "plan/warmup/verify/demo take a --preset (see `zerojit families`); --json output goes to "
    "stdout, progress and errors to stderr.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
app.command("families")(families.families_command)
app.command("plan")(plan.plan)
app.command("warmup")(warmup.warmup)
app.command("bake")(warmup.bake)
app.command("verify")(warmup.verify)
app.command("migrate")(migrate.migrate_command)
app.command("survey")(survey.survey_command)
app.command("demo")(demo.demo)

keys_app = typer.Typer(
    help="Compare compile keys: migrated kernels against their legacy warmup logic.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
keys_app.command("diff")(keys.keys_diff)
app.add_typer(keys_app, name="keys")


def main() -> None:
    """The `zerojit` console script: warnings print as one line each, never as source excerpts."""
    warnings.showwarning = warning_line
    try:
        app(prog_name="zerojit")
    except SystemExit as done:
        exit_now(done.code)
    exit_now(0)
