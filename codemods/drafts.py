"""Migration specs drafted from a survey finding: one TOML spec per kernel that a spec or a lift moves, with what a
human must confirm first (`zerojit migrate` refuses a spec until its `confirm` list is empty)."""

from __future__ import annotations

import json
from typing import Any

from .survey import KernelFinding, WarmupFinding


def draft_specs(finding: WarmupFinding, orchestrator: str) -> dict[str, str]:
    """A TOML migration spec per kernel of `finding` that a spec or a lift moves, by file stem; each `confirm` list
    holds what a human must check first (`zerojit migrate` refuses a spec until it is empty)."""
    return {
        kernel.name.strip("_"): _draft(finding, kernel, orchestrator)
        for kernel in finding.kernels
        if kernel.verdict in ("spec", "lift")
    }


def _draft(finding: WarmupFinding, kernel: KernelFinding, orchestrator: str) -> str:
    inline = finding.kind == "inline step"
    step = kernel.step.partition(":")[2] if kernel.step else None
    classes = kernel.constructed_in or ["ClassThatLaunchesIt"]  # a placeholder the confirm list asks to name
    fields: dict[str, Any] = {"family": kernel.name.strip("_").replace("_", "-").lower()}
    if inline:
        fields["orchestrator_step"] = step or finding.via or finding.function
    else:
        fields.update(legacy_module=finding.module, legacy_function=finding.function)
        if step and step != finding.function:
            fields["legacy_step"] = step
    fields.update(orchestrator_module=orchestrator, singleton_module=kernel.module, singleton=kernel.name)
    if kernel.verdict == "lift":
        fields["launcher"] = kernel.launcher.partition(":")[2]
        if kernel.lifted_with:
            fields["dispatcher"] = kernel.dispatcher
        registration = (
            f"{kernel.dispatcher}.register_warmup(" + ", ".join(f"{name}=..." for name in kernel.parameters) + ")"
        )
    else:
        registration = f"{kernel.name}.register_warmup()"
    fields.update(
        construction_module=classes[0].partition(":")[0] or kernel.module,
        construction_class=classes,
        registration=registration,
        confirm=[*kernel.reasons, f"the orchestrator called it under: {finding.gate or 'no gate'}"],
    )
    lines = [
        f"# Drafted by `zerojit survey` from {finding.module}.{finding.function}; `zerojit migrate` refuses it",
        "# until `confirm` is empty: check each item, change the spec where it is wrong, then delete the item.",
        "[[migration]]",
    ]
    lines += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]  # JSON strings/lists are TOML too
    return "\n".join(lines) + "\n"
