"""How the transforms resolve libcst metadata on a file's tree."""

from __future__ import annotations

import contextlib
import dataclasses

import libcst as cst


class NoCopy:
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
