"""The repo's own style on the lines a migration writes, and the gate's ruff half.

A migration's output is code a reviewer merges: it should read as if the repo's authors wrote
it. The transforms print what libcst gives them (long lines, imports where they were added),
so after them each changed file goes through ruff, in the repo's settings:
  * imports sorted (ruff's isort fix, `I001`), except in a block the original file had
    unsorted already (a fork's order is its own business);
  * only the changed line ranges formatted (`ruff format --range`, which widens a range to
    the statements it touches): every other line stays byte for byte as it was.
Then the gate compares ruff's findings on the original and migrated file: any new one
(lint, or a changed range ruff format would still rewrite) refuses the run.

The settings are the repo's when its root configures ruff (ruff reads them itself: it runs
in the repo with `--stdin-filename`); a tree without any (a release unpacked from a wheel)
gets vLLM's: ruff's formatter and isort rules, 88 columns, the engine package first-party.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from .errors import MigrationError
from .gate import Finding
from .syntax import kept_lines, source_lines

LINE_LENGTH = 88  # vLLM's (its pyproject.toml [tool.ruff])
GATE_RULES = "E,F,W,I,UP,B"
CONFIG_FILES = ("ruff.toml", ".ruff.toml")


def find_ruff() -> tuple[str, ...]:
    """The ruff command: the one installed beside this Python (its venv), else on PATH, else `python -m ruff`."""
    beside = Path(sys.executable).parent / ("ruff.exe" if os.name == "nt" else "ruff")
    if beside.is_file() and os.access(beside, os.X_OK):
        return (str(beside),)
    on_path = shutil.which("ruff")
    if on_path:
        return (on_path,)
    if importlib.util.find_spec("ruff") is not None:
        return (sys.executable, "-m", "ruff")
    raise MigrationError(
        "ruff is not installed (zerojit formats and checks what it writes with it): pip install 'ruff>=0.5'"
    )


def configures_ruff(repo: Path) -> bool:
    """Does the repo's root hold ruff settings (ruff.toml, .ruff.toml, or pyproject.toml with [tool.ruff])?"""
    if any((repo / name).is_file() for name in CONFIG_FILES):
        return True
    pyproject = repo / "pyproject.toml"
    if not pyproject.is_file():
        return False
    try:
        return "ruff" in tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
        return True  # ruff reads it too, and says what is wrong with it


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    line: int
    end_line: int
    edits: tuple[tuple[int, int, int, int, str], ...] = ()  # ruff's fix: (row, column, end row, end column, text)

    @property
    def key(self) -> tuple[str, str]:
        """What makes two findings the same one, wherever they are: the code and the message without line numbers."""
        return self.code, re.sub(r"\bline \d+", "line", self.message)


