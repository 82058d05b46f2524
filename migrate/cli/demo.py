"""`zerojit demo`: the main job end to end on one preset, then the bundled legacy tree's migration as a dry run."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from ..families import get_preset, migration_specs, plan_preset, verify_preset
from .render import WarmupProgress, print_diff, print_plan, print_warmup
from .shared import CacheOption, out, user_errors
from .tables import coverage_table

DEFAULT_DEMO_PRESET = "minimax-m3-nvfp4-mi355x-tp4"


@user_errors()
def demo(
    preset: str = typer.Option(DEFAULT_DEMO_PRESET, "--preset", "-p", help="Serving configuration."),
    cache_dir: Path | None = CacheOption,
) -> None:
    """The main job end to end: plan, real warmup, zero-JIT verification, report."""
    family, chosen = get_preset(preset)
    out.rule(f"[bold]zerojit demo[/] · {escape(chosen.name)}")
    out.print(chosen.description, markup=False)
    print_plan(plan_preset(family, chosen)[0], out)
    run, coverage = verify_preset(
        family, chosen, launches=40, seed=0, cache_dir=cache_dir, progress=WarmupProgress(out)
    )
    print_warmup(run, out)
    out.print(coverage_table(coverage))
    out.rule("[bold]migration of the bundled legacy engine tree[/] (dry run)")
    from zerojit.codemods.runner import migrate  # the codemods load only when the demo gets here

    from ..rocm_nvfp4.example import EXAMPLE_TREE  # the rocm-nvfp4 room, likewise

    print_diff(migrate(EXAMPLE_TREE, [migration_specs()["rocm-nvfp4"]]), out)
    raise typer.Exit(0 if coverage.ok and run.report.ok else 1)
