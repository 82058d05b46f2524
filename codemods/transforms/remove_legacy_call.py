"""remove_legacy_call: every statement that calls a legacy warmup function goes."""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.helpers import get_absolute_module_from_package_for_import, get_full_name_for_node
from libcst.metadata import ScopeProvider

from ..spec import MigrationSpec, SpecError
from .base import Command, Operation, operation
from .imports import import_statements
from .removal import StatementRemover

if TYPE_CHECKING:
    from ..planner import Planner


@operation("remove_legacy_call", stage=3)
@dataclasses.dataclass(frozen=True)
class RemoveLegacyCalls(Operation):
    """Remove every statement that calls one of `functions` (fully qualified names).

    A call whose result is used, or a reference that lets the function escape as a value,
    is refused: the migration cannot tell what the code around it needs. Definitions the
    removal leaves unused go in the pipeline's dead-helper pass.
    """

    functions: frozenset[str]
    modules: frozenset[str] = frozenset()  # modules the migration deletes: their imports go when unused

    removes_statements = True

    def command(self, context: CodemodContext) -> Command:
        return _RemoveCalls(context, self)

    @classmethod
    def plan(cls, planner: Planner) -> None:
        """The legacy modules' steps these specs migrate, and the orchestrator's own steps, go with their calls."""
        groups: dict[str, list[MigrationSpec]] = {}
        for spec in planner.specs:
            if spec.legacy_module:
                groups.setdefault(spec.legacy_module, []).append(spec)
        for legacy, specs in groups.items():
            _plan_legacy(planner, legacy, specs)
        for spec in planner.specs:
            if spec.orchestrator_step:
                _plan_orchestrator_step(planner, spec)


