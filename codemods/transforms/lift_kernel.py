"""lift_kernel: a plain Triton kernel's launch becomes a dispatcher the contract can warm (codemods.lift plans it).

In the kernel's module, before the launcher: the provider, then the dispatcher (its body the
launcher's statements that compute the launch, copied with their comments, and the launch as its
`return`). In the launcher, the `kernel[grid](...)` statement becomes the dispatcher's call, and the
copied statements nothing else in the launcher reads go.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from .. import lift
from ..repo import RepoModules
from ..spec import VLLM_JIT_MODULE, VLLM_TRITON_HELPER, MigrationSpec
from .base import Command, Operation, operation

if TYPE_CHECKING:
    from ..planner import Planner


@operation("lift_kernel", stage=0)
@dataclasses.dataclass(frozen=True)
class LiftKernel(Operation):
    """Write `plan`'s provider and dispatcher before `launcher`, and make the launcher call the dispatcher."""

    launcher: str
    lifted: lift.LiftPlan
    removes_statements = True

    def command(self, context: CodemodContext) -> Command:
        return _Lift(context, self)

    @classmethod
    def plan(cls, planner: Planner) -> None:
        for spec in planner.specs:
            if not spec.launcher or planner.migrated(spec):
                continue
            planner.module(spec, "singleton_module")
            step_module, step = spec.lifted_step()
            try:
                found = lift.plan_lift(
                    RepoModules(planner.repo, spec.singleton_module.split(".")[0]),
                    kernel_module=spec.singleton_module, kernel=spec.singleton,
                    launcher_module=spec.singleton_module, launcher=spec.launcher, step_module=step_module,
                    step=step, dispatcher_name=spec.kernel_name, provider_name=spec.provider_name,
                    helper_module=VLLM_TRITON_HELPER, jit_module=VLLM_JIT_MODULE)
            except lift.LiftError as exc:
                planner.refusals.append(f"{spec.family}: {exc}")
                continue
            mismatch = registration_mismatch(spec, found)
            if mismatch:
                planner.refusals.append(f"{spec.family}: {mismatch}")
                continue
            planner.add(spec.singleton_module, cls(spec.launcher, found))
            home = planner.module(spec, "singleton_module").path.relative_to(planner.repo).as_posix()
            reads = ", ".join(f"{name} (the step's {read})" for name, read in found.parameters) or "nothing"
            planner.lifts.append(
                f"{spec.family}: {home}:{found.launch_line}: {spec.launcher}'s launch of {spec.singleton} is now "
                f"{spec.kernel_name}, a triton_kernel_dispatcher_with_warmup dispatcher; its warmup inputs come from "
                f"{spec.provider_name}, the legacy {spec.lifted_step()[1]} translated; the registration passes it "
                f"{reads}")


def registration_mismatch(spec: MigrationSpec, plan: lift.LiftPlan) -> str | None:
    """Why the spec's registration does not pass the provider exactly its parameters (None: it does)."""
    calls = [n for n in ast.walk(ast.parse(spec.registration)) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "register_warmup"]
    wanted = [name for name, _ in plan.parameters]
    for call in calls:
        passed = [k.arg for k in call.keywords]
        if call.args or None in passed or set(passed) != set(wanted):
            reads = ", ".join(f"{name} (the step's {read})" for name, read in plan.parameters) or "nothing"
            return (f"the registration `{ast.unparse(call)}` must pass the provider {spec.provider_name} its "
                    f"keyword parameters, each in the site's names: {reads}")
    return None


class _Unread(cst.CSTTransformer):
    """`a, b = ...` with the names nothing reads any more written `_`."""

    def __init__(self, names: set[str]):
        super().__init__()
        self.names = names

    def leave_AssignTarget(self, original: cst.AssignTarget, updated: cst.AssignTarget) -> cst.AssignTarget:
        if not isinstance(updated.target, cst.Tuple):
            return updated
        elements = [e.with_changes(value=cst.Name("_")) if isinstance(e.value, cst.Name) and e.value.value in
                    self.names else e for e in updated.target.elements]
        return updated.with_changes(target=updated.target.with_changes(elements=elements))


class _Lift(Command):
    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        op: LiftKernel = self.op
        body: list[cst.CSTNode] = []
        for before, after in zip(original.body, updated.body):
            if isinstance(before, cst.FunctionDef) and before.name.value == op.launcher:
                launcher, copied = self._launcher(before, after)
                body += [*self._definitions(copied), launcher]
            else:
                body.append(after)
        for module, name in op.lifted.helper_names:
            AddImportsVisitor.add_needed_import(self.context, module, name)
        return updated.with_changes(body=body)

    def _launcher(self, before: cst.FunctionDef, after: cst.FunctionDef) \
            -> tuple[cst.FunctionDef, list[cst.BaseStatement]]:
        plan: lift.LiftPlan = self.op.lifted
        statements, copied = [], []
        for original, statement in zip(before.body.body, after.body.body):
            line = self.line(original)
            if line in plan.copied_lines:
                copied.append(statement)
            if line == plan.launch_line:
                call = cst.parse_statement(plan.dispatch_call + "\n")
                statements.append(call.with_changes(leading_lines=statement.leading_lines))
                self.count += 1
            elif line not in plan.removed_lines:
                unread = {name for at, name in plan.unread if at == line}
                statements.append(statement.visit(_Unread(unread)) if unread else statement)
        return after.with_changes(body=after.body.with_changes(body=statements)), copied

    def _definitions(self, copied: list[cst.BaseStatement]) -> list[cst.FunctionDef]:
        plan: lift.LiftPlan = self.op.lifted
        spacing = [cst.EmptyLine(), cst.EmptyLine()]
        provider = cst.parse_statement(plan.provider).with_changes(leading_lines=spacing)
        dispatcher = cst.parse_statement(plan.dispatcher + "    pass\n")
        docstring = dispatcher.body.body[:1]
        returned = cst.parse_statement(plan.returned + "\n")
        dispatcher = dispatcher.with_changes(leading_lines=spacing, body=dispatcher.body.with_changes(
            body=[*docstring, *copied, returned]))
        return [provider, dispatcher]
