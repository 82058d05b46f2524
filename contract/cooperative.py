"""Cooperative warmup: the ranks of one server split the plan instead of each compiling all of it.

Built on torch.distributed (gloo works on CPU): every rank expands the same plan, compiles
its share (every world_size-th key) into the backends' shared disk caches, waits at a
barrier, then loads the other ranks' keys from disk. Each rank ends holding every
variant; the server compiled each distinct key once instead of once per rank.
"""

from __future__ import annotations

import time

from .executor import execute
from .plan import WarmupPlan
from .report import WarmupReport


def cooperative_execute(plan: WarmupPlan) -> WarmupReport:
    """Run this rank's part of a cooperative warmup (torch.distributed must be initialized)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        raise RuntimeError("cooperative warmup needs torch.distributed initialized (e.g. gloo) on every rank")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    work = list(plan.work())
    started = time.perf_counter()
    own = execute(plan, work=work[rank::world_size])
    dist.barrier()  # every share is on disk now
    rest = execute(plan, work=[w for i, w in enumerate(work) if i % world_size != rank])
    return WarmupReport(
        plan=plan, results=own.results + rest.results, wall_s=time.perf_counter() - started, variants=rest.variants
    )
