"""Apply migration specs to a repo: discover, plan, transform in parallel, gate, then write.

The run is all-or-nothing. Planning reads every `.py` file the run may see (codemods.files)
as text and keeps only those that mention a spec's identifiers (most of a large repo never
reaches a parser); those are parsed with `ast` to check the spec's anchors. The libcst
transforms then run per file (in a process pool with -j) with the per-file half of the
safety gate (codemods.gate), the repo-wide half runs over every candidate, and only a run
that passes is written, through a journal (codemods.transaction). Files outside the repo
are never touched.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import re
import shlex
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import libcst as cst

from . import gate, transaction
from .files import SourceFile, UnreadableSource, discover_paths, read_source
from .gate import Renamed
from .repo import RepoModules, absolute_module, module_name
from .spec import MigrationSpec, SpecError
from .transaction import Write
from .transforms import (AdoptContract, AnchorError, FileEdit, InsertRegistration, Operation, RemoveLegacyCalls,
                         RenameKernel, apply)

class MigrationError(RuntimeError):
    """The migration cannot be planned or checked; nothing was written."""


@dataclasses.dataclass
class FileChange:
    source: SourceFile  # the file as read: its encoding, BOM and mode are kept
    after: str | None   # None: deleted

    @property
    def path(self) -> Path:
        return self.source.path

    @property
    def before(self) -> str:
        return self.source.text

    def write(self) -> Write:
        """The change as bytes in the file's own encoding (decoding then encoding gives back the bytes read)."""
        return Write(self.path, self.source.encode(self.source.text),
                     None if self.after is None else self.source.encode(self.after), self.source.mode)

    def diff(self, repo: Path) -> str:
        """A unified diff; line endings are the file's own, so a CRLF file's diff shows only the changed lines."""
        rel = self.path.relative_to(repo).as_posix()
        return "".join(difflib.unified_diff(
            self.before.splitlines(keepends=True), (self.after or "").splitlines(keepends=True),
            fromfile=f"a/{rel}", tofile=f"b/{rel}" if self.after is not None else "/dev/null"))


@dataclasses.dataclass
class MigrationResult:
    repo: Path
    families: list[str]
    changes: list[FileChange]
    transforms: Counter
    files_scanned: int
    files_parsed: int  # with `ast`, for planning; only the files that passed the text prefilter
    seconds: float
    warnings: list[str] = dataclasses.field(default_factory=list)  # path:line: what a human should check
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)  # path -> why it was not read

    def report(self) -> dict:
        rel = lambda c: c.path.relative_to(self.repo).as_posix()  # noqa: E731
        return {
            "repo": str(self.repo),
            "families": self.families,
            "changed": sorted(rel(c) for c in self.changes if c.after is not None),
            "deleted": sorted(rel(c) for c in self.changes if c.after is None),
            "skipped": self.skipped,
            "transforms": dict(sorted(self.transforms.items())),
            "files_scanned": self.files_scanned,
            "files_parsed": self.files_parsed,
            "seconds": round(self.seconds, 3),
            "warnings": self.warnings,
        }


@dataclasses.dataclass
class _Module:
    name: str
    source: SourceFile
    package: str
    _tree: ast.Module | None = None

    @property
    def path(self) -> Path:
        return self.source.path

    @property
    def text(self) -> str:
        return self.source.text

    @property
    def tree(self) -> ast.Module:
        if self._tree is None:
            try:
                self._tree = ast.parse(self.text, filename=str(self.path))
            except SyntaxError as exc:
                raise MigrationError(f"{self.path}:{exc.lineno}: does not parse: {exc.msg}") from None
        return self._tree


