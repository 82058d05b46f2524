"""What a command does beyond one call into a family or codemod service, as plain functions.

Choosing a migrate run's specs and the paths that restrict it, holding a repo's migration
lock (rolling back an interrupted --write first), baking presets in processes of their own,
writing a survey's draft specs. Plain values in and out, no rich: the commands render.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from zerojit.codemods.errors import MigrationError
from zerojit.codemods.spec import MigrationSpec, SpecError, load_specs
from zerojit.contract.cache import CacheDirError
from zerojit.contract.storage import can_write

from ..families import get_preset, migration_specs
from .outputs import Outputs


def split_targets(tokens: list[str], known: set[str], repo: Path) -> tuple[list[str], list[Path]]:
    """Positional arguments: spec family names, and paths or globs that restrict the run."""
    families, paths = [], []
    for token in tokens:
        if token in known:
            families.append(token)
            continue
        matches = (
            sorted(Path().glob(token) if not Path(token).is_absolute() else Path("/").glob(token.lstrip("/")))
            if any(c in token for c in "*?[")
            else [Path(token)]
            if Path(token).exists()
            else []
        )
        if not matches and not Path(token).is_absolute() and (repo / token).exists():
            matches = [repo / token]
        if not matches:
            raise SpecError(f"{token!r} is neither a known family ({', '.join(sorted(known))}) nor an existing path")
        paths += matches
    return families, paths


def chosen_migrations(
    targets: list[str], repo: Path, spec_file: Path | None, recover: bool
) -> tuple[list[MigrationSpec], list[Path]]:
    """The specs a migrate run applies (named ones; else every spec of --spec) and the paths that restrict it.

    The installed families' specs, with --spec's on top; no spec at all is refused unless the
    run only recovers.
    """
    specs = migration_specs()
    from_file = []
    if spec_file is not None:
        loaded = load_specs(spec_file)
        specs.update({spec.family: spec for spec in loaded})
        from_file = [spec.family for spec in loaded]
    names, only = split_targets(targets, set(specs), repo)
    names = names or from_file
    if not names and not recover:
        raise SpecError(f"name at least one family; known: {', '.join(sorted(specs))}")
    return [specs[name] for name in names], only


@contextmanager
def migration_lock(repo: Path, exclusive: bool, recover: bool, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the repo's migration lock (exclusive for a --write or --recover), waiting for another run if one holds it.

    An interrupted --write left a journal: an exclusive run rolls it back first, any other run
    is refused (it would read half-written files).
    """
    from zerojit.codemods import transaction  # only a migrate run loads the codemods

    with transaction.locked(repo, exclusive, on_wait=lambda: say(f"waiting for another zerojit migrate on {repo} ...")):
        if transaction.pending(repo):
            if not exclusive:
                raise MigrationError(
                    f"an interrupted --write left a journal ({transaction.pending(repo)}); run "
                    "`zerojit migrate --recover --repo REPO` (or --write) to roll it back"
                )
            restored = transaction.recover(repo)
            say(f"recovered an interrupted migration: rolled back {restored} files")
        elif recover:
            say("no interrupted migration to recover")
        yield


class BakeError(Exception):
    """A preset's warmup for a bake ended before it could report (the warmup's own last error line)."""


def bake_processes(presets: list[str]) -> list[tuple[str, list[str]]]:
    """The processes a bake runs, in order: each one's backend folder and presets.

    Backends cannot share a process, nor can two targets of one backend; presets of one backend
    and target share one: its DSL import, its forkserver and its compile workers.
    """
    processes: dict[tuple[str, str], list[str]] = {}
    for name in presets:
        family, chosen = get_preset(name)
        processes.setdefault((family.backend_name, chosen.limits.arch), []).append(chosen.name)
    return [(backend, names) for (backend, _), names in processes.items()]


def bake_in_own_process(presets: list[str], cache_dir: Path, jobs: int, start: str, time_slice: bool) -> list[dict]:
    """Warm `presets` (one backend and target) into `cache_dir` in a process of their own, its compile workers of
    the design `start` and `time_slice` name (contract.workers): each one's report."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from zerojit.migrate.cli.warmup import bake_here; bake_here()",
            str(os.getpid()),
            str(cache_dir),
            str(jobs),
            start,
            "on" if time_slice else "off",
            *presets,
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise BakeError(
            (done.stderr.strip().splitlines() or [f"warmup of {', '.join(presets)} exited {done.returncode}"])[
                -1
            ].removeprefix("error: ")
        )
    return json.loads(done.stdout)


def write_draft_specs(findings, folder: Path, orchestrator: str) -> list[Path]:
    """One TOML spec per kernel a spec or a lift can move, named after the kernel; the files written.

    Every destination is checked before the first is written: the folder must be (or become) a
    writable folder, and no draft overwrites a file that is already there.
    """
    from zerojit.codemods.drafts import draft_specs  # only a survey loads the codemods

    drafts = {
        folder / f"{stem}.toml": text
        for finding in findings
        for stem, text in draft_specs(finding, orchestrator).items()
    }
    if folder.exists() and not folder.is_dir():
        raise CacheDirError(f"--draft-specs {folder} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheDirError(f"--draft-specs {folder}: cannot create it ({exc.strerror or exc})") from None
    if not can_write(folder):
        raise CacheDirError(f"--draft-specs {folder} is not writable")
    existing = [path.name for path in drafts if path.exists() or path.is_symlink()]
    if existing:
        raise CacheDirError(
            f"--draft-specs {folder} already holds {', '.join(existing)}: drafts never overwrite a "
            "spec; move it or choose another folder"
        )
    with Outputs() as outputs:  # all of them or none (a full disk included)
        for path, text in drafts.items():
            outputs.claim(path, "--draft-specs")
            outputs.stage(path, text.encode("utf-8"))
        return outputs.publish()
