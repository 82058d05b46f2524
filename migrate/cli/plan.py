"""`zerojit plan`: a preset's compile keys (and, asked, their backend variants), compiling nothing."""

from __future__ import annotations

from pathlib import Path

import typer

from ..families import get_preset, plan_preset, preset_variants
from .render import print_plan
from .shared import CacheOption, JsonOption, PresetOption, out, print_json, user_errors


@user_errors()
def plan(
    preset: str = PresetOption,
    as_json: bool = JsonOption,
    keys: bool = typer.Option(False, "--keys", help="With --json, include every compile key."),
    variants: bool = typer.Option(
        False,
        "--variants",
        help="Also resolve each key's backend variant (what "
        "actually compiles; keys that share one compile once). Imports the backend.",
    ),
    cache_dir: Path | None = CacheOption,
) -> None:
    """Expand a preset's registrations into the compile keys warmup would build (compiles nothing)."""
    family, chosen = get_preset(preset)
    the_plan, _ = plan_preset(family, chosen)
    counts = preset_variants(family, chosen, the_plan, cache_dir) if variants else {}
    if not as_json:
        print_plan(the_plan, out, counts)
        return
    summary = the_plan.to_dict(include_keys=keys)
    if variants:
        for entry in summary["kernels"]:
            entry["variants"] = counts[entry["kernel"]]
        summary["total_variants"] = sum(counts.values())
    print_json(summary)