@dataclasses.dataclass(frozen=True)
class Style:
    """How ruff runs on a repo's files (frozen and small: it travels to the worker processes)."""

    ruff: tuple[str, ...]
    repo: Path
    settings: tuple[str, ...]  # ruff options: () when the repo configures ruff itself

    def _run(self, args: Sequence[str], path: Path, source: str) -> str:
        rel = path.relative_to(self.repo).as_posix() if path.is_absolute() else str(path)
        command = [*self.ruff, *args, "--no-cache", *self.settings, "--stdin-filename", rel, "-"]
        try:  # bytes both ways: ruff speaks UTF-8, and a CRLF file keeps its line endings
            done = subprocess.run(
                command, input=source.encode("utf-8"), capture_output=True, cwd=self.repo, timeout=120
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MigrationError(f"ruff {args[0]} on {rel}: {exc}") from None
        if done.returncode != 0:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit {done.returncode}"]
            reason = next((line for line in lines if line.startswith(("error", "ruff failed"))), lines[0])
            raise MigrationError(f"ruff {args[0]} failed on {rel}: {reason}")
        return done.stdout.decode("utf-8")

    def lint(self, path: Path, source: str, rules: str = GATE_RULES) -> list[Diagnostic]:
        """ruff's findings (syntax errors left out: the gate's compile check has those)."""
        found = json.loads(
            self._run(["check", "--select", rules, "--output-format", "json", "--exit-zero"], path, source) or "[]"
        )
        return [
            Diagnostic(
                item["code"],
                item["message"],
                item["location"]["row"],
                item["end_location"]["row"],
                tuple(
                    (
                        e["location"]["row"],
                        e["location"]["column"],
                        e["end_location"]["row"],
                        e["end_location"]["column"],
                        e["content"],
                    )
                    for e in (item["fix"] or {}).get("edits", ())
                ),
            )
            for item in found
            if item["code"]
        ]

    def format(self, path: Path, source: str, lines: tuple[int, int] | None = None) -> str:
        """`ruff format`, of the whole file or of lines (first, last), 1-based and inclusive."""
        # ruff's range ends before its end position: the line after the last one, column 1.
        span = [f"--range={lines[0]}-{lines[1] + 1}"] if lines else []
        return self._run(["format", *span], path, source)


def repo_style(repo: Path, packages: Iterable[str] = ()) -> Style:
    """The repo's ruff settings, or vLLM's (88 columns; `packages`, the engine's, first-party) when it has none.

    Without settings of its own the tree is isolated from any ruff configuration around it
    (a parent folder's, the user's), so the same tree always gets the same style.
    """
    ruff = find_ruff()
    if configures_ruff(repo):
        return Style(ruff, repo, ())
    first_party = json.dumps(sorted(set(packages)))
    return Style(
        ruff,
        repo,
        (
            "--isolated",
            "--config",
            f"line-length={LINE_LENGTH}",
            "--config",
            f"lint.isort.known-first-party={first_party}",
        ),
    )


def changed_ranges(before: str, after: str) -> list[tuple[int, int]]:
    """The lines of `after` (first, last; 1-based, inclusive) that differ from `before`, in order.

    A deletion leaves no line of its own; its seam is the blank lines around where it was
    (none: nothing to format there), so the blank lines between what it joined are checked.
    """
    old, new = source_lines(before), source_lines(after)
    ranges: list[tuple[int, int]] = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("insert", "replace"):
            ranges.append((j1 + 1, j2))
        elif tag == "delete":
            first, last = j1, j1  # the blank lines new[first:last] around the seam
            while first > 0 and not new[first - 1].strip():
                first -= 1
            while last < len(new) and not new[last].strip():
                last += 1
            if last > first:
                ranges.append((first + 1, last))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _apply(source: str, edits: Iterable[tuple[int, int, int, int, str]]) -> str:
    """ruff's fix edits applied (rows and columns 1-based, columns in characters), last first."""
    starts = [0]
    for line in source_lines(source, keepends=True):
        starts.append(starts[-1] + len(line))
    offset = lambda row, column: starts[min(row, len(starts)) - 1] + column - 1  # noqa: E731
    for row, column, end_row, end_column, text in sorted(edits, reverse=True):
        source = source[: offset(row, column)] + text + source[offset(end_row, end_column) :]
    return source


def sort_imports(
    before: str, after: str, original: Callable[[], Sequence[Diagnostic]], found: Sequence[Diagnostic]
) -> str:
    """`after` with ruff's import sorting, except in the blocks whose kept lines `before` had unsorted (I001).
    `found`: ruff's findings on `after` (the gate's rules hold I001)."""
    unsorted = [d for d in found if d.code == "I001" and d.edits]
    if not unsorted:
        return after
    theirs = [(d.line, d.end_line) for d in original() if d.code == "I001"]
    kept = kept_lines(before, after)
    edits = [
        edit
        for d in unsorted
        if not any(
            first <= kept.get(line, 0) <= last for line in range(d.line, d.end_line + 1) for first, last in theirs
        )
        for edit in d.edits
    ]
    return _apply(after, edits)


def _first_difference(a: str, b: str) -> int:
    """The first line (1-based) where two texts differ."""
    for number, (x, y) in enumerate(zip(source_lines(a, keepends=True), source_lines(b, keepends=True)), 1):
        if x != y:
            return number
    return min(len(source_lines(a)), len(source_lines(b))) + 1


def restyle(
    style: Style,
    path: Path,
    before: str,
    after: str,
    original: Callable[[], Sequence[Diagnostic]],
    found: Sequence[Diagnostic],
) -> str:
    """The migrated file in the repo's style: imports sorted (where the original's were), the changed ranges formatted.

    original: ruff's findings on `before` (its unsorted import blocks keep their order), asked for only when needed;
    found: its findings on `after` (`lint`: the gate's rules, I001 among them).
    Ranges are formatted last to first, so the earlier ones keep their line numbers; ruff
    widens a range to whole statements, and a widening that reached up into an earlier range
    has formatted that part of it already.
    """
    source = sort_imports(before, after, original, found)
    limit = len(source_lines(source)) + 1  # lines from here on are formatted already
    for start, end in reversed(changed_ranges(before, source)):
        end = min(end, limit - 1)
        if start > end:
            continue
        formatted = style.format(path, source, (start, end))
        if formatted != source:
            limit = min(start, _first_difference(source, formatted))
            source = formatted
    return source


def _finding_lines(found: Sequence[Diagnostic], lines: list[str]) -> Counter:
    """How many lines of each text hold each kind of finding."""
    return Counter((d.key, _text(lines, d.line)) for d in found)


def _text(lines: list[str], number: int) -> str:
    return lines[number - 1] if 0 < number <= len(lines) else ""


def check(
    style: Style,
    path: Path,
    before: str,
    after: str,
    original: Callable[[], Sequence[Diagnostic]],
    found: Sequence[Diagnostic] | None = None,
) -> list[Finding]:
    """The gate's ruff half: findings in `after` that `before` did not have (original: ruff's findings on before,
    asked for only when `after` has some; found: those on `after`, where they were linted already).

    Lint findings are compared as a multiset of (code, message); a new one is reported where
    the migration changed lines when it can be. Formatting: a changed range ruff format would
    still rewrite, or, for an original ruff format left as it was, any line it would rewrite.
    """
    ranges = changed_ranges(before, after)
    changed = {line for start, end in ranges for line in range(start, end + 1)}
    found = style.lint(path, after) if found is None else found
    new = Counter(d.key for d in found) - Counter(d.key for d in original()) if found else Counter()
    # A line the migration copied as it was (a comment a dispatcher takes along) brings its finding with it.
    lines = source_lines(after)
    was, now = (_finding_lines(original(), source_lines(before)), _finding_lines(found, lines)) if new else ({}, {})
    copies = {line: count - was[line] for line, count in now.items() if count > was[line] > 0}
    for (key, _), count in copies.items():
        new[key] -= count
    new = +new
    findings = []
    for key, count in new.items():
        candidates = sorted(
            (d for d in found if d.key == key),
            key=lambda d: ((d.key, _text(lines, d.line)) in copies, d.line not in changed, d.line),
        )
        findings += [Finding(path, d.line, f"ruff {d.code} {d.message}") for d in candidates[:count]]
    formatted = style.format(path, after)
    if formatted != after:
        unformatted = [(start, end) for start, end in ranges if style.format(path, after, (start, end)) != after]
        findings += [
            Finding(path, start, f"ruff format would reformat lines {start}-{end}, which the migration wrote")
            for start, end in unformatted
        ]
        if not unformatted and style.format(path, before) == before:
            line = _first_difference(after, formatted)
            findings.append(
                Finding(path, line, f"ruff format would reformat line {line} (the original file was formatted)")
            )
    return findings
