"""Key equivalence of the ll_bf16 router GEMM migration, both sides run from vLLM trees.

The legacy side is 0.33.0's own orchestrator step (`_warmup_ll_bf16_router_gemm`); the migrated side
builds the model's `GateLinear` layers (their constructors' registrations, as the migrated tree wrote
them) and runs the registry. A key is vLLM's `LLBf16Gemm.CompileKey`, named with the kernel object it
is warmed on: the engine sends one token to `ll_bf16_gemm_c1_pdl_kernel`, which the step never warmed.
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import types
from typing import Any

import torch
from hypothesis import strategies as st

from zerojit.contract.limits import torch_dtype
from zerojit.migrate.engine_specs import LL_BF16_ROUTER_GEMM
from zerojit.migrate.engine_trees.equivalence import TreeEquivalence
from zerojit.migrate.engine_trees.sources import placeholder
from zerojit.migrate.engine_trees.warmup import VllmPlatform, vllm_worker

PLAIN, ONE_TOKEN = "ll_bf16_gemm_kernel", "ll_bf16_gemm_c1_pdl_kernel"


@dataclasses.dataclass(frozen=True)
class RouterConfig:
    arch: str = "sm90"
    cutedsl: bool = True  # the ll_bf16 CuTe DSL GEMM is available
    enable_jit_warmup: bool = True
    gates: tuple = ((7168, 256, "bf16"),)  # (K, N, weight dtype) of each MoE gate


class RouterEngine:
    """GateLinear layers inside a vLLM tree. Stubbed: the platform, the config, CuTe DSL availability and
    the custom-op registry's class decorator; a gate is a GateLinear whose constructor ran up to its weight."""

    real_modules = ()

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        common = {
            name: placeholder(f"_ll_router_common.{name}")
            for name in (
                "current_cuda_stream",
                "cute_context",
                "make_fake_gemm_tensors",
                "use_pdl",
                "validate_common_gemm_inputs",
            )
        }
        pluggable = types.SimpleNamespace(register=lambda name: lambda cls: cls)
        return {
            "vllm.platforms": {"current_platform": VllmPlatform(state)},
            "vllm.config": {"get_current_vllm_config": lambda: state.vllm_config},
            "vllm.model_executor.custom_op": {"PluggableLayer": pluggable},
            "vllm.model_executor.kernels.linear.cute_dsl._ll_router_common": {
                **common,
                "is_cutedsl_available": lambda name: state.config.cutedsl,
            },
        }

    def import_facts(self, config: RouterConfig) -> str:
        return config.arch

    def vllm_config(self, config: RouterConfig) -> types.SimpleNamespace:
        return types.SimpleNamespace(kernel_config=types.SimpleNamespace(enable_jit_warmup=config.enable_jit_warmup))

    def gates(self, config: RouterConfig) -> list[Any]:
        cls = importlib.import_module(LL_BF16_ROUTER_GEMM.registration.module).GateLinear
        made = []
        for k, n, dtype in config.gates:
            gate = cls.__new__(cls)
            gate.weight = torch.empty(n, k, dtype=torch_dtype(dtype), device="meta")
            made.append(gate)
        return made

    def worker(self, config: RouterConfig, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        worker = vllm_worker(vllm_config, registry)
        model = types.SimpleNamespace(modules=lambda: iter(self.gates(config)))
        worker.get_model = lambda: model
        return worker

    def construct(self, config: RouterConfig, vllm_config: Any, tree: Any) -> None:
        for gate in self.gates(config):
            tree.constructor_registrations(
                "GateLinear", {"self": gate, "input_size": gate.weight.shape[1], "output_size": gate.weight.shape[0]}
            )

    def to_key(self, key: Any) -> tuple[str, ...]:
        return tuple(str(value) for value in dataclasses.astuple(key))


def _grid() -> list[RouterConfig]:
    """Both archs, CuTe DSL there or not, JIT warmup on and off, and gate sets: one bf16 gate, several (a
    repeated shape, K < 2048), K not a multiple of 8, an fp32 weight."""
    return [
        RouterConfig(*values)
        for values in itertools.product(
            ("sm90", "sm100"),
            (True, False),
            (True, False),
            (
                ((7168, 256, "bf16"),),
                ((4096, 256, "bf16"), (4096, 256, "bf16"), (7168, 384, "bf16"), (1024, 128, "bf16")),
                ((4100, 256, "bf16"),),
                ((7168, 384, "fp32"),),
            ),
        )
    ]


def _smoke() -> list[RouterConfig]:
    """Every gate set on both archs with the kernel there and JIT warmup on (K < 2048 is where M is in the key: a
    range the step and the registrations disagree on shows there), then each way it warms nothing on sm90."""
    grid = _grid()
    warmed = [c for c in grid if c.cutedsl and c.enable_jit_warmup]
    return warmed + [c for c in grid if c.arch == "sm90" and c.gates == grid[0].gates and c not in warmed]


class RouterGemmEquivalence(TreeEquivalence):
    family = LL_BF16_ROUTER_GEMM.family
    spec = LL_BF16_ROUTER_GEMM
    engine = RouterEngine()
    legacy_release = "0.33.0"
    grids = {"full": _grid, "smoke": _smoke}

    def strategy(self):
        shapes = st.tuples(st.sampled_from((1024, 4096, 4100, 7168)), st.sampled_from((128, 256, 384)))
        gate = st.builds(lambda shape, dtype: (*shape, dtype), shapes, st.sampled_from(("bf16", "fp32")))
        return st.builds(
            RouterConfig,
            arch=st.sampled_from(("sm90", "sm100")),
            cutedsl=st.booleans(),
            enable_jit_warmup=st.booleans(),
            gates=st.lists(gate, min_size=1, max_size=4).map(tuple),
        )

    def legacy_keys(self, config: RouterConfig) -> set[str]:
        return _named(self.legacy.standalone_keys(config, by_kernel=True))

    def migrated_keys(self, config: RouterConfig) -> set[str]:
        if self.migrated is None:
            return self.family_keys(config)
        return _named(self.migrated.warmed_keys(config, by_kernel=True))

    def intended(self, config: RouterConfig, legacy: set[str], migrated: set[str]) -> str | None:
        if (jit_off := super().intended(config, legacy, migrated)) is not None:
            return jit_off
        moved = {key.replace(f"{PLAIN}:", f"{ONE_TOKEN}:", 1) for key in legacy - migrated}
        if moved == migrated - legacy and all(key.split(":", 1)[1].split(",")[1] == "1" for key in moved):
            return (
                f"one token: the step warmed M = 1 on {PLAIN}, which never serves it; ll_bf16_gemm sends it to "
                f"{ONE_TOKEN}, which the step never warmed (its first one-token request compiled while serving)"
            )
        return None


def _named(keys: set) -> set[str]:
    """`kernel object: key fields` for each (kernel object, key) a tree warmed."""
    return {f"{kernel}:{','.join(key)}" for kernel, key in keys}
