"""What every command shares: the two consoles, the common options, and how a user error ends.

A user error (bad input: an unknown preset, a cache folder others can write, a spec that does
not parse, ...) prints one `error: ...` line on stderr and exits 2, before anything compiles;
it never shows a traceback, and its text is never read as rich markup.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from zerojit.codemods.errors import MigrationError
from zerojit.codemods.spec import SpecError
from zerojit.contract.cache import CacheDirError
from zerojit.contract.kernel import BackendConfigError
from zerojit.contract.workers import START_METHODS
from zerojit.migrate.engine_trees.errors import EngineRunError
from zerojit.migrate.engine_trees.sources import NamesOnlyUsed

from ..families import FamilyError

out = Console()
err = Console(stderr=True, soft_wrap=True)  # messages carry paths: never wrap them

PresetOption = typer.Option(..., "--preset", "-p", help="Serving configuration; see `zerojit families`.")
JsonOption = typer.Option(False, "--json", help="Print a JSON document to stdout instead of tables.")
CacheOption = typer.Option(
    None,
    "--cache-dir",
    help="Backend disk cache (default: ~/.cache/zerojit/<backend>). "
    "It holds compiled code the warmup loads: it must be a folder only you can write.",
)


class SettingError(ValueError):
    """An environment variable the CLI reads holds a value it does not know."""


# Bad input a user can give: refused with one line and exit 2, before anything compiles.
USER_ERRORS = (FamilyError, CacheDirError, BackendConfigError, SpecError, MigrationError, SettingError)
# What running an engine tree can refuse with (a missing tree or module, a gate it cannot follow, a stub it lacks).
TREE_ERRORS = (FileNotFoundError, EngineRunError, NamesOnlyUsed)


def fail(message: object, code: int = 2) -> typer.Exit:
    """Print one `error:` line (the text is never read as rich markup) and return the Exit to raise."""
    err.print(f"[red]error:[/] {escape(str(message))}", highlight=False)
    return typer.Exit(code)


@contextmanager
def user_errors(*also: type[Exception], on_bug: str | None = None) -> Iterator[None]:
    """Decorate a command (or wrap a block) so that USER_ERRORS, and the kinds in `also`, end in one `error:` line,
    exit 2.

    on_bug: for a command whose exit 1 carries a meaning (migrate: the keys changed), any other
    exception, a bug, ends in one line too, `internal error (...); <on_bug>`, never in a traceback.
    """
    try:
        yield
    except USER_ERRORS + also as exc:
        raise fail(exc) from None
    except Exception as exc:  # noqa: BLE001 - only with on_bug; an Exit is the command's own verdict
        if on_bug is None or isinstance(exc, typer.Exit):
            raise
        raise fail(f"internal error ({type(exc).__name__}: {exc}); {on_bug}") from None


def worker_design() -> tuple[str, bool]:
    """How compile workers start (one of START_METHODS) and whether they are time-sliced (contract.workers).

    Forkserver and time-sliced, unless ZEROJIT_WORKER_START=spawn or ZEROJIT_TIME_SLICE=off ask for the designs
    before them (bench/variant_warmup.py measures them side by side); any other value is a SettingError.
    """
    start = _setting("ZEROJIT_WORKER_START", START_METHODS)
    return start, _setting("ZEROJIT_TIME_SLICE", ("on", "off")) == "on"


def _setting(name: str, choices: tuple[str, ...]) -> str:
    """The environment variable `name`: one of `choices`, the first when it is not set."""
    value = os.environ.get(name, choices[0])
    if value not in choices:
        raise SettingError(f"{name}={value}: not one of {', '.join(choices)}")
    return value


def print_json(document: object) -> None:
    """The --json output: one indented document on stdout (progress and errors stay on stderr); one `error:` line
    when stdout cannot take it (a full disk, a closed pipe)."""
    try:
        print(json.dumps(document, indent=2), flush=True)
    except OSError as exc:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left for the exit to flush
        raise fail(f"--json: cannot write standard output ({exc.strerror or exc})") from None


def warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    """A `warnings.showwarning` that prints one `warning:` line, never a source excerpt."""
    err.print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False)


def exit_now(code: int | str | None) -> None:
    """Exit as `sys.exit(code)` would, without tearing the interpreter down.

    A command that loaded a DSL holds millions of objects; the interpreter's final garbage
    collections over them take seconds (1.5-3 s on these machines) after the command is done.
    Everything that exit would run still runs: the atexit handlers (logging, multiprocessing's
    finalizers, temporary files, the forkserver's stop), then the output is flushed.
    """
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()  # the handlers, as interpreter exit runs them; os._exit then skips the teardown
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`zerojit plan --json | head`): nothing more to deliver
            pass
    os._exit(code or 0)
