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

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.metadata import FullRepoManager


class TreeVersions:
    """The wrappers and code of each version of one file's tree, by the tree object's identity."""

    def __init__(self, manager: FullRepoManager, path: str):
        self._cache = manager.get_cache_for_path(path)
        self._wrappers: dict[int, cst.MetadataWrapper] = {}
        self._code: dict[int, str] = {}

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
