"""The worker pool: each changed file's transforms, style, formatter and per-file gate; the reference check of the rest.

Workers receive and return small frozen dataclasses (they are pickled to and from the
processes); with one job, or one file to change, everything runs in this process.
"""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import libcst as cst

from . import gate, style
from .errors import MigrationError
from .syntax import where
from .transforms import AnchorError, FileEdit, Operation, apply


@dataclasses.dataclass(frozen=True)
class FileJob:
    """A candidate file as the workers see it."""

    path: Path
    module: str
    package: str
    source: str


@dataclasses.dataclass(frozen=True)
class TransformJob:
    file: FileJob
    operations: tuple[Operation, ...]
    repo: Path
    format_command: tuple[str, ...]
    facts: gate.Facts
    style: style.Style


@dataclasses.dataclass(frozen=True)
class TransformResult:
    path: Path
    edit: FileEdit | None  # None: the file could not be transformed (see error)
    violations: tuple[gate.Finding, ...] = ()
    warnings: tuple[gate.Finding, ...] = ()
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class CheckJob:
    file: FileJob
    facts: gate.Facts


@dataclasses.dataclass(frozen=True)
class CheckResult:
    violations: tuple[gate.Finding, ...]
    warnings: tuple[gate.Finding, ...]


def transform(job: TransformJob) -> TransformResult:
    """Worker: one file's operations, the repo's style on what they changed, the formatter, then the safety gate."""
    file = job.file
    try:
        edit = apply(file.source, job.operations, path=file.path, repo=job.repo)
    except cst.ParserSyntaxError as exc:
        return TransformResult(file.path, None, error=f"{file.path}:{exc.raw_line}: does not parse: {exc.message}")
    except AnchorError as exc:
        place = where(job.repo, file.path, exc.line) if exc.line else file.path.relative_to(job.repo).as_posix()
        return TransformResult(file.path, None, error=f"{place}: {exc}")
    if edit.refusals:
        return TransformResult(file.path, edit)
    violations: list[gate.Finding] = []
    if edit.source != file.source:
        try:
            original = job.style.lint(file.path, file.source)
            source = style.restyle(job.style, file.path, file.source, edit.source, original)
            if job.format_command:
                source = _format(job.format_command, job.repo, file.path, source)
            edit = dataclasses.replace(edit, source=source)
        except MigrationError as exc:
            return TransformResult(file.path, None, error=str(exc))
        violations = gate.check_file(file.path, file.source, edit.source)
        try:
            violations += style.check(job.style, file.path, file.source, edit.source, original)
        except MigrationError as exc:
            if not violations:  # else the run is refused already, and ruff failing on it says nothing new
                return TransformResult(file.path, None, error=str(exc))
    found, warnings = gate.check_references(file.path, file.module, file.package, edit.source, job.facts)
    return TransformResult(file.path, edit, tuple(violations + found), tuple(warnings))


def check_unchanged(job: CheckJob) -> CheckResult:
    """Worker: the safety gate's reference check on a candidate file the migration does not change."""
    file = job.file
    violations, warnings = gate.check_references(file.path, file.module, file.package, file.source, job.facts)
    return CheckResult(tuple(violations), tuple(warnings))


def run(
    transforms: Sequence[TransformJob], checks: Sequence[CheckJob], jobs: int, on_progress: Callable[[int, int], None]
) -> tuple[list[TransformResult], list[CheckResult]]:
    """Every job's result, in job order; on_progress(done, total) as each transform ends.

    The pool takes the costliest transforms first, so that it ends with the cheap ones.
    """
    if jobs > 1 and len(transforms) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {
                index: pool.submit(transform, transforms[index])
                for index in sorted(range(len(transforms)), key=lambda i: -_cost(transforms[i]))
            }
            checked = list(pool.map(check_unchanged, checks, chunksize=8))
            for done, _ in enumerate(as_completed(futures.values()), 1):
                on_progress(done, len(transforms))
            return [futures[index].result() for index in range(len(transforms))], checked
    results: list[TransformResult] = []
    for job in transforms:
        results.append(transform(job))
        on_progress(len(results), len(transforms))
    return results, [check_unchanged(job) for job in checks]


def _cost(job: TransformJob) -> int:
    """A transform's cost, roughly: its file's length, three times over when an operation removes statements
    (each removal leaves a new version of the tree, whose scopes are resolved again)."""
    return len(job.file.source) * (3 if any(op.removes_statements for op in job.operations) else 1)


def _format(command: Sequence[str], repo: Path, path: Path, source: str) -> str:
    """Run a formatter that reads code on stdin and writes it to stdout (`ruff format -`), as libcst's runner does."""
    try:
        done = subprocess.run([*command], input=source, capture_output=True, text=True, cwd=repo, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MigrationError(f"--format {shlex.join(command)}: {exc}") from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        raise MigrationError(f"--format {shlex.join(command)} failed on {path.relative_to(repo)}: {reason}")
    return done.stdout
