"""Which known migration specs move the kernels a survey found, and which warmups' calls go when they all run.

A spec moves a kernel it names (its `kernel`, module and name), and, where it writes an owner
(`owner`: a new contract object whose compile runs what the legacy step compiled), every
kernel of the warmup its legacy side names. A warmup goes when the specs move each of its
kernels and it does no other work (`stays`). Matched by name only: a spec still checks the
tree when it runs, and refuses where it was not written for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from .spec import MigrationSpec
from .survey import KernelFinding, WarmupFinding


def match_specs(findings: Iterable[WarmupFinding], specs: Iterable[MigrationSpec]) -> None:
    """Fill each finding's `specs` (and each of its kernels'), and `goes`."""
    specs = list(specs)
    for finding in findings:
        for kernel in finding.kernels:
            kernel.specs = sorted({s.family for s in specs if _moves(s, finding, kernel)})
        finding.specs = sorted({family for kernel in finding.kernels for family in kernel.specs})
        finding.goes = bool(finding.kernels) and all(k.specs for k in finding.kernels) and not finding.stays


def _moves(spec: MigrationSpec, finding: WarmupFinding, kernel: KernelFinding) -> bool:
    if (spec.kernel.module, spec.kernel.name) == (kernel.module, kernel.name):
        return True
    if spec.owner is None:
        return False
    legacy = spec.legacy
    if legacy.orchestrator_step:
        return legacy.orchestrator_step in (finding.function, finding.via)
    return (legacy.module, legacy.function) == (finding.module, finding.function) and not legacy.step
