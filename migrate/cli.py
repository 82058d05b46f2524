"""`zerojit`: zero JIT compilation at serving time, planned, warmed, proven and migrated.

plan / warmup / verify / bake / demo take a --preset (a named serving configuration;
`zerojit families` lists them); `bake` builds caches to ship to serving hosts; `migrate`
rewrites an engine repo's legacy warmups onto the contract; `keys diff` checks that
migrated kernels warm what the legacy warmup did.
Machine-readable output with --json goes to stdout; progress and errors go to stderr,
so `--json` output can be piped.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from zerojit.codemods import transaction
from zerojit.codemods.runner import MigrationError, MigrationResult, check_repo, migrate, write
from zerojit.codemods.spec import SpecError, load_specs
from zerojit.contract.cache import CacheDirError
from zerojit.contract.kernel import BackendConfigError
from zerojit.migrate.engine_trees.sources import NamesOnlyUsed
from zerojit.migrate.engine_trees.warmup import EngineRunError
from zerojit.contract.executor import default_jobs

from .families import (MAX_LAUNCHES, Family, FamilyError, Preset, WarmupRun, families, get_preset, key_equivalence,
                       migration_keys_check, migration_specs, plan_preset, preset_variants, verify_preset, warm_preset)

# rich_markup_mode=None: help texts are plain text, so `[[migration]]` and user input print as written.
app = typer.Typer(help="Zero JIT compilation at serving time: plan, warm up, verify and migrate kernel warmups. "
                       "plan/warmup/verify/demo take a --preset (see `zerojit families`); --json output goes to "
                       "stdout, progress and errors to stderr.", no_args_is_help=True, add_completion=False,
                  rich_markup_mode=None, pretty_exceptions_enable=False)
out = Console()
err = Console(stderr=True, soft_wrap=True)  # messages carry paths: never wrap them

DEFAULT_DEMO_PRESET = "minimax-m3-nvfp4-mi355x-tp4"
PresetOption = typer.Option(..., "--preset", "-p", help="Serving configuration; see `zerojit families`.")
JsonOption = typer.Option(False, "--json", help="Print a JSON document to stdout instead of tables.")
CacheOption = typer.Option(None, "--cache-dir", help="Backend disk cache (default: ~/.cache/zerojit/<backend>). "
                           "It holds compiled code the warmup loads: it must be a folder only you can write.")
# Bad input a user can give: refused with one line and exit 2, before anything compiles.
USER_ERRORS = (FamilyError, CacheDirError, BackendConfigError, SpecError, MigrationError)
# What running an engine tree can refuse with (a missing tree or module, a gate it cannot follow, a stub it lacks).
TREE_ERRORS = (FileNotFoundError, EngineRunError, NamesOnlyUsed)


def fail(message: object, code: int = 2) -> typer.Exit:
    """Print one `error:` line (the text is never read as rich markup) and return the Exit to raise."""
    err.print(f"[red]error:[/] {escape(str(message))}", highlight=False)
    return typer.Exit(code)


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    err.print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False)


def _resolve(name: str) -> tuple[Family, Preset]:
    try:
        return get_preset(name)
    except FamilyError as exc:
        raise fail(exc) from None


def _print_plan(plan, console: Console, variants: dict[str, int] | None = None) -> None:
    table = Table(title=f"plan: {plan.total_keys} keys")
    for column in ("kernel", "family", "backend", "keys", *(("variants",) if variants else ())):
        table.add_column(column, justify="right" if column in ("keys", "variants") else "left")
    for planned in plan.kernels:
        keys = "[red]0 (registered, empty)[/]" if planned.empty else str(len(planned.keys))
        table.add_row(escape(planned.kernel.name), escape(planned.kernel.family), escape(planned.kernel.backend), keys,
                      *((str(variants[planned.kernel.name]),) if variants else ()))
    console.print(table)
    for missed in plan.missed:
        console.print(f"[yellow]missed registration:[/] {escape(missed.kernel)} at {escape(missed.site)}")


def _print_warmup(run: WarmupRun, console: Console) -> None:
    console.print(run.report.table())
    for problem in run.artifact_problems:
        console.print(f"[yellow]recompiled[/] {escape(str(problem))}")
    for failure in run.report.failures:
        console.print(f"[red]failed[/] {escape(failure.kernel)} {escape(str(failure.key))}: {escape(str(failure.cause))}")


@app.command("families")
def families_command(as_json: bool = JsonOption) -> None:
    """List kernel families (installed plug-ins of the `zerojit.families` entry-point group) and their presets."""
    known = families()
    if as_json:
        print(json.dumps([{"family": f.name, "title": f.title, "backend": f.backend_name,
                           "presets": [{"name": p.name, "description": p.description} for p in f.presets],
                           "specs": [spec.family for spec in f.specs]}
                          for f in known.values()], indent=2))
        return
    table = Table(title="families and presets")
    for column in ("family", "backend", "preset"):
        table.add_column(column, no_wrap=True)
    table.add_column("description")
    for family in known.values():
        for preset in family.presets:
            table.add_row(escape(family.name), escape(family.backend_name), escape(preset.name), escape(preset.description))
    out.print(table)


@app.command()
def plan(preset: str = PresetOption, as_json: bool = JsonOption,
         keys: bool = typer.Option(False, "--keys", help="With --json, include every compile key."),
         variants: bool = typer.Option(False, "--variants", help="Also resolve each key's backend variant (what "
                                       "actually compiles; keys that share one compile once). Imports the backend."),
         cache_dir: Optional[Path] = CacheOption) -> None:
    """Expand a preset's registrations into the compile keys warmup would build (compiles nothing)."""
    family, chosen = _resolve(preset)
    the_plan, _ = plan_preset(family, chosen)
    counts = {}
    if variants:
        try:
            counts = preset_variants(family, chosen, the_plan, cache_dir)
        except USER_ERRORS as exc:
            raise fail(exc) from None
    if as_json:
        summary = the_plan.to_dict(include_keys=keys)
        for entry in summary["kernels"]:
            if variants:
                entry["variants"] = counts[entry["kernel"]]
        if variants:
            summary["total_variants"] = sum(counts.values())
        print(json.dumps(summary, indent=2))
    else:
        _print_plan(the_plan, out, counts)


@app.command()
def warmup(preset: str = PresetOption,
           jobs: int = typer.Option(default_jobs(), "--jobs", "-j", min=1,
                                    help="Parallel compiles (threads or worker processes, as the backend allows)."),
           timeline: Optional[Path] = typer.Option(None, "--timeline", help="Write a PNG timeline of the warmup "
                                                   "(needs zerojit[plots])."),
           ranks: int = typer.Option(1, "--ranks", min=1, help="Cooperative warmup: N local rank processes "
                                     "(torch.distributed, gloo) split the keys and share one disk cache."),
           cache_dir: Optional[Path] = CacheOption, as_json: bool = JsonOption,
           require_baked: bool = typer.Option(False, "--require-baked", help="The cache is a bake (zerojit bake) made "
                                              "for this environment: a fingerprint mismatch or a planned key it lacks "
                                              "is an error before anything compiles (exit 2), and any compile during "
                                              "the warmup exits 1.")) -> None:
    """Compile every planned key for real (compile-only); exit 1 if any key fails."""
    family, chosen = _resolve(preset)
    if ranks > 1:
        from .ranks import cooperative_warmup

        try:
            summaries = cooperative_warmup(chosen.name, ranks, cache_dir)
        except USER_ERRORS as exc:
            raise fail(exc) from None
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
    try:
        run = warm_preset(family, chosen, jobs=jobs, cache_dir=cache_dir, console=err, timeline=timeline,
                          require_baked=require_baked)
    except USER_ERRORS as exc:
        raise fail(exc) from None
    if run.bake:
        err.print(escape(run.bake), highlight=False)
    if as_json:
        summary = run.report.to_dict()
        summary["recompiled_artifacts"] = [str(problem) for problem in run.artifact_problems]
        print(json.dumps(summary, indent=2))
    else:
        _print_warmup(run, out)
    if run.unbaked_compiles:
        raise fail(f"--require-baked: {run.unbaked_compiles} keys compiled although the bake should hold them", 1)
    raise typer.Exit(0 if run.report.ok else 1)