class _RemoveCalls(StatementRemover):
    METADATA_DEPENDENCIES = (ScopeProvider,)

    def __init__(self, context: CodemodContext, op: RemoveLegacyCalls):
        super().__init__(context, op)
        self.called: set[int] = set()
        self.in_import = 0

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.bound = _names_binding(tree, self.context.full_package_name, self.op.functions)
        self.bound |= {
            f.rsplit(".", 1)[1] for f in self.op.functions if f.rsplit(".", 1)[0] == self.context.full_module_name
        }
        return super().transform_module_impl(tree)

    def _target(self, node: cst.CSTNode) -> str | None:
        """The legacy function a name or attribute denotes (resolved only when its first name could bind one)."""
        leftmost = node
        while isinstance(leftmost, cst.Attribute):
            leftmost = leftmost.value
        if not isinstance(leftmost, cst.Name) or leftmost.value not in self.bound:
            return None
        hit = self.fqns(node) & self.op.functions
        return min(hit) if hit else None

    def visit_Import(self, node):
        self.in_import += 1
        for alias in node.names:
            name = get_full_name_for_node(alias.name)
            if name in self.op.modules:
                self.remove_unused_import(name, asname=alias.asname.name.value if alias.asname else None)

    def leave_Import(self, original, updated):
        self.in_import -= 1
        return updated

    def visit_ImportFrom(self, node):
        self.in_import += 1
        source = self.import_source(node)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = get_full_name_for_node(alias.name)
            if source in self.op.modules or f"{source}.{name}" in self.op.modules:
                self.remove_unused_import(source, name, alias.asname.name.value if alias.asname else None)

    def leave_ImportFrom(self, original, updated):
        self.in_import -= 1
        return updated

    def visit_Call(self, node: cst.Call) -> None:
        target = self._target(node.func)
        if target is None:
            return
        self.called.add(id(node.func))
        parent = self.parent()
        if not (isinstance(parent, cst.Expr) and parent.value is node):
            self.refuse(node, f"the result of {target.rsplit('.', 1)[1]}() is used; remove or rewrite that use first")

    def _value_use(self, node: cst.CSTNode) -> None:
        target = self._target(node)
        if (
            target
            and not self.in_import
            and id(node) not in self.called
            and not isinstance(self.parent(), cst.FunctionDef)
        ):
            self.refuse(
                node,
                f"{target.rsplit('.', 1)[1]} is used as a value (it escapes; calls through it "
                "cannot be found): remove that use first",
            )

    def visit_Name(self, node: cst.Name) -> None:
        self._value_use(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._value_use(node)

    def leave_Expr(self, original: cst.Expr, updated: cst.Expr):
        if isinstance(original.value, cst.Call) and self._target(original.value.func):
            self.count += 1
            return self.remove(original)
        return updated


def _names_binding(tree: cst.Module, package: str, targets: frozenset[str]) -> set[str]:
    """Local names any import in the file binds to one of `targets` or to a module above one (a cheap prefilter)."""
    bound: set[str] = set()

    def leads_to(name: str) -> bool:
        return any(t == name or t.startswith(name + ".") for t in targets)

    for node in import_statements(tree):
        if isinstance(node, cst.Import):
            for alias in node.names:
                name = get_full_name_for_node(alias.name)
                if leads_to(name):
                    bound.add(alias.asname.name.value if alias.asname else name.split(".")[0])
        else:
            source = get_absolute_module_from_package_for_import(package, node) or ""
            for alias in node.names:
                if leads_to(f"{source}.{get_full_name_for_node(alias.name)}"):
                    bound.add(alias.asname.name.value if alias.asname else get_full_name_for_node(alias.name))
    return bound


def _plan_legacy(planner: Planner, legacy_name: str, specs: list[MigrationSpec]) -> None:
    """Remove the steps these specs migrate; delete the module (and its calls) once its entry is empty."""
    spec = specs[0]
    orchestrator = planner.module(spec, "orchestrator_module")
    if legacy_name not in planner.modules:
        for s in specs:
            if not planner.migrated(s):
                raise SpecError(
                    f"{s.family}: legacy_module {legacy_name!r} not found under {planner.repo}, and "
                    "the migrated state (registration inserted, kernel renamed) is not there either"
                )
        return
    legacy = planner.modules[legacy_name]
    entry = next(
        (n for n in legacy.tree.body if isinstance(n, ast.FunctionDef) and n.name == spec.legacy_function), None
    )
    if entry is None:
        raise SpecError(f"{spec.family}: legacy_function {spec.legacy_function!r} not found in {legacy_name}")
    steps = set()
    for s in specs:
        if s.legacy_step and s.legacy_step in legacy.defs:
            steps.add(s.legacy_step)
        elif s.legacy_step and not planner.migrated(s):
            raise SpecError(f"{s.family}: legacy_step {s.legacy_step!r} not found in {legacy_name}")
    whole = any(not s.legacy_step for s in specs)
    left = (
        []
        if whole
        else [
            s for s in entry.body if not _calls_one_of(s, steps) and not _is_docstring(s) and not _idle(s, legacy.defs)
        ]
    )
    if left:
        planner.add(legacy_name, RemoveLegacyCalls(frozenset(f"{legacy_name}.{step}" for step in steps)))
        planner.deleted_functions |= {f"{legacy_name}.{step}" for step in steps}
        return
    planner.deleted.add(legacy_name)
    planner.add(
        orchestrator.name,
        RemoveLegacyCalls(frozenset({f"{legacy_name}.{spec.legacy_function}"}), modules=frozenset({legacy_name})),
    )


def _plan_orchestrator_step(planner: Planner, spec: MigrationSpec) -> None:
    orchestrator = planner.module(spec, "orchestrator_module")
    step = spec.orchestrator_step
    if step not in orchestrator.defs:
        if planner.migrated(spec):
            return
        raise SpecError(f"{spec.family}: orchestrator_step {step!r} not found in {orchestrator.name}")
    planner.add(orchestrator.name, RemoveLegacyCalls(frozenset({f"{orchestrator.name}.{step}"})))
    if step.startswith("_"):
        planner.deleted_functions.add(f"{orchestrator.name}.{step}")


def _idle(statement: ast.stmt, legacy_defs: set[str]) -> bool:
    """A statement that does nothing once the steps are gone: a local read from its arguments or the legacy
    module's own helpers, a log line, an early return guarding what is no longer there."""
    if isinstance(statement, (ast.Pass, ast.Return)) and getattr(statement, "value", None) is None:
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "logger"
    if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
        calls = [n for n in ast.walk(statement.value) if isinstance(n, ast.Call)]
        return all(isinstance(c.func, ast.Name) and c.func.id in legacy_defs for c in calls)
    if isinstance(statement, ast.If) and not statement.orelse:
        return all(_idle(inner, legacy_defs) for inner in statement.body)
    return False


def _calls_one_of(statement: ast.stmt, names: set[str]) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id in names
    )


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )
