"""The migration's edits, each a libcst codemod command driven by plain parameters (no family knowledge).

Names are resolved semantically: `FullyQualifiedNameProvider` says what a name or attribute
refers to whatever the import form (module aliases, aliased names, relative imports, imports
inside functions), `ScopeProvider` says what is bound where. So a local, a parameter, a
keyword argument or an attribute of another object that merely shares a name is never
touched. An edit that cannot be made safely is refused (`Refusal`, with the line and why),
never guessed. Imports go through libcst's `AddImportsVisitor` / `RemoveImportsVisitor`.

Operations are frozen dataclasses (they travel to worker processes); `command(context)`
makes the codemod, and `apply` runs a file's operations in order, then deletes private
helpers the change left without a caller and locals it left unread (when their value is pure).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, GatherUnusedImportsVisitor, RemoveImportsVisitor
from libcst.helpers import get_absolute_module_from_package_for_import, get_full_name_for_node
from libcst.metadata import (Assignment, FullRepoManager, FullyQualifiedNameProvider, FunctionScope, ParentNodeProvider,
                             PositionProvider, ScopeProvider)
from libcst.metadata.name_provider import FullyQualifiedNameVisitor

_EMPTY_MODULE = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(node)


@dataclasses.dataclass(frozen=True)
class Refusal:
    """An edit the migration will not make: where, and why."""

    line: int
    why: str


class AnchorError(LookupError):
    """A spec's anchor is not in the file it should be in."""


class _NoCopy:
    """Resolve metadata on the module as it is: libcst's MetadataWrapper deep-copies it first (a third of a
    command's cost on a large file), which only matters when node objects are shared between trees that are
    analysed at once; here each tree is analysed once, then replaced by the command's output."""

    @contextlib.contextmanager
    def _handle_metadata_reference(self, module: cst.Module):
        previous = self.context.wrapper
        cache = self.context.metadata_manager.get_cache_for_path(self.context.filename)
        wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True, cache=cache)
        with self.resolve(wrapper):
            self.context = dataclasses.replace(self.context, wrapper=wrapper)
            try:
                yield wrapper.module
            finally:
                self.context = dataclasses.replace(self.context, wrapper=previous)


class _Command(_NoCopy, CodemodCommand, cst.CSTTransformer):
    """Shared plumbing: fully qualified names, positions, refusals and an edit count.

    A libcst codemod command (so AddImportsVisitor / RemoveImportsVisitor run after it) that
    visits as a plain CSTTransformer: the matcher dispatch of VisitorBasedCodemodCommand on
    every node would double a command's cost. Each command declares only the metadata it reads.
    """

    METADATA_DEPENDENCIES = (ScopeProvider, ParentNodeProvider)

    def __init__(self, context: CodemodContext):
        CodemodCommand.__init__(self, context)
        cst.CSTTransformer.__init__(self)
        self.count = 0
        self.refusals: list[Refusal] = []
        self.warnings: list[Refusal] = []

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        return tree.visit(self)

    def fqns(self, node: cst.CSTNode) -> set[str]:
        """What a name or attribute refers to, fully qualified (relative imports and module locals resolved).

        FullyQualifiedNameProvider's answer, computed only for the nodes asked about: the
        provider itself qualifies every node of the file, which costs more than the scopes.
        """
        scope = self.get_metadata(ScopeProvider, node, None)
        return set() if scope is None else self.qualified(scope, node)

    def qualified(self, scope, node_or_name: cst.CSTNode | str) -> set[str]:
        """What a node, or a name read in `scope`, refers to there, fully qualified."""
        module, package = self.context.full_module_name, self.context.full_package_name
        return {FullyQualifiedNameVisitor._fully_qualify(module, package, q).name
                for q in scope.get_qualified_names_for(node_or_name)}

    def position(self, node: cst.CSTNode):
        """Where a node is; resolved only when asked (a refusal, a binding check): positions cost a code pass."""
        return self.context.wrapper.resolve(PositionProvider).get(node)

    def line(self, node: cst.CSTNode) -> int:
        return self.position(node).start.line

    def refuse(self, node: cst.CSTNode, why: str) -> None:
        self.refusals.append(Refusal(self.line(node), why))

    def import_source(self, node: cst.ImportFrom) -> str:
        return get_absolute_module_from_package_for_import(self.context.full_package_name, node) or ""

    def _instantiate_and_run(self, transform, tree: cst.Module) -> cst.Module:
        return super()._instantiate_and_run(_TidyRemoveImports if transform is RemoveImportsVisitor else transform, tree)


