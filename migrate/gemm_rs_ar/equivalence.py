"""Key equivalence of the GEMM-RS/AR migration, both sides run from vLLM trees.

What a model builds is a workspace (`GemmRsAr`, its rank, world size and mode) and the projections that bind to
it: the tree's own `can_run` runs over each, on a workspace built without its symmetric memory. The legacy side
is 0.33.0's orchestrator step (`_warmup_gemm_rs_ar`, which warms what `can_run` recorded); the migrated side runs
`can_run` again inside the registration window, then the registry. On both sides a key is what reaches the cached
compile every path ends in, `Sm100GemmRsAr.compile(rank, world_size, cta_group, all_reduce, dtype)`, recorded
there instead of compiling, bound to that compile's own signature with its defaults: the owner's own compile
runs, so how it calls the unit is checked too.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import itertools
import types
from typing import Any

import torch
from hypothesis import strategies as st

from zerojit.migrate.engine_specs import GEMM_RS_AR
from zerojit.migrate.engine_trees.equivalence import TreeEquivalence
from zerojit.migrate.engine_trees.warmup import TreeWarmup, vllm_worker

N = 7168  # the workspace's output width
MXFP8 = "vllm.model_executor.kernels.linear.mxfp8.flashinfer"
# A projection's weight: (quantized, its kernel class in MXFP8's module or None, weight dtype).
WEIGHTS = {
    "bf16": (False, None, torch.bfloat16),
    "fp32": (False, None, torch.float32),
    "mxfp8-cutedsl": (True, "FlashInferCutedslMxfp8LinearKernel", torch.float8_e4m3fn),
    "mxfp8-cutlass": (True, "FlashInferCutlassMxfp8LinearKernel", torch.float8_e4m3fn),
    "fp8-other": (True, None, torch.float8_e4m3fn),
}


@dataclasses.dataclass(frozen=True)
class GemmRsArConfig:
    world_size: int = 4
    rank: int = 0
    all_reduce: bool = False
    initialized: bool = True  # the model built the workspace (its feature flag on, the topology supported)
    enable_jit_warmup: bool = True
    projections: tuple = (("bf16", N, 2048),)  # (weight, N, K) of each projection that asks can_run


class GemmRsArEngine:
    """A model's GEMM-RS/AR workspace and projections inside a vLLM tree; nothing stubbed beyond names: `can_run`
    decides from the weights and the quantization kernels' classes, read from the tree."""

    real_modules = ()
    # CuTe DSL's packages, names only: its MLIR runtime never loads into the checking process (beside another
    # MLIR runtime, FlyDSL's, loading it aborts the process), and every key is recorded before anything compiles.
    names_only = ("cutlass", "cuda", "quack")

    def __init__(self):
        self.compiled: list[str] = []  # what reached Sm100GemmRsAr.compile, in this run

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        return {}

    def import_facts(self, config: GemmRsArConfig) -> None:
        return None

    def vllm_config(self, config: GemmRsArConfig) -> types.SimpleNamespace:
        return types.SimpleNamespace(kernel_config=types.SimpleNamespace(enable_jit_warmup=config.enable_jit_warmup))

    def worker(self, config: GemmRsArConfig, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        """The worker once the model is built: the module's singleton holds what `can_run` recorded."""
        module = importlib.import_module(GEMM_RS_AR.kernel.module)
        unit = module.Sm100GemmRsAr
        if not hasattr(unit, "zerojit_signature"):  # the tree's own compile, through its cache
            unit.zerojit_signature = inspect.signature(unit.compile)
            unit.compile = staticmethod(functools.partial(self._record, unit.zerojit_signature))
        module._gemm_rs_ar = self.workspace(config) if config.initialized else None
        if config.initialized:
            for projection in self.projections(config):
                module._gemm_rs_ar.can_run(projection)
        return vllm_worker(vllm_config, registry)

    def construct(self, config: GemmRsArConfig, vllm_config: Any, tree: TreeWarmup) -> None:
        """Inside the registration window: each projection asks the workspace, as the layers' constructors do."""
        if config.initialized:
            workspace = self.workspace(config)
            for projection in self.projections(config):
                workspace.can_run(projection)

    def workspace(self, config: GemmRsArConfig) -> Any:
        """A `GemmRsAr` as its constructor leaves it, less the symmetric memory no key reads."""
        cls = importlib.import_module(GEMM_RS_AR.kernel.module).GemmRsAr
        workspace = cls.__new__(cls)
        workspace.rank, workspace.world_size, workspace.all_reduce = config.rank, config.world_size, config.all_reduce
        workspace.N, workspace.device, workspace.dtypes = N, torch.device("cuda", 0), set()
        return workspace

    def projections(self, config: GemmRsArConfig) -> list[types.SimpleNamespace]:
        linear = importlib.import_module("vllm.model_executor.layers.linear")
        kernels = importlib.import_module(MXFP8)
        made = []
        for weight, n, k in config.projections:
            quantized, kernel, dtype = WEIGHTS[weight]
            method = types.SimpleNamespace() if quantized else linear.UnquantizedLinearMethod()
            scheme = types.SimpleNamespace(kernel=getattr(kernels, kernel)() if kernel else None)
            made.append(
                types.SimpleNamespace(
                    quant_method=method, scheme=scheme, weight=torch.empty(n, k, dtype=dtype, device="meta")
                )
            )
        return made

    def to_key(self, key: Any) -> str:
        """The owner's key as the cached compile's arguments (the registry's keys reach `_record` instead)."""
        return ",".join(str(value) for value in dataclasses.astuple(key))

    def _record(self, signature: inspect.Signature, *args: Any, **kwargs: Any) -> None:
        """A call of the cached compile, as its own signature binds it (defaults filled in): a call it would
        refuse raises here as it would there."""
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        self.compiled.append(",".join(str(value) for value in bound.arguments.values()))


def _grid() -> list[GemmRsArConfig]:
    """Two world sizes at the first and last rank, both modes, the workspace built or not, JIT warmup on and off,
    and projection sets: bf16 alone; both MXFP8 kernels beside bf16; none the kernel serves (an fp32 weight, another
    FP8 kernel, a width not the workspace's, K not a multiple of 64)."""
    projection_sets = (
        (("bf16", N, 2048),),
        (("mxfp8-cutedsl", N, 4096), ("bf16", N, 2048), ("mxfp8-cutlass", N, 1024)),
        (("fp32", N, 2048), ("fp8-other", N, 4096), ("bf16", 4096, 2048), ("bf16", N, 2080)),
    )
    return [
        GemmRsArConfig(world_size, rank, all_reduce, initialized, jit, projections)
        for world_size, last, all_reduce, initialized, jit, projections in itertools.product(
            (2, 8), (False, True), (False, True), (True, False), (True, False), projection_sets
        )
        for rank in ((world_size - 1) if last else 0,)
    ]


def _smoke() -> list[GemmRsArConfig]:
    """Every projection set in both modes with the workspace built and JIT warmup on, then each way it warms
    nothing."""
    grid = _grid()
    warmed = [c for c in grid if c.initialized and c.enable_jit_warmup and c.world_size == 8 and c.rank == 7]
    return warmed + [c for c in grid[:8] if not (c.initialized and c.enable_jit_warmup)]


class GemmRsArEquivalence(TreeEquivalence):
    family = GEMM_RS_AR.family
    spec = GEMM_RS_AR
    engine = GemmRsArEngine()
    legacy_release = "0.33.0"
    grids = {"full": _grid, "smoke": _smoke}
    run_compiles = True  # each key recorded where the tree's own code compiles it

    def strategy(self):
        projection = st.tuples(
            st.sampled_from(tuple(WEIGHTS)), st.sampled_from((N, 4096)), st.sampled_from((1024, 2080, 4096))
        )
        return st.builds(
            lambda world_size, rank, **rest: GemmRsArConfig(world_size, rank % world_size, **rest),
            world_size=st.sampled_from((2, 4, 8, 16)),
            rank=st.integers(0, 15),
            all_reduce=st.booleans(),
            initialized=st.booleans(),
            enable_jit_warmup=st.booleans(),
            projections=st.lists(projection, min_size=1, max_size=4).map(tuple),
        )

    def legacy_keys(self, config: GemmRsArConfig) -> set[str]:
        return self._compiled(self.legacy, config)

    def migrated_keys(self, config: GemmRsArConfig) -> set[str]:
        return self.family_keys(config) if self.migrated is None else self._compiled(self.migrated, config)

    def _compiled(self, tree: TreeWarmup, config: GemmRsArConfig) -> set[str]:
        self.engine.compiled = []
        tree.warmed_keys(config)
        return set(self.engine.compiled)
