"""Planning the lifts: each launcher's kernels that the specs lift, planned together by `codemods.lift`."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import guards, lift, syntax
from ..findings import Findings
from ..spec import MigrationSpec, SpecError
from ..transforms.lift_kernel import LiftKernel
from ..transforms.registration_code import with_keywords, without_keywords

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
    lifted = functools.partial(
        lift.plan_lift,
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
    try:
        planned = lifted()
    except lift.LiftError as exc:
        findings.refuse("lift", exc.why, exc.place, spec.family)
        return None
    mismatch = registration_mismatch(spec, planned)
    recomputed = _with_properties_computed(spec, planned, lifted) if mismatch else None
    if recomputed is not None:
        (planned, computed), mismatch = recomputed, None
        findings.warnings.append(
            f"{spec.family}: the legacy step reads {', '.join(computed)} of its config as a property; the provider "
            "computes it as the property does, from what the registration passes"
        )
    if mismatch and (unread := _unread_parameters(spec, planned)):
        spec = spec.replaced(registration=without_keywords(spec.registration.code, unread))
        findings.specs.append(spec)
        mismatch = registration_mismatch(spec, planned)
        findings.warnings.append(
            f"{spec.family}: the legacy step reads nothing the spec's registration passes as "
            f"{' or '.join(sorted(unread))}: the registration leaves it out"
        )
    if mismatch and (added := _config_parameters(planner, spec, planned)):
        spec = spec.replaced(registration=with_keywords(spec.registration.code, added))
        findings.specs.append(spec)
        findings.warnings.append(
            f"{spec.family}: the legacy step reads more of the engine config than the spec's registration passes "
            f"its provider: the registration passes it too ({', '.join(f'{k}={v}' for k, v in added.items())})"
        )
    elif mismatch:
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


def _with_properties_computed(
    spec: MigrationSpec, plan: lift.LiftPlan, lifted: Callable[..., lift.LiftPlan]
) -> tuple[lift.LiftPlan, list[str]] | None:
    """A fork's step that reads a property of its config (`config.conv_dim`) where the registration passes what the
    property computes from: the plan with the provider computing it too, and the attributes it computes (None where
    the registration does not fit that plan either, or the lift cannot compute it)."""
    passed = _passed(_register_calls(spec.registration.code))
    computed = sorted(read.partition(".")[2] for name, read in plan.parameters if name not in passed)
    try:
        recomputed = lifted(computed=frozenset(computed)) if computed else None
    except lift.LiftError:
        return None
    return None if recomputed is None or registration_mismatch(spec, recomputed) else (recomputed, computed)


def _config_parameters(planner: Planner, spec: MigrationSpec, plan: lift.LiftPlan) -> dict[str, str] | None:
    """The provider's parameters a fork's step added that the registration does not pass, where each is a part of
    the engine config, with what the registration passes for it (`worker.parallel_config`: the registration's
    `vllm_config.parallel_config`, the site then binding the config as it does for the spec's own reads); None
    where the registration passes anything else than the provider's parameters, or a missing one is not the
    config's."""
    modules = planner.repo_model(spec.kernel.module)
    wanted = dict(plan.parameters)
    calls = _register_calls(spec.registration.code)
    passed = _passed(calls)
    if not calls or any(call.args or _passed([call]) != passed for call in calls) or passed - wanted.keys():
        return None
    try:
        frame = guards.step_frame(modules, spec)
    except SpecError:
        return None
    config = modules.engine.config_parameter
    added = {}
    for name in sorted(wanted.keys() - passed):
        step_read = syntax.expression_or_none(wanted[name])  # a helper's result is said with where it is
        if step_read is None:
            return None
        read = ast.unparse(guards.canonical(modules, step_read, frame))
        if not re.fullmatch(rf"{re.escape(guards.CONFIG)}(\.\w+)+", read):
            return None
        added[name] = config + read[len(guards.CONFIG) :]
    return added


def _unread_parameters(spec: MigrationSpec, plan: lift.LiftPlan) -> set[str]:
    """The keywords the spec's registration passes that the provider no longer takes (a fork's step stopped reading
    them); none where a call passes anything by position or through `**`."""
    calls = _register_calls(spec.registration.code)
    passed = _passed(calls)
    if not calls or None in passed or any(call.args for call in calls):
        return set()
    return passed - {name for name, _ in plan.parameters}


def _register_calls(code: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(ast.parse(code))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_warmup"
    ]


def _passed(calls: list[ast.Call]) -> set[str | None]:
    """The keywords the registration's calls pass (None for a `**`)."""
    return {k.arg for call in calls for k in call.keywords}


def registration_mismatch(spec: MigrationSpec, plan: lift.LiftPlan) -> str | None:
    """Why the spec's registration does not pass the provider exactly its parameters (None: it does)."""
    wanted = [name for name, _ in plan.parameters]
    for call in _register_calls(spec.registration.code):
        passed = [k.arg for k in call.keywords]
        if call.args or None in passed or set(passed) != set(wanted):
            reads = ", ".join(f"{name} (the step's {read})" for name, read in plan.parameters) or "nothing"
            return (
                f"the registration `{ast.unparse(call)}` must pass the provider {spec.provider_name} its "
                f"keyword parameters, each in the site's names: {reads}"
            )
    return None
