"""Planning the removals: the legacy steps the specs migrate go with their calls, and a legacy module whose
entry has nothing left goes whole (with the orchestrator's call of it)."""

from __future__ import annotations

import ast
import functools
from collections import Counter
from typing import TYPE_CHECKING

import libcst as cst

from .. import syntax
from ..findings import Findings
from ..lift.tables import LOGGING, PURE_BUILTINS
from ..spec import MigrationSpec, SpecError
from ..transforms.remove_dead_local import pure
from ..transforms.remove_legacy_call import RemoveLegacyCalls

if TYPE_CHECKING:
    from ..planner import Planner


def plan(planner: Planner) -> Findings:
    """The legacy modules' steps these specs migrate, and the orchestrator's own steps, go with their calls."""
    findings = Findings()
    groups: dict[str, list[MigrationSpec]] = {}
    for spec in planner.specs:
        if spec.legacy.module:
            groups.setdefault(spec.legacy.module, []).append(spec)
    for legacy, specs in groups.items():
        _plan_legacy(planner, findings, legacy, specs)
    for spec in planner.specs:
        if spec.legacy.orchestrator_step:
            _plan_orchestrator_step(planner, findings, spec)
    return findings


def _plan_legacy(planner: Planner, findings: Findings, legacy_name: str, specs: list[MigrationSpec]) -> None:
    """Remove the steps these specs migrate; delete the module (and its calls) once nothing of it does any work."""
    spec = specs[0]
    orchestrator = planner.module(spec, "orchestrator_module")
    if legacy_name not in planner.modules:
        for s in specs:
            if not planner.migrated(s):
                also = ", and the migrated state (registration inserted, kernel renamed) is not there either"
                raise planner.missing(s, "legacy_module", legacy_name, also)
        return
    legacy = planner.modules[legacy_name]
    entry = next(
        (n for n in legacy.tree.body if isinstance(n, ast.FunctionDef) and n.name == spec.legacy.function), None
    )
    if entry is None:
        raise SpecError(f"{spec.family}: legacy_function {spec.legacy.function!r} not found in {legacy_name}")
    steps = set()
    for s in specs:
        if s.legacy.step and s.legacy.step in legacy.defs:
            steps.add(s.legacy.step)
        elif s.legacy.step and not planner.migrated(s):
            raise SpecError(f"{s.family}: legacy_step {s.legacy.step!r} not found in {legacy_name}")
    whole = any(not s.legacy.step for s in specs)
    helpers = {n.name: n for n in legacy.tree.body if isinstance(n, ast.FunctionDef)}
    idle = _Idle(helpers, steps)
    busy = [] if whole else [s for s in entry.body if not syntax.is_docstring(s) and not idle.statement(s)]
    busy = [s for s in busy if not _vanishes(s, entry, steps)]
    busy += [] if whole or busy else [s for s in legacy.tree.body if not _inert(s)]
    if busy:
        findings.add(legacy_name, RemoveLegacyCalls(frozenset(f"{legacy_name}.{step}" for step in steps)))
        findings.deleted_functions |= {f"{legacy_name}.{step}" for step in steps}
        # Where no call of a function of its own that acts is left as a statement (a step of its own that stays),
        # a human who migrated every step may wonder why it stays.
        acting = {name for name in set(helpers) - steps if not idle.helper(name)}
        if not any(_calls_one_of(n, acting) for s in busy for n in ast.walk(s)):
            findings.leftovers.append(
                f"{syntax.where(planner.repo, legacy.path, busy[0].lineno)}: {legacy_name} stays, with the "
                f"orchestrator's call of {spec.legacy.function}: this statement may still do work once the migrated "
                "steps are gone"
            )
        return
    findings.deleted.add(legacy_name)
    findings.add(
        orchestrator.name,
        RemoveLegacyCalls(frozenset({f"{legacy_name}.{spec.legacy.function}"}), modules=frozenset({legacy_name})),
    )


