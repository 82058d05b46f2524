"""A file's operations applied in order, then the clean-up passes the change calls for."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import libcst as cst
from libcst.metadata import FullRepoManager, FullyQualifiedNameProvider, ScopeProvider

from ..findings import Refusal
from ..syntax import kept_lines, where
from .base import OPERATIONS, AnchorError, Note, Operation
from .imports import place_new_imports
from .metadata import FileContext, TreeVersions, binds_outside, outermost_functions, outline_scopes
from .outline import Outline
from .remove_dead_helper import RemoveHelpers, dead_helpers, references
from .remove_dead_local import RemoveDeadLocals, dead_locals, unread_somewhere


@dataclasses.dataclass
class FileEdit:
    source: str
    counts: Counter
    refusals: list[Refusal]  # each with the operation's name (its code) and the place in the repo
    warnings: list[Note]


def apply(source: str, operations: Sequence[Operation], *, path: Path, repo: Path) -> FileEdit:
    """Apply one file's operations in order; then delete private helpers and pure locals the change left unused.

    Every pass shares the file's resolved metadata (see .metadata): it is resolved once per
    version of the tree, and a pass that changes nothing leaves the version as it was. Where
    every operation says which functions it reads, they edit the file's outline (.outline).
    """
    outline = Outline.of(source, [op.keeps for op in operations]) if all(op.outlines for op in operations) else None
    if outline is not None:
        try:
            edit = _apply(outline.text, operations, path, repo, source, outline.expand, "".join(outline.bodies))
            expanded = outline.expand(edit.source)
        except (AnchorError, _Unmapped):  # the whole file's edit says it, where it is
            expanded = None
        if expanded is not None:
            return dataclasses.replace(edit, source=expanded[0])
    return _apply(source, operations, path, repo, source, _as_it_is, "")


class _Unmapped(Exception):
    """An edit of the outline moved or dropped a marker: the file is edited whole."""


def _as_it_is(code: str) -> tuple[str, Callable[[int], int]]:
    return code, lambda line: line


def _apply(
    text: str,
    operations: Sequence[Operation],
    path: Path,
    repo: Path,
    source: str,
    whole: Callable[[str], tuple[str, Callable[[int], int]] | None],
    outlined: str,
) -> FileEdit:
    """`apply` on `text`, the file's `source` or its outline; `whole(code)`: the file's text for a version's code,
    and the line there of each of the code's lines (None: it cannot tell); `outlined`: the bodies the outline left
    out (no operation changes them, but a helper they name is used)."""
    module = source_module = cst.parse_module(text)
    manager = FullRepoManager(str(repo), [str(path)], {FullyQualifiedNameProvider})
    names = FullyQualifiedNameProvider.gen_cache(repo, [str(path)])[str(path)]
    versions = TreeVersions(manager, str(path), module, text)
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

    def counted(tree: cst.Module) -> str:
        """The text a helper's uses are counted in: the bodies the outline left out use helpers too."""
        return versions.code(tree) + outlined

    references_before = references(module, counted(module))
    for op in operations:
        command = op.command(context)
        version, module = module, command.transform_module(module)
        counts[op.name] += command.count
        notes = _at_source(command.refusals + command.warnings, versions, version, source, whole)
        refused, warned = notes[: len(command.refusals)], notes[len(command.refusals) :]
        refusals += [Refusal(op.name, note.why, where(repo, path, note.line)) for note in refused]
        warnings += [note for note in warned if note not in warnings]  # said once, for all of a file's operations
    module = place_new_imports(source_module, module)
    dead = dead_helpers(references_before, module, counted(module))
    while dead and not refusals:
        command = RemoveHelpers(frozenset(dead)).command(context)
        module = command.transform_module(module)
        counts[RemoveHelpers.name] += command.count
        if not command.count:
            break
        dead = dead_helpers(references_before, module, counted(module))
    removed = any(counts[name] for name, kind in OPERATIONS.items() if kind.removes_statements)
    unread: set[tuple[str, str]] = set()
    # Only removals leave locals unread, and only in the functions they changed.
    if removed:
        codes = FunctionCodes()
        unread = _dead_in_changed(versions, codes, module, source_module)
        # Those the file had unread already stay; mostly there are none to ask about.
        unread_before = _dead_in_changed(versions, codes, source_module, module) if unread else set()
        unread -= unread_before
    while unread and not refusals:
        command = RemoveDeadLocals(frozenset(unread)).command(context)
        module = command.transform_module(module)
        counts[RemoveDeadLocals.name] += command.count
        if not command.count:
            break  # what is left cannot be removed (a statement holding more than the local): it stays
        unread = _dead_in_changed(versions, codes, module, source_module) - unread_before
    return FileEdit(versions.code(module), +counts, refusals, warnings)


def _at_source(notes: list[Note], versions: TreeVersions, version: cst.Module, source: str, whole) -> list[Note]:
    """Notes on lines of a version of the tree, on the file's own lines (of `source`): where earlier operations
    changed the file, a line one of them edited in place is where it was; one they added, the nearest one above that
    they kept. `whole`: as `_apply` takes it."""
    if not notes:
        return notes
    expanded = whole(versions.code(version))
    if expanded is None:
        raise _Unmapped
    text, line = expanded
    if text == source:
        return [dataclasses.replace(n, line=line(n.line)) for n in notes]
    kept = kept_lines(source, text, edited=True)
    return [
        dataclasses.replace(n, line=kept.get(max((k for k in kept if k <= line(n.line)), default=0), 1)) for n in notes
    ]


def _dead_in_changed(
    versions: TreeVersions, codes: FunctionCodes, module: cst.Module, other: cst.Module
) -> set[tuple[str, str]]:
    """The dead locals (dead_locals) of `module` in the scopes that can differ from `other`'s: on the outline that
    keeps only the functions whose code is not in `other` (metadata.outline_scopes), else the whole file's. None
    is resolved where Python's symbol table finds no name those functions bind and never read: every local
    dead_locals finds is one, and on the outline no other function has a local. A file that binds outside a
    function (`global`, `nonlocal`) is asked whole, as its scopes are."""
    unchanged = set(codes.of(other).values())
    code = versions.code(module)
    changed = [function for function in codes.of(module).values() if function not in unchanged]
    if not (unread_somewhere(code) if binds_outside(code) else any(map(unread_somewhere, changed))):
        return set()
    scopes = outline_scopes(module, code, lambda f: codes.of(module).get(id(f)) not in unchanged)
    return set(dead_locals(versions.wrapper(module).resolve(ScopeProvider) if scopes is None else scopes))


class FunctionCodes:
    """The code of each outermost function of a tree version (metadata.outermost_functions), by the function's
    identity, generated once per version."""

    def __init__(self):
        self._codes: dict[int, tuple[cst.Module, dict[int, str]]] = {}

    def of(self, module: cst.Module) -> dict[int, str]:
        if id(module) not in self._codes:  # the module is kept beside its codes, so its id stays its own
            self._codes[id(module)] = (module, {id(f): module.code_for_node(f) for f in outermost_functions(module)})
        return self._codes[id(module)][1]