def discover(repo: Path, respect_gitignore: bool = True, only: Sequence[Path] = ()) \
        -> tuple[dict[str, _Module], dict[Path, str]]:
    """Every readable module of the run by dotted name, and the files skipped with why.

    `only`: files or folders that restrict the run (nothing outside them is read or changed).
    """
    paths, skipped = discover_paths(repo, respect_gitignore)
    modules: dict[str, _Module] = {}
    for path in paths:
        if only and not any(path == root or path.is_relative_to(root) for root in only):
            continue
        try:
            source = read_source(path)
        except UnreadableSource as exc:
            skipped[path] = str(exc).split(": ", 1)[1]
            continue
        name, package = module_name(repo, path)
        modules[name] = _Module(name, source, package)
    return modules, skipped


def _module_defs(module: _Module) -> set[str]:
    """Names a module binds at its top level by assignment or definition (not imports)."""
    names: set[str] = set()
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _imports_of(module: _Module, name: str) -> Iterable[str]:
    """Modules `module` imports `name` from (any depth, any form of relative import)."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names):
            yield absolute_module(module.package, node.module, node.level)


class _Planner:
    """Turns specs into per-file operations, checking every anchor the specs name."""

    def __init__(self, repo: Path, specs: list[MigrationSpec], respect_gitignore: bool = True,
                 only: Sequence[Path] = ()):
        self.repo, self.specs = repo, specs
        self.modules, self.skipped = discover(repo, respect_gitignore, only)
        words = {word for spec in specs for word in spec.identifiers()}
        self.candidates = {name: m for name, m in self.modules.items() if any(w in m.text for w in words)}
        self.ops: dict[str, list[Operation]] = {}
        self.deleted: set[str] = set()
        self.deleted_functions: set[str] = set()
        self.renamed: list[Renamed] = []
        self.modules_by_path = {m.path: m for m in self.modules.values()}

    def module(self, spec: MigrationSpec, field: str, name: str | None = None) -> _Module:
        name = name or getattr(spec, field)
        if name not in self.modules:
            unreadable = [why for path, why in self.skipped.items() if module_name(self.repo, path)[0] == name]
            if unreadable:
                raise SpecError(f"{spec.family}: {field} {name!r} cannot be read: {unreadable[0]}")
            raise SpecError(f"{spec.family}: {field} {name!r} not found under {self.repo}")
        return self.modules[name]

    def add(self, module: str, op: Operation) -> None:
        self.ops.setdefault(module, []).append(op)

    def plan(self) -> None:
        for spec in self.specs:
            self._plan_rename(spec)
        for spec in self.specs:
            self._plan_registration(spec)
        for legacy, specs in _group([s for s in self.specs if s.legacy_module], "legacy_module").items():
            self._plan_legacy(legacy, specs)
        for spec in self.specs:
            if spec.orchestrator_step:
                self._plan_orchestrator_step(spec)

    def migrated(self, spec: MigrationSpec) -> bool:
        """The spec's end state is positively present: every registration inserted, the kernel under its new name."""
        home = self.modules.get(spec.singleton_module)
        if home is None or spec.kernel_name not in _module_defs(home):
            return False
        if spec.private_singleton and spec.singleton in _module_defs(home):
            return False
        # The registration as inserted: the kernel may be named through the module's own alias.
        registration = re.compile(re.escape("".join(spec.registration.split())).replace(
            re.escape(spec.kernel_name), r"[A-Za-z_][A-Za-z0-9_]*"))
        return all(module in self.modules and registration.search("".join(self.modules[module].text.split()))
                   for module, _ in spec.constructions())

    def _plan_rename(self, spec: MigrationSpec) -> None:
        home = self.module(spec, "singleton_module")
        defined = _module_defs(home)
        if spec.singleton not in defined and spec.kernel_name not in defined:
            raise SpecError(f"{spec.family}: singleton {spec.singleton!r} is not defined in {home.name} "
                            "(an assignment, a def or a class at module level)")
        if not spec.private_singleton:
            return
        # Exporters: the defining module, every module that binds the name by importing it
        # from an exporter (to a fixpoint), and packages whose lazy-export table names it.
        exporters = {home.name}
        while True:
            more = {m.name for m in self.candidates.values() if m.name not in exporters and spec.singleton in m.text
                    and (set(_imports_of(m, spec.singleton)) & exporters
                         or (m.path.name == "__init__.py" and f'"{spec.singleton}"' in m.text.replace("'", '"')))}
            if not more:
                break
            exporters |= more
        op = RenameKernel(spec.singleton, spec.private_singleton, frozenset(exporters))
        for module in self.candidates.values():
            if spec.singleton in module.text:
                self.add(module.name, op)
        self.renamed.append(Renamed(spec.singleton, spec.private_singleton, frozenset(exporters)))

    def _plan_registration(self, spec: MigrationSpec) -> None:
        self._check_contract(spec)
        for construction, cls in spec.constructions():
            home = self.module(spec, "construction_module", construction)
            if not any(isinstance(n, ast.ClassDef) and n.name == cls for n in ast.walk(home.tree)):
                raise SpecError(f"{spec.family}: construction_class {cls!r} not found in {home.name}")
            lazy = spec.import_style == "lazy" or (spec.import_style == "auto" and self._imports_lazily(home, spec))
            self.add(home.name, InsertRegistration(
                cls, spec.gate, spec.registration, spec.insert_after, spec.singleton_module, spec.kernel_name, lazy,
                spec.gate_imports, frozenset(spec.binding_names())))

    def _check_contract(self, spec: MigrationSpec) -> None:
        """A registration on a kernel that has no register_warmup would fail when the layer is built: refuse it,
        unless the spec adopts the contract for the kernel's class (which must own its keys and compile)."""
        if not spec.registers_kernel():
            return
        home = self.module(spec, "singleton_module")
        name = spec.singleton if spec.singleton in _module_defs(home) else spec.kernel_name
        modules = RepoModules(self.repo, home.name.split(".")[0])
        reason = modules.off_contract(home.name, name)
        found = modules.kernel_class(home.name, name)
        if reason and spec.contract_base:
            if found is None:
                raise SpecError(f"{spec.family}: contract_base: {name} in {home.name} is not an object of a class "
                                "defined in the repo, so no class can adopt the contract")
            cls_module, cls = found
            missing = [method for method in ("compile", "get_warmup_keys") if modules.method(cls_module, cls, method) is None]
            if missing:
                raise SpecError(f"{spec.family}: contract_base: {cls.name} ({cls_module}:{cls.lineno}) does not define "
                                f"{', '.join(missing)}: the registry could not warm it; that is a kernel "
                                "author's change, not a codemod's")
            base_module, _, base = spec.contract_base.rpartition(":")
            self.module(spec, "contract_base", base_module)
            self.add(cls_module, AdoptContract(cls.name, base_module, base))
        if not reason or spec.contract_base:
            self._check_registration_arguments(spec, modules, found)
        else:
            raise SpecError(f"{spec.family}: the registration calls {spec.kernel_name}.register_warmup(), but "
                            f"{reason}. Put the kernel on the engine's contract first (a class with register_warmup, "
                            "such as vLLM's VllmJitKernel, or a triton_kernel_dispatcher_with_warmup dispatcher), or "
                            "name the contract base in contract_base when its class owns get_warmup_keys and compile")

    @staticmethod
    def _check_registration_arguments(spec: MigrationSpec, modules: RepoModules,
                                      found: tuple[str, ast.ClassDef] | None) -> None:
        """The registry calls `get_warmup_keys(*args, **kwargs)` with what was registered: they must bind."""
        method = found and modules.method(found[0], found[1], "get_warmup_keys")
        if not method:
            return  # not readable in the repo (a decorator's object, another library's class): nothing to check
        call = next(node for node in ast.walk(ast.parse(spec.registration)) if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute) and node.func.attr == "register_warmup")
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return
        signature = _signature(method)
        try:
            signature.bind(None, *call.args, **{k.arg: k.value for k in call.keywords})
        except TypeError as exc:
            if call.args or call.keywords or "vllm_config" not in signature.parameters:
                shown = str(signature).replace("(self, ", "(")
                raise SpecError(f"{spec.family}: the registration's arguments do not fit {found[1].name}."
                                f"get_warmup_keys{shown} ({found[0]}:{method.lineno}), which the registry calls "
                                f"with them: {exc}") from None

    @staticmethod
    def _imports_lazily(module: _Module, spec: MigrationSpec) -> bool:
        """The module imports from the kernel's module only inside functions (never at the top level)."""
        top = {id(n) for n in module.tree.body}
        from_kernel = [n for n in ast.walk(module.tree) if isinstance(n, ast.ImportFrom)
                       and absolute_module(module.package, n.module, n.level) == spec.singleton_module]
        return bool(from_kernel) and not any(id(n) in top for n in from_kernel) and module.name != spec.singleton_module

    def _plan_legacy(self, legacy_name: str, specs: list[MigrationSpec]) -> None:
        """Remove the steps these specs migrate; delete the module (and its calls) once its entry is empty."""
        spec = specs[0]
        orchestrator = self.module(spec, "orchestrator_module")
        if legacy_name not in self.modules:
            for s in specs:
                if not self.migrated(s):
                    raise SpecError(f"{s.family}: legacy_module {legacy_name!r} not found under {self.repo}, and "
                                    "the migrated state (registration inserted, kernel renamed) is not there either")
            return
        legacy = self.modules[legacy_name]
        entry = next((n for n in legacy.tree.body if isinstance(n, ast.FunctionDef) and n.name == spec.legacy_function),
                     None)
        if entry is None:
            raise SpecError(f"{spec.family}: legacy_function {spec.legacy_function!r} not found in {legacy_name}")
        defined = _module_defs(legacy)
        steps = set()
        for s in specs:
            if s.legacy_step and s.legacy_step in defined:
                steps.add(s.legacy_step)
            elif s.legacy_step and not self.migrated(s):
                raise SpecError(f"{s.family}: legacy_step {s.legacy_step!r} not found in {legacy_name}")
        whole = any(not s.legacy_step for s in specs)
        left = [] if whole else [s for s in entry.body if not _calls_one_of(s, steps) and not _is_docstring(s)]
        if left:
            self.add(legacy_name, RemoveLegacyCalls(frozenset(f"{legacy_name}.{step}" for step in steps)))
            self.deleted_functions |= {f"{legacy_name}.{step}" for step in steps}
            return
        self.deleted.add(legacy_name)
        self.add(orchestrator.name, RemoveLegacyCalls(frozenset({f"{legacy_name}.{spec.legacy_function}"}),
                                                      modules=frozenset({legacy_name})))

    def _plan_orchestrator_step(self, spec: MigrationSpec) -> None:
        orchestrator = self.module(spec, "orchestrator_module")
        step = spec.orchestrator_step
        if step not in _module_defs(orchestrator):
            if self.migrated(spec):
                return
            raise SpecError(f"{spec.family}: orchestrator_step {step!r} not found in {orchestrator.name}")
        self.add(orchestrator.name, RemoveLegacyCalls(frozenset({f"{orchestrator.name}.{step}"})))
        if step.startswith("_"):
            self.deleted_functions.add(f"{orchestrator.name}.{step}")