# ---------------------------------------------------------------- rename


@dataclasses.dataclass(frozen=True)
class RenameKernel:
    """Rename the kernel `old` -> `new` wherever this file refers to it.

    exporters: modules that define or re-export it (`exporter.old` are its fully qualified
    names). In an exporter, string literals equal to `old` are renamed too (lazy-export
    tables, `__all__`); anywhere, dotted strings `exporter.old` and the name argument of
    `getattr` / `hasattr` on an exporter module.
    """

    old: str
    new: str
    exporters: frozenset[str]

    def command(self, context: CodemodContext) -> _Command:
        return _Rename(context, self)


class _Rename(_Command):
    METADATA_DEPENDENCIES = (ScopeProvider,)

    def __init__(self, context: CodemodContext, op: RenameKernel):
        super().__init__(context)
        self.op = op
        self.targets = {f"{module}.{op.old}" for module in op.exporters}
        self.in_exporter = context.full_module_name in op.exporters
        self.star_from_exporter = False

    def _renames(self, node: cst.CSTNode) -> bool:
        return bool(self.fqns(node) & self.targets)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if isinstance(node.names, cst.ImportStar) and self.import_source(node) in self.op.exporters:
            self.star_from_exporter = True
        return False  # the names of an import are handled in leave_ImportFrom

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        if isinstance(updated.names, cst.ImportStar) or self.import_source(original) not in self.op.exporters:
            return updated
        names = []
        for alias in updated.names:
            if isinstance(alias.name, cst.Name) and alias.name.value == self.op.old:
                alias = alias.with_changes(name=cst.Name(self.op.new))
                self.count += 1
            names.append(alias)
        return updated.with_changes(names=names)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        if original.value != self.op.old:
            return updated
        if self._renames(original):
            self.count += 1
            return updated.with_changes(value=self.op.new)
        if self.star_from_exporter and not self.fqns(original):
            self.refuse(original, f"uses {self.op.old} from a star import of its module; after the rename it is "
                                  f"private and a star import does not bind it: import {self.op.new} by name")
        return updated

    def leave_Global(self, original: cst.Global, updated: cst.Global) -> cst.Global:
        """`global old` in a function of an exporter declares the kernel's own name."""
        if not self.in_exporter or not any(item.name.value == self.op.old for item in original.names):
            return updated
        self.count += 1
        return updated.with_changes(names=[item.with_changes(name=cst.Name(self.op.new))
                                           if item.name.value == self.op.old else item for item in updated.names])

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        if original.attr.value == self.op.old and self._renames(original):
            self.count += 1
            return updated.with_changes(attr=cst.Name(self.op.new))
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """getattr / hasattr on an exporter module name the kernel by string."""
        if not (self.fqns(original.func) & {"builtins.getattr", "builtins.hasattr", "builtins.setattr"}) \
                or len(original.args) < 2 or not (self.fqns(original.args[0].value) & self.op.exporters):
            return updated
        name = original.args[1].value
        if not isinstance(name, cst.SimpleString):
            module = min(self.fqns(original.args[0].value) & self.op.exporters)
            self.warnings.append(Refusal(self.line(original), f"a computed attribute name of {module} may name "
                                                              f"{self.op.old}; check it by hand"))
            return updated
        if name.evaluated_value != self.op.old:
            return updated
        args = list(updated.args)
        args[1] = args[1].with_changes(value=_restring(name, self.op.new))
        self.count += 1
        return updated.with_changes(args=args)

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString:
        value = original.evaluated_value
        if self.in_exporter and value == self.op.old:
            self.count += 1
            return _restring(updated, self.op.new)
        if value in self.targets:
            self.count += 1
            return _restring(updated, value[: -len(self.op.old)] + self.op.new)
        return updated


def _restring(node: cst.SimpleString, text: str) -> cst.SimpleString:
    """The same string literal (prefix and quotes kept) with new text."""
    start = len(node.prefix) + len(node.quote)
    return node.with_changes(value=node.value[:start] + text + node.quote)


# ---------------------------------------------------------------- removal


