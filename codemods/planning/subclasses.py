"""The classes a registration reaches past its spec's site: subclasses anywhere in the repo whose constructor
replaces the site's without running it (each a site of its own, checked to set what the registration reads), the
direct subclasses a spec registers in, and the override a class that only inherits the method gets.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .. import syntax
from ..repo import RepoModules
from ..spec import MigrationSpec, SpecError
from ..transforms.adopt_contract import self_attributes

if TYPE_CHECKING:
    from ..planner import Planner, SourceModule


def override_source(modules: RepoModules, module: str, cls: ast.ClassDef, method: str, family: str) -> str:
    """The source of `cls.method` as an override that runs the inherited one (the registration then follows)."""
    inherited = modules.method(module, cls, method)
    if inherited is None:
        raise SpecError(
            f"{family}: construction_method {method!r}: {cls.name} ({module}:{cls.lineno}) neither "
            "defines nor inherits it from a class in the repo"
        )
    arguments = inherited.args
    passed = [a.arg for a in arguments.posonlyargs + arguments.args][1:]
    passed += [f"*{arguments.vararg.arg}"] if arguments.vararg else []
    passed += [f"{a.arg}={a.arg}" for a in arguments.kwonlyargs]
    passed += [f"**{arguments.kwarg.arg}"] if arguments.kwarg else []
    returns = f" -> {ast.unparse(inherited.returns)}" if inherited.returns else ""
    return f"def {method}({ast.unparse(arguments)}){returns}:\n    super().{method}({', '.join(passed)})\n"


def replacing_subclasses(
    planner: Planner, modules: RepoModules, module: str, name: str, method: str = "__init__"
) -> list[tuple[SourceModule, str, ast.FunctionDef]]:
    """Subclasses of `module.name` anywhere in the repo (at any depth) whose `method` never calls the parent's."""
    overrides = _overrides(planner, modules, module, name, method)
    return [(home, cls, own) for home, cls, own, parent in overrides if not parent]


def set_after_parent(
    planner: Planner, modules: RepoModules, module: str, name: str, method: str, reads: set[str]
) -> list[tuple[SourceModule, str, ast.stmt, list[str]]]:
    """Subclasses of `module.name` (at any depth) whose `method` runs the parent's, which registers, and then sets
    `self.x` for an x of `reads` (the registration read the parent's value): each with its first such statement."""
    if not reads:
        return []
    found = []
    for home, cls, own, parent in _overrides(planner, modules, module, name, method):
        after = sorted(
            ((s, a) for a, s in _changed(own) if a in reads and parent and s.lineno > parent.lineno),
            key=lambda pair: pair[0].lineno,
        )
        if after:
            found.append((home, cls, after[0][0], sorted({a for _, a in after})))
    return found


def _changed(function: ast.FunctionDef) -> Iterator[tuple[str, ast.stmt]]:
    """Each `x` of `self.x` that an assignment in `function` stores or stores into (`self.norm.activation = ...`,
    `self.cache[0] = ...` change `norm` and `cache`), with its statement."""
    for statement, node in _in_targets(function):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            yield node.attr, statement


def _in_targets(function: ast.FunctionDef) -> Iterator[tuple[ast.stmt, ast.expr]]:
    """Each node inside the targets of the assignments (`=`, annotated, augmented) in `function`, with the
    assignment."""
    for statement in ast.walk(function):
        if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            yield from ((statement, node) for target in targets for node in ast.walk(target))


def _overrides(
    planner: Planner, modules: RepoModules, module: str, name: str, method: str
) -> Iterator[tuple[SourceModule, str, ast.FunctionDef, ast.Call | None]]:
    """Each subclass of `module.name` (at any depth) that defines `method`, with its call of the parent's (None: it
    never calls it)."""
    for home, node, own, wanted in subclasses_of(planner, modules, module, name):
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == method), None)
        if init is not None:
            yield home, node.name, init, _parent_call(modules, home.name, init, wanted, own, method)


def subclasses_of(
    planner: Planner, modules: RepoModules, module: str, name: str
) -> Iterator[tuple[SourceModule, ast.ClassDef, tuple, set]]:
    """Each subclass of `module.name` in the repo, at any depth, with its qualified name and the classes found so far
    (`module.name` and the subclasses between it and this one among them)."""
    wanted, queue = {modules.resolve(module, name)}, [name]
    while queue:
        for home, node in _classes_naming(planner, modules, queue.pop()):
            own = modules.resolve(home.name, node.name)
            if not _bases(modules, home.name, node) & wanted or own in wanted:
                continue
            wanted.add(own)
            queue.append(node.name)
            yield home, node, own, wanted


