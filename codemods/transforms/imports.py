"""Imports: libcst's import visitors as the transforms run them, and where new imports go."""

from __future__ import annotations

import re
import symtable
from collections import Counter
from collections.abc import Callable, Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import (
    AddImportsVisitor,
    GatherExportsVisitor,
    GatherNamesFromStringAnnotationsVisitor,
    GatherUnusedImportsVisitor,
    RemoveImportsVisitor,
)
from libcst.helpers import get_full_name_for_node
from libcst.metadata import ImportAssignment, ScopeProvider

from .blocks import NO_STATEMENTS, Rebuilder, RebuildsBlocks, empty, with_pass
from .metadata import SharedMetadata, outline_scopes

_NOT_AN_IMPORT = cst.SimpleStatementLine([cst.Pass()])
_EMPTY = cst.Module(body=[])


class _PlainDispatch:
    """For one of libcst's matcher-decoratable visitors that has no matcher decorators: dispatch as a plain visitor.

    Its matcher bookkeeping on every node costs three times the visit itself; with no
    matchers it decides nothing, and libcst then calls the plain dispatch (CSTVisitor's or
    CSTTransformer's), which is what runs here. A class that has some keeps libcst's.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        plain = self._matchers or self._extra_visit_funcs or self._extra_leave_funcs
        self._plain = None if plain else cst.CSTTransformer if isinstance(self, cst.CSTTransformer) else cst.CSTVisitor

    def on_visit(self, node):
        return super().on_visit(node) if self._plain is None else self._plain.on_visit(self, node)

    def on_leave(self, original, *updated):
        return (
            super().on_leave(original, *updated)
            if self._plain is None
            else self._plain.on_leave(self, original, *updated)
        )

    def on_visit_attribute(self, node, attribute):
        return (
            super().on_visit_attribute(node, attribute)
            if self._plain is None
            else self._plain.on_visit_attribute(self, node, attribute)
        )

    def on_leave_attribute(self, original, attribute):
        return (
            super().on_leave_attribute(original, attribute)
            if self._plain is None
            else self._plain.on_leave_attribute(self, original, attribute)
        )


class TopLevelAddImports(SharedMetadata, _PlainDispatch, AddImportsVisitor):
    """libcst's AddImportsVisitor, walking only the module's top-level import lines: all it reads or changes.

    Its gatherer reads the first statement (a docstring?) and the import lines that open the
    module, up to the first other statement; the visitor merges names into those imports and
    inserts new lines after them. So it enters only the module and its import lines, and its
    gatherer sees every other statement but the first as a placeholder line. When it adds
    nothing it returns the tree it was given.
    """

    def visit_Module(self, node: cst.Module) -> None:
        self.merged = False
        super().visit_Module(
            node.with_changes(
                body=[
                    s if _imports_on(s) or (index == 0 and isinstance(s, cst.SimpleStatementLine)) else _NOT_AN_IMPORT
                    for index, s in enumerate(node.body)
                ]
            )
        )

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
    return isinstance(statement, cst.SimpleStatementLine) and _holds_import(statement)


def _holds_import(line: cst.SimpleStatementLine | cst.SimpleStatementSuite) -> bool:
    return any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in line.body)


class _Exports(_PlainDispatch, GatherExportsVisitor):
    pass


class _StringAnnotations(_PlainDispatch, GatherNamesFromStringAnnotationsVisitor):
    pass


class _GatherUnusedImports(_PlainDispatch, GatherUnusedImportsVisitor):
    """libcst's unused-import finder, also for `from . import module` (libcst skips imports without a module)."""

    def visit_Module(self, node: cst.Module) -> bool:
        """GatherUnusedImportsVisitor.visit_Module (libcst 1.9), its two gatherers dispatching plainly."""
        exports = _Exports(self.context)
        node.visit(exports)
        self._exported_names = exports.explicit_exported_objects
        annotations = _StringAnnotations(self.context, typing_functions=self._typing_functions)
        node.visit(annotations)
        self._string_annotation_names = annotations.names
        return True

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None and not isinstance(node.names, cst.ImportStar):
            self.handle_import(node)
            return False
        return super().visit_ImportFrom(node)