class _Source(str):
    """A default value shown as its source text."""

    __repr__ = str.__str__


def _signature(function: ast.FunctionDef) -> inspect.Signature:
    """A function's parameters as `inspect` sees them, read from its source (defaults as their source text)."""
    arguments, kind = function.args, inspect.Parameter

    def default(node: ast.expr | None) -> object:
        return kind.empty if node is None else _Source(ast.unparse(node))

    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    parameters = [kind(a.arg, kind.POSITIONAL_ONLY if a in arguments.posonlyargs else kind.POSITIONAL_OR_KEYWORD,
                       default=default(d)) for a, d in zip(positional, defaults)]
    if arguments.vararg:
        parameters.append(kind(arguments.vararg.arg, kind.VAR_POSITIONAL))
    parameters += [kind(a.arg, kind.KEYWORD_ONLY, default=default(d))
                   for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)]
    if arguments.kwarg:
        parameters.append(kind(arguments.kwarg.arg, kind.VAR_KEYWORD))
    return inspect.Signature(parameters)


def _calls_one_of(statement: ast.stmt, names: set[str]) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
        and isinstance(statement.value.func, ast.Name) and statement.value.func.id in names


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


def _group(specs: list[MigrationSpec], field: str) -> dict[str, list[MigrationSpec]]:
    groups: dict[str, list[MigrationSpec]] = {}
    for spec in specs:
        groups.setdefault(getattr(spec, field), []).append(spec)
    return groups


