"""insert_owner: a compile unit that no contract object owns gets one, written into its module after the unit.

The owner (a class of the engine's contract base and its object, as the spec writes them) goes
after the module-level statement that `after` names, two blank lines before it as the module's
other definitions have; the names it imports come through libcst's AddImportsVisitor. Planning
leaves it out where the module binds the owner's object already (migrated).
"""

from __future__ import annotations

import dataclasses

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from ..syntax import holds_anchor
from .base import Command, Operation, code_of, operation


@operation("insert_owner")
@dataclasses.dataclass(frozen=True)
class InsertOwner(Operation):
    """Write `code` (which binds `binds`, the owner's object) after the module-level statement whose first line
    holds `after`, importing `imports` (`from x import y` lines) where the module lacks them."""

    code: str
    after: str
    binds: str
    imports: tuple[str, ...] = ()

    def command(self, context: CodemodContext) -> Command:
        return _Insert(context, self)


class _Insert(Command):
    SKIPS = (cst.FunctionDef, cst.ClassDef, cst.If, cst.Try, cst.With, cst.For, cst.While)  # module level only

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        body = list(updated.body)
        at = next((i for i, s in enumerate(body) if holds_anchor(_first_line(s), self.op.after)), None)
        if at is None:
            self.refuse(
                original,
                f"no module-level statement starts with {self.op.after!r} (owner_after): the owner of "
                f"{self.op.binds} goes after the compile unit it calls",
            )
            return updated
        owner = list(cst.parse_module(self.op.code).body)
        blank = [cst.EmptyLine(indent=False), cst.EmptyLine(indent=False)]
        owner[0] = owner[0].with_changes(leading_lines=blank)
        for line in self.op.imports:
            statement = cst.parse_statement(line).body[0]
            module = code_of(statement.module)
            for alias in statement.names:
                AddImportsVisitor.add_needed_import(self.context, module, alias.name.value)
        self.count += 1
        return updated.with_changes(body=[*body[: at + 1], *owner, *body[at + 1 :]])


def _first_line(statement: cst.CSTNode) -> str:
    """A module-level statement's first line: a definition's own line, below its comments and decorators."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        statement = statement.with_changes(decorators=[])
    return code_of(statement.with_changes(leading_lines=[])).splitlines()[0]