class TidyRemoveImports(SharedMetadata, RebuildsBlocks, _PlainDispatch, RemoveImportsVisitor):
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
        return (
            with_pass(updated)
            if isinstance(
                updated,
                (
                    cst.Else,
                    cst.Try,
                    cst.ExceptHandler,
                    cst.Finally,
                    cst.With,
                    cst.For,
                    cst.While,
                    cst.FunctionDef,
                    cst.ClassDef,
                ),
            )
            else updated
        )


class RemoveKnownImports(TidyRemoveImports):
    """TidyRemoveImports told which imports are unused (`unused_asked`): no gatherer, no metadata, and a walk that
    enters only what can hold an import."""

    @classmethod
    def get_inherited_dependencies(cls):
        return frozenset()  # libcst unites the declarations of every base: the gatherer's are not needed here

    def __init__(self, context: CodemodContext, unused: dict[cst.ImportAlias, cst.Import | cst.ImportFrom]):
        super().__init__(context)
        self.known = unused

    def visit_Module(self, node: cst.Module) -> None:
        self._unused_imports = self.known

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return _holds_import(node) and super().on_visit(node)
        return not isinstance(node, NO_STATEMENTS) and super().on_visit(node)


def unused_asked(
    wrapper: cst.MetadataWrapper, code: str, requested: Sequence[tuple[str, str | None, str | None]]
) -> dict[cst.ImportAlias, cst.Import | cst.ImportFrom] | None:
    """The imports libcst's removal, asked for `requested` ((module, name, alias) as RemoveImportsVisitor keeps
    them), would find unused in this tree (whose text is `code`); None when only its own gatherer can tell.

    An import is unused when nothing references its name (GatherUnusedImportsVisitor.is_in_use),
    nor `__all__` or a string annotation names it: where no string of the file holds the name,
    references decide alone. They are read on an outline (metadata.outline_scopes) that keeps
    every function mentioning a name asked about: the others cannot reference it, so the
    outline's answer is the file's, at a fraction of the file's scopes (and none of the
    qualified names libcst's gatherer resolves for string annotations). Most names are settled
    before that, by Python's own symbol table (`_settled`).
    """
    names = {name if name is not None else module for module, name, _ in requested}
    statements = import_statements(wrapper.module)
    asked = [
        (statement, alias)
        for statement in statements
        for alias in statement.names
        if alias.evaluated_name in names and not _from_future(statement)  # libcst's gatherer never counts those
    ]
    used, unused = _settled(statements, code, {_word(alias) for _, alias in asked})
    settled = [(statement, alias) for statement, alias in asked if _word(alias) in unused]
    asked = [(statement, alias) for statement, alias in asked if _word(alias) not in used | unused]
    unmet = {_word(alias) for _, alias in asked}

    def first_to_mention(function: cst.FunctionDef) -> bool:
        mentioned = {word for word in unmet if _mentions(_EMPTY.code_for_node(function), word)}
        unmet.difference_update(mentioned)
        return bool(mentioned)

    # Most names asked about are still in use: the first function that mentions each shows it, cheaply.
    asked = _unreferenced(wrapper, code, asked, first_to_mention, final=False)
    words = {_word(alias) for _, alias in asked}
    if any(re.search(rf"[\"'][^\"'\n]*\b{re.escape(word)}\b", code) for word in words):
        return None  # `__all__` or a string annotation may name it: libcst's gatherer decides
    asked = _unreferenced(
        wrapper, code, asked, lambda function: any(_mentions(_EMPTY.code_for_node(function), w) for w in words)
    )
    return {alias: statement for statement, alias in settled + asked}


