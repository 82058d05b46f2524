"""`zerojit`: plan, warm up and verify JIT kernels for a serving configuration.

Each command takes a --preset (a named serving configuration; `zerojit families` lists
them). Machine-readable output with --json goes to stdout; progress and tables go to
stderr / the terminal, so `--json` output can be piped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from contract import WarmupRegistry, execute, verify_zero_jit

from .families import Family, Preset, UnknownPresetError, families, get_preset

app = typer.Typer(help=__doc__, no_args_is_help=True, add_completion=False)
out = Console()
err = Console(stderr=True)

DEFAULT_DEMO_PRESET = "minimax-m3-nvfp4-mi355x-tp4"
PresetOption = typer.Option(..., "--preset", "-p", help="Serving configuration; see `zerojit families`.")
JsonOption = typer.Option(False, "--json", help="Print a JSON document to stdout instead of tables.")
CacheOption = typer.Option(None, "--cache-dir", help="Backend disk cache (default: ~/.cache/zerojit/<backend>).")


def _resolve(name: str) -> tuple[Family, Preset]:
    try:
        return get_preset(name)
    except UnknownPresetError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None


def _plan(family: Family, preset: Preset):
    registry = WarmupRegistry(preset.limits)
    with registry.capture():
        kernels = family.construct(preset)
    return registry.plan(), kernels


def _print_plan(plan, console: Console) -> None:
    table = Table(title=f"plan: {plan.total_keys} keys")
    for column in ("kernel", "family", "backend", "keys"):
        table.add_column(column, justify="right" if column == "keys" else "left")
    for planned in plan.kernels:
        keys = "[red]0 (registered, empty)[/]" if planned.empty else str(len(planned.keys))
        table.add_row(planned.kernel.name, planned.kernel.family, planned.kernel.backend, keys)
    console.print(table)
    for missed in plan.missed:
        console.print(f"[yellow]missed registration:[/] {missed.kernel} at {missed.site}")


def _warmup(family: Family, preset: Preset, jobs: int, cache_dir: Optional[Path], console: Console):
    plan, kernels = _plan(family, preset)
    family.configure_backend(preset, cache_dir)
    report = execute(plan, jobs=jobs, console=console)
    return plan, kernels, report


@app.command("families")
def families_command(as_json: bool = JsonOption) -> None:
    """List kernel families and their presets."""
    known = families()
    if as_json:
        print(json.dumps([{"family": f.name, "title": f.title, "backend": f.backend,
                           "presets": [{"name": p.name, "description": p.description} for p in f.presets]}
                          for f in known.values()], indent=2))
        return
    table = Table(title="families and presets")
    for column in ("family", "backend", "preset", "description"):
        table.add_column(column)
    for family in known.values():
        for preset in family.presets:
            table.add_row(family.name, family.backend, preset.name, preset.description)
    out.print(table)


@app.command()
def plan(preset: str = PresetOption, as_json: bool = JsonOption,
         keys: bool = typer.Option(False, "--keys", help="With --json, include every compile key.")) -> None:
    """Expand a preset's registrations into the compile keys warmup would build (compiles nothing)."""
    family, chosen = _resolve(preset)
    the_plan, _ = _plan(family, chosen)
    if as_json:
        print(json.dumps(the_plan.to_dict(include_keys=keys), indent=2))
    else:
        _print_plan(the_plan, out)


@app.command()
def warmup(preset: str = PresetOption,
           jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Compile threads where the backend allows."),
           cache_dir: Optional[Path] = CacheOption, as_json: bool = JsonOption) -> None:
    """Compile every planned key for real (compile-only); exit 1 if any key fails."""
    family, chosen = _resolve(preset)
    _, _, report = _warmup(family, chosen, jobs, cache_dir, err)
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        out.print(report.table())
        for failure in report.failures:
            out.print(f"[red]failed[/] {failure.kernel} {failure.key}: {failure.cause}")
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def verify(preset: str = PresetOption,
           launches: int = typer.Option(40, "--launches", "-n", min=1, help="Random in-range launches per launcher."),
           seed: int = typer.Option(0, "--seed", help="Seed of the random launches."),
           cache_dir: Optional[Path] = CacheOption, as_json: bool = JsonOption) -> None:
    """Warm up, then prove in-range launches compile nothing; exit 1 on any cache growth or failed key."""
    family, chosen = _resolve(preset)
    _, kernels, report = _warmup(family, chosen, 1, cache_dir, err)
    coverage = verify_zero_jit(kernels, family.sample_launches(chosen, kernels, launches, seed))
    if as_json:
        print(json.dumps(coverage.to_dict(), indent=2))
    else:
        out.print(coverage.table())
        for entry in coverage.kernels:
            for miss in entry.missed_keys:
                out.print(f"[red]compiled after warmup[/] {entry.name}: {miss['key']} from {miss['inputs']}")
    raise typer.Exit(0 if coverage.ok and report.ok else 1)


@app.command()
def demo(preset: str = typer.Option(DEFAULT_DEMO_PRESET, "--preset", "-p", help="Serving configuration."),
         cache_dir: Optional[Path] = CacheOption) -> None:
    """The main job end to end: plan, real warmup, zero-JIT verification, report."""
    family, chosen = _resolve(preset)
    out.rule(f"[bold]zerojit demo[/] · {chosen.name}")
    out.print(chosen.description)
    the_plan, _ = _plan(family, chosen)
    _print_plan(the_plan, out)
    _, kernels, report = _warmup(family, chosen, 1, cache_dir, out)
    out.print(report.table())
    coverage = verify_zero_jit(kernels, family.sample_launches(chosen, kernels, 40, 0))
    out.print(coverage.table())
    raise typer.Exit(0 if coverage.ok and report.ok else 1)
