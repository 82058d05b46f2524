"""Planning the lifts: each launcher's kernels that the specs lift, planned together by `codemods.lift`."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .. import lift
from ..findings import Findings
from ..spec import MigrationSpec
from ..transforms.lift_kernel import LiftKernel

if TYPE_CHECKING:
    from ..planner import Planner


def plan(planner: Planner) -> Findings:
    """Each launcher's kernels that the specs lift, lifted together (one operation per launcher)."""
    findings = Findings()
    launchers: dict[tuple[str, str], list[MigrationSpec]] = {}
    for spec in planner.specs:
        if spec.lift and not planner.migrated(spec):
            launchers.setdefault((spec.kernel.module, spec.lift.launcher), []).append(spec)
    for (module, launcher), specs in launchers.items():
        names = [spec.kernel_name for spec in specs]
        if len(set(names)) < len(names):
            findings.refuse(
                "dispatcher-name",
                f"{', '.join(s.family for s in specs)} lift kernels of {launcher} to the same dispatcher {names[0]}: "
                "give each spec its own `dispatcher` name",
                family=specs[0].family,
            )
            continue
        plans = [planned for spec in specs if (planned := _plan(planner, findings, spec, specs)) is not None]
        if len(plans) == len(specs):
            findings.add(module, LiftKernel(launcher, tuple(sorted(plans, key=lambda plan: plan.launch_line))))
    return findings


def _plan(
    planner: Planner, findings: Findings, spec: MigrationSpec, together: list[MigrationSpec]
) -> lift.LiftPlan | None:
    """The lift of `spec`'s kernel, with the launcher's kernels the other specs lift (None: refused, and why)."""
    planner.module(spec, "singleton_module")
    step_module, step = spec.legacy.warming()
    try:
        planned = lift.plan_lift(
            planner.repo_model(spec.kernel.module),
            kernel_module=spec.kernel_home,
            kernel=spec.kernel.name,
            launcher_module=spec.kernel.module,
            launcher=spec.lift.launcher,
            step_module=step_module,
            step=step,
            dispatcher_name=spec.kernel_name,
            provider_name=spec.provider_name,
            together=tuple((other.kernel_home, other.kernel.name) for other in together if other is not spec),
        )
    except lift.LiftError as exc:
        findings.refuse("lift", exc.why, exc.place, spec.family)
        return None
    mismatch = registration_mismatch(spec, planned)
    if mismatch:
        findings.refuse("registration-arguments", mismatch, family=spec.family)
        return None
    home = planner.repo_model(spec.kernel.module).shown(spec.kernel.module)
    reads = ", ".join(f"{name} (the step's {read})" for name, read in planned.parameters) or "nothing"
    findings.lifts.append(
        f"{spec.family}: {home}:{planned.launch_line}: {spec.lift.launcher}'s launch of {spec.kernel.name} is now "
        f"{spec.kernel_name}, a triton_kernel_dispatcher_with_warmup dispatcher; its warmup inputs come from "
        f"{spec.provider_name}, the legacy {step} translated; the registration passes it {reads}"
    )
    return planned


def registration_mismatch(spec: MigrationSpec, plan: lift.LiftPlan) -> str | None:
    """Why the spec's registration does not pass the provider exactly its parameters (None: it does)."""
    calls = [
        n
        for n in ast.walk(ast.parse(spec.registration.code))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_warmup"
    ]
    wanted = [name for name, _ in plan.parameters]
    for call in calls:
        passed = [k.arg for k in call.keywords]
        if call.args or None in passed or set(passed) != set(wanted):
            reads = ", ".join(f"{name} (the step's {read})" for name, read in plan.parameters) or "nothing"
            return (
                f"the registration `{ast.unparse(call)}` must pass the provider {spec.provider_name} its "
                f"keyword parameters, each in the site's names: {reads}"
            )
    return None
