"""Imports: libcst's import visitors as the transforms run them, and where new imports go."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, GatherUnusedImportsVisitor, RemoveImportsVisitor
from libcst.helpers import get_full_name_for_node
from libcst.metadata import ImportAssignment, ScopeProvider

from .blocks import RebuildsBlocks, Rebuilder, empty, with_pass
from .metadata import SharedMetadata

_NOT_AN_IMPORT = cst.SimpleStatementLine([cst.Pass()])


class TopLevelAddImports(SharedMetadata, AddImportsVisitor):
    """libcst's AddImportsVisitor, walking only the module's top-level import lines: all it reads or changes.

    Its gatherer reads the first statement (a docstring?) and the import lines that open the
    module, up to the first other statement; the visitor merges names into those imports and
    inserts new lines after them. So it enters only the module and its import lines, and its
    gatherer sees every other statement but the first as a placeholder line. When it adds
    nothing it returns the tree it was given.
    """

    def visit_Module(self, node: cst.Module) -> None:
        self.merged = False
        super().visit_Module(node.with_changes(body=[
            s if _imports_on(s) or (index == 0 and isinstance(s, cst.SimpleStatementLine)) else _NOT_AN_IMPORT
            for index, s in enumerate(node.body)]))

    def on_visit(self, node: cst.CSTNode) -> bool:
        return super().on_visit(node) and (isinstance(node, cst.Module) or _imports_on(node))

    def leave_ImportFrom(self, original, updated):
        result = super().leave_ImportFrom(original, updated)
        self.merged |= result is not updated
        return result

    def leave_Module(self, original, updated):
        result = super().leave_Module(original, updated)
        return original if result is updated and not self.merged else result


def _imports_on(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and \
        any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body)


class _GatherUnusedImports(GatherUnusedImportsVisitor):
    """libcst's unused-import finder, also for `from . import module` (libcst skips imports without a module)."""

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None and not isinstance(node.names, cst.ImportStar):
            self.handle_import(node)
            return False
        return super().visit_ImportFrom(node)


class TidyRemoveImports(SharedMetadata, RebuildsBlocks, RemoveImportsVisitor):
    """libcst's import removal, with the same gaps and comments rule as every other removal here.

    When it removes nothing it returns the tree it was given (libcst rebuilds each import it
    was asked about even then, so that is counted by names, not by node).
    """

    def __init__(self, context: CodemodContext, *args, **kwargs):
        super().__init__(context, *args, **kwargs)
        self.rebuilder = Rebuilder()
        self.removed = False

    def visit_Module(self, node: cst.Module) -> None:
        gatherer = _GatherUnusedImports(self.context)
        node.visit(gatherer)
        self._unused_imports = dict(gatherer.unused_imports)

    def leave_Import(self, original, updated):
        return self._noting_removal(original, updated, super().leave_Import(original, updated))

    def leave_ImportFrom(self, original, updated):
        return self._noting_removal(original, updated, super().leave_ImportFrom(original, updated))

    def _noting_removal(self, original, updated, result):
        if result is not updated:
            self.removed |= isinstance(result, cst.RemovalSentinel) or len(result.names) != len(original.names)
        return result

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        result = super().transform_module_impl(tree)
        return result if self.removed else tree

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


def may_remove(wrapper: cst.MetadataWrapper, requested: Sequence[tuple[str, str | None, str | None]]) -> bool:
    """Whether libcst's import removal, asked for `requested` ((module, name, alias) as RemoveImportsVisitor keeps
    them), could remove anything from this tree.

    It removes only an import it was asked about that is not in use, and an import whose name
    has a reference is in use (GatherUnusedImportsVisitor.is_in_use, its first test): when every
    import of a requested name is referenced, the removal would leave the tree as it is, so
    its passes over the file (unused-import gathering, qualified names, the rewrite) are skipped.
    """
    names = {name if name is not None else module for module, name, _ in requested}
    scopes = wrapper.resolve(ScopeProvider)
    for statement in _imports(wrapper.module):
        for alias in statement.names:
            if alias.evaluated_name in names and not _referenced(scopes.get(statement), alias):
                return True
    return False


def _referenced(scope, alias: cst.ImportAlias) -> bool:
    if scope is None:  # GatherUnusedImportsVisitor never counts such an import as unused
        return True
    bound = alias.evaluated_alias or alias.evaluated_name
    prefixes = [bound] if alias.evaluated_alias else [bound.rsplit(".", i)[0] for i in range(bound.count(".") + 1)]
    return any(isinstance(assignment, ImportAssignment) and assignment.references
               for name in prefixes for assignment in scope[name])


def _imports(module: cst.Module) -> list[cst.Import | cst.ImportFrom]:
    """Every import statement of the file but star imports, at any depth."""
    found: list[cst.Import | cst.ImportFrom] = []

    class Imports(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            found.append(node)
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            if not isinstance(node.names, cst.ImportStar):
                found.append(node)
            return False

    module.visit(Imports())
    return found


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
    new = [s for s in body if _imported_module(s) and _imported_module(s) not in known]
    if not new:
        return after
    for statement in new:
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
