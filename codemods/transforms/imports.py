"""Imports: libcst's removal of unused imports with this package's gaps and comments, and where new ones go."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import GatherUnusedImportsVisitor, RemoveImportsVisitor
from libcst.helpers import get_full_name_for_node

from .blocks import RebuildsBlocks, Rebuilder, empty, with_pass
from .metadata import NoCopy


class _GatherUnusedImports(GatherUnusedImportsVisitor):
    """libcst's unused-import finder, also for `from . import module` (libcst skips imports without a module)."""

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None and not isinstance(node.names, cst.ImportStar):
            self.handle_import(node)
            return False
        return super().visit_ImportFrom(node)


class TidyRemoveImports(NoCopy, RebuildsBlocks, RemoveImportsVisitor):
    """libcst's import removal, with the same gaps and comments rule as every other removal here."""

    def __init__(self, context: CodemodContext, *args, **kwargs):
        super().__init__(context, *args, **kwargs)
        self.rebuilder = Rebuilder()

    def visit_Module(self, node: cst.Module) -> None:
        gatherer = _GatherUnusedImports(self.context)
        node.visit(gatherer)
        self._unused_imports = dict(gatherer.unused_imports)

    def leave_SimpleStatementLine(self, original, updated):
        if updated.body:
            return updated
        self.rebuilder.note(original)
        return cst.RemoveFromParent()

    def leave_If(self, original, updated):
        """An `if TYPE_CHECKING:` that held only the removed imports goes too."""
        if empty(updated.body) and updated.orelse is None:
            self.rebuilder.note(original)
            return cst.RemoveFromParent()
        return with_pass(updated)

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)
        return with_pass(updated) if isinstance(updated, (cst.Else, cst.Try, cst.ExceptHandler, cst.Finally,
                                                           cst.With, cst.For, cst.While, cst.FunctionDef,
                                                           cst.ClassDef)) else updated


def _imported_module(statement: cst.CSTNode) -> str | None:
    """The absolute module a top-level import line imports from (None: not an import, or relative)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
        return get_full_name_for_node(small.module)
    if isinstance(small, cst.Import) and len(small.names) == 1:
        return get_full_name_for_node(small.names[0].name)
    return None


def place_new_imports(before: cst.Module, after: cst.Module) -> cst.Module:
    """An import of a module the file did not import before goes among the absolute imports, in module order.

    (libcst's AddImportsVisitor appends after the last import, relative ones included.)
    """
    known = {_imported_module(s) for s in before.body} - {None}
    body = list(after.body)
    for statement in [s for s in body if _imported_module(s) and _imported_module(s) not in known]:
        body.remove(statement)
        name = _imported_module(statement)
        package = name.split(".")[0]
        absolute = [i for i, s in enumerate(body) if _imported_module(s) and _imported_module(s) != "__future__"]
        same_package = [i for i in absolute if _imported_module(body[i]).split(".")[0] == package]
        # isort's order within a package's block: `import m` lines, then `from m import` lines, each by module.
        later = [i for i in same_package if _sort_key(body[i]) > _sort_key(statement)]
        if later:  # take its place in the block: it keeps its own leading lines
            position = later[0]
            statement = statement.with_changes(leading_lines=body[position].leading_lines)
            body[position] = body[position].with_changes(leading_lines=[])
        elif same_package:
            position = same_package[-1] + 1
        else:  # a package the file imports nothing from: a block of its own after the others
            position = absolute[-1] + 1 if absolute else 0
            if absolute:
                statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
        body.insert(position, statement)
    return after.with_changes(body=body)


def _sort_key(statement: cst.CSTNode) -> tuple[bool, str]:
    small = statement.body[0]
    return isinstance(small, cst.ImportFrom), _imported_module(statement)
