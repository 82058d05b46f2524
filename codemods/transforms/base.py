"""What every transform shares: refusals, the registry of spec operations, and the libcst command base class."""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.helpers import get_absolute_module_from_package_for_import
from libcst.metadata import PositionProvider, Scope, ScopeProvider
from libcst.metadata.name_provider import FullyQualifiedNameVisitor

from .imports import RemoveKnownImports, TidyRemoveImports, TopLevelAddImports, unused_asked
from .metadata import SharedMetadata, outline_scopes

_EMPTY_MODULE = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(node)


@dataclasses.dataclass(frozen=True)
class Note:
    """What a command found at a line of its file: an edit it will not make (a refusal), or one a human should
    check (a warning). The pipeline gives a refusal its file and the operation's name (`findings.Refusal`)."""

    line: int
    why: str


class AnchorError(LookupError):
    """A spec's anchor is not in the file it should be in (`line`: where it was looked for, 0 for the file)."""

    def __init__(self, why: str, line: int = 0):
        super().__init__(why)
        self.line = line


class Operation:
    """A spec operation: frozen parameters (they travel to worker processes) and the command that makes its edit.

    Each operation class is registered under the name the run's counts report (`@operation`).
    Operations know nothing of planning: codemods.planning decides where each goes, and a file's
    operations run in the order planning found them.
    """

    name: ClassVar[str]
    removes_statements: ClassVar[bool] = False  # removals may leave locals unread (the pipeline then looks)
    outlines: ClassVar[bool] = False  # it says which functions it reads (`keeps`): the file may be outlined
    adds_only: ClassVar[bool] = False  # it only adds code, so it leaves no legacy code behind (codemods.leftovers)

    def keeps(self, function: ast.FunctionDef | ast.AsyncFunctionDef, holders: tuple[ast.ClassDef, ...], code) -> bool:
        """Whether the operation reads or edits `function` (holders: the classes around it, innermost last; code(node):
        a node's lines as the file has them). A file whose operations all say leaves out the bodies none of them
        keeps (transforms/outline.py)."""
        return True

    def command(self, context: CodemodContext) -> Command:
        raise NotImplementedError


OPERATIONS: dict[str, type[Operation]] = {}


def operation(name: str):
    """Register an operation class under `name`."""

    def register(cls: type[Operation]) -> type[Operation]:
        if name in OPERATIONS:
            raise ValueError(f"two transforms implement the operation {name!r}: {OPERATIONS[name]} and {cls}")
        cls.name = name
        OPERATIONS[name] = cls
        return cls

    return register


