"""The statement remover that every removing transform builds on."""

from __future__ import annotations

import functools

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor

from .base import Command, Operation
from .blocks import Rebuilder, RebuildsBlocks, empty, with_pass


class StatementRemover(RebuildsBlocks, Command):
    """Removes whole statements the way a reviewer would (see blocks.Rebuilder for gaps and comments).

    A block that empties takes the statement that exists only for it: an `if` (an if/else
    whose then-branch empties becomes `if not (...)`), a `try` whose body was only the call
    (not one with a `finally`), a `with`, `for` or `while`. What cannot be removed that way
    (a branch of an if/elif chain) is refused.
    """

    def __init__(self, context: CodemodContext, op: Operation):
        super().__init__(context, op)
        self.rebuilder = Rebuilder()

    def remove(self, original: cst.CSTNode) -> cst.RemovalSentinel:
        self.rebuilder.note(original)
        RemoveImportsVisitor.remove_unused_import_by_node(self.removal_context, original)
        return cst.RemoveFromParent()

    @functools.cached_property
    def removal_context(self) -> CodemodContext:
        """The context in which libcst finds the imports a removed statement used (by the statement's scopes)."""
        return self.context

    def leave_SimpleStatementLine(self, original, updated):
        return updated if updated.body else self.remove(original)

    def leave_If(self, original, updated):
        if empty(updated.body):
            if isinstance(updated.orelse, cst.If) or isinstance(self.parent(), cst.If):
                self.refuse(original, "the removed call was the only statement of a branch in an if/elif chain")
                return updated
            if updated.orelse is None:
                return self.remove(original)
            if empty(updated.orelse.body):
                return self.remove(original)
            return updated.with_changes(test=_negated(updated.test), body=updated.orelse.body, orelse=None)
        if isinstance(updated.orelse, cst.Else) and empty(updated.orelse.body):
            return updated.with_changes(orelse=None)
        return updated

    def leave_Try(self, original, updated):
        if not empty(updated.body):
            if updated.orelse is not None and empty(updated.orelse.body):
                return updated.with_changes(orelse=None)
            return updated
        if updated.finalbody is not None and not empty(updated.finalbody.body):
            self.refuse(original, "the removed call was the whole body of a try with a finally clause")
            return updated
        return self.remove(original)

    def _drop_if_empty(self, original, updated):
        if not empty(updated.body):
            return updated
        if getattr(updated, "orelse", None) is not None:
            self.refuse(original, "the removed call was the whole body of a loop with an else clause")
            return updated
        return self.remove(original)

    leave_With = leave_For = leave_While = _drop_if_empty

    def leave_ExceptHandler(self, original, updated):
        return with_pass(updated)

    def leave_Finally(self, original, updated):
        return with_pass(updated)

    def leave_FunctionDef(self, original, updated):
        return with_pass(updated)

    def leave_ClassDef(self, original, updated):
        return with_pass(updated)


def _negated(test: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    atomic = isinstance(test, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or test.lpar
    return cst.UnaryOperation(
        cst.Not(), test if atomic else test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    )
