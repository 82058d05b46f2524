"""libcst metadata resolved once per version of a file's tree, shared by every pass that reads it.

libcst's codemods make a MetadataWrapper (and a deep copy of the module) for every command
they run, so scope and qualified-name analysis was redone by each transform and each of
libcst's import visitors after it. Here a file's context keeps one wrapper per tree version,
made without the copy: every command, import visitor and clean-up pass that reads the same
tree object reuses what was resolved on it. Passes that edit nothing return the tree they
were given, so the version (and what was resolved on it) lives on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Callable, Mapping

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.metadata import FullRepoManager, Scope, ScopeProvider

from .blocks import NO_STATEMENTS


class TreeVersions:
    """The wrappers and code of each version of one file's tree, by the tree object's identity."""

    def __init__(self, manager: FullRepoManager, path: str, parsed: cst.Module, source: str):
        """`parsed`: the file's tree as parsed from `source` (libcst's code for it is the source, byte for byte)."""
        self._cache = manager.get_cache_for_path(path)
        self._wrappers: dict[int, cst.MetadataWrapper] = {}
        self._code: dict[int, str] = {}
        self.wrapper(parsed)
        self._code[id(parsed)] = source

    def wrapper(self, module: cst.Module) -> cst.MetadataWrapper:
        """The tree's one wrapper. Resolving on the tree itself, not a copy, is safe here: a transform builds new
        nodes for what it changes, so no node object sits in two places of one tree."""
        if id(module) not in self._wrappers:  # the wrapper keeps the module alive, so its id stays its own
            self._wrappers[id(module)] = cst.MetadataWrapper(module, unsafe_skip_copy=True, cache=self._cache)
        return self._wrappers[id(module)]

    def code(self, module: cst.Module) -> str:
        self.wrapper(module)  # keeps the module alive
        if id(module) not in self._code:
            self._code[id(module)] = module.code
        return self._code[id(module)]


@dataclasses.dataclass(frozen=True)
class FileContext(CodemodContext):
    """A codemod context that carries its file's tree versions."""

    versions: TreeVersions | None = None


class SharedMetadata:
    """For a libcst Codemod: resolve its metadata on the file's shared wrapper of the tree it is given."""

    @contextlib.contextmanager
    def _handle_metadata_reference(self, module: cst.Module):
        previous = self.context.wrapper
        wrapper = self.context.versions.wrapper(module)
        with self.resolve(wrapper):
            self.context = dataclasses.replace(self.context, wrapper=wrapper)
            try:
                yield wrapper.module
            finally:
                self.context = dataclasses.replace(self.context, wrapper=previous)


_BINDS_OUTSIDE = re.compile(r"\b(global|nonlocal)\b")


def binds_outside(code: str) -> bool:
    """Whether a function of `code` may bind a name outside itself (a `global` or `nonlocal`, or the word)."""
    return _BINDS_OUTSIDE.search(code) is not None


def outline_scopes(
    module: cst.Module, code: str, keep: Callable[[cst.FunctionDef], bool], unless: re.Pattern | None = None
) -> Mapping[cst.CSTNode, Scope] | None:
    """ScopeProvider's scopes for the nodes of `module` (whose text is `code`) outside function bodies and inside
    the functions `keep` takes, resolved on the file's outline, at a fraction of the file's cost.

    The outline is the file with the body of every other function replaced by `...`. Only a
    `global` or `nonlocal` declaration lets a function's body bind a name outside it, so while
    the text has neither, the outline binds in the module, in every class and in the kept
    functions exactly what the file binds there: the scope of any node but those in an outlined
    function's own scope (its body and parameters) is the file's. The scopes are looked up by
    the file's own nodes. None when the text declares one, or matches `unless` (what else the
    caller cannot read off the outline).
    """
    if binds_outside(code) or (unless is not None and unless.search(code)):
        return None
    outliner = _Outline(keep)
    outline = module.visit(outliner)
    return _ByFileNode(cst.MetadataWrapper(outline, unsafe_skip_copy=True).resolve(ScopeProvider), outliner.rebuilt)


def outermost_functions(module: cst.Module) -> list[cst.FunctionDef]:
    """The functions an outline keeps or outlines: every def not inside another (methods of classes included)."""
    found: list[cst.FunctionDef] = []

    class Functions(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            found.append(node)
            return False

    module.visit(Functions())
    return found


class _Outline(cst.CSTTransformer):
    """Replaces the body of every function `keep` does not take by `...`. Only the statements that hold a function
    are rebuilt (`rebuilt`: the file's node's id -> the outline's); every other node stays the file's own."""

    def __init__(self, keep: Callable[[cst.FunctionDef], bool]):
        super().__init__()
        self.keep = keep
        self.rebuilt: dict[int, cst.CSTNode] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not isinstance(node, (cst.FunctionDef, *NO_STATEMENTS))

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        result = super().on_leave(original, updated)
        if result is not original:
            self.rebuilt[id(original)] = result
        return result

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if self.keep(original):
            return original
        return updated.with_changes(body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Expr(cst.Ellipsis())])]))


class ResolvedScopes:
    """Stands for a MetadataWrapper where libcst only resolves scopes on it (RemoveImportsVisitor's by-node
    scheduling, which finds the imports a removed statement used)."""

    def __init__(self, scopes: Mapping[cst.CSTNode, Scope]):
        self.scopes = scopes

    def resolve(self, provider):
        if provider is not ScopeProvider:
            raise LookupError(f"only scopes are resolved here, not {provider.__name__}")
        return self.scopes


class _ByFileNode(Mapping):
    """The outline's scopes, looked up by the file's nodes (a rebuilt statement by its outline counterpart)."""

    def __init__(self, scopes: Mapping[cst.CSTNode, Scope], rebuilt: dict[int, cst.CSTNode]):
        self.scopes, self.rebuilt = scopes, rebuilt

    def __getitem__(self, node: cst.CSTNode) -> Scope:
        return self.scopes[self.rebuilt.get(id(node), node)]

    def __iter__(self):
        return iter(self.scopes)

    def __len__(self) -> int:
        return len(self.scopes)