@app.command()
def bake(presets: list[str] = typer.Option(..., "--preset", "-p", help="A serving configuration to bake; "
                                           "repeatable (see `zerojit families`)."),
         out_dir: Path = typer.Option(..., "--out", help="The bake: one cache folder per backend (OUT/<backend>), "
                                      "each with a manifest of its fingerprint, keys and artifact digests."),
         jobs: int = typer.Option(default_jobs(), "--jobs", "-j", min=1, help="Parallel compiles per preset.")) -> None:
    """Compile presets on this (CPU) machine into caches that serving hosts load with zero compiles.

    Bake in the serving hosts' environment (the same Python minor, DSL and FA4 versions: in
    practice `pip install vllm==X zerojit[cuda13]` on the builder); the manifest records it, and
    `zerojit warmup --cache-dir OUT/<backend> --require-baked` on the host refuses a bake that
    does not apply. Each preset bakes in a process of its own (backends cannot share one).
    """
    table = Table(title=f"bake: {escape(str(out_dir))}")
    for column in ("preset", "cache", "keys", "compiled", "loaded", "failed"):
        table.add_column(column, justify="left" if column in ("preset", "cache") else "right")
    failed = 0
    for name in presets:
        family, chosen = _resolve(name)
        folder = out_dir / family.backend_name
        done = subprocess.run([sys.executable, "-m", "zerojit", "warmup", "--preset", chosen.name, "--cache-dir",
                               str(folder), "--jobs", str(jobs), "--json"], capture_output=True, text=True)
        if done.returncode not in (0, 1) or not done.stdout.strip():
            raise fail((done.stderr.strip().splitlines() or [f"warmup of {name} exited {done.returncode}"])[-1]
                       .removeprefix("error: "))
        report = json.loads(done.stdout)
        failed += report["failed"]
        table.add_row(escape(chosen.name), escape(str(folder)), str(report["total_keys"]), str(report["compiled"]),
                      str(report["cached"]), str(report["failed"]))
    out.print(table)
    raise typer.Exit(1 if failed else 0)


@app.command()
def verify(preset: str = PresetOption,
           launches: int = typer.Option(40, "--launches", "-n", help=f"Random in-range launches per launcher "
                                        f"(1 to {MAX_LAUNCHES})."),
           seed: int = typer.Option(0, "--seed", help="Seed of the random launches."),
           cache_dir: Optional[Path] = CacheOption, as_json: bool = JsonOption) -> None:
    """Warm up, then prove in-range launches compile nothing; exit 1 on any cache growth or failed key."""
    family, chosen = _resolve(preset)
    try:
        run, coverage = verify_preset(family, chosen, launches=launches, seed=seed, cache_dir=cache_dir, console=err)
    except USER_ERRORS as exc:
        raise fail(exc) from None
    if as_json:
        print(json.dumps(coverage.to_dict(), indent=2))
    else:
        out.print(coverage.table())
        for entry in coverage.kernels:
            for miss in entry.missed_keys:
                out.print(f"[red]compiled after warmup[/] {escape(entry.name)}: {escape(str(miss['key']))} "
                          f"from {escape(str(miss['inputs']))}")
    raise typer.Exit(0 if coverage.ok and run.report.ok else 1)


def _print_diff(result: MigrationResult, console: Console) -> None:
    for change in result.changes:
        text = change.diff(result.repo)
        if console.is_terminal:
            console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
        else:
            console.out(text, end="", highlight=False)


def _split_targets(tokens: list[str], known: set[str], repo: Path) -> tuple[list[str], list[Path]]:
    """Positional arguments: spec family names, and paths or globs that restrict the run."""
    families, paths = [], []
    for token in tokens:
        if token in known:
            families.append(token)
            continue
        matches = sorted(Path().glob(token) if not Path(token).is_absolute() else Path("/").glob(token.lstrip("/"))) \
            if any(c in token for c in "*?[") else [Path(token)] if Path(token).exists() else []
        if not matches and not Path(token).is_absolute() and (repo / token).exists():
            matches = [repo / token]
        if not matches:
            raise SpecError(f"{token!r} is neither a known family ({', '.join(sorted(known))}) nor an existing path")
        paths += matches
    return families, paths


