"""The pull-request description of a migration: what a maintainer pastes, every table from a check that ran.

It says what moved where (and, for a lifted Triton kernel, what its dispatcher and provider are), the gates
(the legacy call's, read from the tree, beside the registration's), the key-equivalence result of the same
check `--verify-keys` runs, every intended difference with its reason, and the legacy code left in place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerojit.codemods.results import MigrationResult
from zerojit.codemods.site_gate import GatePlan

if TYPE_CHECKING:  # the key check (and torch) is imported only by a run that checks keys
    from .engine_trees.equivalence import EquivalenceReport


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _gate_section(plan: GatePlan) -> tuple[str, ...]:
    """A registration's gate beside the legacy call's, as the lines of its section (the site is the heading's)."""
    lines = [
        f"- The registration's gate: `{plan.gate}`"
        if plan.gate
        else "- The registration has no gate of its own (the legacy call had none the site must check).",
        "- The legacy call ran when (read from the tree):",
    ]
    lines += [f"  - `{a.written}` ({a.where})" for a in plan.legacy if not a.per_layer] or ["  - (always)"]
    if plan.per_layer:
        lines.append(
            "- Decided by the registering layer's own facts (the legacy step searched the model for such layers):"
        )
        lines += [f"  - `{a.written}` ({a.where})" for a in plan.per_layer]
    lines += [f"- The registry runs registrations only when `{a.written}` ({a.where})." for a in plan.registry]
    return tuple(lines)


def pr_body(result: MigrationResult, keys: dict[str, EquivalenceReport | str | None], command: str) -> str:
    """Markdown for the migration `result`; `keys`: the key check per family (None: no engine-tree adapter;
    a string: why it could not run on this tree)."""
    rel = lambda path: path.relative_to(result.repo).as_posix()  # noqa: E731
    families = ", ".join(f"`{name}`" for name in result.families)
    lines = [
        f"# Move the {families} warmup onto the JIT warmup contract",
        "",
        f"Written by `{command}`. Each kernel now registers itself where the layer that selects it is built, "
        "and the engine's registry compiles every registered key at start-up; the legacy warmup step goes. "
        "Every table below comes from a check run on this tree.",
        "",
        "## What moves where",
        "",
        "| file | change |",
        "|---|---|",
    ]
    lines += [
        f"| `{rel(c.path)}` | {'deleted' if c.after is None else 'changed'} |"
        for c in sorted(result.changes, key=lambda c: str(c.path))
    ]
    if result.lifts:
        lines += ["", "## Plain Triton kernels put on the contract", ""] + [f"- {lift}" for lift in result.lifts]
    lines += ["", "## Gates", ""]
    for family in result.families:
        # One section per kernel and gate: the sites that share a gate are listed under it, not repeated.
        sections: dict[tuple[str, ...], list[str]] = {}
        for plan in (p for p in result.gates if p.family == family):
            sections.setdefault(_gate_section(plan), []).append(plan.site)
        for section, sites in sections.items():
            if len(sites) == 1:
                lines += [f"### `{family}` at `{sites[0]}`", ""]
            else:
                lines += [f"### `{family}` at {len(sites)} sites", ""] + [f"- `{site}`" for site in sites] + [""]
            lines += [*section, ""]
    lines += ["## Intended differences", ""]
    lines += [f"- {difference}" for difference in result.differences()] or ["- None."]
    lines += [
        "",
        "## Key equivalence",
        "",
        "The compile keys the tree warms before the change (the legacy steps, run from the tree) against those "
        "it warms after (the registrations, run through the tree's own registry), per serving configuration:",
        "",
        "| family | engine tree | configs checked | mismatches | intended differences |",
        "|---|---|---|---|---|",
    ]
    reasons: dict[str, list[str]] = {}
    for family in result.families:
        report = keys.get(family)
        if report is None or isinstance(report, str):
            why = report or "not checked: the family has no engine-tree adapter"
            lines.append(f"| `{family}` | {_cell(why)} | | | |")
            continue
        intended = [d for d in report.diffs if d.intended]
        reasons[family] = list(dict.fromkeys(d.intended for d in intended))
        lines.append(
            f"| `{family}` | {_cell(report.legacy_source)} | {report.configs} | {len(report.mismatches)} | "
            f"{len(intended)} |"
        )
    if any(reasons.values()):
        lines += ["", "Why the intended key differences are intended:", ""]
    for family, why in reasons.items():
        lines += [f"- `{family}`: {_cell(reason)}" for reason in why]
    lines += ["", "## Left in place", ""]
    lines += [f"- {leftover}" for leftover in result.leftovers] or ["- Nothing."]
    if result.warnings:
        lines += ["", "## For a reviewer to check", ""] + [f"- {warning}" for warning in result.warnings]
    return "\n".join(lines) + "\n"
