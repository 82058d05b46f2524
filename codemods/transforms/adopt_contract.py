"""adopt_contract: a kernel class that owns its keys and compile takes the engine's contract base."""

from __future__ import annotations

import dataclasses
import functools

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from .base import Command, Operation, code_of, operation


@operation("adopt_contract")
@dataclasses.dataclass(frozen=True)
class AdoptContract(Operation):
    """Give module-level class `cls` the engine's contract base `base` (imported from `base_module`) as its last
    base: a kernel class that already owns its keys and compile gains `register_warmup` and the registry's API."""

    cls: str
    base_module: str
    base: str

    def command(self, context: CodemodContext) -> Command:
        return _Adopt(context, self)


class _Adopt(Command):
    SKIPS = (cst.BaseStatement,)  # it edits module-level classes only

    @functools.cached_property
    def scopes(self):
        """It reads the module's scope only: no function body is needed."""
        return self.outlined_scopes(keep=lambda function: False)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        if original.name.value != self.op.cls or \
                not isinstance(self.parent(), cst.Module):
            return updated
        if any(code_of(arg.value).split("[")[0].rsplit(".", 1)[-1] == self.op.base for arg in updated.bases):
            return updated  # adopted already
        scope = self.scopes[original]
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
