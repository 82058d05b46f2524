"""lift_kernel: a plain Triton kernel's launch becomes a dispatcher the contract can warm (codemods.lift plans it).

In the kernel's module, before the launcher: the provider, then the dispatcher (its body the
launcher's statements that compute the launch, copied with their comments, and the launch as its
`return`); one pair per kernel the migration lifts from that launcher. In the launcher, each
`kernel[grid](...)` statement becomes its dispatcher's call, and the copied statements nothing else
in the launcher reads go.
"""

from __future__ import annotations

import dataclasses

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from .. import lift
from .base import Command, Operation, operation


@operation("lift_kernel")
@dataclasses.dataclass(frozen=True)
class LiftKernel(Operation):
    """Write each plan's provider and dispatcher before `launcher`, and make the launcher call the dispatchers
    (one plan per kernel of the launcher the migration lifts, in launch order)."""

    launcher: str
    lifted: tuple[lift.LiftPlan, ...]
    removes_statements = True

    def command(self, context: CodemodContext) -> Command:
        return _Lift(context, self)


class _Unread(cst.CSTTransformer):
    """`a, b = ...` with the names nothing reads any more written `_`."""

    def __init__(self, names: set[str]):
        super().__init__()
        self.names = names

    def leave_AssignTarget(self, original: cst.AssignTarget, updated: cst.AssignTarget) -> cst.AssignTarget:
        if not isinstance(updated.target, cst.Tuple):
            return updated
        elements = [
            e.with_changes(value=cst.Name("_")) if isinstance(e.value, cst.Name) and e.value.value in self.names else e
            for e in updated.target.elements
        ]
        return updated.with_changes(target=updated.target.with_changes(elements=elements))


class _Lift(Command):
    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        op: LiftKernel = self.op
        body: list[cst.CSTNode] = []
        for before, after in zip(original.body, updated.body):
            if isinstance(before, cst.FunctionDef) and before.name.value == op.launcher:
                launcher, copied = self._launcher(before, after)
                body += [*(d for plan in op.lifted for d in self._definitions(plan, copied[plan])), launcher]
            else:
                body.append(after)
        for module, name in dict.fromkeys(n for plan in op.lifted for n in plan.helper_names):
            AddImportsVisitor.add_needed_import(self.context, module, name)
        return updated.with_changes(body=body)

    def _launcher(
        self, before: cst.FunctionDef, after: cst.FunctionDef
    ) -> tuple[cst.FunctionDef, dict[lift.LiftPlan, list[cst.BaseStatement]]]:
        """The launcher calling the dispatchers, and the statements each dispatcher copies (the plans agree on
        what the launcher keeps: each decided it over every launch the migration moves)."""
        plans: tuple[lift.LiftPlan, ...] = self.op.lifted
        launches = {plan.launch_line: plan for plan in plans}
        statements, copied = [], {plan: [] for plan in plans}
        for original, statement in zip(before.body.body, after.body.body):
            line = self.line(original)
            for plan in plans:
                if line in plan.copied_lines:
                    copied[plan].append(statement)
            if line in launches:
                call = cst.parse_statement(launches[line].dispatch_call + "\n")
                statements.append(call.with_changes(leading_lines=statement.leading_lines))
                self.count += 1
            elif line not in plans[0].removed_lines:
                unread = {name for at, name in plans[0].unread if at == line}
                statements.append(statement.visit(_Unread(unread)) if unread else statement)
        return after.with_changes(body=after.body.with_changes(body=statements)), copied

    def _definitions(self, plan: lift.LiftPlan, copied: list[cst.BaseStatement]) -> list[cst.FunctionDef]:
        spacing = [cst.EmptyLine(), cst.EmptyLine()]
        provider = cst.parse_statement(plan.provider).with_changes(leading_lines=spacing)
        dispatcher = cst.parse_statement(plan.dispatcher + "    pass\n")
        docstring = dispatcher.body.body[:1]
        returned = cst.parse_statement(plan.returned + "\n")
        dispatcher = dispatcher.with_changes(
            leading_lines=spacing, body=dispatcher.body.with_changes(body=[*docstring, *copied, returned])
        )
        return [provider, dispatcher]
