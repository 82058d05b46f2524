"""Planning an owner: a compile unit that no contract object owns gets the spec's owner in its module.

The owner goes after the statement `owner_after` names, unless the module binds the owner's object
already (migrated); the registration's arguments must fit the owner's `get_warmup_keys`, which the
registry calls with them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import syntax
from ..findings import Findings
from ..spec import SpecError
from ..transforms.insert_owner import InsertOwner
from .registrations import check_registration_arguments

if TYPE_CHECKING:
    from ..planner import Planner


def plan(planner: Planner) -> Findings:
    findings = Findings()
    for spec in (s for s in planner.specs if s.owner):
        home = planner.module(spec, "singleton_module")
        owner = ast.parse(spec.owner.code)
        keys = [
            (cls, method)
            for cls in owner.body
            if isinstance(cls, ast.ClassDef)
            for method in cls.body
            if isinstance(method, ast.FunctionDef) and method.name == "get_warmup_keys"
        ]
        if not keys:
            raise SpecError(f"{spec.family}: owner: no class of it defines get_warmup_keys, which the registry calls")
        check_registration_arguments(spec, *keys[0], "owner", planner.engine.config_parameter)
        names = {name for statement in owner.body for name in syntax.stores(statement)}
        if names <= home.defs:
            continue  # migrated already
        if taken := sorted(names & home.defs):
            findings.refuse(
                "owner",
                f"{home.name} already binds {', '.join(taken)}, which the owner of {spec.kernel.name} defines: "
                "rename that code or the owner",
                syntax.where(planner.repo, home.path, 1),
                spec.family,
            )
            continue
        _check_written_for(planner, findings, spec, home)
        lines = syntax.source_lines(home.text)
        if not any(syntax.holds_anchor(lines[node.lineno - 1], spec.owner.after) for node in home.tree.body):
            raise SpecError(
                f"{spec.family}: owner_after {spec.owner.after!r}: no module-level statement of {home.name} "
                "starts with it"
            )
        findings.add(home.name, InsertOwner(spec.owner.code, spec.owner.after, spec.kernel.name, spec.owner.imports))
    return findings


def _check_written_for(planner: Planner, findings: Findings, spec, home) -> None:
    """Refuse where a definition the owner translates is not the code it was written for (its pinned digest)."""
    for pinned_name, pinned in spec.owner.written_for:
        module, _, qualname = pinned_name.rpartition(":")
        source = planner.modules.get(module) if module else home
        found = source and syntax.definition_digest(source.tree, qualname, _parameters(planner, source.name))
        if not found:
            findings.refuse(
                "owner",
                f"{module or home.name} has no {qualname}, which the owner of {spec.kernel.name} was written for",
                syntax.where(planner.repo, source.path, 1) if source else None,
                spec.family,
            )
        elif found[1] != pinned:
            findings.refuse(
                "owner",
                f"{qualname} is not the code the owner of {spec.kernel.name} was written for (digest {found[1]}, "
                f"the owner's {pinned}): the owner would warm what that code warmed, not what this tree's does; "
                "write the owner for this code and pin its digest in owner_written_for, or migrate by hand",
                syntax.where(planner.repo, source.path, found[0].lineno),
                spec.family,
            )


def _parameters(planner: Planner, module: str) -> Callable[[ast.AST, ast.expr], syntax.Signature | None]:
    """The parameters of what a call in a definition of `module` calls, where passing an argument by position or by
    name cannot make a difference: an undecorated repo function, or a method of a repo class called on the class
    (a plain one takes its `self` first). None for anything else: a decorator may see how it is called
    (`functools.cache` keys `f(1)` and `f(x=1)` apart, and a cached compile is what an owner warms)."""
    modules = planner.repo_model(module)

    def parameters(definition: ast.AST, func: ast.expr) -> syntax.Signature | None:
        functions = [n for n in ast.walk(definition) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        around = [f for f in functions if f.lineno <= func.lineno <= f.end_lineno]
        scope = min(around, key=lambda f: f.end_lineno - f.lineno, default=None)  # where the call's names are read
        if scope is None:
            return None
        callee = modules.callee(module, scope, func)
        if callee is None and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            cls = modules.callee(module, scope, func.value)
            found = modules.method_of(cls, func.attr) if cls and cls[1] else None
            decorators = {ast.unparse(d) for d in found[1].decorator_list} if found else set()
            if found is None or decorators - {"staticmethod", "classmethod"}:
                return None
            return syntax.signature(found[1], bound="classmethod" in decorators)
        function = modules.definition(*callee) if callee and callee[1] else None
        if not isinstance(function, ast.FunctionDef) or function.decorator_list:
            return None
        return syntax.signature(function)

    return parameters