def _transform(job: tuple[str, str, str, str, list[Operation], str, tuple[str, ...], gate.Facts]) \
        -> tuple[str, FileEdit | None, list[gate.Finding], list[gate.Finding], str | None]:
    """Worker: one file's operations, the formatter, then the safety gate on the result.

    Returns (path, the edit, the gate's violations, its warnings, an error).
    """
    path, module, package, source, ops, repo, format_command, facts = job
    try:
        edit = apply(source, ops, path=Path(path), repo=Path(repo))
    except cst.ParserSyntaxError as exc:
        return path, None, [], [], f"{path}:{exc.raw_line}: does not parse: {exc.message}"
    except AnchorError as exc:
        return path, None, [], [], f"{path}: {exc}"
    if edit.refusals:
        return path, edit, [], [], None
    try:
        if format_command and edit.source != source:
            edit.source = _format(format_command, Path(repo), Path(path), edit.source)
    except MigrationError as exc:
        return path, None, [], [], str(exc)
    violations = gate.check_file(Path(path), source, edit.source) if edit.source != source else []
    found, warnings = gate.check_references(Path(path), module, package, edit.source, facts)
    return path, edit, violations + found, warnings, None


def _unchanged(job: tuple[str, str, str, str, gate.Facts]) -> tuple[list[gate.Finding], list[gate.Finding]]:
    """Worker: the safety gate's reference check on a candidate file the migration does not change."""
    path, module, package, source, facts = job
    return gate.check_references(Path(path), module, package, source, facts)