def _progress(console: Console):
    """A progress bar for runs with many files to transform (none for a handful, or when not on a terminal)."""
    state: dict = {}

    def update(done: int, total: int) -> None:
        if total < 20 or not console.is_terminal:
            return
        if "bar" not in state:
            from rich.progress import Progress

            state["bar"] = Progress(console=console, transient=True)
            state["bar"].start()
            state["task"] = state["bar"].add_task("migrate", total=total)
        state["bar"].update(state["task"], completed=done)
        if done == total:
            state["bar"].stop()

    return update


@app.command("migrate")
def migrate_command(
    targets: list[str] = typer.Argument(None, metavar="FAMILY... [PATH...]", help="Spec families to apply (the "
                                        "installed families' specs, see `zerojit families`, and those of --spec), "
                                        "then optional files, folders or globs that restrict the run."),
    repo: Path = typer.Option(..., "--repo", help="Checkout root: the folder holding the engine package (vllm/)."),
    write_changes: bool = typer.Option(False, "--write", help="Apply the changes (default: print a diff)."),
    check: bool = typer.Option(False, "--check", help="List the files that would change ('would change: PATH'); "
                                "exit 1 when any, 0 when none."),
    recover: bool = typer.Option(False, "--recover", help="Roll back a --write that was interrupted (killed), then "
                                 "stop unless families are named."),
    spec_file: Optional[Path] = typer.Option(None, "--spec", help="TOML file of [[migration]] specs to use too."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Processes for the libcst transforms."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write a JSON report of the run here."),
    format_command: Optional[str] = typer.Option(None, "--format", help="A formatter that reads code on stdin and "
                                                 "writes it to stdout, run on every changed file before the safety "
                                                 "gate, e.g. 'ruff format -'."),
    no_ignore: bool = typer.Option(False, "--no-ignore", help="In a git checkout, also read files git ignores."),
    verify_keys: bool = typer.Option(False, "--verify-keys", help="Before writing, compare the compile keys the tree "
                                     "warms before and after the planned changes (`keys diff --legacy-tree "
                                     "--migrated-tree`, smoke grid) for families whose legacy side is engine code; "
                                     "any unexplained difference refuses the run (exit 1)."),
) -> None:
    """Migrate legacy warmup modules in a repo onto the contract (dry run: a unified diff; exit 0).

    Nothing is written unless every edit is safe: the result compiles, pyflakes finds no new
    undefined name or redefinition, and nothing still refers to what the migration deletes or
    renames. Otherwise the run is refused (exit 2), one `path:line: why` per problem. A --write
    is all-or-nothing and survives a kill (the next --write or --recover rolls it back first);
    a second run on the same repo waits for the first. Errors exit 2 with one line.
    """
    if write_changes and check:
        raise fail("--write and --check exclude each other")
    try:
        repo = check_repo(repo)
        specs = migration_specs()
        spec_families = []
        if spec_file is not None:
            loaded = load_specs(spec_file)
            specs.update({spec.family: spec for spec in loaded})
            spec_families = [spec.family for spec in loaded]
        names, only = _split_targets(targets or [], set(specs), repo)
        names = names or spec_families
        if not names and not recover:
            raise SpecError(f"name at least one family; known: {', '.join(sorted(specs))}")
        exclusive = write_changes or recover
        with transaction.locked(repo, exclusive, on_wait=lambda: err.print(
                f"waiting for another zerojit migrate on {escape(str(repo))} ...", highlight=False)):
            if transaction.pending(repo):
                if not exclusive:
                    raise MigrationError(f"an interrupted --write left a journal ({transaction.pending(repo)}); run "
                                         "`zerojit migrate --recover --repo REPO` (or --write) to roll it back")
                restored = transaction.recover(repo)
                err.print(f"recovered an interrupted migration: rolled back {restored} files", highlight=False)
            elif recover:
                err.print("no interrupted migration to recover", highlight=False)
            if not names:
                return
            result = migrate(repo, [specs[name] for name in names], jobs=jobs, respect_gitignore=not no_ignore,
                             format_command=shlex.split(format_command) if format_command else (), only=only,
                             on_progress=_progress(err))
            keys_kept = not (verify_keys and result.changes) or _verify_migration_keys(result)
            if write_changes and keys_kept:
                write(result)
    except USER_ERRORS + TREE_ERRORS + (transaction.TransactionError,) as exc:
        raise fail(exc) from None
    except Exception as exc:  # noqa: BLE001 - a bug must still end in one line and exit 2, never look like exit 1
        raise fail(f"internal error ({type(exc).__name__}: {exc}); nothing was written unless said above") from None
    if not keys_kept:
        err.print("refused: the migration changes what the tree warms (nothing written)", highlight=False)
        raise typer.Exit(1)
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    for path, why in result.skipped.items():
        err.print(f"[yellow]skipped[/] {escape(path)}: {escape(why)}", highlight=False)
    if report is not None:
        report.write_text(json.dumps(result.report(), indent=2) + "\n")
    summary = result.report()
    counts = (f"{len(summary['changed'])} changed, {len(summary['deleted'])} deleted, {len(summary['skipped'])} "
              f"skipped ({result.seconds:.2f} s)")
    if write_changes:
        err.print(f"wrote: {counts}", highlight=False)
    elif check:
        for change in result.changes:
            print(f"would change: {change.path.relative_to(repo).as_posix()}")
        err.print(f"check: {counts}", highlight=False)
        raise typer.Exit(1 if result.changes else 0)
    else:
        _print_diff(result, out)
        err.print(f"dry run (--write applies): {counts}", highlight=False)


