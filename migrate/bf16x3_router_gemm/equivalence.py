"""Key equivalence of the BF16x3 router GEMM migration, both sides run from vLLM trees.

The legacy side is 0.33.0's orchestrator step (`_warmup_bf16x3_router_gemm`: the first `GateLinear` that allows
the tier, its shape over the token counts the tier serves); the migrated side builds each gate (its constructor's
registration, as the migrated tree wrote it) and runs the registry. Both end in the module's own
`warmup_bf16x3_router_gemm`, which picks tile configurations from the device's SM count (the configuration's
`num_sms`, standing for the device query); a key is what reaches a compile: `Sm100BF16x3RouterGemm.compile(K, BN)`
or the Triton reduction's `warmup(...)`, recorded there instead of compiling.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import itertools
import types
from typing import Any
from unittest import mock

import torch
from hypothesis import strategies as st

from zerojit.migrate.engine_specs import BF16X3_ROUTER_GEMM
from zerojit.migrate.engine_trees.equivalence import TreeEquivalence
from zerojit.migrate.engine_trees.warmup import TreeWarmup, VllmPlatform, vllm_worker
from zerojit.migrate.fla_layer_norm.engine_kernel import triton_stub

GATE_MODULE = BF16X3_ROUTER_GEMM.registration.module


@dataclasses.dataclass(frozen=True)
class RouterConfig:
    arch: str = "sm100"
    enable_jit_warmup: bool = True
    num_sms: int = 148
    max_num_batched_tokens: int = 8192
    # (K, N, the tier's weight and shape checks hold, allows the fp32 kernel) of each MoE gate, in model order
    gates: tuple = ((3072, 256, True, False),)


class RouterEngine:
    """GateLinear layers inside a vLLM tree. Stubbed: the platform, the config, the custom-op registry's class
    decorator and the device's SM count; a gate's eligibility flags are the configuration's (GateLinear computes
    them as before the migration; both sides read them)."""

    real_modules = ("vllm.utils.math_utils", "vllm.model_executor.warmup.jit_warmup_triton_helper")
    # CuTe DSL's packages, names only: its MLIR runtime never loads into the checking process (beside another
    # MLIR runtime, FlyDSL's, loading it aborts the process), and every key is recorded before anything compiles.
    names_only = ("cutlass", "cuda", "quack")

    def __init__(self):
        self.compiled: list[str] = []

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        pluggable = types.SimpleNamespace(register=lambda name: lambda cls: cls)
        return {
            "vllm.platforms": {"current_platform": VllmPlatform(state)},
            "vllm.config": {"get_current_vllm_config_or_none": lambda: state.vllm_config},
            "vllm.model_executor.custom_op": {"PluggableLayer": pluggable},
            "vllm.triton_utils": triton_stub(),
        }

    def import_facts(self, config: RouterConfig) -> str:
        return config.arch

    def vllm_config(self, config: RouterConfig) -> types.SimpleNamespace:
        return types.SimpleNamespace(
            kernel_config=types.SimpleNamespace(enable_jit_warmup=config.enable_jit_warmup),
            scheduler_config=types.SimpleNamespace(max_num_batched_tokens=config.max_num_batched_tokens),
        )

    def gates(self, config: RouterConfig) -> list[Any]:
        cls = importlib.import_module(GATE_MODULE).GateLinear
        made = []
        for k, n, bf16x3, fp32 in config.gates:
            gate = cls.__new__(cls)
            gate.input_size, gate.output_size = k, n
            gate.weight = torch.empty(n, k, dtype=torch.float32, device="meta")
            # GateLinear allows the tier only on SM100-family devices (`is_blackwell`), the fp32 kernel on sm90 too.
            gate.allow_bf16x3_router_gemm = bf16x3 and config.arch == "sm100"
            gate.allow_fp32_router_gemm = fp32
            made.append(gate)
        return made

    def worker(self, config: RouterConfig, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        self._record(importlib.import_module(BF16X3_ROUTER_GEMM.kernel.module))
        worker = vllm_worker(vllm_config, registry)
        model = types.SimpleNamespace(modules=lambda: iter(self.gates(config)))
        worker.get_model = lambda: model
        return worker

    def construct(self, config: RouterConfig, vllm_config: Any, tree: TreeWarmup) -> None:
        for gate in self.gates(config):
            tree.constructor_registrations(
                "GateLinear", {"self": gate, "input_size": gate.input_size, "output_size": gate.output_size}
            )

    def to_key(self, key: Any) -> str:
        return ",".join(str(value) for value in dataclasses.astuple(key))

    def _record(self, module: types.ModuleType) -> None:
        """The module's two compiles record what reaches them."""

        def gemm(K: int, BN: int = 128) -> None:
            self.compiled.append(f"Sm100BF16x3RouterGemm:K={K},BN={BN}")

        def reduce(*args: Any, **kwargs: Any) -> None:
            shown = [repr(a) for a in args if not type(a).__name__.startswith("TritonWarmupTensor")]
            self.compiled.append(f"_splitk_reduce_kernel:{','.join(shown)},{sorted(kwargs.items())}")

        module.Sm100BF16x3RouterGemm.compile = staticmethod(gemm)
        module._splitk_reduce_kernel = types.SimpleNamespace(warmup=reduce)