def _format(command: Sequence[str], repo: Path, path: Path, source: str) -> str:
    """Run a formatter that reads code on stdin and writes it to stdout (e.g. `ruff format -`), as libcst's runner does."""
    try:
        done = subprocess.run([*command], input=source, capture_output=True, text=True, cwd=repo, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MigrationError(f"--format {shlex.join(command)}: {exc}") from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        raise MigrationError(f"--format {shlex.join(command)} failed on {path.relative_to(repo)}: {reason}")
    return done.stdout


def migrate(repo: Path, specs: list[MigrationSpec], jobs: int = 1, format_command: Sequence[str] = (),
            respect_gitignore: bool = True, only: Sequence[Path] = (),
            on_progress: Callable[[int, int], None] | None = None) -> MigrationResult:
    """Plan, apply, format and gate every edit; write nothing (see `write`). Refusals raise MigrationError.

    format_command: a formatter run on each changed file before the gate (stdin to stdout);
    respect_gitignore: in a git checkout, leave out what git ignores; only: files or folders
    that restrict the run; on_progress(done, total): called as each file's transform ends.
    """
    started = time.perf_counter()
    for spec in specs:
        if spec.confirm:
            raise SpecError(f"{spec.family}: the spec's confirm list holds {len(spec.confirm)} things a human must "
                            f"check first ({spec.confirm[0]}{' ...' if len(spec.confirm) > 1 else ''}); check "
                            "them, fix the spec where needed, then empty the list")
    repo = check_repo(repo)
    planner = _Planner(repo, specs, respect_gitignore, [Path(p).resolve() for p in only])
    planner.plan()
    facts = gate.Facts(frozenset(planner.deleted), frozenset(planner.deleted_functions), tuple(planner.renamed))
    # Largest files first: they take longest, and the pool then ends with the small ones.
    jobs_list = sorted(((str(m.path), m.name, m.package, m.text, planner.ops[m.name], str(repo), tuple(format_command),
                         facts) for m in (planner.modules[name] for name in planner.ops) if m.name not in planner.deleted),
                       key=lambda job: (-len(job[3]), job[0]))
    unchanged = [(str(m.path), m.name, m.package, m.text, facts) for m in planner.candidates.values()
                 if m.name not in planner.ops and m.name not in planner.deleted]
    report = on_progress or (lambda done, total: None)
    if jobs > 1 and len(jobs_list) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            pending = pool.map(_transform, jobs_list)
            checked = list(pool.map(_unchanged, unchanged, chunksize=8))
            results = []
            for result in pending:
                results.append(result)
                report(len(results), len(jobs_list))
    else:
        results = []
        for job in jobs_list:
            results.append(_transform(job))
            report(len(results), len(jobs_list))
        checked = [_unchanged(job) for job in unchanged]
    errors = [error for *_, error in results if error]
    rel = lambda path: Path(path).relative_to(repo).as_posix()  # noqa: E731
    errors += [f"{rel(path)}:{r.line}: {r.why}" for path, edit, *_ in results if edit for r in edit.refusals]
    if errors:
        raise MigrationError("refused; nothing was written:\n" + "\n".join(errors))
    changes, counts = [], Counter()
    violations = [f for found, _ in checked for f in found]
    notes = [f for _, noted in checked for f in noted]
    warnings: list[str] = []
    for path, edit, found, noted, _ in results:
        counts.update(edit.counts)
        warnings += [f"{rel(path)}:{w.line}: {w.why}" for w in edit.warnings]
        violations += found
        notes += noted
        old = planner.modules_by_path[Path(path)].text
        if edit.source != old:
            changes.append(FileChange(planner.modules_by_path[Path(path)].source, edit.source))
    for name in sorted(planner.deleted):
        module = planner.modules[name]
        changes.append(FileChange(module.source, None))
        counts["delete_legacy_module"] += 1
    for change in changes:
        if not change.path.resolve().is_relative_to(repo):
            raise MigrationError(f"{change.path} lies outside the repo {repo}; nothing was written")
    if violations:
        raise MigrationError("refused by the safety gate; nothing was written:\n"
                             + "\n".join(f.render(repo) for f in sorted(violations, key=lambda f: (str(f.path), f.line))))
    warnings += [f.render(repo) for f in notes]
    parsed = sum(m._tree is not None for m in planner.modules.values())
    skipped = {path.relative_to(repo).as_posix(): why for path, why in sorted(planner.skipped.items())}
    return MigrationResult(repo, [s.family for s in specs], changes, counts, len(planner.modules), parsed,
                           time.perf_counter() - started, warnings, skipped)


def check_repo(repo: Path) -> Path:
    """The checkout root, checked: a folder, and not one inside a package (which would misname every module)."""
    repo = Path(repo).expanduser().resolve()
    if not repo.is_dir():
        raise MigrationError(f"--repo {repo} is not a directory")
    if (repo / "__init__.py").is_file():
        root = repo
        while (root / "__init__.py").is_file():
            root = root.parent
        raise MigrationError(f"--repo {repo} is inside the package {repo.relative_to(root).parts[0]}; the checkout "
                             f"root (the folder holding it) is {root}")
    return repo


def write(result: MigrationResult) -> None:
    """Write every change or none, through a journal that survives a kill (see codemods.transaction).

    Hold `transaction.locked(repo, exclusive=True)` around migrate + write when other runs may
    touch the same repo (the CLI does).
    """
    transaction.commit(result.repo, [change.write() for change in result.changes])