class _Rebuilder:
    """Puts a block back together after statements were removed from it: gaps and comments as a reviewer would.

    A comment directly above a removed statement goes with it only when nothing follows in
    its block or a blank line separates it from what follows; otherwise it stays,
    introducing the next statement. Section comments (above a blank line) stay. The next
    statement takes the wider of the two gaps (none at the start of a block).
    """

    def __init__(self):
        self.removed: dict[int, Sequence[cst.EmptyLine]] = {}

    def note(self, original: cst.CSTNode) -> None:
        self.removed[id(original)] = getattr(original, "leading_lines", ())

    def rebuild(self, original_body: Sequence[cst.CSTNode], updated_body: Sequence[cst.CSTNode]) -> list:
        kept = iter(updated_body)
        result: list = []
        pending: list[Sequence[cst.EmptyLine]] = []
        for statement in original_body:
            if id(statement) in self.removed:
                pending.append(self.removed[id(statement)])
                continue
            node = next(kept)
            if pending and hasattr(node, "leading_lines"):
                node = node.with_changes(leading_lines=_merge_leading(pending, node.leading_lines, not result))
            pending = []
            result.append(node)
        return result


class _GatherUnusedImports(GatherUnusedImportsVisitor):
    """libcst's unused-import finder, also for `from . import module` (libcst skips imports without a module)."""

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None and not isinstance(node.names, cst.ImportStar):
            self.handle_import(node)
            return False
        return super().visit_ImportFrom(node)


class _TidyRemoveImports(_NoCopy, RemoveImportsVisitor):
    """libcst's import removal, with the same gaps and comments rule as every other removal here."""

    def __init__(self, context: CodemodContext, *args, **kwargs):
        super().__init__(context, *args, **kwargs)
        self.rebuilder = _Rebuilder()

    def visit_Module(self, node: cst.Module) -> None:
        gatherer = _GatherUnusedImports(self.context)
        node.visit(gatherer)
        self._unused_imports = dict(gatherer.unused_imports)

    def leave_SimpleStatementLine(self, original, updated):
        if updated.body:
            return updated
        self.rebuilder.note(original)
        return cst.RemoveFromParent()

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self.rebuilder.rebuild(original.body, updated.body))

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self.rebuilder.rebuild(original.body, updated.body))

    def leave_If(self, original, updated):
        """An `if TYPE_CHECKING:` that held only the removed imports goes too."""
        if _empty(updated.body) and updated.orelse is None:
            self.rebuilder.note(original)
            return cst.RemoveFromParent()
        return _with_pass(updated)

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)
        return _with_pass(updated) if isinstance(updated, (cst.Else, cst.Try, cst.ExceptHandler, cst.Finally,
                                                            cst.With, cst.For, cst.While, cst.FunctionDef,
                                                            cst.ClassDef)) else updated


class _StatementRemover(_Command):
    """Removes whole statements the way a reviewer would (see _Rebuilder for gaps and comments).

    A block that empties takes the statement that exists only for it: an `if` (an if/else
    whose then-branch empties becomes `if not (...)`), a `try` whose body was only the call
    (not one with a `finally`), a `with`, `for` or `while`. What cannot be removed that way
    (a branch of an if/elif chain) is refused.
    """

    def __init__(self, context: CodemodContext):
        super().__init__(context)
        self.rebuilder = _Rebuilder()

    def remove(self, original: cst.CSTNode) -> cst.RemovalSentinel:
        self.rebuilder.note(original)
        self.remove_unused_import_by_node(original)
        return cst.RemoveFromParent()

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self.rebuilder.rebuild(original.body, updated.body))

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self.rebuilder.rebuild(original.body, updated.body))

    def leave_SimpleStatementLine(self, original, updated):
        return updated if updated.body else self.remove(original)

    def leave_If(self, original, updated):
        if _empty(updated.body):
            if isinstance(updated.orelse, cst.If) or isinstance(self.get_metadata(ParentNodeProvider, original), cst.If):
                self.refuse(original, "the removed call was the only statement of a branch in an if/elif chain")
                return updated
            if updated.orelse is None:
                return self.remove(original)
            if _empty(updated.orelse.body):
                return self.remove(original)
            return updated.with_changes(test=_negated(updated.test), body=updated.orelse.body, orelse=None)
        if isinstance(updated.orelse, cst.Else) and _empty(updated.orelse.body):
            return updated.with_changes(orelse=None)
        return updated

    def leave_Try(self, original, updated):
        if not _empty(updated.body):
            if updated.orelse is not None and _empty(updated.orelse.body):
                return updated.with_changes(orelse=None)
            return updated
        if updated.finalbody is not None and not _empty(updated.finalbody.body):
            self.refuse(original, "the removed call was the whole body of a try with a finally clause")
            return updated
        return self.remove(original)

    def _drop_if_empty(self, original, updated):
        if not _empty(updated.body):
            return updated
        if getattr(updated, "orelse", None) is not None:
            self.refuse(original, "the removed call was the whole body of a loop with an else clause")
            return updated
        return self.remove(original)

    leave_With = leave_For = leave_While = _drop_if_empty

    def leave_ExceptHandler(self, original, updated):
        return _with_pass(updated)

    def leave_Finally(self, original, updated):
        return _with_pass(updated)

    def leave_FunctionDef(self, original, updated):
        return _with_pass(updated)

    def leave_ClassDef(self, original, updated):
        return _with_pass(updated)