def _plan_orchestrator_step(planner: Planner, findings: Findings, spec: MigrationSpec) -> None:
    orchestrator = planner.module(spec, "orchestrator_module")
    step = spec.legacy.orchestrator_step
    if step not in orchestrator.defs:
        if planner.migrated(spec):
            return
        raise SpecError(f"{spec.family}: orchestrator_step {step!r} not found in {orchestrator.name}")
    findings.add(orchestrator.name, RemoveLegacyCalls(frozenset({f"{orchestrator.name}.{step}"})))
    if step.startswith("_"):
        findings.deleted_functions.add(f"{orchestrator.name}.{step}")


class _Idle:
    """What does nothing once the steps are gone, in the legacy entry and the module's own helpers it calls.

    A statement of the entry is idle when it calls one of the steps, binds locals from reads (builtins,
    `torch.device(...)`, a predicate method `x.is_*()` or `x.has_*()`, or an idle helper), logs through `logger`,
    synchronizes a torch device (nothing of the module's is left to wait for), returns early, asserts, or is an
    `if` or a `for` over such reads around what is no longer there (a search for the model type). A helper is
    idle when no statement of it acts: what it computes goes to locals the removed steps read, so its locals and
    returns may come from any call, but a call made for its effect (a statement of its own), a store into an
    object, or a call of a helper that acts, keeps the module.
    """

    def __init__(self, helpers: dict[str, ast.FunctionDef], steps: set[str]):
        self.helpers, self.steps = helpers, steps
        self._reading: set[str] = set()  # helpers being read (one that calls itself is read once)

    def statement(self, statement: ast.stmt, in_helper: bool = False) -> bool:
        reads = functools.partial(self.reads, in_helper=in_helper)
        match statement:
            case ast.Pass() | ast.Break() | ast.Continue() | ast.Import() | ast.ImportFrom():
                return True
            case ast.Return(value=value):
                return value is None or _is_none(value) or in_helper and reads(value)
            case ast.Expr(value=ast.Yield(value=value) | ast.YieldFrom(value=value)):
                return in_helper and (value is None or reads(value))
            case ast.Expr(value=ast.Call() as call):
                return _calls_one_of(statement, self.steps) or self._acts_not(call, in_helper)
            case ast.Assign(targets=targets, value=value):
                return all(map(_names_only, targets)) and reads(value)
            case ast.AnnAssign(target=ast.Name(), value=value):
                return value is None or reads(value)
            case ast.Assert(test=test, msg=message):
                return reads(test) and (message is None or reads(message))
            case ast.If(test=test, body=body, orelse=orelse):
                return reads(test) and all(self.statement(s, in_helper) for s in body + orelse)
            case ast.For(target=target, iter=iterated, body=body, orelse=orelse):
                inside = all(self.statement(s, in_helper) for s in body + orelse)
                return _names_only(target) and reads(iterated) and inside
            case ast.With(items=items, body=body):
                return all(map(self._scopes_only, items)) and all(self.statement(s, in_helper) for s in body)
        return in_helper and syntax.is_docstring(statement)

    def _scopes_only(self, item: ast.withitem) -> bool:
        """A context manager that only scopes a torch setting to its block (the device, grad mode), made from reads."""
        manager = item.context_expr
        return (
            isinstance(manager, ast.Call)
            and ast.unparse(manager.func) in _SCOPES
            and all(self.reads(a) for a in [*manager.args, *(k.value for k in manager.keywords)])
            and (item.optional_vars is None or _names_only(item.optional_vars))
        )

    def _acts_not(self, call: ast.Call, in_helper: bool) -> bool:
        """A call made for its effect that has none once the steps are gone: a log line, a device synchronization,
        or an idle helper, with arguments that only read."""
        func = call.func
        if not all(self.reads(a, in_helper) for a in [*call.args, *(k.value for k in call.keywords)]):
            return False
        if isinstance(func, ast.Attribute):
            logs = isinstance(func.value, ast.Name) and func.value.id == "logger" and func.attr in LOGGING
            return logs or func.attr == "synchronize" and ast.unparse(func.value).split(".")[0] == "torch"
        return isinstance(func, ast.Name) and self.helper(func.id)

    def helper(self, name: str) -> bool:
        if name not in self.helpers:
            return False
        if name in self._reading:
            return True
        self._reading.add(name)
        try:
            return all(self.statement(s, in_helper=True) for s in self.helpers[name].body)
        finally:
            self._reading.discard(name)

    def reads(self, value: ast.expr, in_helper: bool = False) -> bool:
        """Whether evaluating `value` only reads: every call in it a read (in a helper, any call but of a helper
        that acts)."""
        for call in (n for n in ast.walk(value) if isinstance(n, ast.Call)):
            func = call.func
            if isinstance(func, ast.Name) and func.id in self.helpers:
                if not self.helper(func.id):
                    return False
            elif not (in_helper or _a_read(func)):
                return False
        return True


