"""Writing a migration all-or-nothing, and surviving a kill.

A write first records a journal (the files it will replace or delete, with the digests of
their old and new bytes), keeps a backup of every original, stages every new file beside its
target under a unique name, and only then replaces and deletes. Removing the journal is the
commit. Any failure on the way rolls back what was already replaced. A kill at any moment
leaves each file either original or migrated; the next run that may write (`--write`,
`--recover`) finds the journal, puts every file back as it was and says so, and a `--write`
then migrates from a clean tree. Dry runs and `--check` report the interrupted state
without writing.

The journal lives in `.git/zerojit/` when the repo is a git checkout, otherwise in the
user's cache keyed by the repo's path: a successful run leaves nothing of its own in the
tree. One lock per repo in the same place: a second run waits for the first.

A journal is read as untrusted data (a folder anyone could have put one in): it is used only
when it was written for this repo (its recorded root is this repo), every path it names is
a file inside the repo (symlinks resolved) with its staging name beside it, and every backup
holds the bytes the journal says it does. Otherwise recovery refuses it and touches nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from zerojit.contract.storage import atomic_write, cache_root, can_write, file_lock

from .errors import TransactionError

JOURNAL = "journal.json"
# Seconds between two write steps: none in a run; the kill tests set some, so that a kill can land between any two.
STEP_DELAY = 0.0


@dataclasses.dataclass(frozen=True)
class Write:
    """One file of a migration: new bytes (None: delete it) and the mode to keep."""

    path: Path
    before: bytes
    after: bytes | None
    mode: int


def state_dir(repo: Path) -> Path:
    repo = Path(repo).resolve()
    if (repo / ".git").is_dir():
        return repo / ".git" / "zerojit"
    key = hashlib.sha256(str(repo).encode()).hexdigest()[:16]
    return cache_root() / "journals" / key


@contextlib.contextmanager
def locked(repo: Path, exclusive: bool, on_wait: Callable[[], None] = lambda: None) -> Iterator[None]:
    """Hold the repo's migration lock (exclusive to write, shared to read); `on_wait` runs if it must wait."""
    folder = state_dir(repo)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exclusive:
            raise TransactionError(
                f"{repo} cannot be written: zerojit's state folder {folder} cannot be created "
                f"({exc.strerror or exc}); nothing was written"
            ) from None
        yield  # nobody can write a repo whose state folder cannot even be made: a reader needs no lock
        return
    odd = [
        path
        for path in (folder / "lock", folder / JOURNAL, folder / "backup")
        if (path.exists() or path.is_symlink())
        and not (path.is_dir() if path.name == "backup" else path.is_file())
        or path.is_symlink()
    ]
    if odd:
        raise TransactionError(
            f"zerojit's state folder {folder} holds {odd[0]}, which is not what zerojit keeps there: remove it"
        )
    with file_lock(folder / "lock", shared=not exclusive, on_wait=on_wait):
        yield


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _pause() -> None:
    if STEP_DELAY:
        time.sleep(STEP_DELAY)


def pending(repo: Path) -> Path | None:
    """The journal of an interrupted write, if one is there."""
    journal = state_dir(repo) / JOURNAL
    return journal if journal.is_file() else None


def _journal_entries(repo: Path, journal: Path) -> list[dict]:
    """The journal's entries, each checked to be this repo's (see the module docstring); else TransactionError."""

    def refuse(why: str) -> TransactionError:
        return TransactionError(
            f"the journal {journal} was not written for this repo by zerojit ({why}); "
            "nothing was touched: check it, then remove it"
        )

    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise refuse(f"unreadable: {exc}") from None
    root = Path(repo).resolve()
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("files"), list)
        or not isinstance(data.get("repo"), str)
        or Path(data["repo"]).resolve() != root
    ):
        raise refuse(f"it records the repo {data.get('repo') if isinstance(data, dict) else None!r}")
    backups = state_dir(repo) / "backup"
    for index, entry in enumerate(data["files"]):
        if not (
            isinstance(entry, dict)
            and entry.get("index") == index
            and isinstance(entry.get("path"), str)
            and isinstance(entry.get("temp"), str)
            and isinstance(entry.get("mode"), int)
            and 0 <= entry["mode"] <= 0o777
            and all(isinstance(entry.get(k), (str, type(None))) for k in ("before", "after"))
        ):
            raise refuse(f"entry {index} is malformed")
        path, temp = Path(entry["path"]), Path(entry["temp"])
        try:
            outside = (
                not path.is_absolute()
                or not path.parent.resolve().is_relative_to(root)
                or (path.is_symlink() and not path.resolve().is_relative_to(root))
            )
            odd = (path.exists() and not path.is_file()) or (temp.exists() and not temp.is_file())
        except (OSError, ValueError) as exc:  # a NUL in the name, a name too long
            raise refuse(f"entry {index} names a path the system refuses ({exc})") from None
        if outside:
            raise refuse(f"it names {path}, outside the repo")
        if odd:
            raise refuse(f"{path} (or its staging file) is not a regular file")
        if temp.parent != path.parent or not (
            temp.name.startswith(f".{path.name}.") and temp.name.endswith(".zerojit-new")
        ):
            raise refuse(f"its staging file {temp} is not beside {path.name}")
        # Every backup is written before the first file is replaced: a replaced file's backup must be whole.
        if _digest(_current(path)) != entry["before"] and _digest(_current(backups / str(index))) != entry["before"]:
            raise refuse(f"the backup of {path} does not hold the bytes it records")
    return data["files"]