def _empty(block: cst.BaseSuite) -> bool:
    return not block.body


def _with_pass(node):
    """A block that must stay (a def, a handler) keeps a `pass` when emptied."""
    if isinstance(node.body, cst.IndentedBlock) and not node.body.body:
        return node.with_changes(body=node.body.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])]))
    if isinstance(node.body, cst.SimpleStatementSuite) and not node.body.body:
        return node.with_changes(body=node.body.with_changes(body=[cst.Pass()]))
    return node


def _names_binding(tree: cst.Module, package: str, targets: frozenset[str]) -> set[str]:
    """Local names any import in the file binds to one of `targets` or to a module above one (a cheap prefilter)."""
    bound: set[str] = set()

    def leads_to(name: str) -> bool:
        return any(t == name or t.startswith(name + ".") for t in targets)

    class Imports(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            for alias in node.names:
                name = get_full_name_for_node(alias.name)
                if leads_to(name):
                    bound.add(alias.asname.name.value if alias.asname else name.split(".")[0])
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            source = get_absolute_module_from_package_for_import(package, node) or ""
            for alias in () if isinstance(node.names, cst.ImportStar) else node.names:
                if leads_to(f"{source}.{get_full_name_for_node(alias.name)}"):
                    bound.add(alias.asname.name.value if alias.asname else get_full_name_for_node(alias.name))
            return False

    tree.visit(Imports())
    return bound


def _negated(test: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    atomic = isinstance(test, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or test.lpar
    return cst.UnaryOperation(cst.Not(), test if atomic else test.with_changes(lpar=[cst.LeftParen()],
                                                                                 rpar=[cst.RightParen()]))


def _merge_leading(removed: list[Sequence[cst.EmptyLine]], own: Sequence[cst.EmptyLine],
                   block_start: bool) -> list[cst.EmptyLine]:
    """Leading lines of the statement after removed ones: section comments stay, the gap is the wider one."""
    def split(lines):
        blank = 0
        while blank < len(lines) and lines[blank].comment is None:
            blank += 1
        last_blank = max((i for i, line in enumerate(lines) if line.comment is None), default=-1)
        return list(lines[:blank]), [l for l in lines[blank:last_blank + 1] if l.comment], list(lines[last_blank + 1:])

    own_gap, _, _ = split(own)
    follows_directly = not own_gap
    gap, kept = split(removed[0])[0], []
    for index, lines in enumerate(removed):
        _, section, direct = split(lines)
        kept += section
        if index == len(removed) - 1 and follows_directly:
            kept += direct  # it introduced the code after the call: it stays with that code
    if block_start:
        gap = []
    elif len(own_gap) >= len(gap):
        gap = own_gap
    return [*gap, *kept, *own[len(own_gap):]]


@dataclasses.dataclass(frozen=True)
class RemoveLegacyCalls:
    """Remove every statement that calls one of `functions` (fully qualified names).

    A call whose result is used, or a reference that lets the function escape as a value,
    is refused: the migration cannot tell what the code around it needs. Definitions the
    removal leaves unused go in `apply`'s dead-helper pass.
    """

    functions: frozenset[str]
    modules: frozenset[str] = frozenset()  # modules the migration deletes: their imports go when unused

    def command(self, context: CodemodContext) -> _Command:
        return _RemoveCalls(context, self)


class _RemoveCalls(_StatementRemover):
    def __init__(self, context: CodemodContext, op: RemoveLegacyCalls):
        super().__init__(context)
        self.op = op
        self.called: set[int] = set()
        self.in_import = 0

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.bound = _names_binding(tree, self.context.full_package_name, self.op.functions)
        self.bound |= {f.rsplit(".", 1)[1] for f in self.op.functions if f.rsplit(".", 1)[0] == self.context.full_module_name}
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
        parent = self.get_metadata(ParentNodeProvider, node)
        if not (isinstance(parent, cst.Expr) and parent.value is node):
            self.refuse(node, f"the result of {target.rsplit('.', 1)[1]}() is used; remove or rewrite that use first")

    def _value_use(self, node: cst.CSTNode) -> None:
        target = self._target(node)
        if target and not self.in_import and id(node) not in self.called \
                and not isinstance(self.get_metadata(ParentNodeProvider, node), cst.FunctionDef):
            self.refuse(node, f"{target.rsplit('.', 1)[1]} is used as a value (it escapes; calls through it "
                              "cannot be found): remove that use first")

    def visit_Name(self, node: cst.Name) -> None:
        self._value_use(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._value_use(node)

    def leave_Expr(self, original: cst.Expr, updated: cst.Expr):
        if isinstance(original.value, cst.Call) and self._target(original.value.func):
            self.count += 1
            return self.remove(original)
        return updated


# ---------------------------------------------------------------- insertion


@dataclasses.dataclass(frozen=True)
class InsertRegistration:
    """Insert `if <gate>: <registration>` into `cls.__init__`, after `insert_after` (at any depth) or at the end.

    kernel_module / kernel_name: where the registration's kernel comes from; imported at
    module level, or inside the inserted block when `lazy`, unless this module binds it.
    Every name the gate and registration read must be bound where the block goes.
    """

    cls: str
    gate: str
    registration: str
    insert_after: str
    kernel_module: str
    kernel_name: str
    lazy: bool
    gate_imports: tuple[str, ...] = ()
    names: frozenset[str] = frozenset()

    def command(self, context: CodemodContext) -> _Command:
        return _Insert(context, self)


class _Insert(_Command):
    METADATA_DEPENDENCIES = (ScopeProvider,)

    def __init__(self, context: CodemodContext, op: InsertRegistration):
        super().__init__(context)
        self.op = op
        self.found_class = False
        self.init: cst.FunctionDef | None = None
        self.anchor: cst.BaseStatement | None = None  # the block goes after it (None: at the end of __init__)
        self.done = False  # already migrated
        self.needs_import = False
        self.block: cst.If | None = None
        self.imported = {alias for line in op.gate_imports for alias in _imported_names(line)}
        self.registration = op.registration
        self.alias: str | None = None  # a top-level `from <kernel module> import <kernel> as <alias>`

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if node.name.value != self.op.cls:
            return
        self.found_class = True
        for member in node.body.body:
            if isinstance(member, cst.FunctionDef) and member.name.value == "__init__":
                self.init = member
                self._plan(member)

    def _plan(self, init: cst.FunctionDef) -> None:
        collector = _Statements()
        init.body.visit(collector)
        statements = collector.found
        forms = {_normalized(self.op.registration)}
        if self.alias:
            forms.add(_normalized(_renamed_in(self.op.registration, self.op.kernel_name, self.alias)))
        if any(form in _normalized(code_of(s)) for s in statements for form in forms):
            self.done = True
            return
        if self.op.insert_after:
            matches = [s for s in statements if self.op.insert_after in _first_line(s)]
            if not matches:
                raise AnchorError(f"{self.op.cls}.__init__ has no statement starting with {self.op.insert_after!r}")
            self.anchor = matches[0]
        scope = self.get_metadata(ScopeProvider, init.body.body[0] if init.body.body else init)
        before = self.position(self.anchor).end.line if self.anchor else float("inf")
        self.needs_import = not self._bound(scope, self.op.kernel_name, before)
        if self.needs_import and self.alias:
            self.needs_import = False  # the module imports the kernel under another name: use that one
            self.registration = _renamed_in(self.registration, self.op.kernel_name, self.alias)
        for name in sorted(self.op.names - self.imported - {self.op.kernel_name}):
            if not self._bound(scope, name, before):
                self.refuse(init, f"{name} is not bound where the registration goes ({self.op.cls}.__init__); "
                                  "add it to gate_imports or move insert_after")

    def _bound(self, scope, name: str, before: float) -> bool:
        """Bound there: a parameter, a global, a builtin, or a local of __init__ assigned above that point."""
        if name not in scope:
            return False
        for assignment in scope[name]:
            node = getattr(assignment, "node", None)
            if assignment.scope is not scope or node is None:
                return True
            position = self.position(node)
            if position is None or position.start.line <= before:
                return True
        return False

    def leave_IndentedBlock(self, original, updated):
        if self.done or self.refusals or self.init is None:
            return updated
        if self.anchor is None and original is self.init.body:
            self.count += 1
            return updated.with_changes(body=[*updated.body, self._block()])
        if self.anchor is not None and any(statement is self.anchor for statement in original.body):
            body = []
            for before, after in zip(original.body, updated.body):
                if body and body[-1] is self.block and (not after.leading_lines or after.leading_lines[0].comment):
                    after = after.with_changes(leading_lines=[cst.EmptyLine(indent=False), *after.leading_lines])
                body.append(after)
                if before is self.anchor:
                    body.append(self._block())
            self.count += 1
            return updated.with_changes(body=body)
        return updated

    def _block(self) -> cst.If:
        # Blank lines of the registration stay blank inside the block (no indentation on them).
        body = [statement.with_changes(leading_lines=[line.with_changes(indent=line.comment is not None)
                                                      for line in statement.leading_lines])
                for statement in cst.parse_module(self.registration.strip() + "\n").body]
        if self.needs_import and self.op.lazy:
            body.insert(0, cst.parse_statement(f"from {self.op.kernel_module} import {self.op.kernel_name}\n"))
        elif self.needs_import:
            AddImportsVisitor.add_needed_import(self.context, self.op.kernel_module, self.op.kernel_name)
        for line in self.op.gate_imports:
            statement = cst.parse_statement(line + "\n").body[0]
            for alias in statement.names:
                AddImportsVisitor.add_needed_import(self.context, get_full_name_for_node(statement.module),
                                                    get_full_name_for_node(alias.name),
                                                    alias.asname.name.value if alias.asname else None)
        self.block = cst.If(test=cst.parse_expression(self.op.gate), body=cst.IndentedBlock(body=body),
                            leading_lines=[cst.EmptyLine(indent=False)])
        return self.block

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        for line in tree.body:  # a top-level `from <kernel module> import <kernel> as <alias>`
            for statement in line.body if isinstance(line, cst.SimpleStatementLine) else ():
                if isinstance(statement, cst.ImportFrom) and not isinstance(statement.names, cst.ImportStar) \
                        and self.import_source(statement) == self.op.kernel_module:
                    self.alias = next((a.asname.name.value for a in statement.names if a.asname is not None
                                       and get_full_name_for_node(a.name) == self.op.kernel_name), self.alias)
        module = super().transform_module_impl(tree)
        if not self.found_class:
            raise AnchorError(f"class {self.op.cls} not found")
        if self.init is None:
            raise AnchorError(f"class {self.op.cls} has no __init__")
        if self.anchor is not None and not (self.done or self.refusals or self.count):
            self.refuse(self.anchor, f"insert_after {self.op.insert_after!r} matches a statement that is not in an "
                                     "indented block")
        return module


class _Statements(cst.CSTVisitor):
    """Every statement of a block, nested blocks included (not nested defs' bodies), in source order."""

    def __init__(self):
        super().__init__()
        self.found: list[cst.BaseStatement] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseStatement):
            self.found.append(node)
        return not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.BaseExpression, cst.BaseSmallStatement))


def _first_line(statement: cst.BaseStatement) -> str:
    """The statement's own first line: its leading comments and blank lines are not part of it."""
    return code_of(statement.with_changes(leading_lines=[])).strip().splitlines()[0]


class _RenameReads(cst.CSTTransformer):
    """Every name `old` read as `new`; attribute names and keyword names are not names and stay."""

    def __init__(self, old: str, new: str):
        super().__init__()
        self.old, self.new = old, new

    def leave_Name(self, original, updated):
        return updated.with_changes(value=self.new) if updated.value == self.old else updated

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)


