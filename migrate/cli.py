"""`zerojit`: zero JIT compilation at serving time, planned, warmed, proven and migrated.

plan / warmup / verify / demo take a --preset (a named serving configuration; `zerojit
families` lists them); `migrate` rewrites an engine repo's legacy warmups onto the
contract; `keys diff` checks that migrated kernels warm what the legacy warmup did.
Machine-readable output with --json goes to stdout; progress and errors go to stderr,
so `--json` output can be piped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from codemods.runner import MigrationError, MigrationResult, migrate, write
from codemods.spec import SpecError, load_specs
from contract import WarmupRegistry, execute, verify_zero_jit
from contract.executor import default_jobs, timing_history
from contract.timeline import plot_timeline

from .families import (Family, Preset, UnknownFamilyError, UnknownGridError, UnknownPresetError, families, get_preset,
                       key_equivalence)
from .specs import builtin_specs

app = typer.Typer(help="Zero JIT compilation at serving time: plan, warm up, verify and migrate kernel warmups. "
                       "plan/warmup/verify/demo take a --preset (see `zerojit families`); --json output goes to "
                       "stdout, progress and errors to stderr.", no_args_is_help=True, add_completion=False)
out = Console()
err = Console(stderr=True, soft_wrap=True)  # messages carry paths: never wrap them

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


HISTORY_FILE = "zerojit-timings.json"


def _warmup(family: Family, preset: Preset, jobs: int, cache_dir: Optional[Path], console: Console,
            timeline: Optional[Path] = None):
    """Configure the backend, compile the plan (long keys first, from the cache's timing history)."""
    plan, kernels = _plan(family, preset)
    cache = family.configure_backend(preset, cache_dir)
    history_path = cache / HISTORY_FILE
    history = json.loads(history_path.read_text()) if history_path.is_file() else {}
    report = execute(plan, jobs=jobs, console=console, history=history,
                     process_setup=(family.configure_backend, (preset, cache)))
    tmp = history_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(timing_history(report, history), sort_keys=True))
    tmp.replace(history_path)
    if timeline is not None:
        plot_timeline(report, timeline)
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
           jobs: int = typer.Option(default_jobs(), "--jobs", "-j", min=1,
                                    help="Parallel compiles (threads or worker processes, as the backend allows)."),
           timeline: Optional[Path] = typer.Option(None, "--timeline", help="Write a PNG timeline of the warmup."),
           ranks: int = typer.Option(1, "--ranks", min=1, help="Cooperative warmup: N local rank processes "
                                     "(torch.distributed, gloo) split the keys and share one disk cache."),
           cache_dir: Optional[Path] = CacheOption, as_json: bool = JsonOption) -> None:
    """Compile every planned key for real (compile-only); exit 1 if any key fails."""
    family, chosen = _resolve(preset)
    if ranks > 1:
        from .ranks import cooperative_warmup

        summaries = cooperative_warmup(chosen.name, ranks, cache_dir)
        failed = sum(r["failed"] for r in summaries)
        if as_json:
            print(json.dumps({"ranks": summaries, "compiled": sum(r["compiled"] for r in summaries),
                              "failed": failed}, indent=2))
        else:
            table = Table(title=f"cooperative warmup: {ranks} ranks")
            for column in ("rank", "compiled", "loaded from disk", "failed", "variants", "wall s"):
                table.add_column(column, justify="right")
            for r in summaries:
                table.add_row(str(r["rank"]), str(r["compiled"]), str(r["cached"]), str(r["failed"]),
                              str(r["variants"]), f"{r['wall_s']:.2f}")
            out.print(table)
        raise typer.Exit(0 if not failed else 1)
    _, _, report = _warmup(family, chosen, jobs, cache_dir, err, timeline)
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


def _print_diff(result: MigrationResult, console: Console) -> None:
    for change in result.changes:
        text = change.diff(result.repo)
        if console.is_terminal:
            console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
        else:
            console.out(text, end="", highlight=False)


@app.command("migrate")
def migrate_command(
    family_names: list[str] = typer.Argument(None, metavar="FAMILY...", help="Spec families to apply "
                                             "(built-in: fa4-mla-prefill, inkling-rel-attention, rocm-nvfp4)."),
    repo: Path = typer.Option(..., "--repo", help="Checkout root: the folder holding the engine package (vllm/)."),
    write_changes: bool = typer.Option(False, "--write", help="Apply the changes (default: print a diff)."),
    check: bool = typer.Option(False, "--check", help="Exit 1 when changes are pending, 0 when none."),
    spec_file: Optional[Path] = typer.Option(None, "--spec", help="TOML file of [[migration]] specs to use too."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Processes for the libcst transforms."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write a JSON report of the run here."),
) -> None:
    """Migrate legacy warmup modules in a repo onto the contract (dry run: a unified diff)."""
    if write_changes and check:
        err.print("[red]error:[/] --write and --check exclude each other")
        raise typer.Exit(2)
    try:
        specs = builtin_specs()
        if spec_file is not None:
            specs.update({spec.family: spec for spec in load_specs(spec_file)})
        names = family_names or (sorted(s.family for s in load_specs(spec_file)) if spec_file else [])
        if not names:
            raise SpecError(f"name at least one family; known: {', '.join(sorted(specs))}")
        unknown = [name for name in names if name not in specs]
        if unknown:
            raise SpecError(f"unknown family {unknown[0]!r}; known: {', '.join(sorted(specs))}")
        result = migrate(repo, [specs[name] for name in names], jobs=jobs)
    except (SpecError, MigrationError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    if report is not None:
        report.write_text(json.dumps(result.report(), indent=2) + "\n")
    summary = result.report()
    if write_changes:
        write(result)
        err.print(f"wrote {len(summary['changed'])} changed, {len(summary['deleted'])} deleted files "
                  f"in {result.seconds:.2f} s")
    elif check:
        err.print(f"{len(result.changes)} files would change")
        raise typer.Exit(1 if result.changes else 0)
    else:
        _print_diff(result, out)
        err.print(f"{len(result.changes)} files would change (dry run; --write applies)")


keys_app = typer.Typer(help="Compare compile keys: migrated kernels against their legacy warmup logic.",
                       no_args_is_help=True)
app.add_typer(keys_app, name="keys")


@keys_app.command("diff")
def keys_diff(
    family: str = typer.Option(..., "--family", "-f", help="Kernel family; see `zerojit families`."),
    grid: str = typer.Option("full", "--grid", help="Named grid of serving configs ('full', 'smoke'; 'none' skips it)."),
    samples: int = typer.Option(0, "--samples", min=0, help="Extra configs drawn by hypothesis."),
    seed: int = typer.Option(0, "--seed", help="Seed of the hypothesis draw."),
    as_json: bool = JsonOption,
) -> None:
    """Legacy vs migrated keys per serving config; exit 1 on any difference not explained on purpose."""
    try:
        report = key_equivalence(family, None if grid == "none" else grid, samples, seed)
    except (UnknownFamilyError, UnknownGridError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        out.print(report.table())
    raise typer.Exit(0 if report.ok else 1)


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
    out.rule("[bold]migration of the bundled legacy engine tree[/] (dry run)")
    from .rocm_nvfp4.example import EXAMPLE_TREE

    migration = migrate(EXAMPLE_TREE, [builtin_specs()["rocm-nvfp4"]])
    _print_diff(migration, out)
    raise typer.Exit(0 if coverage.ok and report.ok else 1)