def direct_subclasses(planner: Planner, modules: RepoModules, base: str) -> list[tuple[str, str]]:
    """(module, class) of every class in the repo that lists `base` (`pkg.module:Base`) among its bases and has a
    constructor of its own, or lists a class without one that does (a fork's mixin of shared helpers): a class
    whose constructor is inherited from another base holds no registration, its subclasses may."""
    found, queue, seen = [], [tuple(base.rsplit(":", 1))], set()
    while queue:
        module, name = queue.pop(0)
        wanted = modules.resolve(module, name)
        if wanted in seen:
            continue
        seen.add(wanted)
        for home, node in _classes_naming(planner, modules, name):
            if wanted in _bases(modules, home.name, node):
                own = any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in node.body)
                (found if own else queue).append((home.name, node.name))
    return found


def _classes_naming(planner: Planner, modules: RepoModules, parent: str) -> list[tuple[SourceModule, ast.ClassDef]]:
    """The repo's classes whose bases name `parent` (or a name their module imports it as), found once a run: only
    a module whose class headers name it is parsed (Planner.head_index), and its tree decides."""
    key = ("classes naming", parent)
    if key not in modules.memo:
        modules.memo[key] = list(_naming(planner, parent))
    return modules.memo[key]


def _naming(planner: Planner, parent: str) -> Iterator[tuple[SourceModule, ast.ClassDef]]:
    found = planner.head_index.naming(parent)
    for home in (m for name, m in planner.modules.items() if name in found):  # in the run's order
        spelled = {parent, *(alias for named, alias in home.heads.aliases if named == parent)}
        word = re.compile(rf"\b(?:{'|'.join(map(re.escape, sorted(spelled)))})\b")
        for node in home.classes:
            if any(word.search(ast.unparse(b)) for b in node.bases):
                yield home, node


def _bases(modules: RepoModules, module: str, node: ast.ClassDef) -> set:
    return {modules.reference(module, b.value if isinstance(b, ast.Subscript) else b) for b in node.bases}


def unset_attributes(
    modules: RepoModules, module: str, cls: str, init: ast.FunctionDef, spec: MigrationSpec
) -> list[str]:
    """`self.x` the registration and gate read that a replacing constructor never sets: neither it, nor an
    `__init__` of a repo class it calls explicitly, nor a class attribute of the class or its repo bases."""
    reads = self_reads(spec, required=True)
    available = _set_by(modules, module, init, depth=0) | class_names(modules, module, cls, depth=0)
    return sorted(reads - available)


def self_reads(spec: MigrationSpec, required: bool = False) -> set[str]:
    """The x of each `self.x` the registration and its gate read (`syntax.self_reads`)."""
    return syntax.self_reads(ast.parse(spec.registration.code + "\n" + (spec.registration.gate or "")), required)


def _set_by(modules: RepoModules, module: str, init: ast.FunctionDef, depth: int) -> set[str]:
    """Attributes `init` sets on self, with those set by the repo `__init__`s it calls (`Base.__init__(self)`)."""
    found = set(self_attributes(init))
    for call in (
        n
        for n in ast.walk(init)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__" and depth < 6
    ):
        target = modules.reference(module, call.func.value)
        node = modules.definition(*target) if target else None
        parent = next(
            (m for m in getattr(node, "body", ()) if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None
        )
        if parent is not None:
            found |= _set_by(modules, target[0], parent, depth + 1)
    return found


def class_names(modules: RepoModules, module: str, cls: str, depth: int) -> set[str]:
    """Names a class body binds (class attributes, methods), with those of its bases in the repo."""
    node = modules.definition(module, cls)
    if not isinstance(node, ast.ClassDef) or depth > 8:
        return set()
    names = {
        t.id
        for n in node.body
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else [])
        if isinstance(t, ast.Name)
    } | {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    for base in node.bases:
        target = modules.reference(module, base.value if isinstance(base, ast.Subscript) else base)
        if target:
            names |= class_names(modules, target[0], target[1], depth + 1)
    return names


def _parent_call(
    modules: RepoModules, module: str, init: ast.FunctionDef, parents: set, own: tuple, method: str = "__init__"
) -> ast.Call | None:
    """The first `super().<method>(...)` (or `super(Own, self)`: `super(Parent, self)` skips Parent's), or
    `Parent.<method>(self, ...)` naming one of `parents`, in `init` of the class `own`."""
    for call in (
        n
        for n in ast.walk(init)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method
    ):
        holder = call.func.value
        if isinstance(holder, ast.Call) and isinstance(holder.func, ast.Name) and holder.func.id == "super":
            if not holder.args or modules.reference(module, holder.args[0]) == own:
                return call
            continue
        if modules.reference(module, holder) in parents:
            return call
    return None
