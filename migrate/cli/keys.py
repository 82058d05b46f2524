"""`zerojit keys diff`: the keys migrated kernels warm against those their legacy warmup did, per serving config."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from ..families import key_equivalence
from .shared import TREE_ERRORS, JsonOption, err, fail, out, print_json, user_errors
from .tables import equivalence_table


@user_errors(*TREE_ERRORS)
def keys_diff(
    family: str = typer.Option(
        ...,
        "--family",
        "-f",
        help="Kernel family (see `zerojit families`), or a built-in "
        "lift of a plain Triton kernel (fla-fused-post-conv, ...: Triton's JIT keys).",
    ),
    grid: str = typer.Option(
        "full", "--grid", help="Named grid of serving configs ('full', 'smoke'; 'none' skips it)."
    ),
    samples: int = typer.Option(
        0, "--samples", min=0, help="Extra configs drawn by hypothesis (needs zerojit[equivalence])."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the hypothesis draw."),
    legacy_tree: Path | None = typer.Option(
        None,
        "--legacy-tree",
        help="Engine tree (root holding vllm/) whose standalone warmup is the legacy side; "
        "default: the release the family's migration starts from, fetched once and cached.",
    ),
    migrated_tree: Path | None = typer.Option(
        None,
        "--migrated-tree",
        help="Engine tree after a migration: its registrations and gates are the migrated "
        "side, run the same way (default: zerojit's own family modules).",
    ),
    jobs: int = typer.Option(
        1,
        "--jobs",
        "-j",
        min=1,
        help="Compare the configs in this many processes (each loads the engine trees once; the report is the same).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Legacy vs migrated keys per serving config; exit 1 on any difference not explained on purpose.

    The legacy side runs the engine's own pre-migration code; with --migrated-tree this checks
    a migration itself: a dropped or changed gate around a registration shows as the configs
    whose keys it loses or adds.
    """
    cores = os.cpu_count() or 1
    if jobs > cores:  # each process loads both engine trees: more than the cores only costs memory
        err.print(f"[yellow]warning:[/] --jobs {jobs}: this machine has {cores} cores; using {cores}", highlight=False)
        jobs = cores
    try:
        report = key_equivalence(
            family,
            None if grid == "none" else grid,
            samples,
            seed,
            legacy_tree=legacy_tree,
            migrated_tree=migrated_tree,
            jobs=jobs,
        )
    except ModuleNotFoundError as exc:  # an optional extra, not a user error: say which one to install
        raise fail(f"keys diff needs {exc.name}: pip install 'zerojit[equivalence]'") from None
    if as_json:
        print_json(report.to_dict())
    else:
        out.print(equivalence_table(report))
    raise typer.Exit(0 if report.ok else 1)
