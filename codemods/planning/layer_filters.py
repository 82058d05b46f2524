"""The legacy model search's filters on the layer (`hasattr(module, "norm")`, `module.input_size < 64`): where one
cannot gate the registration in the layer's names, and why. The search read the layer after the model loaded;
the registration reads it as it is built, so a filter carries over only where construction sets what it reads,
and nothing changes it later."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from .. import guards, simplify, syntax
from ..repo import RepoModules
from . import subclasses

if TYPE_CHECKING:
    from ..planner import Planner


def problems(planner: Planner, modules: RepoModules, frame: guards.Frame, filters: list[guards.Atom]) -> list[str]:
    """Why a filter of the legacy model search cannot gate the registration in the layer's names: the layer never
    has an attribute it reads (the registration would raise), or something sets it after the layer is built
    (another method of its class, or, for one the class never holds itself, code outside it: the search read the
    value after loading, which the constructor's may not be)."""
    if not frame.classes:
        return []
    site = frame.function.name
    read = {attribute for atom in filters for attribute in guards.layer_attributes(atom.expression)}
    held, elsewhere = subclasses.class_names(modules, *frame.classes[0].rsplit(".", 1), depth=0), {}
    for qualified in frame.classes:
        module, name = qualified.rsplit(".", 1)
        cls = modules.definition(module, name)
        building = _construction_helpers(planner, cls, {"__init__", site}, read)
        for method in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            if method.name in building or method is frame.function:  # what the site's layer has
                held |= {a for a, _ in syntax.self_stores(method)} | syntax.self_reads(method, required=True)
                continue
            for attribute, statement in syntax.self_stores(method):
                again = f"{method.name}() sets self.{attribute} again ({modules.where(module, statement)})"
                elsewhere.setdefault(attribute, again)
    held |= {a for a, _ in syntax.self_stores(frame.function)}
    problems = []
    for atom in filters:
        for attribute, guarded in sorted(guards.layer_attributes(atom.expression).items()):
            binder = dict(modules.engine.bound_later).get(attribute)
            if binder and binder != site:
                problems.append(
                    f"{atom.where}: the legacy step warmed only the layers where `{atom.written}`; the engine binds "
                    f"self.{attribute} after it builds the layer ({binder}), so a registration in {site} cannot "
                    f"check it: register in {binder}, or list it in intended_differences with a reason"
                )
            elif again := elsewhere.get(attribute) or (attribute not in held and _set_from_outside(planner, attribute)):
                problems.append(
                    f"{atom.where}: the legacy step warmed only the layers where `{atom.written}`, read after the "
                    f"model loaded; {again}, so the value where the layer registers may not be the one the search "
                    "read: register this layer by hand"
                )
            elif attribute not in held and not guarded:
                problems.append(
                    f"{atom.where}: the legacy step warmed only the layers where `{atom.written}`; "
                    f"{frame.classes[0]} never sets self.{attribute}, so the registration cannot check it"
                )
    return problems


def _construction_helpers(planner: Planner, cls: ast.ClassDef, constructors: set[str], read: set[str]) -> set[str]:
    """The constructors, and the methods of the class only they run (`self._init_norm(...)` in `__init__`, and
    what those call so) that set an attribute the filters `read`: named nowhere else in the repo, their stores are
    the layer's as it is built. (Only those: the repo-wide look-up is on planning's serial path.)"""
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    found, todo = set(constructors), [methods[m] for m in constructors if m in methods]
    while todo:
        called = [
            n.func.attr
            for n in ast.walk(todo.pop())
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and ast.unparse(n.func.value) == "self"
        ]
        for name in dict.fromkeys(called):
            if (
                name in methods
                and name not in found
                and read & {a for a, _ in syntax.self_stores(methods[name])}
                and _named_only_by_constructors(planner, methods, found, name)
            ):
                found.add(name)
                todo.append(methods[name])
    return found


def checked_otherwise(filters: list[guards.Atom], unanswered: list[guards.Atom]) -> list[str]:
    """Where a filter of the search tests a value of the layer that the registration's own code tests otherwise (the
    search keeps K a multiple of 4, the registration checks 8; `unanswered`: its checks no legacy condition makes):
    the registration was written for a filter of that value the search no longer has, and beside it the filter
    would leave registered only what both keep, fewer layers than the search kept."""
    checks = {value: check for check in unanswered for value in _layer_values(check.expression)}
    return [
        f"{atom.where}: the legacy step warmed the layers where `{atom.written}`, and the registration's own code "
        f"checks `{checks[value].written}` on {value.replace(guards.SELF, 'self')} instead: it was written for "
        "another filter of that value; write the registration for this search, or migrate by hand"
        for atom in filters
        for value in sorted(_layer_values(atom.expression) & checks.keys())[:1]
    ]


def _layer_values(expression: ast.expr) -> set[str]:
    """The values of the layer an expression reads, each as far as it reads it (`@self.weight.shape[1]`,
    `@self.weight.dim()`), `getattr(x, "a", None)` read as `x.a`."""
    found: dict[ast.AST, str] = {}
    for node in ast.walk(simplify.attribute_tree(expression)):
        root = node
        while isinstance(root, ast.Attribute | ast.Subscript | ast.Call):
            root = root.func if isinstance(root, ast.Call) else root.value
        if node is not root and isinstance(root, ast.Name) and root.id == guards.SELF:
            found[node] = ast.unparse(node)
    inner = {id(n) for outer in found for n in ast.walk(outer) if n is not outer}
    return {text for node, text in found.items() if id(node) not in inner}


def _named_only_by_constructors(
    planner: Planner, methods: dict[str, ast.FunctionDef], building: set[str], name: str
) -> bool:
    """Whether the repo names `name` only where the class defines it and where the methods building the layer call
    it on `self`."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    mentions = sum(len(word.findall(m.text)) for m in planner.modules.values() if name in m.text)
    calls = sum(
        isinstance(n, ast.Attribute) and n.attr == name and ast.unparse(n.value) == "self"
        for method in building
        if method in methods
        for n in ast.walk(methods[method])
    )
    return mentions == 1 + calls


def _set_from_outside(planner: Planner, attribute: str) -> str | None:
    """Where code of the repo sets `attribute` on an object another object holds (`self.gate.<attribute> = ...` in
    a model that built the gate): a layer attribute set after the layer is built."""
    pattern = re.compile(rf"\bself(?:\.\w+)+\.{re.escape(attribute)}\s*(?:[-+*/|&]?=)(?!=)")
    for home in (m for m in planner.modules.values() if f".{attribute}" in m.text):
        if found := pattern.search(home.text):
            line = home.text.count("\n", 0, found.start()) + 1
            return f"{syntax.where(planner.repo, home.path, line)} sets .{attribute} on a built object"
    return None