def _verify_migration_keys(result: MigrationResult) -> bool:
    """One line per family on whether the planned migration keeps its keys (a table when not); all kept?"""
    for family, report in migration_keys_check(result).items():
        if report is None:
            err.print(f"keys: {escape(family)}: no engine-tree adapter, not checked", highlight=False)
            continue
        verdict = "no unexplained difference" if report.ok else f"{len(report.mismatches)} unexplained mismatches"
        err.print(f"keys: {escape(family)}: {report.configs} configs, {verdict}", highlight=False)
        if not report.ok:
            err.print(report.table())
            return False
    return True


@app.command("survey")
def survey_command(
    repo: Path = typer.Option(..., "--repo", help="Checkout root: the folder holding the engine package (vllm/)."),
    orchestrator: str = typer.Option("vllm.model_executor.warmup.kernel_warmup", "--orchestrator",
                                     help="The module whose entry function runs the warmups."),
    entry: str = typer.Option("kernel_warmup", "--entry", help="The orchestrator's entry function."),
    draft_specs: Optional[Path] = typer.Option(None, "--draft-specs", help="Write one TOML migration spec per "
                                               "warmup a spec can move, each with a `confirm` list a human empties."),
    as_json: bool = JsonOption,
) -> None:
    """Map an engine's remaining legacy warmups: what each compiles, where its kernels are built, what moves by spec.

    Follows every standalone warmup call and inline warmup step of the orchestrator's entry
    (through its own helpers), finds the kernels each warms (@triton.jit-style functions,
    JitKernel objects), the engine classes that select them, whether they already register
    with the contract, and a verdict: "spec" (a spec can move it; --draft-specs writes one)
    or "manual" (with why). Reads the tree with ast; imports nothing.
    """
    from zerojit.codemods.survey import Survey, draft_spec, survey_report

    try:
        survey = Survey(check_repo(repo), orchestrator, entry)
        findings = survey.run()
    except (FileNotFoundError, MigrationError) as exc:
        raise fail(exc) from None
    written = []
    if draft_specs is not None:
        draft_specs.mkdir(parents=True, exist_ok=True)
        for finding in (f for f in findings if f.verdict == "spec"):
            path = draft_specs / f"{finding.function.strip('_')}.toml"
            path.write_text(draft_spec(finding, orchestrator), encoding="utf-8")
            written.append(path)
    if as_json:
        print(json.dumps(survey_report(repo, findings, orchestrator, entry), indent=2))
    else:
        out.print(_survey_table(findings, orchestrator, entry))
    for path in written:
        err.print(f"drafted {escape(str(path))} (empty its confirm list to use it)", highlight=False)