def _renamed_in(code: str, old: str, new: str) -> str:
    return cst.parse_module(code).visit(_RenameReads(old, new)).code


def _normalized(code: str) -> str:
    return "".join(code.split())


def _imported_names(line: str) -> set[str]:
    statement = cst.parse_statement(line + "\n").body[0]
    return {alias.asname.name.value if alias.asname else get_full_name_for_node(alias.name)
            for alias in statement.names}


# ---------------------------------------------------------------- dead helpers


def _constant_name(statement: cst.CSTNode) -> str | None:
    """`NAME = value` (or `NAME: type = value`) alone on a module-level line: the name it binds."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
        [small.target] if isinstance(small, cst.AnnAssign) and small.value is not None else []
    return targets[0].value if len(targets) == 1 and isinstance(targets[0], cst.Name) else None


def _references(module: cst.Module) -> Counter[str]:
    """How often each module-level function, class or one-name constant is named in the file's text.

    A word count over the code: a mention in a string or a comment counts as a use, so a
    helper something might still name is kept.
    """
    defined = {s.name.value for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))}
    defined |= {name for s in module.body if (name := _constant_name(s))}
    code = module.code
    return Counter({name: len(re.findall(rf"\b{re.escape(name)}\b", code)) for name in defined})


def _dead_helpers(before: Counter[str], module: cst.Module) -> set[str]:
    """Private module-level helpers that had a use besides their definition, and have none now."""
    return {name for name, uses in _references(module).items() if name.startswith("_") and uses <= 1 < before[name]}


@dataclasses.dataclass(frozen=True)
class RemoveHelpers:
    """Delete module-level private functions, classes and constants named in `names` (the change left them unused)."""

    names: frozenset[str]

    def command(self, context: CodemodContext) -> _Command:
        return _RemoveHelpers(context, self)


class _RemoveHelpers(_StatementRemover):
    METADATA_DEPENDENCIES = (ParentNodeProvider,)

    def __init__(self, context: CodemodContext, op: RemoveHelpers):
        super().__init__(context)
        self.op = op

    def leave_FunctionDef(self, original, updated):
        if original.name.value in self.op.names and \
                isinstance(self.get_metadata(ParentNodeProvider, original), cst.Module):
            self.count += 1
            return self.remove(original)
        return updated

    leave_ClassDef = leave_FunctionDef

    def leave_SimpleStatementLine(self, original, updated):
        if _constant_name(original) in self.op.names and \
                isinstance(self.get_metadata(ParentNodeProvider, original), cst.Module):
            self.count += 1
            return self.remove(original)
        return super().leave_SimpleStatementLine(original, updated)


@dataclasses.dataclass(frozen=True)
class AdoptContract:
    """Give module-level class `cls` the engine's contract base `base` (imported from `base_module`) as its last
    base: a kernel class that already owns its keys and compile gains `register_warmup` and the registry's API."""

    cls: str
    base_module: str
    base: str

    def command(self, context: CodemodContext) -> _Command:
        return _Adopt(context, self)