def _vanishes(statement: ast.stmt, entry: ast.FunctionDef, steps: set[str]) -> bool:
    """A statement of the entry that the removal takes out whole, whatever its header does: a step's call, or an
    `if`, `with`, `for`, `while` or `try` that holds only such statements and locals that nothing else reads (its
    block empties, and the statement that exists only for it goes with it: transforms/removal.py)."""
    outside = Counter(n.id for n in ast.walk(entry) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    outside.subtract(n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    assigned = Counter(syntax.body_stores(entry))

    def goes(node: ast.stmt) -> bool:
        match node:
            case ast.Expr():
                return _calls_one_of(node, steps)
            case ast.Assign(targets=[ast.Name(id=name)], value=value):  # a local the dead-local pass then removes
                return assigned[name] == 1 and outside[name] <= 0 and pure(cst.parse_expression(ast.unparse(value)))
            case ast.If(body=body, orelse=orelse):
                return not (len(orelse) == 1 and isinstance(orelse[0], ast.If)) and all(map(goes, body + orelse))
            case ast.With(body=body) | ast.For(body=body, orelse=[]) | ast.While(body=body, orelse=[]):
                return all(map(goes, body))
            case ast.Try(body=body, finalbody=[]):
                return all(map(goes, body))
        return False

    return goes(statement)


_READS = PURE_BUILTINS | {"getattr", "hasattr", "isinstance", "str", "next", "any", "all", "range", "enumerate"}
_VALUES = {"torch.device"}  # constructors of a plain value a local may hold (a default device)
_SCOPES = {"torch.device", "torch.cuda.device", "torch.inference_mode", "torch.no_grad"}  # `with` a block's setting
# What may decorate a definition of a module the migration deletes (its import registers nothing).
_PLAIN_DECORATORS = {"dataclass", "dataclasses.dataclass", "torch.inference_mode", "torch.no_grad", "functools.cache"}


def _a_read(func: ast.expr) -> bool:
    """A callee the entry may read a local with: a builtin of _READS, a constructor of _VALUES, a predicate method."""
    if isinstance(func, ast.Name):
        return func.id in _READS
    return ast.unparse(func) in _VALUES or isinstance(func, ast.Attribute) and func.attr.startswith(("is_", "has_"))


def _inert(statement: ast.stmt) -> bool:
    """A module-level statement whose import does nothing the engine needs once the module goes: an import, a
    docstring, a definition (plainly decorated), an assignment of names, or an `if` (`TYPE_CHECKING`) of those."""
    match statement:
        case ast.Import() | ast.ImportFrom():
            return True
        case ast.FunctionDef(decorator_list=decorators) | ast.ClassDef(decorator_list=decorators):
            called = [d.func if isinstance(d, ast.Call) else d for d in decorators]
            return all(ast.unparse(d) in _PLAIN_DECORATORS for d in called)
        case ast.Assign(targets=targets):
            return all(map(_names_only, targets))
        case ast.AnnAssign(target=ast.Name()):
            return True
        case ast.If(body=body, orelse=orelse):
            return all(map(_inert, body + orelse))
    return syntax.is_docstring(statement)


def _is_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


def _names_only(target: ast.expr) -> bool:
    """A target that binds locals only (`name`, `a, (b, c)`), not an attribute or an item."""
    return isinstance(target, ast.Name) or isinstance(target, ast.Tuple) and all(map(_names_only, target.elts))


def _calls_one_of(statement: ast.stmt, names: set[str]) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id in names
    )
