"""rename_kernel: the kernel takes its private name wherever a file refers to it."""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import TYPE_CHECKING

import libcst as cst
from libcst.codemod import CodemodContext

from ..gate import Renamed
from ..spec import SpecError
from .base import Command, Operation, Refusal, code_of, operation

if TYPE_CHECKING:
    from ..planner import Planner

_ATTRIBUTE_BUILTINS = re.compile(r"\b(getattr|hasattr|setattr)\b")


@operation("rename_kernel", stage=1)
@dataclasses.dataclass(frozen=True)
class RenameKernel(Operation):
    """Rename the kernel `old` -> `new` wherever this file refers to it.

    exporters: modules that define or re-export it (`exporter.old` are its fully qualified
    names). In an exporter, string literals equal to `old` are renamed too (lazy-export
    tables, `__all__`); anywhere, dotted strings `exporter.old` and the name argument of
    `getattr` / `hasattr` on an exporter module.
    """

    old: str
    new: str
    exporters: frozenset[str]

    def command(self, context: CodemodContext) -> Command:
        return _Rename(context, self)

    @classmethod
    def plan(cls, planner: Planner) -> None:
        """Each spec's kernel is defined where it says; one with a private name is renamed in every file naming it."""
        for spec in planner.specs:
            home = planner.module(spec, "singleton_module")
            if spec.singleton not in home.defs and spec.kernel_name not in home.defs:
                raise SpecError(f"{spec.family}: singleton {spec.singleton!r} is not defined in {home.name} "
                                "(an assignment, a def or a class at module level)")
            if not spec.private_singleton:
                continue
            # Exporters: the defining module, every module that binds the name by importing it
            # from an exporter (to a fixpoint), and packages whose lazy-export table names it.
            exporters = {home.name}
            while True:
                more = {m.name for m in planner.candidates.values() if m.name not in exporters
                        and spec.singleton in m.text
                        and (set(m.imports_of(spec.singleton)) & exporters
                             or (m.path.name == "__init__.py" and f'"{spec.singleton}"' in m.text.replace("'", '"')))}
                if not more:
                    break
                exporters |= more
            op = cls(spec.singleton, spec.private_singleton, frozenset(exporters))
            for module in planner.candidates.values():
                if spec.singleton in module.text:
                    planner.add(module.name, op)
            planner.renamed.append(Renamed(spec.singleton, spec.private_singleton, frozenset(exporters)))


class _Rename(Command):
    @functools.cached_property
    def scopes(self):
        """It asks only about names spelled like the kernel's old name and about getattr/hasattr/setattr calls, so
        functions that name neither need no scopes: resolved on the outline keeping the functions that name it,
        when the file does not name those builtins at all."""
        word = re.compile(rf"\b{re.escape(self.op.old)}\b")
        return self.outlined_scopes(keep=lambda function: bool(word.search(code_of(function))), unless=_ATTRIBUTE_BUILTINS)

    def __init__(self, context: CodemodContext, op: RenameKernel):
        super().__init__(context, op)
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