class _Adopt(_Command):
    METADATA_DEPENDENCIES = (ParentNodeProvider, ScopeProvider)

    def __init__(self, context: CodemodContext, op: AdoptContract):
        super().__init__(context)
        self.op = op

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        if original.name.value != self.op.cls or \
                not isinstance(self.get_metadata(ParentNodeProvider, original), cst.Module):
            return updated
        if any(code_of(arg.value).split("[")[0].rsplit(".", 1)[-1] == self.op.base for arg in updated.bases):
            return updated  # adopted already
        scope = self.get_metadata(ScopeProvider, original)
        bound = f"{self.op.base_module}.{self.op.base}" in self.qualified(scope, self.op.base)
        if self.op.base in scope and not bound:
            self.refuse(original, f"{self.op.base} already names something else in this module; adopt the contract "
                                  "by hand")
            return updated
        if not bound:
            AddImportsVisitor.add_needed_import(self.context, self.op.base_module, self.op.base)
        self.count += 1
        bases = [*updated.bases[:-1], updated.bases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)] \
            if updated.bases else []
        return updated.with_changes(bases=[*bases, cst.Arg(cst.Name(self.op.base))],
                                    lpar=cst.LeftParen(), rpar=cst.RightParen())


# Builtins a dead local's value may call and still be dropped with it (no side effect, nothing else to keep).
_PURE_BUILTINS = frozenset({"abs", "bool", "float", "int", "len", "max", "min", "round", "str", "tuple"})