def recover(repo: Path) -> int:
    """Put every file of an interrupted write back as it was; returns how many had changed. Hold the lock."""
    folder = state_dir(repo)
    journal = folder / JOURNAL
    restored = 0
    if journal.is_file():
        entries = _journal_entries(repo, journal)
        changed_since = [
            e["path"] for e in entries if _digest(_current(Path(e["path"]))) not in (e["before"], e["after"])
        ]
        if changed_since:
            raise TransactionError(
                f"an interrupted migration's journal ({journal}) lists files changed since: "
                f"{', '.join(changed_since)}; restore them from {folder / 'backup'} by hand"
            )
        for entry in entries:
            path, temp = Path(entry["path"]), Path(entry["temp"])
            temp.unlink(missing_ok=True)
            if _digest(_current(path)) != entry["before"]:
                backup = folder / "backup" / str(entry["index"])
                atomic_write(path, backup.read_bytes(), mode=entry["mode"], temp=temp)
                restored += 1
        journal.unlink()
    shutil.rmtree(folder / "backup", ignore_errors=True)
    return restored


def commit(repo: Path, writes: Sequence[Write]) -> None:
    """Write every change or none (see the module docstring). Hold the lock."""
    folder = state_dir(repo)
    with contextlib.suppress(OSError):  # `locked` makes it; a write without the lock may find none (refused below)
        folder.mkdir(parents=True, exist_ok=True)
    unwritable = sorted({str(w.path.parent) for w in writes if not can_write(w.path.parent)})
    if unwritable or not can_write(folder):
        raise TransactionError(f"cannot write {', '.join(unwritable) or folder} (read-only); nothing was written")
    backups = folder / "backup"
    shutil.rmtree(backups, ignore_errors=True)  # left by a run killed after its commit point
    backups.mkdir(parents=True)
    token = f"{os.getpid()}.{secrets.token_hex(4)}"
    entries = [
        {
            "index": i,
            "path": str(w.path),
            "temp": str(w.path.with_name(f".{w.path.name}.{token}.zerojit-new")),
            "before": _digest(w.before),
            "after": _digest(w.after),
            "mode": w.mode,
        }
        for i, w in enumerate(writes)
    ]
    staged = folder / f"{JOURNAL}.{token}"
    staged.write_text(json.dumps({"repo": str(repo), "files": entries}, indent=1))
    os.replace(staged, folder / JOURNAL)
    try:
        for entry, write in zip(entries, writes):
            (backups / str(entry["index"])).write_bytes(write.before)
        for entry, write in zip(entries, writes):
            if write.after is not None:
                _pause()
                with open(entry["temp"], "wb") as out:
                    out.write(write.after)
                os.chmod(entry["temp"], write.mode)
        for entry, write in zip(entries, writes):
            _pause()
            if write.after is None:
                write.path.unlink()
            else:
                os.replace(entry["temp"], write.path)
    except OSError as exc:
        recover(repo)
        raise TransactionError(
            f"could not write {getattr(exc, 'filename', None) or exc}: "
            f"{exc.strerror or exc}; rolled back, every file is as it was"
        ) from None
    _pause()
    (folder / JOURNAL).unlink()  # the commit point
    shutil.rmtree(backups, ignore_errors=True)
