"""Local cooperative warmup of a preset: N rank processes on one machine sharing one disk cache.

What `zerojit warmup --ranks N` runs (and the tests and bench): each rank initializes
torch.distributed (gloo, file rendezvous), configures its backend on the shared cache,
and warms the preset through `warm_preset`, which takes part in `zerojit.contract.cooperative.cooperative_execute`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from zerojit.contract.cache import check_artifacts, default_cache_dir, open_cache_dir, warming

from .families import FamilyError, get_preset, plan_preset, warm_preset

MAX_RANKS = 64  # local rank processes on one machine: far more than its GPUs, far fewer than would exhaust it


def rank_main(rank: int, world_size: int, preset_name: str, cache_dir: Path | None, workdir: str) -> None:
    """One rank (a spawned process): writes its report summary to workdir/rank<r>.json."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{workdir}/rendezvous", rank=rank, world_size=world_size)
    try:
        family, preset = get_preset(preset_name)
        run = warm_preset(family, preset, cache_dir=cache_dir, cooperative=True)
        summary = run.report.to_dict()
        summary["rank"] = rank
        summary["variants"] = sum(summary_kernel["variants"] for summary_kernel in summary["kernels"])
        Path(workdir, f"rank{rank}.json").write_text(json.dumps(summary))
    finally:
        dist.destroy_process_group()


def cooperative_warmup(preset_name: str, world_size: int, cache_dir: Path | None) -> list[dict]:
    """Spawn `world_size` local ranks for a cooperative warmup; return each rank's summary."""
    import torch.multiprocessing as mp

    if not 1 <= world_size <= MAX_RANKS:
        raise FamilyError(f"--ranks must be between 1 and {MAX_RANKS}, not {world_size}")
    family, preset = get_preset(preset_name)
    # Refused here in one line, not in every rank; held for the whole run, as one warmup holds it (the ranks
    # load what their peers compile in this run), with what no manifest vouches for removed before they start.
    cache = open_cache_dir(cache_dir or default_cache_dir(family.backend_name), family.backend_name)
    with warming(cache), tempfile.TemporaryDirectory(prefix="zerojit-ranks-") as workdir:
        check_artifacts(cache, plan_preset(family, preset)[0], loads=family.loads)
        mp.start_processes(
            rank_main,
            args=(world_size, preset_name, cache_dir, workdir),
            nprocs=world_size,
            start_method="spawn",
            join=True,
        )
        return [json.loads(Path(workdir, f"rank{r}.json").read_text()) for r in range(world_size)]
