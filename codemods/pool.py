"""The worker pool: each changed file's transforms, style, formatter and per-file gate; the reference check of all.

A file's transform starts as soon as a planning step has given it its operations, so the
workers run while the planner goes on (`Pool.offer`). A later step that gives the file
another operation offers it again, and the earlier run is cancelled, or its result dropped:
every file's result is that of the job it has once planning ends, the same as transforming
after planning. The reference check reads what the whole plan deletes and renames, so it
runs once planning ends, on every file. Workers receive and return small frozen dataclasses
(they are pickled to and from the processes); with one job, everything runs in this process.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import shlex
import subprocess
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path

import libcst as cst

from . import files, gate, style
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


@dataclasses.dataclass(frozen=True)
class CheckResult:
    violations: tuple[gate.Finding, ...]
    warnings: tuple[gate.Finding, ...]


def transform(job: TransformJob) -> TransformResult:
    """Worker: one file's operations, the repo's style on what they changed, the formatter, then the per-file gate."""
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
            # ruff's findings on the original: linted once, and only if asked (a clean migrated file never asks)
            original = functools.cache(functools.partial(job.style.lint, file.path, file.source))
            found = job.style.lint(file.path, edit.source)  # the gate's, and the import sort's (I001)
            source = style.restyle(job.style, file.path, file.source, edit.source, original, found)
            if job.format_command:
                source = _format(job.format_command, job.repo, file.path, source)
            found = found if source == edit.source else None  # linted again where restyling changed the file
            edit = dataclasses.replace(edit, source=source)
        except MigrationError as exc:
            return TransformResult(file.path, None, error=str(exc))
        violations = gate.check_file(file.path, file.source, edit.source)
        try:
            violations += style.check(job.style, file.path, file.source, edit.source, original, found)
        except MigrationError as exc:
            if not violations:  # else the run is refused already, and ruff failing on it says nothing new
                return TransformResult(file.path, None, error=str(exc))
    return TransformResult(file.path, edit, tuple(violations))


def check_unchanged(job: CheckJob, facts: gate.Facts) -> CheckResult:
    """Worker: the safety gate's reference check on a candidate file the migration does not change."""
    file = job.file
    violations, warnings = gate.check_references(file.path, file.module, file.package, file.source, facts)
    return CheckResult(tuple(violations), tuple(warnings))


class Pool:
    """Transforms offered while planning goes on (with more than one job), then every result once it ends.

    While the planner still plans it holds a core, so the offered transforms use one worker fewer than the
    pool has, the costliest first; the rest start as workers free up, or when planning ends (`finish`).
    """

    def __init__(self, jobs: int):
        # A worker collects garbage whatever the state it forks from: its files' trees hold cycles that go with them.
        self._executor = ProcessPoolExecutor(max_workers=jobs, initializer=gc.enable) if jobs > 1 else None
        self._slots = jobs - 1  # transforms in flight while planning goes on
        self._planning = True
        self._wanted: dict[Path, TransformJob] = {}
        self._started: dict[Path, tuple[TransformJob, Future]] = {}
        self._lock = threading.Lock()
        if self._executor is not None:
            # Start the workers now, before the planner reads the repo: forked later, they would share its pages,
            # and each page either side then touches would be copied.
            self._executor.submit(int)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        if self._executor is not None:
            with self._lock:
                self._wanted = {}  # a job that ends during the shutdown starts nothing (the planner may have raised)
            self._executor.shutdown(cancel_futures=True)

    def prefilter(self, paths: list[Path], words: list[str]) -> Future | None:
        """files.prefilter in a worker, started now, while the planner reads the same files (the workers have
        nothing to do yet). None with one job."""
        if self._executor is None:
            return None
        return self._executor.submit(files.prefilter, paths, words)

    def offer(self, transforms: Sequence[TransformJob]) -> None:
        """Each file's job as planned so far: a job that replaces one already started cancels it."""
        if self._executor is not None:
            with self._lock:
                self._wanted = {job.file.path: job for job in transforms}
            self._start()

    def _start(self, _: Future | None = None) -> None:
        """Start wanted jobs, the costliest first, while a slot is free (run again as each one ends)."""
        with self._lock:
            waiting = [job for path, job in self._wanted.items() if self._started.get(path, (None,))[0] != job]
            in_flight = sum(not future.done() for _, future in self._started.values())
            free = max(self._slots - in_flight, 0) if self._planning else len(waiting)
            replaced = [future for path, (_, future) in self._started.items() if path not in self._wanted]
            started = []
            for job in sorted(waiting, key=lambda job: -_cost(job))[:free]:
                replaced += [self._started[job.file.path][1]] if job.file.path in self._started else []
                self._started[job.file.path] = job, self._executor.submit(transform, job)
                started.append(self._started[job.file.path][1])
        # Outside the lock, as both run callbacks here and now: a cancelled future's, and a finished one's. A job
        # replaced, or of a file no longer planned, is cancelled unless it runs (its result is then left unread).
        for future in replaced:
            future.cancel()
        for future in started:
            future.add_done_callback(self._start)

    def finish(
        self,
        transforms: Sequence[TransformJob],
        checks: Sequence[CheckJob],
        facts: gate.Facts,
        on_result: Callable[[TransformResult], None],
        on_progress: Callable[[int, int], None],
    ) -> tuple[list[TransformResult], list[CheckResult]]:
        """Every job's result, in job order, with its reference check; as each transform ends, on_result(result)
        here (while the workers go on) and on_progress(done, total)."""
        with self._lock:
            self._planning = False
        self.offer(transforms)
        if self._executor is None:
            ended = ((job, transform(job)) for job in transforms)
            checking = map(check_unchanged, checks, itertools.repeat(facts))
        else:
            futures = {self._started[job.file.path][1]: job for job in transforms}
            checking = self._executor.map(check_unchanged, checks, itertools.repeat(facts), chunksize=8)
            ended = ((futures[future], future.result()) for future in as_completed(futures))
        results: dict[Path, TransformResult] = {}
        for done, (job, result) in enumerate(ended, 1):
            results[job.file.path] = _with_references(job, result, facts)
            on_result(results[job.file.path])
            on_progress(done, len(transforms))
        return [results[job.file.path] for job in transforms], list(checking)


def _with_references(job: TransformJob, result: TransformResult, facts: gate.Facts) -> TransformResult:
    """The result with the gate's reference check of the file as transformed (none for one refused or failed)."""
    if result.edit is None or result.edit.refusals:
        return result
    file = job.file
    found, warnings = gate.check_references(file.path, file.module, file.package, result.edit.source, facts)
    return dataclasses.replace(result, violations=result.violations + tuple(found), warnings=tuple(warnings))


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