def _pure(node: cst.CSTNode) -> bool:
    """An expression whose evaluation does nothing but compute it: names, attribute reads, literals,
    operators, subscripts and calls of a few builtins on such expressions."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(node, cst.Attribute):
        return _pure(node.value)
    if isinstance(node, cst.BinaryOperation):
        return _pure(node.left) and _pure(node.right)
    if isinstance(node, cst.UnaryOperation):
        return _pure(node.expression)
    if isinstance(node, cst.BooleanOperation):
        return _pure(node.left) and _pure(node.right)
    if isinstance(node, cst.Comparison):
        return _pure(node.left) and all(_pure(target.comparator) for target in node.comparisons)
    if isinstance(node, cst.Call):
        return isinstance(node.func, cst.Name) and node.func.value in _PURE_BUILTINS and \
            all(_pure(arg.value) and not arg.star for arg in node.args)
    return False


def _dead_locals(module: cst.Module) -> dict[tuple[str, str], cst.Assign]:
    """Function locals assigned once by a plain `name = <pure value>` and never read, by (function, name)."""
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    parents = wrapper.resolve(ParentNodeProvider)
    dead: dict[tuple[str, str], cst.Assign] = {}
    for scope in set(wrapper.resolve(ScopeProvider).values()):
        if not isinstance(scope, FunctionScope):
            continue
        for name in {assignment.name for assignment in scope.assignments}:
            assignments = list(scope.assignments[name])
            if len(assignments) != 1 or scope.accesses[name] or not isinstance(assignments[0], Assignment):
                continue
            parent = parents.get(assignments[0].node)
            if isinstance(parent, cst.AssignTarget):
                statement = parents[parent]
                if isinstance(statement, cst.Assign) and len(statement.targets) == 1 and _pure(statement.value):
                    dead[(scope.name or "", name)] = statement
    return dead


@dataclasses.dataclass(frozen=True)
class RemoveDeadLocals:
    """Delete plain `name = <pure value>` statements of function locals named in `names` ((function, name)
    pairs the change left unread): nothing runs differently, and the engine's linter stays quiet (F841)."""

    names: frozenset[tuple[str, str]]

    def command(self, context: CodemodContext) -> _Command:
        return _RemoveDeadLocals(context, self)


