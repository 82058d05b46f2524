"""Planning an owner: a compile unit that no contract object owns gets the spec's owner in its module.

The owner goes after the statement `owner_after` names, unless the module binds the owner's object
already (migrated); the registration's arguments must fit the owner's `get_warmup_keys`, which the
registry calls with them.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .. import syntax
from ..findings import Findings
from ..spec import SpecError
from ..transforms.insert_owner import InsertOwner
from . import pins
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
        pins.check(planner, findings, spec, "owner", spec.owner.written_for, home)
        lines = syntax.source_lines(home.text)
        if not any(syntax.holds_anchor(lines[node.lineno - 1], spec.owner.after) for node in home.tree.body):
            raise SpecError(
                f"{spec.family}: owner_after {spec.owner.after!r}: no module-level statement of {home.name} "
                "starts with it"
            )
        findings.add(home.name, InsertOwner(spec.owner.code, spec.owner.after, spec.kernel.name, spec.owner.imports))
    return findings
