"""Apply migration specs to a repo: discover, plan, transform in parallel, gate, then write.

The run is all-or-nothing. The planner (codemods.planner) reads the repo as text and turns
the specs into each file's operations; the libcst transforms then run per file in the worker
pool (codemods.pool) with the per-file half of the safety gate (codemods.gate), the repo-wide
half runs over every candidate, and only a run that passes is written, through a journal
(codemods.transaction). Files outside the repo are never touched.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from . import gate, pool, transaction
from .errors import MigrationError
from .leftovers import Leftovers
from .planner import Planner, SourceModule
from .results import FileChange, MigrationResult
from .spec import MigrationSpec, SpecError
from .style import Style, repo_style
from .syntax import where

__all__ = ["MigrationError", "MigrationResult", "check_repo", "migrate", "write"]


@contextlib.contextmanager
def _fewer_collections():
    """No collection in this process while the run plans and gathers, and the youngest generation's less often in
    the workers (they fork inside and collect again: pool.Pool). A run makes millions of AST and libcst nodes that
    live to its end; at the default threshold the collector walks them again and again (about a seventh of a dry
    run), and each collection here holds up the planning the workers wait for. Cycles are collected after."""
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(100_000, *threshold[1:])
    gc.disable()
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if enabled:
            gc.enable()


@_fewer_collections()
def migrate(
    repo: Path,
    specs: list[MigrationSpec],
    jobs: int = 1,
    format_command: Sequence[str] = (),
    respect_gitignore: bool = True,
    only: Sequence[Path] = (),
    on_progress: Callable[[int, int], None] | None = None,
) -> MigrationResult:
    """Plan, apply, format and gate every edit; write nothing (see `write`). Refusals raise MigrationError.

    format_command: a formatter run on each changed file before the gate (stdin to stdout);
    respect_gitignore: in a git checkout, leave out what git ignores; only: files or folders
    that restrict the run; on_progress(done, total): called as each file's transform ends.
    """
    started = time.perf_counter()
    for spec in specs:
        if spec.confirm:
            raise SpecError(
                f"{spec.family}: the spec's confirm list holds {len(spec.confirm)} things a human must "
                f"check first ({spec.confirm[0]}{' ...' if len(spec.confirm) > 1 else ''}); check "
                "them, fix the spec where needed, then empty the list"
            )
    repo = check_repo(repo)
    styles = functools.cache(functools.partial(repo_style, repo))  # by the engine packages, once per run
    with pool.Pool(jobs) as workers:
        planner = Planner(
            repo, specs, respect_gitignore, [Path(p).resolve() for p in only], prefilter=workers.prefilter
        )
        for _ in planner.steps():
            workers.offer(_transforms(planner, format_command, styles))
        transforms = _transforms(planner, format_command, styles)
        checks = [
            pool.CheckJob(_file(m))
            for m in planner.candidates.values()
            if m.name not in planner.ops and m.name not in planner.deleted
        ]
        left = Leftovers(planner.repo_model(specs[0].kernel.module))

        def read_leftovers(result: pool.TransformResult) -> None:
            module = planner.modules_by_path[result.path]
            clean = result.edit and not (result.edit.refusals or result.violations)  # else the run is refused
            removes = not all(op.adds_only for op in planner.ops[module.name])
            if clean and removes and result.edit.source != module.text:
                left.add(result.path, module.text, result.edit.source)

        results, checked = workers.finish(
            transforms, checks, planner.facts(), read_leftovers, on_progress or (lambda done, total: None)
        )
    transformed = [refusal for result in results if result.edit for refusal in result.edit.refusals]
    errors = [result.error for result in results if result.error]
    if planner.refusals or errors or transformed:
        problems = [*map(str, planner.refusals), *errors, *map(str, transformed)]
        raise MigrationError("refused; nothing was written:\n" + "\n".join(problems), (*planner.refusals, *transformed))
    changes, counts = [], Counter()
    violations = [f for check in checked for f in check.violations]
    notes = [f for check in checked for f in check.warnings]
    warnings: list[str] = list(planner.warnings)
    for result in results:
        counts.update(result.edit.counts)
        warnings += [f"{where(repo, result.path, w.line)}: {w.why}" for w in result.edit.warnings]
        violations += result.violations
        notes += result.warnings
        module = planner.modules_by_path[result.path]
        if result.edit.source != module.text:
            changes.append(FileChange(module.source, result.edit.source))
    for name in sorted(planner.deleted):
        module = planner.modules[name]
        changes.append(FileChange(module.source, None))
        counts["delete_legacy_module"] += 1
    for change in changes:
        if not change.path.resolve().is_relative_to(repo):
            raise MigrationError(f"{change.path} lies outside the repo {repo}; nothing was written")
    violations += gate.check_imports(repo, [(change.path, change.before, change.after) for change in changes])
    if violations:
        raise MigrationError(
            "refused by the safety gate; nothing was written:\n"
            + "\n".join(f.render(repo) for f in sorted(violations, key=lambda f: (str(f.path), f.line)))
        )
    warnings += [f.render(repo) for f in notes]
    texts = {m.path: m.text for m in planner.modules.values() if m.name not in planner.deleted} | {
        c.path: c.after for c in changes if c.after is not None
    }
    parsed = sum(m.parsed for m in planner.modules.values())
    skipped = {path.relative_to(repo).as_posix(): why for path, why in sorted(planner.skipped.items())}
    return MigrationResult(
        repo,
        [s.family for s in specs],
        changes,
        counts,
        len(planner.modules),
        parsed,
        time.perf_counter() - started,
        warnings,
        skipped,
        planner.gate_plans,
        planner.leftovers + left.found(texts),
        planner.lifts,
    )


def _file(module: SourceModule) -> pool.FileJob:
    return pool.FileJob(module.path, module.name, module.package, module.text)


def _transforms(
    planner: Planner, format_command: Sequence[str], styles: Callable[[frozenset[str]], Style]
) -> list[pool.TransformJob]:
    """Each file's transform as planned so far, the largest file first (the order of the run's changes and
    warnings), in the repo's ruff settings, or vLLM's with the engine packages (the modules' first component)
    first-party."""
    style = styles(frozenset(name.split(".")[0] for name in planner.ops)) if planner.ops else None
    jobs = (
        pool.TransformJob(_file(planner.modules[name]), tuple(ops), planner.repo, tuple(format_command), style)
        for name, ops in planner.ops.items()
        if name not in planner.deleted
    )
    return sorted(jobs, key=lambda job: (-len(job.file.source), str(job.file.path)))


def check_repo(repo: Path) -> Path:
    """The checkout root, checked: a folder, and not one inside a package (which would misname every module)."""
    repo = Path(repo).expanduser().resolve()
    if not repo.is_dir():
        raise MigrationError(f"--repo {repo} is not a directory")
    if (repo / "__init__.py").is_file():
        root = repo
        while (root / "__init__.py").is_file():
            root = root.parent
        raise MigrationError(
            f"--repo {repo} is inside the package {repo.relative_to(root).parts[0]}; the checkout "
            f"root (the folder holding it) is {root}"
        )
    return repo


def write(result: MigrationResult) -> None:
    """Write every change or none, through a journal that survives a kill (see codemods.transaction).

    Hold `transaction.locked(repo, exclusive=True)` around migrate + write when other runs may
    touch the same repo (the CLI does).
    """
    transaction.commit(result.repo, [change.write() for change in result.changes])