def _grid() -> list[RouterConfig]:
    """Both archs, JIT warmup on and off, two SM counts, two batch budgets, and gate sets: a MiniMax-M2 gate (a
    tuned shape), a MiniMax-M3 gate beside the fp32 kernel (from 33 tokens), gates of two shapes (one repeated),
    one the tier does not allow."""
    return [
        RouterConfig(*values)
        for values in itertools.product(
            ("sm100", "sm90"),
            (True, False),
            (148, 160),
            (2048, 8192),
            (
                ((3072, 256, True, False),),
                ((6144, 128, True, True),),
                ((4096, 192, True, False), (4096, 192, True, False), (7168, 384, True, False)),
                ((3072, 256, False, False),),
            ),
        )
    ]


def _smoke() -> list[RouterConfig]:
    """Every gate set on sm100 with JIT warmup on, then each way it warms nothing."""
    grid = _grid()
    warmed = [c for c in grid if c.arch == "sm100" and c.enable_jit_warmup and c.num_sms == 148]
    return warmed + [c for c in grid if c.gates == grid[0].gates and c.num_sms == 148 and c not in warmed]


class Bf16x3RouterGemmEquivalence(TreeEquivalence):
    family = BF16X3_ROUTER_GEMM.family
    spec = BF16X3_ROUTER_GEMM
    engine = RouterEngine()
    legacy_release = "0.33.0"
    grids = {"full": _grid, "smoke": _smoke}
    run_compiles = True  # each key recorded where the tree's own code compiles it

    def strategy(self):
        gate = st.tuples(
            st.sampled_from((2816, 3072, 4096, 6144, 7168)),
            st.sampled_from((128, 192, 256, 384)),
            st.booleans(),
            st.booleans(),
        )
        return st.builds(
            RouterConfig,
            arch=st.sampled_from(("sm100", "sm90")),
            enable_jit_warmup=st.booleans(),
            num_sms=st.sampled_from((132, 148, 160)),
            max_num_batched_tokens=st.sampled_from((512, 2048, 8192)),
            gates=st.lists(gate, min_size=1, max_size=4).map(tuple),
        )

    def legacy_keys(self, config: RouterConfig) -> set[str]:
        return self._compiled(self.legacy, config)

    def migrated_keys(self, config: RouterConfig) -> set[str]:
        return self.family_keys(config) if self.migrated is None else self._compiled(self.migrated, config)

    def intended(self, config: RouterConfig, legacy: set[str], migrated: set[str]) -> str | None:
        if (jit_off := super().intended(config, legacy, migrated)) is not None:
            return jit_off
        each = set().union(*(self.legacy_keys(dataclasses.replace(config, gates=(gate,))) for gate in config.gates))
        if legacy < migrated == each:
            return (
                "every gate that allows the tier registers its own shape; the step warmed the first such gate's "
                "only, so the others compiled while serving"
            )
        return None

    def _compiled(self, tree: TreeWarmup, config: RouterConfig) -> set[str]:
        self.engine.compiled = []
        device = types.SimpleNamespace(multi_processor_count=config.num_sms)
        with contextlib.ExitStack() as stack:  # the device the warmup asks for its SM count
            stack.enter_context(mock.patch("torch.accelerator.current_device_index", return_value=0))
            stack.enter_context(mock.patch("torch.cuda.get_device_properties", return_value=device))
            tree.warmed_keys(config)
        return set(self.engine.compiled)
