"""Which known migration specs move the kernels a survey found, and which warmups they leave nothing to move in.

A spec moves a kernel only in the warmup its legacy side names: its standalone module and
entry (and, where the spec names a step, only a kernel reached through that step), or its
orchestrator step. There it moves the kernel it names (`kernel_home` and name), and, where it
writes an owner (a new contract object whose compile runs what the legacy step compiled),
every kernel of that step or of the warmup of the owner's own module the step calls. Matched
by name only: a spec still checks the tree when it runs (its pins, its sites), and refuses
where it was not written for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from .spec import MigrationSpec
from .survey import KernelFinding, WarmupFinding


def match_specs(findings: Iterable[WarmupFinding], specs: Iterable[MigrationSpec], lifts: bool = True) -> None:
    """Fill each finding's `specs` (and each of its kernels'), and `all_moved`: the specs move every kernel it warms
    and the survey sees no other work of it. `lifts=False`: the tree's contract has no Triton dispatcher, so a spec
    that lifts moves nothing (it refuses there)."""
    specs = [s for s in specs if lifts or not s.lift]
    for finding in findings:
        for kernel in finding.kernels:
            kernel.specs = sorted({s.family for s in specs if _replaces(s, finding) and _moves(s, finding, kernel)})
        finding.specs = sorted({family for kernel in finding.kernels for family in kernel.specs})
        finding.all_moved = bool(finding.kernels) and all(k.specs for k in finding.kernels) and not finding.stays


def _replaces(spec: MigrationSpec, finding: WarmupFinding) -> bool:
    """The spec's legacy side is this warmup: its entry, its orchestrator step, or (for an owner) the warmup of the
    owner's module that step calls."""
    legacy = spec.legacy
    if not legacy.orchestrator_step:
        return (legacy.module, legacy.function) == (finding.module, finding.function)
    if finding.kind == "inline step":
        return (legacy.orchestrator_module, legacy.orchestrator_step) == (finding.module, finding.function)
    return spec.owner is not None and (spec.kernel.module, legacy.orchestrator_step) == (finding.module, finding.via)


def _moves(spec: MigrationSpec, finding: WarmupFinding, kernel: KernelFinding) -> bool:
    if spec.owner is not None:
        return not spec.legacy.step
    named = (spec.kernel_home, spec.kernel.name) == (kernel.module, kernel.name)
    step = f"{finding.module}:{spec.legacy.step}"
    return named and (not spec.legacy.step or kernel.step in (None, step))
