"""Apply migration specs to a repo: discover, plan, transform in parallel, check, then write.

The run is all-or-nothing. Planning reads every `.py` file as text and keeps only those
that mention a spec's identifiers (most of a large repo never reaches a parser); those
are parsed with `ast` to resolve imports against each module's own package. The libcst
transforms then run per file (in a process pool with -j), every output is re-parsed and
byte-compiled, and only then is anything written: each file through a temporary file and
an atomic rename, deletions last. Files outside the repo are never touched.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import os
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import libcst as cst

from .spec import MigrationSpec, SpecError
from .transforms import (AnchorError, InsertRegistration, Operation, RemoveLegacyCalls, RenameSingleton,
                         absolute_module, apply)

SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules", "build", "dist"}


class MigrationError(RuntimeError):
    """The migration cannot be planned or checked; nothing was written."""


@dataclasses.dataclass
class FileChange:
    path: Path
    before: str | None  # None: created
    after: str | None   # None: deleted

    def diff(self, repo: Path) -> str:
        rel = self.path.relative_to(repo).as_posix()
        return "".join(difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), (self.after or "").splitlines(keepends=True),
            fromfile=f"a/{rel}" if self.before is not None else "/dev/null",
            tofile=f"b/{rel}" if self.after is not None else "/dev/null"))


@dataclasses.dataclass
class MigrationResult:
    repo: Path
    families: list[str]
    changes: list[FileChange]
    transforms: Counter
    files_scanned: int
    files_parsed: int  # with `ast`, for planning; only the files that passed the text prefilter
    seconds: float

    def report(self) -> dict:
        rel = lambda c: c.path.relative_to(self.repo).as_posix()  # noqa: E731
        return {
            "repo": str(self.repo),
            "families": self.families,
            "changed": sorted(rel(c) for c in self.changes if c.before is not None and c.after is not None),
            "created": sorted(rel(c) for c in self.changes if c.before is None),
            "deleted": sorted(rel(c) for c in self.changes if c.after is None),
            "transforms": dict(sorted(self.transforms.items())),
            "files_scanned": self.files_scanned,
            "files_parsed": self.files_parsed,
            "seconds": round(self.seconds, 3),
        }


@dataclasses.dataclass
class _Module:
    name: str
    path: Path
    text: str
    package: str
    _tree: ast.Module | None = None

    @property
    def tree(self) -> ast.Module:
        if self._tree is None:
            try:
                self._tree = ast.parse(self.text, filename=str(self.path))
            except SyntaxError as exc:
                raise MigrationError(f"{self.path}:{exc.lineno}: does not parse: {exc.msg}") from None
        return self._tree


def discover(repo: Path) -> dict[str, _Module]:
    """Every module under the repo root, by dotted name (`vllm/a/b.py` is `vllm.a.b`)."""
    modules: dict[str, _Module] = {}
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            path = Path(dirpath, filename)
            parts = path.relative_to(repo).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            package = name if is_package else ".".join(parts[:-1])
            modules[name] = _Module(name, path, path.read_text(encoding="utf-8"), package)
    return modules


def _resolve(node: ast.ImportFrom, package: str) -> str:
    return absolute_module(node.level, node.module or "", package)


def _defines(module: _Module, name: str) -> bool:
    return any(isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Name) and t.id == name for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
        for node in module.tree.body)


class _Planner:
    def __init__(self, repo: Path, specs: list[MigrationSpec]):
        self.repo, self.specs = repo, specs
        self.modules = discover(repo)
        words = {word for spec in specs for word in spec.identifiers()}
        self.candidates = {name: m for name, m in self.modules.items() if any(w in m.text for w in words)}
        self.ops: dict[str, list[Operation]] = {}
        self.deleted: set[str] = set()

    def module(self, spec: MigrationSpec, field: str) -> _Module:
        name = getattr(spec, field)
        if name not in self.modules:
            raise SpecError(f"{spec.family}: {field} {name!r} not found under {self.repo}")
        return self.modules[name]

    def add(self, module: str, op: Operation) -> None:
        self.ops.setdefault(module, []).append(op)

    def plan(self) -> None:
        for spec in self.specs:
            self._plan_rename(spec)
            self._plan_registration(spec)
        for legacy, specs in _group(self.specs, "legacy_module").items():
            self._plan_legacy(legacy, specs)

    def _plan_rename(self, spec: MigrationSpec) -> None:
        home = self.module(spec, "singleton_module")
        if not (_defines(home, spec.singleton) or _defines(home, spec.private_singleton)):
            raise SpecError(f"{spec.family}: singleton {spec.singleton!r} is not defined in {home.name}")
        # Exporters: the defining module, and packages that re-export it (TYPE_CHECKING
        # imports, lazy-export tables). Everyone else only imports it.
        exporters = {home.name} | {m.name for m in self.candidates.values()
                                   if m.path.name == "__init__.py" and spec.singleton in m.text}
        for module in self.candidates.values():
            if spec.singleton not in module.text:
                continue
            imported_bare, aliases = False, set()
            for node in ast.walk(module.tree):
                if isinstance(node, ast.ImportFrom):
                    source = _resolve(node, module.package)
                    for alias in node.names:
                        if source in exporters and alias.name == spec.singleton and alias.asname is None:
                            imported_bare = True
                        if f"{source}.{alias.name}" in exporters:
                            aliases.add(alias.asname or alias.name)
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name in exporters:
                            aliases.add(alias.asname or alias.name)
            is_exporter = module.name in exporters
            self.add(module.name, RenameSingleton(
                spec.singleton, spec.private_singleton, frozenset(exporters), module.package,
                bare=is_exporter or imported_bare, strings=is_exporter, module_aliases=frozenset(aliases)))

    def _plan_registration(self, spec: MigrationSpec) -> None:
        home = self.module(spec, "construction_module")
        classes = [n for n in ast.walk(home.tree) if isinstance(n, ast.ClassDef) and n.name == spec.construction_class]
        if not classes:
            raise SpecError(f"{spec.family}: construction_class {spec.construction_class!r} not found in {home.name}")
        imports = spec.gate_imports
        if home.name != spec.singleton_module and not self._imports_bare(home, spec):
            # The registration names the private singleton: the constructor's module must bind it.
            imports += (f"from {spec.singleton_module} import {spec.private_singleton}",)
        self.add(home.name, InsertRegistration(spec.construction_class, spec.gate, spec.registration,
                                               spec.insert_after, imports))

    @staticmethod
    def _imports_bare(module: _Module, spec: MigrationSpec) -> bool:
        """Whether `module` binds the singleton under its own name (renamed along with it)."""
        return any(isinstance(node, ast.ImportFrom) and any(
            alias.name in (spec.singleton, spec.private_singleton) and alias.asname is None for alias in node.names)
            for node in ast.walk(module.tree))

    def _plan_legacy(self, legacy_name: str, specs: list[MigrationSpec]) -> None:
        """Remove the steps these specs migrate; delete the module (and its call) once its entry is empty."""
        spec = specs[0]
        orchestrator = self.module(spec, "orchestrator_module")
        if legacy_name not in self.modules:
            if spec.legacy_function in orchestrator.text and legacy_name.rsplit(".", 1)[-1] in orchestrator.text:
                raise SpecError(f"{spec.family}: legacy_module {legacy_name!r} is imported by {orchestrator.name} "
                                "but not found under the repo")
            return  # already migrated
        legacy = self.modules[legacy_name]
        entry = next((n for n in legacy.tree.body if isinstance(n, ast.FunctionDef) and n.name == spec.legacy_function),
                     None)
        if entry is None:
            raise SpecError(f"{spec.family}: legacy_function {spec.legacy_function!r} not found in {legacy_name}")
        steps = {s.legacy_step for s in specs if s.legacy_step}
        if len(steps) < len(specs):  # a spec whose entry is the step: the whole module goes
            body_left = []
        else:
            for step in steps:
                if not any(isinstance(n, ast.FunctionDef) and n.name == step for n in legacy.tree.body):
                    raise SpecError(f"{spec.family}: legacy_step {step!r} not found in {legacy_name}")
            body_left = [s for s in entry.body if not (
                isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name)
                and s.value.func.id in steps) and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if body_left:
            self.add(legacy_name, RemoveLegacyCalls(frozenset(steps), "", legacy.package, remove_defs=True))
            return
        self.deleted.add(legacy_name)
        self.add(orchestrator.name, RemoveLegacyCalls(frozenset({spec.legacy_function}), legacy_name,
                                                      orchestrator.package))


def _group(specs: list[MigrationSpec], field: str) -> dict[str, list[MigrationSpec]]:
    groups: dict[str, list[MigrationSpec]] = {}
    for spec in specs:
        groups.setdefault(getattr(spec, field), []).append(spec)
    return groups


def _transform(job: tuple[str, str, list[Operation]]) -> tuple[str, str | None, Counter, str | None]:
    """Worker: one file's operations. Returns (path, new source, counts, error)."""
    path, source, ops = job
    try:
        new, counts = apply(source, ops)
    except cst.ParserSyntaxError as exc:
        return path, None, Counter(), f"{path}:{exc.raw_line}: does not parse: {exc.message}"
    except AnchorError as exc:
        return path, None, Counter(), f"{path}: {exc}"
    return path, new, counts, None


