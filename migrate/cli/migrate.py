"""`zerojit migrate`: move an engine repo's legacy warmups onto the contract, by spec, all or nothing."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from zerojit.codemods.errors import TransactionError
from zerojit.contract.cache import CacheDirError

from ..families import migration_keys_check
from .outputs import Outputs
from .render import print_diff
from .services import chosen_migrations, migration_lock
from .shared import TREE_ERRORS, err, fail, out, user_errors
from .tables import equivalence_table


def migrate_command(
    targets: list[str] = typer.Argument(
        None,
        metavar="FAMILY... [PATH...]",
        help="Spec families to apply (the "
        "installed families' specs, see `zerojit families`, and those of --spec), "
        "then optional files, folders or globs that restrict the run.",
    ),
    repo: Path = typer.Option(..., "--repo", help="Checkout root: the folder holding the engine package (vllm/)."),
    write_changes: bool = typer.Option(False, "--write", help="Apply the changes (default: print a diff)."),
    check: bool = typer.Option(
        False, "--check", help="List the files that would change ('would change: PATH'); exit 1 when any, 0 when none."
    ),
    recover: bool = typer.Option(
        False,
        "--recover",
        help="Roll back a --write that was interrupted (killed), then stop unless families are named.",
    ),
    spec_file: Path | None = typer.Option(None, "--spec", help="TOML file of [[migration]] specs to use too."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Processes for the libcst transforms."),
    report: Path | None = typer.Option(None, "--report", help="Write a JSON report of the run here."),
    format_command: str | None = typer.Option(
        None,
        "--format",
        help="A formatter that reads code on stdin and "
        "writes it to stdout, run on every changed file before the safety "
        "gate, e.g. 'ruff format -'.",
    ),
    no_ignore: bool = typer.Option(False, "--no-ignore", help="In a git checkout, also read files git ignores."),
    verify_keys: bool = typer.Option(
        False,
        "--verify-keys",
        help="Before writing, compare the compile keys the tree "
        "warms before and after the planned changes (`keys diff --legacy-tree "
        "--migrated-tree`, smoke grid) for families whose legacy side is engine code; "
        "any unexplained difference refuses the run (exit 1).",
    ),
    pr_body: Path | None = typer.Option(
        None,
        "--pr-body",
        help="Write a Markdown pull-request description here: "
        "what moved where, the gates, the --verify-keys check's table (it runs "
        "that check), the intended differences with their reasons, what is left "
        "in place. Written on a dry run too; never over an existing file.",
    ),
) -> None:
    """Migrate legacy warmup modules in a repo onto the contract (dry run: a unified diff; exit 0).

    Nothing is written unless every edit is safe: the result compiles, pyflakes finds no new
    undefined name or redefinition, and nothing still refers to what the migration deletes or
    renames. Otherwise the run is refused (exit 2), one `path:line: why` per problem. A --write
    is all-or-nothing and survives a kill (the next --write or --recover rolls it back first);
    a second run on the same repo waits for the first. Errors exit 2 with one line.
    """
    # The codemods (libcst, pyflakes, ruff) load with the command that needs them, not with every zerojit command.
    from zerojit.codemods.runner import check_repo, migrate, write

    from ..pr_body import pr_body as pr_body_text

    if write_changes and check:
        raise fail("--write and --check exclude each other")
    outputs = Outputs()
    with outputs, user_errors(*TREE_ERRORS, TransactionError, on_bug="nothing was written unless said above"):
        for path, option in ((report, "--report"), (pr_body, "--pr-body")):
            if path is not None:
                outputs.claim(path, option)  # before anything is planned or written
        repo = check_repo(repo)
        specs, only = chosen_migrations(targets or [], repo, spec_file, recover)
        with migration_lock(repo, exclusive=write_changes or recover, recover=recover, say=_say):
            if not specs:
                return
            result = migrate(
                repo,
                specs,
                jobs=jobs,
                respect_gitignore=not no_ignore,
                format_command=shlex.split(format_command) if format_command else (),
                only=only,
                on_progress=_progress(err),
            )
            checked = _keys_checked(result, strict=verify_keys) if result.changes and (verify_keys or pr_body) else {}
            keys_kept = _keys_kept(checked)
            if keys_kept:  # staged before the tree is touched: a full disk stops the run with nothing written
                if report is not None:
                    outputs.stage(report, (json.dumps(result.report(), indent=2) + "\n").encode())
                if pr_body is not None:
                    command = shlex.join(["zerojit", "migrate", *(targets or []), "--repo", str(repo)])
                    outputs.stage(pr_body, pr_body_text(result, checked, command).encode())
            if write_changes and keys_kept:
                write(result)
        if keys_kept:
            try:
                outputs.publish()
            except CacheDirError as exc:
                raise fail(f"{exc}" + (" (the tree was written)" if write_changes and result.changes else "")) from None
    if not keys_kept:
        err.print("refused: the migration changes what the tree warms (nothing written)", highlight=False)
        raise typer.Exit(1)
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    for path, why in result.skipped.items():
        err.print(f"[yellow]skipped[/] {escape(path)}: {escape(why)}", highlight=False)
    for difference in result.differences():
        err.print(f"[cyan]intended difference:[/] {escape(difference)}", highlight=False)
    for lift in result.lifts:
        err.print(f"[cyan]lifted:[/] {escape(lift)}", highlight=False)
    for leftover in result.leftovers:
        err.print(f"[cyan]left in place:[/] {escape(leftover)}", highlight=False)
    summary = result.report()
    counts = (
        f"{len(summary['changed'])} changed, {len(summary['deleted'])} deleted, {len(summary['skipped'])} "
        f"skipped ({result.seconds:.2f} s)"
    )
    if write_changes:
        err.print(f"wrote: {counts}", highlight=False)
    elif check:
        for change in result.changes:
            print(f"would change: {change.path.relative_to(repo).as_posix()}")
        err.print(f"check: {counts}", highlight=False)
        raise typer.Exit(1 if result.changes else 0)
    else:
        print_diff(result, out)
        err.print(f"dry run (--write applies): {counts}", highlight=False)


def _say(text: str) -> None:
    err.print(escape(text), highlight=False)


def _keys_checked(result, strict: bool) -> dict:
    """The --verify-keys check. For --pr-body alone, a check the engine-tree runner cannot run on this tree (a
    fork whose warmup reads what the runner does not model) is reported in the body, not fatal."""
    try:
        return migration_keys_check(result)
    except Exception as exc:  # noqa: BLE001 - the engine-tree runner models what vLLM's releases read, no more
        why = f"could not be run on this tree ({type(exc).__name__}: {exc})"
        if strict:
            raise fail(f"--verify-keys: the key check {why}; nothing was written") from None
        return {family: why for family in result.families}


def _keys_kept(checked: dict) -> bool:
    """One line per family on whether the planned migration keeps its keys (a table when not); all kept?"""
    for family, report in checked.items():
        if isinstance(report, str):
            err.print(f"keys: {escape(family)}: {escape(report)}", highlight=False)
            continue
        if report is None:
            err.print(f"keys: {escape(family)}: no engine-tree adapter, not checked", highlight=False)
            continue
        verdict = "no unexplained difference" if report.ok else f"{len(report.mismatches)} unexplained mismatches"
        at = f" (at the tree's defaults: {', '.join(report.defaults)})" if report.defaults else ""
        err.print(f"keys: {escape(family)}: {report.configs} configs, {verdict}{escape(at)}", highlight=False)
        if not report.ok:
            err.print(equivalence_table(report))
            return False
    return True


def _progress(console: Console):
    """A progress bar for runs with many files to transform (none for a handful, or when not on a terminal)."""
    state: dict = {}

    def update(done: int, total: int) -> None:
        if total < 20 or not console.is_terminal:
            return
        if "bar" not in state:
            from rich.progress import Progress

            state["bar"] = Progress(console=console, transient=True)
            state["bar"].start()
            state["task"] = state["bar"].add_task("migrate", total=total)
        state["bar"].update(state["task"], completed=done)
        if done == total:
            state["bar"].stop()

    return update