class Command(SharedMetadata, CodemodCommand, cst.CSTTransformer):
    """Shared plumbing: fully qualified names, parents, positions, refusals and an edit count.

    A libcst codemod command (so AddImportsVisitor / RemoveImportsVisitor run after it) that
    visits as a plain CSTTransformer: the matcher dispatch of VisitorBasedCodemodCommand on
    every node would double a command's cost. Each command declares only the metadata it reads
    (libcst resolves a class's and its bases' declarations before the visit), resolved on the
    file's shared wrapper (see .metadata); scopes are read through `scopes`, resolved when first
    asked for. It counts every edit it makes: one that counted none returns the tree it was
    given, so that tree's metadata stays in use.
    """

    METADATA_DEPENDENCIES = ()
    # Node kinds whose insides the command never reads or changes: their children are not visited.
    SKIPS: tuple[type[cst.CSTNode], ...] = ()

    def __init__(self, context: CodemodContext, op: Operation):
        CodemodCommand.__init__(self, context)
        cst.CSTTransformer.__init__(self)
        self.op = op
        self.count = 0
        self.refusals: list[Note] = []
        self.warnings: list[Note] = []
        self._entered: list[cst.CSTNode] = []  # the nodes whose children are being visited

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        edited = tree.visit(self)
        return edited if self.count else tree

    def on_visit(self, node: cst.CSTNode) -> bool:
        enter = super().on_visit(node) and not isinstance(node, self.SKIPS)
        if enter:
            self._entered.append(node)
        return enter

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        if self._entered and self._entered[-1] is original:
            self._entered.pop()
        return super().on_leave(original, updated)

    def parent(self) -> cst.CSTNode:
        """The parent of the node being visited or left: ParentNodeProvider's answer without its pass over the file."""
        return self._entered[-1]

    @functools.cached_property
    def scopes(self) -> Mapping[cst.CSTNode, Scope]:
        """The scope of each node this command asks about: ScopeProvider's, on the file's shared wrapper.

        A command that asks only about some functions resolves them on the file's outline instead
        (`outlined_scopes`).
        """
        return self.context.wrapper.resolve(ScopeProvider)

    def outlined_scopes(
        self, keep: Callable[[cst.FunctionDef], bool], unless: re.Pattern | None = None
    ) -> Mapping[cst.CSTNode, Scope]:
        """The scopes of every node but those in the functions `keep` leaves out, from the file's outline when the
        file allows one (metadata.outline_scopes), else the file's own."""
        module = self.context.wrapper.module
        scopes = outline_scopes(module, self.context.versions.code(module), keep, unless)
        return self.context.wrapper.resolve(ScopeProvider) if scopes is None else scopes

    def scopes_naming(self, names: Iterable[str]) -> Mapping[cst.CSTNode, Scope]:
        """`outlined_scopes` keeping the functions whose code names one of `names` (as a whole word): for a command
        that asks only about nodes spelled with one of them."""
        word = re.compile(rf"\b({'|'.join(map(re.escape, sorted(names)))})\b")
        return self.outlined_scopes(keep=lambda function: bool(word.search(code_of(function))))

    def fqns(self, node: cst.CSTNode) -> set[str]:
        """What a name or attribute refers to, fully qualified (relative imports and module locals resolved).

        FullyQualifiedNameProvider's answer, computed only for the nodes asked about: the
        provider itself qualifies every node of the file, which costs more than the scopes.
        """
        scope = self.scopes.get(node)
        return set() if scope is None else self.qualified(scope, node)

    def qualified(self, scope, node_or_name: cst.CSTNode | str) -> set[str]:
        """What a node, or a name read in `scope`, refers to there, fully qualified."""
        module, package = self.context.full_module_name, self.context.full_package_name
        return {
            FullyQualifiedNameVisitor._fully_qualify(module, package, q).name
            for q in scope.get_qualified_names_for(node_or_name)
        }

    def position(self, node: cst.CSTNode):
        """Where a node is; resolved only when asked (a refusal, a binding check): positions cost a code pass."""
        return self.context.wrapper.resolve(PositionProvider).get(node)

    def line(self, node: cst.CSTNode) -> int:
        return self.position(node).start.line

    def refuse(self, node: cst.CSTNode, why: str) -> None:
        self.refusals.append(Note(self.line(node), why))

    def warn(self, node: cst.CSTNode, why: str) -> None:
        self.warnings.append(Note(self.line(node), why))

    def import_source(self, node: cst.ImportFrom) -> str:
        return get_absolute_module_from_package_for_import(self.context.full_package_name, node) or ""

    def _instantiate_and_run(self, transform, tree: cst.Module) -> cst.Module:
        """libcst's import visitors, as this package runs them (see .imports): the context's import requests
        accumulate over a file's commands, and libcst runs each visitor again after every later command."""
        if transform is AddImportsVisitor:
            return TopLevelAddImports(self.context).transform_module(tree)
        # RemoveImportsVisitor, the only other visitor libcst runs after a command.
        versions = self.context.versions
        requested = RemoveImportsVisitor._get_imports_from_context(self.context)
        unused = unused_asked(versions.wrapper(tree), versions.code(tree), requested)
        if unused is None:
            return TidyRemoveImports(self.context).transform_module(tree)
        return RemoveKnownImports(self.context, unused).transform_module(tree) if unused else tree
