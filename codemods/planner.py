"""Planning a migration: the files its specs touch and each file's operations, with every anchor checked.

Planning reads every `.py` file the run may see (codemods.files) as text and keeps only those
that mention a spec's identifiers (most of a large repo never reaches a parser); the modules
whose anchors a spec names are parsed with `ast`. The planning steps (codemods.planning.STEPS,
one per kind of operation, in the order a file's operations run) read the planner and return
what they found (codemods.findings): the operations each file needs, refusals, warnings, gate
plans, and what the migration deletes and renames, for the safety gate. The planner merges them.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path

from . import gate
from .engines import DEFAULT_ENGINE, Engine
from .errors import MigrationError
from .files import Prefiltered, SourceFile, UnreadableSource, discover_paths, naming, read_source, why_absent
from .findings import Findings, Refusal
from .heads import HeadIndex, Heads
from .planning import GROUPS, STEPS
from .repo import RepoModules, absolute_module, module_name
from .site_gate import GatePlan
from .spec import MigrationSpec, SpecError
from .syntax import holds_call_like, source_lines, statements
from .transforms import Operation

# prefilter(paths, words): files.prefilter(paths, words) started in a worker, as a future (None: no worker).
Prefilter = Callable[[list[Path], list[str]], Future | None]


@dataclasses.dataclass
class SourceModule:
    """One module of the repo as the run read it; its `ast` is parsed when first asked for."""

    name: str
    source: SourceFile
    package: str
    _defs: set[str] | None = None

    @property
    def path(self) -> Path:
        return self.source.path

    @property
    def text(self) -> str:
        return self.source.text

    @property
    def parsed(self) -> bool:
        return "tree" in vars(self.source)

    @property
    def tree(self) -> ast.Module:
        try:
            return self.source.tree
        except SyntaxError as exc:
            raise MigrationError(f"{self.path}:{exc.lineno}: does not parse: {exc.msg}") from None

    @functools.cached_property
    def heads(self) -> Heads:
        """Its class statements' headers and its aliases, read off its text (the planner may set what a worker read)."""
        return Heads.of(self.text)

    @property
    def class_heads(self) -> str:
        """Its class statements as far as their headers go, one a line."""
        return self.heads.text()

    @functools.cached_property
    def lines(self) -> list[str]:
        """The module's lines (a node's `lineno` indexes them from 1)."""
        return source_lines(self.text)

    @functools.cached_property
    def classes(self) -> list[ast.ClassDef]:
        """Every class the module defines, at any depth (one walk, kept: subclass searches ask again and again)."""
        return [node for node in statements(self.tree) if isinstance(node, ast.ClassDef)]

    @property
    def defs(self) -> set[str]:
        """Names the module binds at its top level by assignment or definition (not imports)."""
        if self._defs is None:
            self._defs = set()
            for node in self.tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._defs.add(node.name)
                elif isinstance(node, ast.Assign):
                    self._defs |= {t.id for t in node.targets if isinstance(t, ast.Name)}
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    self._defs.add(node.target.id)
        return self._defs

    def imports_of(self, name: str) -> Iterable[str]:
        """Modules this one imports `name` from (any depth, any form of relative import)."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names):
                yield absolute_module(self.package, node.module, node.level)


def discover(
    repo: Path,
    respect_gitignore: bool = True,
    only: Sequence[Path] = (),
    found: Callable[[list[Path]], None] = lambda paths: None,
) -> tuple[dict[str, SourceModule], dict[Path, str]]:
    """Every readable module of the run by dotted name, and the files skipped with why.

    `only`: files or folders that restrict the run (nothing outside them is read or changed);
    `found(paths)`: told the run's files before they are read.
    """
    listed, skipped = discover_paths(repo, respect_gitignore)
    paths = [p for p in listed if not only or any(p == root or p.is_relative_to(root) for root in only)]
    found(paths)
    modules: dict[str, SourceModule] = {}
    for path in paths:
        try:
            source = read_source(path)
        except UnreadableSource as exc:
            skipped[path] = str(exc).split(": ", 1)[1]
            continue
        name, package = module_name(repo, path)
        modules[name] = SourceModule(name, source, package)
    return modules, skipped


def _shortest(words: set[str]) -> list[str]:
    """The words no other word of the set is part of: a text holds one of `words` exactly when it holds one of
    these (`batch_memcpy_kernel` holds `batch_memcpy`), and each word less is a whole-repo search less."""
    return sorted(w for w in words if not any(other != w and other in w for other in words))


class Planner:
    """Turns specs into per-file operations, checking every anchor the specs name.

    What the planning steps read: `specs`, `repo`, `modules` (every module of the run),
    `candidates` (those the text prefilter keeps), `module()` (an anchor, or a SpecError),
    `repo_model()`, `migrated()`. What they find is merged here (`steps`): `ops` per module,
    `refusals`, `warnings`, `gate_plans`, `leftovers`, `lifts`, and the gate's facts `deleted`
    (modules), `deleted_functions` and `renamed`.
    """

    def __init__(
        self,
        repo: Path,
        specs: list[MigrationSpec],
        respect_gitignore: bool = True,
        only: Sequence[Path] = (),
        engine: Engine = DEFAULT_ENGINE,
        prefilter: Prefilter = lambda paths, words: None,
    ):
        """`prefilter`: where a worker can read the files for `candidates` and `head_index` while this process reads
        them too."""
        self.repo, self.specs, self.engine = repo, specs, engine
        self._repo_models: dict[str, RepoModules] = {}
        self._words = _shortest({word for spec in specs for word in spec.identifiers()})  # the specs as given
        self._prefiltered: tuple[list[Path], Future | None] = ([], None)
        self._worker_read: dict[str, Prefiltered] | None = None

        def start_prefilter(paths: list[Path]) -> None:
            self._prefiltered = paths, prefilter(paths, self._words)

        self.modules, self.skipped = discover(repo, respect_gitignore, only, start_prefilter)
        self.ops: dict[str, list[Operation]] = {}
        self.deleted: set[str] = set()
        self.deleted_functions: set[str] = set()
        self.renamed: list[gate.Renamed] = []
        self.gate_plans: list[GatePlan] = []  # each registration's gate against the legacy call's guards
        self.refusals: list[Refusal] = []  # found while planning, reported with the transforms'
        self.leftovers: list[str] = []  # "path:line: what" legacy code the migration leaves in place, for a human
        self.lifts: list[str] = []  # what each lift writes (transforms/lift_kernel.py), in words
        self.warnings: list[str] = []  # what planning found a human should check (the run goes on)
        self.modules_by_path = {m.path: m for m in self.modules.values()}

    def _read(self, wait: bool = True) -> dict[str, Prefiltered] | None:
        """What the prefilter's worker read of each module, for those it read as the run did (a text of the same
        length; the others are read here). None while the worker still reads, unless `wait`."""
        paths, answer = self._prefiltered
        if self._worker_read is None and (answer is None or wait or answer.done()):
            read = dict(zip(paths, answer.result())) if answer is not None else {}
            found = {name: read.get(m.path) for name, m in self.modules.items()}
            self._worker_read = {
                name: it for name, it in found.items() if it is not None and it.length == len(self.modules[name].text)
            }
        return self._worker_read

    @functools.cached_property
    def candidates(self) -> dict[str, SourceModule]:
        """The modules that name one of the specs' identifiers (searched when first asked for, after a lift is
        planned, so that the lift's transform starts the sooner). Searched here until the worker's answers come,
        which then decide the rest: the planner never waits for them."""
        found, read = {}, None
        for name, m in self.modules.items():
            read = read if read is not None else self._read(wait=False)
            if read[name].names_one if read is not None and name in read else naming(m.text, self._words):
                found[name] = m
        return found

    @functools.cached_property
    def head_index(self) -> HeadIndex:
        """Which modules hold a class header naming a name (planning/subclasses.py's searches)."""
        for name, found in self._read().items():
            self.modules[name].heads = found.heads
        return HeadIndex((name, m.heads) for name, m in self.modules.items())

    def module(self, spec: MigrationSpec, field: str, name: str | None = None) -> SourceModule:
        name = name or spec.fields()[field]
        if name not in self.modules:
            raise self.missing(spec, field, name)
        return self.modules[name]

    def missing(self, spec: MigrationSpec, field: str, name: str, also: str = "") -> SpecError:
        """The error for a module a spec names that the run has not read: what stands there instead (a FIFO, a
        symlink out of the repo, a file that is not valid source), or that nothing does."""
        unreadable = [why for path, why in self.skipped.items() if module_name(self.repo, path)[0] == name]
        if unreadable:
            return SpecError(f"{spec.family}: {field} {name!r} cannot be read: {unreadable[0]}")
        why = why_absent(self.repo, name)
        if why is not None:
            return SpecError(f"{spec.family}: {field} {name!r} cannot be read: {why}")
        return SpecError(f"{spec.family}: {field} {name!r} not found under {self.repo}{also}")

    def repo_model(self, module: str) -> RepoModules:
        """The static model of the package that holds `module`, built once per run and shared by every spec."""
        package = module.split(".")[0]
        if package not in self._repo_models:
            files = {path: m.source for path, m in self.modules_by_path.items()}
            self._repo_models[package] = RepoModules(self.repo, package, self.engine, files)
        return self._repo_models[package]

    def plan(self) -> None:
        for _ in self.steps():
            pass

    def steps(self) -> Iterator[None]:
        """Plan group by group (planning.GROUPS), pausing after each so that the runner starts the files planned so
        far; what the steps find is merged in `STEPS` order whatever the order they run in."""
        found: dict[Callable[[Planner], Findings], Findings] = {}
        for group in GROUPS:
            for step in group:
                found[step] = step(self)
                amended = {spec.family: spec for spec in found[step].specs}
                self.specs = [amended.get(spec.family, spec) for spec in self.specs]
            self._merge([found[step] for step in STEPS if step in found])
            yield

    def _merge(self, findings: Iterable[Findings]) -> None:
        self.ops, self.refusals, self.warnings, self.gate_plans = {}, [], [], []
        self.leftovers, self.lifts, self.renamed = [], [], []
        self.deleted, self.deleted_functions = set(), set()
        for found in findings:
            for module, op in found.operations:
                self.ops.setdefault(module, []).append(op)
            self.refusals += found.refusals
            self.warnings += found.warnings
            self.gate_plans += found.gate_plans
            self.leftovers += found.leftovers
            self.lifts += found.lifts
            self.deleted |= found.deleted
            self.deleted_functions |= found.deleted_functions
            self.renamed += found.renamed

    def facts(self) -> gate.Facts:
        return gate.Facts(frozenset(self.deleted), frozenset(self.deleted_functions), tuple(self.renamed))

    def migrated(self, spec: MigrationSpec) -> bool:
        """The spec's end state is positively present: every registration inserted, the kernel under its new name."""
        home = self.modules.get(spec.kernel.module)
        if home is None or spec.kernel_name not in home.defs:
            return False
        if spec.kernel.private_name and spec.kernel.name in home.defs:
            return False

        # The registration's call as inserted, by its shape (codemods.syntax.holds_call_like): the kernel may be
        # named through the module's own alias.
        def registers(module: SourceModule) -> bool:
            aliases = {
                a.asname
                for n in ast.walk(module.tree)
                if isinstance(n, ast.ImportFrom)
                for a in n.names
                if a.name == spec.kernel_name and a.asname
            }
            return holds_call_like(module.tree, spec.registration.call(), {spec.kernel_name, *aliases})

        return all(
            module in self.modules and registers(self.modules[module])
            for module, _ in spec.registration.constructions()
        )
