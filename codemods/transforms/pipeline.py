"""A file's operations applied in order, then the clean-up passes the change calls for."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import libcst as cst
from libcst.metadata import FullRepoManager, FullyQualifiedNameProvider

from ..findings import Refusal
from ..syntax import where
from .base import OPERATIONS, Note, Operation
from .imports import place_new_imports
from .metadata import FileContext, TreeVersions
from .remove_dead_helper import RemoveHelpers, dead_helpers, references
from .remove_dead_local import RemoveDeadLocals, dead_locals


@dataclasses.dataclass
class FileEdit:
    source: str
    counts: Counter
    refusals: list[Refusal]  # each with the operation's name (its code) and the place in the repo
    warnings: list[Note]


def apply(source: str, operations: Sequence[Operation], *, path: Path, repo: Path) -> FileEdit:
    """Apply one file's operations in order; then delete private helpers and pure locals the change left unused.

    Every pass shares the file's resolved metadata (see .metadata): it is resolved once per
    version of the tree, and a pass that changes nothing leaves the version as it was.
    """
    module = source_module = cst.parse_module(source)
    manager = FullRepoManager(str(repo), [str(path)], {FullyQualifiedNameProvider})
    names = FullyQualifiedNameProvider.gen_cache(repo, [str(path)])[str(path)]
    versions = TreeVersions(manager, str(path), module, source)
    context = FileContext(
        filename=str(path),
        full_module_name=names.name,
        full_package_name=names.package,
        metadata_manager=manager,
        versions=versions,
    )
    counts: Counter[str] = Counter()
    refusals: list[Refusal] = []
    warnings: list[Note] = []
    references_before = references(module, versions.code(module))
    for op in operations:
        command = op.command(context)
        module = command.transform_module(module)
        counts[op.name] += command.count
        refusals += [Refusal(op.name, note.why, where(repo, path, note.line)) for note in command.refusals]
        warnings += command.warnings
    module = place_new_imports(source_module, module)
    dead = dead_helpers(references_before, module, versions.code(module))
    while dead and not refusals:
        command = RemoveHelpers(frozenset(dead)).command(context)
        module = command.transform_module(module)
        counts[RemoveHelpers.name] += command.count
        if not command.count:
            break
        dead = dead_helpers(references_before, module, versions.code(module))
    removed = any(counts[name] for name, kind in OPERATIONS.items() if kind.removes_statements)
    # Only removals leave locals unread.
    unread_before = set(dead_locals(versions.wrapper(source_module))) if removed else set()
    unread = set(dead_locals(versions.wrapper(module))) - unread_before if removed else set()
    while unread and not refusals:
        command = RemoveDeadLocals(frozenset(unread)).command(context)
        module = command.transform_module(module)
        counts[RemoveDeadLocals.name] += command.count
        if not command.count:
            break  # what is left cannot be removed (a statement holding more than the local): it stays
        unread = set(dead_locals(versions.wrapper(module))) - unread_before
    return FileEdit(versions.code(module), +counts, refusals, warnings)
