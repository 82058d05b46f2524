"""Planning the removals: the legacy steps the specs migrate go with their calls, and a legacy module whose
entry has nothing left goes whole (with the orchestrator's call of it)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .. import syntax
from ..findings import Findings
from ..lift.tables import PURE_BUILTINS
from ..spec import MigrationSpec, SpecError
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
    """Remove the steps these specs migrate; delete the module (and its calls) once its entry is empty."""
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
    left = [] if whole else [s for s in entry.body if not syntax.is_docstring(s) and not _idle(s, helpers, steps)]
    if left:
        findings.add(legacy_name, RemoveLegacyCalls(frozenset(f"{legacy_name}.{step}" for step in steps)))
        findings.deleted_functions |= {f"{legacy_name}.{step}" for step in steps}
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


def _idle(statement: ast.stmt, helpers: dict[str, ast.FunctionDef], steps: set[str]) -> bool:
    """A statement that does nothing once the steps are gone: a call of one of them, a local read from its
    arguments, builtins, `torch.device(...)` or the legacy module's own helpers, a log line, a device synchronization
    (nothing of the module's is left to wait for) or a call of a helper that only does such things, an early
    return, or an `if` or a `for` over such reads around what is no longer there (a search for the model type)."""
    if isinstance(statement, (ast.Pass, ast.Break, ast.Continue, ast.Return)) and not getattr(statement, "value", None):
        return True
    if _calls_one_of(statement, steps):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        if isinstance(func, ast.Attribute):
            return func.attr == "synchronize" or isinstance(func.value, ast.Name) and func.value.id == "logger"
        helper = helpers.get(func.id) if isinstance(func, ast.Name) else None
        rest = {name: node for name, node in helpers.items() if node is not helper}  # a helper calling itself
        return helper is not None and all(syntax.is_docstring(s) or _idle(s, rest, steps) for s in helper.body)
    if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
        return _reads_only(statement.value, helpers)
    if isinstance(statement, ast.If) and not statement.orelse:
        return all(_idle(inner, helpers, steps) for inner in statement.body)
    if isinstance(statement, ast.For) and _names_only(statement.target):
        body = statement.body + statement.orelse
        return _reads_only(statement.iter, helpers) and all(_idle(inner, helpers, steps) for inner in body)
    return False


_READS = PURE_BUILTINS | {"getattr", "hasattr", "isinstance", "str"}  # builtins a local may be read with
_VALUES = {"torch.device"}  # constructors of a plain value a local may hold (a default device)


def _reads_only(value: ast.expr, helpers: dict[str, ast.FunctionDef]) -> bool:
    """Whether the only calls in `value` are of _READS, _VALUES or the legacy module's own helpers."""
    calls = [n for n in ast.walk(value) if isinstance(n, ast.Call)]
    return all(
        isinstance(c.func, ast.Name) and c.func.id in helpers.keys() | _READS or ast.unparse(c.func) in _VALUES
        for c in calls
    )


def _names_only(target: ast.expr) -> bool:
    """A loop target that binds locals only (`name`, `a, (b, c)`), not an attribute or an item."""
    return isinstance(target, ast.Name) or isinstance(target, ast.Tuple) and all(map(_names_only, target.elts))


def _calls_one_of(statement: ast.stmt, names: set[str]) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id in names
    )