class _RemoveDeadLocals(_StatementRemover):
    def __init__(self, context: CodemodContext, op: RemoveDeadLocals):
        super().__init__(context)
        self.op = op

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.targets = {id(node) for key, node in _dead_locals(tree).items() if key in self.op.names}
        return super().transform_module_impl(tree)

    def leave_SimpleStatementLine(self, original, updated):
        if len(original.body) == 1 and id(original.body[0]) in self.targets:
            self.count += 1
            return self.remove(original)
        return super().leave_SimpleStatementLine(original, updated)


Operation = RenameKernel | RemoveLegacyCalls | InsertRegistration | RemoveHelpers | RemoveDeadLocals | AdoptContract
_NAMES = {RenameKernel: "rename_kernel", RemoveLegacyCalls: "remove_legacy_call", InsertRegistration:
          "insert_registration", RemoveHelpers: "remove_dead_helper", RemoveDeadLocals: "remove_dead_local",
          AdoptContract: "adopt_contract"}


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


def _place_new_imports(before: cst.Module, after: cst.Module) -> cst.Module:
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


@dataclasses.dataclass
class FileEdit:
    source: str
    counts: Counter
    refusals: list[Refusal]
    warnings: list[Refusal]


def apply(source: str, operations: Sequence[Operation], *, path: Path, repo: Path) -> FileEdit:
    """Apply one file's operations in order; then delete private helpers and pure locals the change left unused."""
    module = source_module = cst.parse_module(source)
    manager = FullRepoManager(str(repo), [str(path)], {FullyQualifiedNameProvider})
    names = FullyQualifiedNameProvider.gen_cache(repo, [str(path)])[str(path)]
    context = CodemodContext(filename=str(path), full_module_name=names.name, full_package_name=names.package,
                             metadata_manager=manager)
    counts: Counter[str] = Counter()
    refusals: list[Refusal] = []
    warnings: list[Refusal] = []
    references_before = _references(module)
    for op in operations:
        command = op.command(context)
        module = command.transform_module(module)
        counts[_NAMES[type(op)]] += command.count
        refusals += command.refusals
        warnings += command.warnings
    module = _place_new_imports(source_module, module)
    dead = _dead_helpers(references_before, module)
    while dead and not refusals:
        command = RemoveHelpers(frozenset(dead)).command(context)
        module = command.transform_module(module)
        counts["remove_dead_helper"] += command.count
        dead = _dead_helpers(references_before, module)
    removed = counts["remove_legacy_call"] + counts["remove_dead_helper"]  # only removals leave locals unread
    unread_before = set(_dead_locals(source_module)) if removed else set()
    dead_locals = set(_dead_locals(module)) - unread_before if removed else set()
    while dead_locals and not refusals:
        command = RemoveDeadLocals(frozenset(dead_locals)).command(context)
        module = command.transform_module(module)
        counts["remove_dead_local"] += command.count
        dead_locals = set(_dead_locals(module)) - unread_before
    return FileEdit(module.code, +counts, refusals, warnings)