def _survey_table(findings, orchestrator: str, entry: str) -> Table:
    table = Table(title=f"legacy warmups reached from {escape(orchestrator)}.{escape(entry)}(): {len(findings)}",
                  show_lines=True)
    for column in ("warmup", "called", "kernels (where selected)", "verdict"):
        table.add_column(column, overflow="fold")
    for finding in findings:
        called = ("via " + finding.via + "()" if finding.via else finding.kind) + \
            (f"\nif {finding.gate}" if finding.gate else "")
        kernels = "\n".join(f"{k.name} [{k.kind}{', registers' if k.registers_at else ''}]"
                            + (f" -> {', '.join(c.rpartition('.')[2] for c in k.constructed_in[:3])}"
                               if k.constructed_in else "") for k in finding.kernels) or "-"
        verdict = "[green]spec[/]" if finding.verdict == "spec" else \
            "[yellow]manual[/]: " + escape(finding.reasons[0])
        table.add_row(escape(f"{finding.module}.{finding.function}"), escape(called), escape(kernels), verdict)
    return table


keys_app = typer.Typer(help="Compare compile keys: migrated kernels against their legacy warmup logic.",
                       no_args_is_help=True, rich_markup_mode=None)
app.add_typer(keys_app, name="keys")


@keys_app.command("diff")
def keys_diff(
    family: str = typer.Option(..., "--family", "-f", help="Kernel family; see `zerojit families`."),
    grid: str = typer.Option("full", "--grid", help="Named grid of serving configs ('full', 'smoke'; 'none' skips it)."),
    samples: int = typer.Option(0, "--samples", min=0, help="Extra configs drawn by hypothesis (needs "
                                "zerojit[equivalence])."),
    seed: int = typer.Option(0, "--seed", help="Seed of the hypothesis draw."),
    legacy_tree: Optional[Path] = typer.Option(
        None, "--legacy-tree", help="Engine tree (root holding vllm/) whose standalone warmup is the legacy side; "
        "default: the release the family's migration starts from, fetched once and cached."),
    migrated_tree: Optional[Path] = typer.Option(
        None, "--migrated-tree", help="Engine tree after a migration: its registrations and gates are the migrated "
        "side, run the same way (default: zerojit's own family modules)."),
    as_json: bool = JsonOption,
) -> None:
    """Legacy vs migrated keys per serving config; exit 1 on any difference not explained on purpose.

    The legacy side runs the engine's own pre-migration code; with --migrated-tree this checks
    a migration itself: a dropped or changed gate around a registration shows as the configs
    whose keys it loses or adds.
    """
    try:
        report = key_equivalence(family, None if grid == "none" else grid, samples, seed, legacy_tree=legacy_tree,
                                 migrated_tree=migrated_tree)
    except USER_ERRORS + TREE_ERRORS as exc:
        raise fail(exc) from None
    except ModuleNotFoundError as exc:
        raise fail(f"keys diff needs {exc.name}: pip install 'zerojit[equivalence]'") from None
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
    out.rule(f"[bold]zerojit demo[/] · {escape(chosen.name)}")
    out.print(chosen.description, markup=False)
    _print_plan(plan_preset(family, chosen)[0], out)
    try:
        run, coverage = verify_preset(family, chosen, launches=40, seed=0, cache_dir=cache_dir, console=out)
    except USER_ERRORS as exc:
        raise fail(exc) from None
    _print_warmup(run, out)
    out.print(coverage.table())
    out.rule("[bold]migration of the bundled legacy engine tree[/] (dry run)")
    from .rocm_nvfp4.example import EXAMPLE_TREE

    _print_diff(migrate(EXAMPLE_TREE, [migration_specs()["rocm-nvfp4"]]), out)
    raise typer.Exit(0 if coverage.ok and run.report.ok else 1)


def main() -> None:
    """The `zerojit` console script: warnings print as one line each, never as source excerpts."""
    warnings.showwarning = _warning_line
    app(prog_name="zerojit")
