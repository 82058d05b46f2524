"""remove_dead_local: function locals a removal left unread go, when computing their value does nothing else."""

from __future__ import annotations

import dataclasses
import symtable
from collections.abc import Mapping

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.metadata import Assignment, FunctionScope, GlobalScope, Scope, ScopeProvider

from .base import Command, Operation, operation
from .blocks import NO_STATEMENTS, Rebuilder
from .removal import StatementRemover

# Builtins a dead local's value may call and still be dropped with it (no side effect, nothing else to keep).
_PURE_BUILTINS = frozenset({"abs", "bool", "float", "int", "len", "max", "min", "round", "str", "tuple"})


def pure(node: cst.CSTNode) -> bool:
    """An expression whose evaluation does nothing but compute it: names, attribute reads, literals,
    operators, subscripts and calls of a few builtins on such expressions."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(node, cst.Attribute):
        return pure(node.value)
    if isinstance(node, cst.BinaryOperation):
        return pure(node.left) and pure(node.right)
    if isinstance(node, cst.UnaryOperation):
        return pure(node.expression)
    if isinstance(node, cst.BooleanOperation):
        return pure(node.left) and pure(node.right)
    if isinstance(node, cst.Comparison):
        return pure(node.left) and all(pure(target.comparator) for target in node.comparisons)
    if isinstance(node, cst.Call):
        return (
            isinstance(node.func, cst.Name)
            and node.func.value in _PURE_BUILTINS
            and all(pure(arg.value) and not arg.star for arg in node.args)
        )
    return False


def dead_locals(scopes: Mapping[cst.CSTNode, Scope]) -> dict[tuple[str, str], cst.Assign]:
    """Function locals assigned once by a plain `name = <pure value>` and never read, by (function, name); the
    function by its qualified name (`Class.method`: two methods of one name are two functions).

    `scopes`: ScopeProvider's, of the file or of an outline that keeps the functions asked about. Only a
    name can be what an `Assign` binds (a parameter's, a def's or an import's binding is another node), and
    the statement that binds it is looked up in the function's own assignments, gathered when first needed.
    """
    dead: dict[tuple[str, str], cst.Assign] = {}
    for scope in set(scopes.values()):
        if not isinstance(scope, FunctionScope):
            continue
        statements: dict[int, cst.Assign] | None = None
        for name in {assignment.name for assignment in scope.assignments}:
            assignments = list(scope.assignments[name])
            if (
                len(assignments) != 1
                or scope.accesses[name]
                or not isinstance(assignments[0], Assignment)
                or not isinstance(assignments[0].node, cst.Name)
            ):
                continue
            if statements is None:
                statements = _assignments_by_target(scope.node)
            statement = statements.get(id(assignments[0].node))
            if statement is not None and len(statement.targets) == 1 and pure(statement.value):
                dead[(_qualified(scope), name)] = statement
    return dead


def unread_somewhere(code: str) -> bool:
    """Whether some function of `code` binds a name it never reads, as Python's symbol table sees it (at C speed).
    Every local dead_locals finds is one: where there is none, its scopes need not be resolved."""

    def unread(table: symtable.SymbolTable) -> bool:
        return any(
            s.is_assigned()
            and not (s.is_referenced() or s.is_parameter() or s.is_namespace() or s.is_imported() or s.is_global())
            for s in (table.get_symbols() if table.get_type() == "function" else ())
        ) or any(map(unread, table.get_children()))

    return unread(symtable.symtable(code, "<module>", "exec"))


def _qualified(scope: Scope) -> str:
    """The dotted names of a scope and the scopes around it, up to the module's (`Outer.method.<locals>.inner` as
    `Outer.method.inner`)."""
    names = []
    while scope is not None and not isinstance(scope, GlobalScope):
        names.append(scope.name or "")
        scope = scope.parent
    return ".".join(reversed(names))


def _assignments_by_target(function: cst.CSTNode) -> dict[int, cst.Assign]:
    """Each `Assign` in a function under the identity of each node it assigns to (what an AssignTarget holds)."""
    found: dict[int, cst.Assign] = {}

    class Assigns(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            found.update((id(target.target), node) for target in node.targets)

    function.visit(Assigns())
    return found


@operation("remove_dead_local")
@dataclasses.dataclass(frozen=True)
class RemoveDeadLocals(Operation):
    """Delete plain `name = <pure value>` statements of function locals named in `names` ((function, name)
    pairs the change left unread): nothing runs differently, and the engine's linter stays quiet (F841)."""

    names: frozenset[tuple[str, str]]

    removes_statements = True

    def command(self, context: CodemodContext) -> Command:
        return _RemoveDeadLocals(context, self)


class _RemoveDeadLocals(StatementRemover):
    SKIPS = NO_STATEMENTS  # it removes whole statement lines, at any depth

    def __init__(self, context: CodemodContext, op: Operation):
        super().__init__(context, op)
        self.rebuilder = Rebuilder(owns_comments=True)  # a comment on the local is about the code it was for

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.targets = {
            id(node)
            for key, node in dead_locals(self.context.wrapper.resolve(ScopeProvider)).items()
            if key in self.op.names
        }
        return super().transform_module_impl(tree)

    def leave_SimpleStatementLine(self, original, updated):
        if len(original.body) == 1 and id(original.body[0]) in self.targets:
            self.count += 1
            return self.remove(original)
        return super().leave_SimpleStatementLine(original, updated)