def _check_output(path: Path, source: str) -> None:
    try:
        cst.parse_module(source)
        compile(source, str(path), "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError) as exc:
        raise MigrationError(f"{path}: the migrated file would not compile ({exc}); nothing was written") from None


def migrate(repo: Path, specs: list[MigrationSpec], jobs: int = 1) -> MigrationResult:
    """Plan and check every edit; write nothing (see `write`)."""
    started = time.perf_counter()
    repo = Path(repo).resolve()
    if not repo.is_dir():
        raise MigrationError(f"--repo {repo} is not a directory")
    planner = _Planner(repo, specs)
    planner.plan()
    jobs_list = [(str(planner.modules[name].path), planner.modules[name].text, ops)
                 for name, ops in sorted(planner.ops.items()) if name not in planner.deleted]
    if jobs > 1 and len(jobs_list) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_transform, jobs_list))
    else:
        results = [_transform(job) for job in jobs_list]
    errors = [error for _, _, _, error in results if error]
    if errors:
        raise MigrationError("; ".join(errors) + "; nothing was written")
    changes, counts = [], Counter()
    for path, new, file_counts, _ in results:
        counts.update(file_counts)
        old = Path(path).read_text(encoding="utf-8")
        if new != old:
            _check_output(Path(path), new)
            changes.append(FileChange(Path(path), old, new))
    for name in sorted(planner.deleted):
        module = planner.modules[name]
        changes.append(FileChange(module.path, module.text, None))
        counts["delete_legacy_module"] += 1
    for change in changes:
        if not change.path.resolve().is_relative_to(repo):
            raise MigrationError(f"{change.path} lies outside the repo {repo}; nothing was written")
    parsed = sum(m._tree is not None for m in planner.modules.values())
    return MigrationResult(repo, [s.family for s in specs], changes, counts, len(planner.modules), parsed,
                           time.perf_counter() - started)


def write(result: MigrationResult) -> None:
    """Write every change atomically: all new contents to temporary files first, then rename."""
    staged: list[tuple[Path, Path]] = []
    try:
        for change in result.changes:
            if change.after is not None:
                tmp = change.path.with_name(f".{change.path.name}.zerojit-tmp")
                tmp.write_text(change.after, encoding="utf-8")
                staged.append((tmp, change.path))
    except OSError:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, target in staged:
        os.replace(tmp, target)
    for change in result.changes:
        if change.after is None:
            change.path.unlink()
