"""remove_dead_helper: private module-level helpers the change left without a use go too."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter

import libcst as cst
from libcst.codemod import CodemodContext

from .base import Command, Operation, operation
from .metadata import ResolvedScopes, outline_scopes
from .removal import StatementRemover


def _constant_name(statement: cst.CSTNode) -> str | None:
    """`NAME = value` (or `NAME: type = value`) alone on a module-level line: the name it binds."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    targets = (
        [t.target for t in small.targets]
        if isinstance(small, cst.Assign)
        else [small.target]
        if isinstance(small, cst.AnnAssign) and small.value is not None
        else []
    )
    return targets[0].value if len(targets) == 1 and isinstance(targets[0], cst.Name) else None


def references(module: cst.Module, code: str) -> Counter[str]:
    """How often each module-level function, class or one-name constant is named in the file's text (`code`).

    A word count over the code: a mention in a string or a comment counts as a use, so a
    helper something might still name is kept. One pass counts every word; a name with a
    character that is not a regex word character (a rare identifier) is counted on its own.
    """
    defined = {s.name.value for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))}
    defined |= {name for s in module.body if (name := _constant_name(s))}
    words = Counter(re.findall(r"\w+", code))
    return Counter(
        {
            name: words[name] if re.fullmatch(r"\w+", name) else len(re.findall(rf"\b{re.escape(name)}\b", code))
            for name in defined
        }
    )


def dead_helpers(before: Counter[str], module: cst.Module, code: str) -> set[str]:
    """Private module-level helpers that had a use besides their definition, and have none now."""
    return {
        name for name, uses in references(module, code).items() if name.startswith("_") and uses <= 1 < before[name]
    }


@operation("remove_dead_helper")
@dataclasses.dataclass(frozen=True)
class RemoveHelpers(Operation):
    """Delete module-level private functions, classes and constants named in `names` (the change left them unused)."""

    names: frozenset[str]

    removes_statements = True

    def command(self, context: CodemodContext) -> Command:
        return _RemoveHelpers(context, self)


class _RemoveHelpers(StatementRemover):
    SKIPS = (cst.BaseStatement,)  # it removes module-level statements only

    @functools.cached_property
    def removal_context(self) -> CodemodContext:
        """Only the removed helpers' own scopes are read: from the outline that keeps them, with a removed class's
        methods (metadata.outline_scopes)."""
        module = self.context.wrapper.module
        methods = {
            id(node)
            for statement in module.body
            if isinstance(statement, cst.ClassDef) and statement.name.value in self.op.names
            for node in _functions_in(statement)
        }
        scopes = outline_scopes(
            module,
            self.context.versions.code(module),
            keep=lambda function: function.name.value in self.op.names or id(function) in methods,
        )
        return self.context if scopes is None else dataclasses.replace(self.context, wrapper=ResolvedScopes(scopes))

    def leave_FunctionDef(self, original, updated):
        if original.name.value in self.op.names and isinstance(self.parent(), cst.Module):
            self.count += 1
            return self.remove(original)
        return updated

    leave_ClassDef = leave_FunctionDef

    def leave_SimpleStatementLine(self, original, updated):
        if _constant_name(original) in self.op.names and isinstance(self.parent(), cst.Module):
            self.count += 1
            return self.remove(original)
        return super().leave_SimpleStatementLine(original, updated)


def _functions_in(node: cst.CSTNode) -> list[cst.FunctionDef]:
    found: list[cst.FunctionDef] = []

    class Functions(cst.CSTVisitor):
        def visit_FunctionDef(self, function: cst.FunctionDef) -> None:
            found.append(function)

    node.visit(Functions())
    return found
