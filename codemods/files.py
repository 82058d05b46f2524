"""Source files as they are on disk: which ones a run sees, and how to read and write them unchanged.

Discovery follows `.gitignore` when the repo is a git checkout (`git ls-files`), so a
virtual environment's copy of the engine is never touched; `--no-ignore` walks everything.
Only regular files are read: a FIFO would block, a dangling or escaping symlink has nothing
of the repo's to edit; each skip is noted. A file keeps its declared encoding (PEP 263
cookie or BOM, `tokenize.detect_encoding`), its BOM, its line endings (no newline
translation on read or write) and its mode; one that is not valid in its encoding is
skipped with a note, or refused where the migration needs it.
"""

from __future__ import annotations

import ast
import codecs
import dataclasses
import functools
import io
import os
import stat
import subprocess
import tokenize
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from .heads import Heads

SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", "build", "dist"}


@dataclasses.dataclass(frozen=True)
class SourceFile:
    path: Path
    text: str
    encoding: str  # as Python reads it: "utf-8-sig" when the file starts with a BOM
    mode: int

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)

    @functools.cached_property
    def tree(self) -> ast.Module:
        """The text parsed with `ast` (a SyntaxError as `ast.parse` raises it), once: the planner's modules and the
        repo model it builds share their files, so a file both read is parsed once a run."""
        return ast.parse(self.text, filename=str(self.path))


class UnreadableSource(ValueError):
    """A file that is not valid Python source text in its declared encoding."""


def read_source(path: Path) -> SourceFile:
    data = path.read_bytes()
    try:
        # Most files declare nothing (no BOM, no coding cookie in their first two lines): UTF-8, as tokenize says.
        second_end = data.find(b"\n", data.find(b"\n") + 1)
        head = data if second_end < 0 else data[:second_end]
        plain = not data.startswith(codecs.BOM_UTF8) and b"coding" not in head
        encoding = "utf-8" if plain else tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise UnreadableSource(f"{path}: not readable as Python source ({exc})") from None
    return SourceFile(path, text, encoding, stat.S_IMODE(os.stat(path).st_mode))


def naming(text: str, words: Sequence[str]) -> bool:
    """Whether a text holds one of `words` (the planner's prefilter: the files a migration may read or change)."""
    return any(word in text for word in words)


class Prefiltered(NamedTuple):
    """What a worker's read of a file found for the planner (files.prefilter). A named tuple, as Heads is: the
    answer for thousands of files comes back pickled, and tuples unpickle about ten times faster than dataclasses."""

    length: int  # of the text it read: the planner takes the rest only for a text of the same length
    names_one: bool  # it names one of the words
    heads: Heads


def prefilter(paths: Sequence[Path], words: Sequence[str]) -> list[Prefiltered | None]:
    """For each of `paths`, in order, as read off the disk: whether it names one of `words`, and its class heads (a
    worker's read while the planner reads the same files; None for a file it cannot read). A list, not a dict of
    paths: a path unpickles slowly."""
    found = []
    for path in paths:
        try:
            text = read_source(path).text
        except (OSError, UnreadableSource):
            found.append(None)
            continue
        found.append(Prefiltered(len(text), naming(text, words), Heads.of(text)))
    return found


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def why_skipped(path: Path, repo: Path) -> str | None:
    """Why a path is not a source file the run may read (None: a regular file inside the repo)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "a dangling symlink" if os.path.islink(path) else "missing"
    except OSError as exc:
        return f"cannot stat it ({exc.strerror})"
    if not stat.S_ISREG(info.st_mode):
        kind = next((kind for test, kind in _KINDS if test(info.st_mode)), "")
        return f"{kind}, not a regular file" if kind else "not a regular file"
    if path.is_symlink() and not path.resolve().is_relative_to(repo):
        return "a symlink out of the repo"
    return None


def why_absent(repo: Path, module: str) -> str | None:
    """Why a dotted module has no source file among the run's, when something stands where it would be: a
    folder on its way that is a symlink out of the repo, or a file that is not a regular one. None: nothing
    there."""
    parts = module.split(".")
    for depth in range(1, len(parts)):
        folder = repo.joinpath(*parts[:depth])
        if folder.is_symlink() and not folder.resolve().is_relative_to(repo):
            return f"{folder.relative_to(repo).as_posix()} is a symlink out of the repo"
    base = repo.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if os.path.lexists(candidate):
            why = why_skipped(candidate, repo)
            if why is not None:
                return f"{candidate.relative_to(repo).as_posix()} is {why}"
    return None


def _git_files(repo: Path) -> list[Path] | None:
    """The repo's `.py` files as git sees them (tracked and untracked, ignored ones left out); None: not git."""
    if not (repo / ".git").exists():
        return None
    try:
        listed = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.py"],
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted({repo / name for name in listed.decode("utf-8", "surrogateescape").split("\0") if name})


def discover_paths(repo: Path, respect_gitignore: bool = True) -> tuple[list[Path], dict[Path, str]]:
    """The `.py` files a run may read, and the ones it skips with why."""
    listed = _git_files(repo) if respect_gitignore else None
    if listed is None:
        listed = []
        for dirpath, dirnames, filenames in os.walk(repo):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            listed += [Path(dirpath, f) for f in sorted(filenames) if f.endswith(".py")]
    paths, skipped = [], {}
    for path in listed:
        why = why_skipped(path, repo)
        if why is None:
            paths.append(path)
        elif os.path.lexists(path):
            skipped[path] = why
    return paths, skipped
