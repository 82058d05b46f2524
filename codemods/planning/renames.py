"""Planning the renames: a kernel whose spec makes it private is renamed in every file that names it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..findings import Findings
from ..gate import Renamed
from ..spec import SpecError
from ..transforms.rename_kernel import RenameKernel

if TYPE_CHECKING:
    from ..planner import Planner


def plan(planner: Planner) -> Findings:
    """Each spec's kernel is defined where it says (or by the owner the migration writes); one with a private name
    is renamed in every file naming it."""
    findings = Findings()
    for spec in planner.specs:
        home = planner.module(spec, "singleton_module")
        defines = home if spec.kernel_home == home.name else planner.module(spec, "kernel_module", spec.kernel_home)
        if spec.kernel.name not in defines.defs and spec.kernel_name not in home.defs and not spec.owner:
            raise SpecError(
                f"{spec.family}: singleton {spec.kernel.name!r} is not defined in {defines.name} "
                "(an assignment, a def or a class at module level)"
            )
        if not spec.kernel.private_name:
            continue
        # Exporters: the defining module, every module that binds the name by importing it
        # from an exporter (to a fixpoint), and packages whose lazy-export table names it.
        exporters = {home.name}
        while True:
            more = {
                m.name
                for m in planner.candidates.values()
                if m.name not in exporters
                and spec.kernel.name in m.text
                and (
                    set(m.imports_of(spec.kernel.name)) & exporters
                    or (m.path.name == "__init__.py" and f'"{spec.kernel.name}"' in m.text.replace("'", '"'))
                )
            }
            if not more:
                break
            exporters |= more
        op = RenameKernel(spec.kernel.name, spec.kernel.private_name, frozenset(exporters))
        for module in planner.candidates.values():
            if spec.kernel.name in module.text:
                findings.add(module.name, op)
        findings.renamed.append(Renamed(spec.kernel.name, spec.kernel.private_name, frozenset(exporters)))
    return findings
