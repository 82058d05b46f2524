"""remove_legacy_call: every statement that calls a legacy warmup function goes."""

from __future__ import annotations

import dataclasses
import functools

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.helpers import get_absolute_module_from_package_for_import, get_full_name_for_node

from .base import Command, Operation, operation
from .imports import import_statements
from .metadata import ResolvedScopes
from .removal import StatementRemover


@operation("remove_legacy_call")
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


class _RemoveCalls(StatementRemover):
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

    @functools.cached_property
    def scopes(self):
        """It asks only about names and attributes that start with a name in `bound` (`_target`), and removes only
        statements that call one: resolved on the outline keeping the functions that name one."""
        return self.scopes_naming(self.bound) if self.bound else {}

    @functools.cached_property
    def removal_context(self) -> CodemodContext:
        """The imports a removed statement used are found by its scopes, which `scopes` holds."""
        return dataclasses.replace(self.context, wrapper=ResolvedScopes(self.scopes))

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