def _settled(statements: list[cst.Import | cst.ImportFrom], code: str, words: set[str]) -> tuple[set[str], set[str]]:
    """The names asked about that the file's symbol table settles at C speed.

    `used`: the file imports the name once, at module level, and some scope reads it as the
    module's global (with two imports, a local one elsewhere may be unread: libcst decides).
    `unused`: the text holds the name only in its import statements (no reference, string or
    annotation can name it). The rest are left to libcst's scopes: the table does not see an
    annotation under `from __future__ import annotations`, nor strings.
    """
    if not words:
        return set(), set()
    try:
        table = symtable.symtable(code, "<file>", "exec")
    except SyntaxError:  # syntax libcst reads that this Python does not
        return set(), set()
    imports_text = "\n".join(_EMPTY.code_for_node(statement) for statement in statements)
    unused = {word for word in words if _count(code, word) == _count(imports_text, word)}
    bindings = Counter(_word(alias) for statement in statements for alias in statement.names)
    used = {
        word
        for word in words - unused
        if bindings[word] == 1 and _imported_by_module(table, word) and _read_as_global(table, word)
    }
    return used, unused


def _imported_by_module(table: symtable.SymbolTable, name: str) -> bool:
    """The module's scope imports `name`: with one import of it in the file, that is the import every read of the
    global counts for (libcst counts a read for every binding of the name in its scope, wherever it stands)."""
    symbol = _symbol(table, name)
    return symbol is not None and symbol.is_imported()


def _symbol(table: symtable.SymbolTable, name: str) -> symtable.Symbol | None:
    try:
        return table.lookup(name)
    except KeyError:
        return None


def _read_as_global(table: symtable.SymbolTable, name: str) -> bool:
    """Some scope, this one or one inside it, reads `name` as the module's global."""
    symbol = _symbol(table, name)
    if symbol is not None and symbol.is_referenced() and (table.get_type() == "module" or symbol.is_global()):
        return True
    return any(_read_as_global(child, name) for child in table.get_children())


def _count(code: str, word: str) -> int:
    return len(re.findall(rf"\b{re.escape(word)}\b", code))


def _unreferenced(wrapper: cst.MetadataWrapper, code: str, asked: list, keep: Callable, final: bool = True) -> list:
    """The (statement, alias) pairs not referenced on the file's outline that keeps the functions `keep` takes.
    Not `final`: an import inside a function the outline left out has no scope there, and stays in question."""
    if not asked:
        return []
    scopes = outline_scopes(wrapper.module, code, keep=keep)
    if scopes is None:
        scopes = wrapper.resolve(ScopeProvider)
    # GatherUnusedImportsVisitor never counts an import it finds no scope for as unused.
    return [
        (s, alias)
        for s, alias in asked
        if (s in scopes and scopes[s] is not None and not _referenced(scopes[s], alias))
        or (s not in scopes and not final)
    ]


def _from_future(statement: cst.Import | cst.ImportFrom) -> bool:
    return (
        isinstance(statement, cst.ImportFrom)
        and statement.module is not None
        and get_full_name_for_node(statement.module) == "__future__"
    )


def _word(alias: cst.ImportAlias) -> str:
    return (alias.evaluated_alias or alias.evaluated_name).split(".")[0]


def _mentions(code: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", code) is not None


def _referenced(scope, alias: cst.ImportAlias) -> bool:
    bound = alias.evaluated_alias or alias.evaluated_name
    prefixes = [bound] if alias.evaluated_alias else [bound.rsplit(".", i)[0] for i in range(bound.count(".") + 1)]
    return any(
        isinstance(assignment, ImportAssignment) and assignment.references
        for name in prefixes
        for assignment in scope[name]
    )


def import_statements(module: cst.Module) -> list[cst.Import | cst.ImportFrom]:
    """Every import statement of the file but star imports, at any depth (the walk enters statements only)."""
    found: list[cst.Import | cst.ImportFrom] = []

    class Imports(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                if not isinstance(node.names, cst.ImportStar):
                    found.append(node)
                return False
            if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                return _holds_import(node)
            return not isinstance(node, NO_STATEMENTS)

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
    new = [s for s in after.body if _imported_module(s) and _imported_module(s) not in known]
    if not new:
        return after
    # All taken out first: placing one may take over the leading lines of another new one (a copy then stands in
    # its place).
    body = [s for s in after.body if not any(s is n for n in new)]
    for statement in new:
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
