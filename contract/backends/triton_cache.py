"""Triton's file cache, relocatable: a variant's group file names its files relative to the variant's folder.

A module of its own because it imports Triton: the backend module does not, so that
importing it never loads a DSL. Triton finds the class through `TRITON_CACHE_MANAGER`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from triton.runtime.cache import FileCacheManager

from .triton import GROUP_PREFIX


class RelocatableCacheManager(FileCacheManager):
    """Triton's file cache whose group files name their files relative to the variant's folder.

    Each group file also names its variant (the folder's key), so one swapped in from another
    variant's folder differs from the one the manifest recorded. A group file of another
    variant, or that names an absolute path or a path outside its own folder, was not written
    here (or was tampered with): it is treated as absent, so the variant recompiles.
    Reading never writes, so a read-only bake serves as it is.
    """

    def get_group(self, filename: str) -> dict[str, str] | None:
        folder = Path(self.cache_dir).resolve()
        try:
            with open(folder / f"{GROUP_PREFIX}{filename}") as handle:
                group = json.load(handle)
        except (OSError, ValueError):
            return None
        children = group.get("child_paths") if isinstance(group, dict) else None
        if not isinstance(children, dict) or group.get("variant") != self.key:
            return None
        found = {}
        for child, relative in children.items():
            if not isinstance(relative, str) or os.path.isabs(relative):
                return None
            path = (folder / relative).resolve()
            if path.parent != folder or not path.is_file():
                return None
            found[child] = os.fspath(path)
        return found

    def put_group(self, filename: str, group: dict[str, str]) -> str:
        folder = Path(self.cache_dir).resolve()
        children = {child: os.path.relpath(Path(path).resolve(), folder) for child, path in group.items()}
        return self.put(
            json.dumps({"variant": self.key, "child_paths": children}), f"{GROUP_PREFIX}{filename}", binary=False
        )
