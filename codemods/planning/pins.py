"""Pins: the digest of each definition a hand-written part of a spec was written from (an owner's compile loop,
the legacy step whose arguments a registration passes by hand). A tree whose code differs there is refused at that
definition, with its digest: what was written may not fit it, and nothing else would tell (the keys still come out
of the written part, only not the ones the tree's legacy code warmed)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import syntax
from ..findings import Findings

if TYPE_CHECKING:
    from ..planner import Planner, SourceModule
    from ..spec import MigrationSpec


def check(
    planner: Planner,
    findings: Findings,
    spec: MigrationSpec,
    part: str,
    pinned: tuple[tuple[str, str], ...],
    home: SourceModule,
) -> None:
    """Refuse where a definition `part` ("owner", "registration") translates is not the code it was written for;
    `home`: the module of a pin that names none. A definition pinned more than once fits any of its digests (the
    code of each release it was written for)."""
    digests: dict[str, list[str]] = {}
    for pinned_name, digest in pinned:
        digests.setdefault(pinned_name, []).append(digest)
    for pinned_name, accepted in digests.items():
        module, _, qualname = pinned_name.rpartition(":")
        source = planner.modules.get(module) if module else home
        found = source and syntax.definition_digest(source.tree, qualname, _parameters(planner, source.name))
        if not found:
            findings.refuse(
                part,
                f"{module or home.name} has no {qualname}, which the {part} of {spec.kernel.name} was written for",
                syntax.where(planner.repo, source.path, 1) if source else None,
                spec.family,
            )
        elif found[1] not in accepted:
            findings.refuse(
                part,
                f"{qualname} is not the code the {part} of {spec.kernel.name} was written for (digest {found[1]}, "
                f"the {part}'s {' or '.join(accepted)}): the {part} would warm what that code warmed, not what this "
                f"tree's does; write the {part} for this code and pin its digest in {part}_written_for, or migrate "
                "by hand",
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
