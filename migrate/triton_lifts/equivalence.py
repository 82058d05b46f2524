"""Key equivalence for lifted Triton kernels, in Triton's own terms.

Both sides run an engine tree's own code on a compile-only Triton driver (no GPU) while Triton's
JIT hook records, instead of compiling, each specialization a launch asks for
(`contract.backends.triton.jit_keys_recorded`): the legacy side runs the release's standalone step
(orchestrator -> legacy function -> step -> launcher -> `kernel[grid](...)` on meta tensors), the
migrated side builds the layers (their constructors' registrations, as the migrated tree wrote them)
and runs the orchestrator's registry warmup, whose `compile` replays each provider case through
`kernel.warmup(...)`. A key is Triton's JIT cache key for the spec's kernel.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import importlib
import itertools
import shutil
import tempfile
import types
from pathlib import Path
from typing import Any

import torch
from hypothesis import strategies as st

from zerojit.contract.limits import torch_dtype
from zerojit.migrate.engine_trees.equivalence import TreeEquivalence
from zerojit.migrate.engine_trees.sources import placeholder
from zerojit.migrate.engine_trees.warmup import TreeWarmup, VllmPlatform, vllm_worker
from zerojit.migrate.fla_layer_norm.engine_kernel import triton_stub
from zerojit.migrate.fla_layer_norm.equivalence import MODELS, SCHEDULERS, TP_SIZES, GdnConfig, QwenModelTypes
from zerojit.migrate.fla_layer_norm.legacy import GdnEngine

from .meta_memory import MetaAllocations
from .specs import (
    ATTN_RES,
    BATCH_MEMCPY,
    CAUSAL_CONV1D,
    FUSED_POST_CONV,
    MTP_NORM,
    MTP_UPDATE,
    RECURRENT_KDA,
    SIGMOID_GATING,
)

ARCH = "sm90"  # the compile-only driver's target: part of every key, the same on both sides


@dataclasses.dataclass(frozen=True)
class GdnTritonConfig(GdnConfig):
    """A Qwen GDN serving configuration, with the GPU arch the Triton keys are taken for."""

    arch: str = ARCH


class GdnTritonEngine(GdnEngine):
    """The Qwen GDN layer and warmup as the lifted kernels see them: the layer's state dtypes, the engine's
    Triton warmup settings (one compile thread: the keys, not the pool, are under test)."""

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        stubs = super().stubs(state)
        stubs["vllm.platforms"]["current_platform"].device_type = "cuda"
        stubs["vllm.envs"] = {"VLLM_TRITON_JIT_WARMUP_NUM_THREADS": 1}
        return stubs

    def layer(self, config: Any, vllm_config: Any) -> types.SimpleNamespace:
        layer = super().layer(config, vllm_config)
        dtype = torch_dtype(config.dtype)
        layer.get_state_dtype = lambda: (dtype, dtype)  # what the layer's KV cache is allocated with
        shape = config.shape  # the constructor's conv_dim: q and k of every key head, then v, before the TP split
        layer.conv_dim = 2 * shape.num_k_heads * shape.head_k_dim + shape.num_v_heads * shape.head_v_dim
        return layer

    def worker(self, config: Any, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        worker = super().worker(config, vllm_config, registry)
        for layer in vllm_config.compilation_config.static_forward_context.values():
            layer.kv_cache = _paged(layer.kv_cache)
        return worker


class BoundGdnTritonEngine(GdnTritonEngine):
    """GDN layers whose registration runs when the engine binds their KV cache (`bind_kv_cache`)."""

    def construct(self, config: Any, vllm_config: Any, tree: TreeWarmup) -> None:
        for layer in self.worker(
            config, vllm_config, None
        ).model_runner.compilation_config.static_forward_context.values():
            tree.constructor_registrations("QwenGatedDeltaNetAttention", {"self": layer, "kv_cache": None})


def _paged(cache: list[torch.Tensor]) -> list[torch.Tensor]:
    """The (conv, SSM) states as views of one padded page per block, as vLLM's allocator lays them out: each
    state's block stride is the page's, not its own size (the padding makes it no multiple of 16)."""
    conv, ssm = cache
    page = conv.numel() // conv.shape[0] + ssm.numel() // ssm.shape[0] + 7
    pages = torch.empty(conv.shape[0], page, dtype=conv.dtype, device="meta")
    return [pages.as_strided(tuple(state.shape), (page, *state.stride()[1:])) for state in (conv, ssm)]


@functools.cache
def compile_only_triton() -> Path:
    """Triton's driver made compile-only for ARCH, on a throwaway cache (nothing compiles: the hook records)."""
    from zerojit.contract.backends import triton as triton_backend

    cache = Path(tempfile.mkdtemp(prefix="zerojit-lift-keys-"))
    atexit.register(shutil.rmtree, cache, True)
    return triton_backend.configure(ARCH, cache)


class TritonKeyEquivalence(TreeEquivalence):
    """Legacy vs migrated Triton keys of one lifted kernel (`spec.kernel.name`) over serving configurations
    (`example`: one of them, for a probe that compiles for real)."""

    example: Any

    def _triton_keys(self, run) -> set[str]:
        from zerojit.contract.backends import triton as triton_backend

        compile_only_triton()
        with triton_backend.jit_keys_recorded() as recorded, MetaAllocations():
            run()
        return {key for name, key in recorded if name == self.spec.kernel.name}

    @functools.cached_property
    def legacy(self) -> TreeWarmup:
        return self._open(super().legacy.root)

    @functools.cached_property
    def migrated(self) -> TreeWarmup | None:
        return self._open(self._migrated_tree) if self._migrated_tree else None

    def _open(self, root: Path) -> TreeWarmup:
        return TreeWarmup(root, self.spec, self.engine, run_compiles=True)

    @property
    def legacy_source(self) -> str:
        return f"Triton's JIT keys of {self.spec.kernel.name} in the {super().legacy_source}"

    @property
    def migrated_source(self) -> str:
        return f"Triton's JIT keys of {self.spec.kernel.name} in {super().migrated_source}"

    def legacy_keys(self, config: Any) -> set[str]:
        return self._triton_keys(lambda: self.legacy.standalone_keys(config))

    def migrated_keys(self, config: Any) -> set[str]:
        if self.migrated is None:
            return self.family_keys(config)
        return self._triton_keys(lambda: self.migrated.warmed_keys(config))


def _gdn_grid() -> list[GdnTritonConfig]:
    return [
        GdnTritonConfig(*values)
        for values in itertools.product(
            MODELS, (132,), TP_SIZES, ("bf16", "fp16"), ("silu",), (True, False), SCHEDULERS[:2]
        )
    ]


def _gdn_draws() -> dict[str, Any]:
    return dict(
        model=st.sampled_from(tuple(MODELS)),
        tp_size=st.sampled_from(TP_SIZES),
        dtype=st.sampled_from(("bf16", "fp16")),
        enable_jit_warmup=st.booleans(),
        scheduler=st.sampled_from(SCHEDULERS),
    )


class GdnTritonEquivalence(QwenModelTypes, TritonKeyEquivalence):
    engine = GdnTritonEngine()
    legacy_release = "0.33.0"
    example = GdnTritonConfig()
    grids = {"full": _gdn_grid, "smoke": lambda: _gdn_grid()[::7]}

    def strategy(self):
        return st.builds(GdnTritonConfig, **_gdn_draws())


class FusedPostConvEquivalence(GdnTritonEquivalence):
    family = FUSED_POST_CONV.family
    spec = FUSED_POST_CONV


class SigmoidGatingEquivalence(GdnTritonEquivalence):
    family = SIGMOID_GATING.family
    spec = SIGMOID_GATING
    engine = BoundGdnTritonEngine()


class CausalConv1dEngine(BoundGdnTritonEngine):
    """The bound GDN layers, and the attention backends' block ids the step and the launcher pass (constexprs of
    the key), read from the tree."""

    real_modules = (*BoundGdnTritonEngine.real_modules, "vllm.v1.attention.backends.utils")


class CausalConv1dEquivalence(GdnTritonEquivalence):
    family = CAUSAL_CONV1D.family
    spec = CAUSAL_CONV1D
    engine = CausalConv1dEngine()


@dataclasses.dataclass(frozen=True)
class MtpConfig(GdnTritonConfig):
    """A Qwen GDN server with MTP speculative decoding: the tokens it drafts (0: none), on ROCm or not (the
    platform's answer; Triton's keys are still taken for ARCH on both sides). `num_sms`: the GPU's compute units."""

    num_spec: int = 1
    rocm: bool = True
    num_sms: int = 304


class _MtpPlatform(VllmPlatform):
    def is_rocm(self) -> bool:
        return self._state.config.rocm

    def num_compute_units(self, device_id: int = 0) -> int:
        return self._state.config.num_sms


class MtpEngine(BoundGdnTritonEngine):
    """GDN layers with the fused MTP decode on (`enable_fused_gdn_spec_decode`, which the layer sets with a
    speculative config) and the runner's speculative config, on a platform that says whether it is ROCm."""

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        stubs = super().stubs(state)
        platform = _MtpPlatform(state)
        platform.device_type = "cuda"  # vLLM's ROCm platform says so too
        stubs["vllm.platforms"] = {"current_platform": platform}
        return stubs

    def vllm_config(self, config: MtpConfig) -> types.SimpleNamespace:
        vllm_config = super().vllm_config(config)
        drafts = types.SimpleNamespace(num_speculative_tokens=config.num_spec) if config.num_spec else None
        vllm_config.speculative_config = drafts
        return vllm_config

    def layer(self, config: MtpConfig, vllm_config: Any) -> types.SimpleNamespace:
        layer = super().layer(config, vllm_config)
        shape = config.shape
        layer.vllm_config, layer.model_config = vllm_config, vllm_config.model_config
        layer.speculative_config, layer.num_spec = vllm_config.speculative_config, config.num_spec
        # What the constructor decides (`_fused_gdn_decode_unsupported_reason`, vLLM's default decode kernel): the
        # fused decode needs a speculative config, the separate (not GQA-interleaved: Qwen3-Next's) layout, K = V =
        # 128, a SiLU or sigmoid gate and BF16 (the model, so its caches here).
        layer.enable_fused_gdn_spec_decode = (
            vllm_config.speculative_config is not None
            and shape.model_type != "qwen3_next"
            and shape.head_k_dim == shape.head_v_dim == 128
            and config.activation in ("silu", "sigmoid")
            and config.dtype == "bf16"
        )
        return layer

    def worker(self, config: MtpConfig, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        worker = super().worker(config, vllm_config, registry)
        worker.model_runner.speculative_config = vllm_config.speculative_config
        return worker


def _mtp_grid() -> list[MtpConfig]:
    return [
        MtpConfig(model=model, tp_size=tp, dtype=dtype, enable_jit_warmup=jit, scheduler=scheduler, **drafts)
        for model, tp, dtype, jit, scheduler, drafts in itertools.product(
            MODELS,
            TP_SIZES[1:],
            ("bf16", "fp16"),
            (True, False),
            SCHEDULERS[:3],
            (dict(num_spec=1), dict(num_spec=3, num_sms=256), dict(num_spec=0), dict(num_spec=2, rocm=False)),
        )
    ]


class _MtpEquivalence(QwenModelTypes, TritonKeyEquivalence):
    engine = MtpEngine()
    legacy_release = "0.33.0"
    example = MtpConfig(model="qwen3.5-moe")  # Qwen3-Next's interleaved layout runs no fused decode
    grids = {"full": _mtp_grid, "smoke": lambda: _mtp_grid()[::9]}

    def strategy(self):
        return st.builds(
            MtpConfig,
            **_gdn_draws(),
            num_spec=st.sampled_from((0, 1, 2, 3, 5)),
            rocm=st.booleans(),
            num_sms=st.sampled_from((80, 256, 304)),
        )


class MtpUpdateEquivalence(_MtpEquivalence):
    family = MTP_UPDATE.family
    spec = MTP_UPDATE


class MtpNormEquivalence(_MtpEquivalence):
    family = MTP_NORM.family
    spec = MTP_NORM


# The Mamba-style layers (the engine's MambaBase subclasses) that BATCH_MEMCPY registers from, by model.
MAMBA_MODELS = {
    "mamba2": ("vllm.model_executor.layers.mamba.mamba_mixer2:MambaMixer2",),
    "qwen3-next": ("vllm.model_executor.layers.mamba.gdn.base:GatedDeltaNetAttention",),
    "lfm2": ("vllm.model_executor.layers.mamba.short_conv:ShortConv",),
    "llama": (),  # no Mamba-style layer, no Mamba KV cache: neither side warms the copy
}


@dataclasses.dataclass(frozen=True)
class MambaConfig:
    model: str = "mamba2"
    enable_jit_warmup: bool = True
    arch: str = ARCH


class _MambaSpec:
    """vLLM's MambaSpec, as the warmup's KV-cache check sees it (a class to test against)."""


class _UniformTypeKVCacheSpecs:
    def __init__(self, first_spec: Any):
        self.first_spec = first_spec


class MambaEngine:
    """A hybrid model's runner after KV-cache allocation: one KV-cache group per layer kind."""

    real_modules = ("vllm.model_executor.warmup.jit_warmup_triton_helper", "vllm.utils.math_utils")

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        platform = VllmPlatform(state)
        platform.device_type = "cuda"
        interface = {"MambaSpec": _MambaSpec, "UniformTypeKVCacheSpecs": _UniformTypeKVCacheSpecs}
        interface.update(
            {name: placeholder(f"vllm.v1.kv_cache_interface.{name}") for name in ("KVCacheConfig", "KVCacheGroupSpec")}
        )
        return {
            "vllm.platforms": {"current_platform": platform},
            "vllm.triton_utils": triton_stub(),
            "vllm.envs": {"VLLM_TRITON_JIT_WARMUP_NUM_THREADS": 1},
            "vllm.v1.kv_cache_interface": interface,
        }

    def import_facts(self, config: Any) -> None:
        return None

    def vllm_config(self, config: MambaConfig) -> types.SimpleNamespace:
        return types.SimpleNamespace(
            kernel_config=types.SimpleNamespace(enable_jit_warmup=config.enable_jit_warmup),
            model_config=types.SimpleNamespace(),
            compilation_config=types.SimpleNamespace(static_forward_context={}),
        )

    def worker(self, config: MambaConfig, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        groups = [types.SimpleNamespace(kv_cache_spec=object())]  # the attention layers' group
        groups += [
            types.SimpleNamespace(kv_cache_spec=_UniformTypeKVCacheSpecs(_MambaSpec()))
            for _ in MAMBA_MODELS[config.model]
        ]
        return vllm_worker(
            vllm_config,
            registry,
            device=torch.device("cuda", 0),
            kv_cache_config=types.SimpleNamespace(kv_cache_groups=groups),
        )

    def construct(self, config: MambaConfig, vllm_config: Any, tree: TreeWarmup) -> None:
        for index, layer in enumerate(MAMBA_MODELS[config.model]):
            tree.constructor_registrations(
                layer,
                {"self": types.SimpleNamespace(), "vllm_config": vllm_config, "prefix": f"model.layers.{index}.mixer"},
            )


class BatchMemcpyEquivalence(TritonKeyEquivalence):
    family = BATCH_MEMCPY.family
    spec = BATCH_MEMCPY
    engine = MambaEngine()
    legacy_release = "0.33.0"
    example = MambaConfig()
    grids = {
        "full": lambda: [MambaConfig(m, on) for m in MAMBA_MODELS for on in (True, False)],
        "smoke": lambda: [MambaConfig(m) for m in MAMBA_MODELS],
    }

    def strategy(self):
        return st.builds(MambaConfig, model=st.sampled_from(tuple(MAMBA_MODELS)), enable_jit_warmup=st.booleans())


# Kimi-K3 text configurations as the attention residual reads them: the hidden size (7168 is the size the
# engine's native SM100 kernel also covers), the layer count and residual block size (None: no attention
# residual; 64 leaves one block, which the warmup skips).
KIMI_SHAPES = {"kimi-k3": (7168, 61), "kimi-k3-small": (2304, 27)}
ATTN_RES_BLOCKS = (None, 6, 12, 64)


@dataclasses.dataclass(frozen=True)
class KimiConfig:
    model: str = "kimi-k3"
    attn_res_block_size: int | None = 6
    dtype: str = "bf16"
    kda_layers: bool = True  # the model builds KimiK3DeltaAttention layers (how the legacy warmup finds it)
    enable_jit_warmup: bool = True
    arch: str = ARCH


class _KimiK3DeltaAttention:
    """vLLM's KimiK3DeltaAttention, as the warmup's layer lookup sees it (a class to test against); no
    speculative tokens, so the legacy function's KDA step returns before it launches."""

    num_spec = 0


class KimiEngine:
    """A Kimi-K3 model's runner: its text config, and its KDA layers in the forward context."""

    real_modules = ("vllm.model_executor.warmup.jit_warmup_triton_helper", "vllm.utils.math_utils")
    kda_module = "vllm.models.kimi_k3.nvidia.kda"

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        platform = VllmPlatform(state)
        platform.device_type = "cuda"
        return {
            "vllm.platforms": {"current_platform": platform},
            "vllm.triton_utils": triton_stub(),
            "vllm.envs": {"VLLM_TRITON_JIT_WARMUP_NUM_THREADS": 1},
            self.kda_module: {"KimiK3DeltaAttention": _KimiK3DeltaAttention},
        }

    def import_facts(self, config: Any) -> None:
        return None

    def vllm_config(self, config: KimiConfig) -> types.SimpleNamespace:
        hidden_size, layers = KIMI_SHAPES[config.model]
        text = types.SimpleNamespace(
            hidden_size=hidden_size,
            num_hidden_layers=layers,
            rms_norm_eps=1e-6,
            attn_res_block_size=config.attn_res_block_size,
        )
        return types.SimpleNamespace(
            model_config=types.SimpleNamespace(hf_config=text, hf_text_config=text, dtype=torch_dtype(config.dtype)),
            kernel_config=types.SimpleNamespace(enable_jit_warmup=config.enable_jit_warmup),
            compilation_config=types.SimpleNamespace(static_forward_context={}),
        )

    def worker(self, config: KimiConfig, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        compilation = vllm_config.compilation_config
        if config.kda_layers:  # building the model imported the KDA module (the warmup looks in sys.modules)
            kda = importlib.import_module(self.kda_module)
            compilation.static_forward_context["model.layers.0.self_attn"] = self.kda_layer(kda, config, vllm_config)
        worker = vllm_worker(vllm_config, registry, compilation_config=compilation)
        worker.model_config = vllm_config.model_config
        return worker

    def kda_layer(self, kda: types.ModuleType, config: KimiConfig, vllm_config: Any) -> Any:
        return kda.KimiK3DeltaAttention()

    def construct(self, config: KimiConfig, vllm_config: Any, tree: TreeWarmup) -> None:
        # What the constructor set before the registration: the block count, as it computes it with one pipeline
        # rank (every layer its own).
        _, layers = KIMI_SHAPES[config.model]
        block = config.attn_res_block_size
        model = types.SimpleNamespace(num_attn_res_blocks=-(-layers // block) if block is not None else 0)
        bound = {"self": model, "vllm_config": vllm_config, "prefix": "model"}
        tree.constructor_registrations("KimiLinearModel", bound)


def _kimi_grid() -> list[KimiConfig]:
    return [
        KimiConfig(*values)
        for values in itertools.product(KIMI_SHAPES, ATTN_RES_BLOCKS, ("bf16", "fp16"), (True, False), (True, False))
    ]


class AttnResEquivalence(TritonKeyEquivalence):
    family = ATTN_RES.family
    spec = ATTN_RES
    engine = KimiEngine()
    legacy_release = "0.33.0"
    grids = {"full": _kimi_grid, "smoke": lambda: _kimi_grid()[::5]}
    example = KimiConfig(model="kimi-k3-small", attn_res_block_size=12)

    def strategy(self):
        return st.builds(
            KimiConfig,
            model=st.sampled_from(tuple(KIMI_SHAPES)),
            attn_res_block_size=st.sampled_from(ATTN_RES_BLOCKS),
            dtype=st.sampled_from(("bf16", "fp16")),
            kda_layers=st.booleans(),
            enable_jit_warmup=st.booleans(),
        )

    def intended(self, config: Any, legacy: set[str], migrated: set[str]) -> str | None:
        if not config.kda_layers and not legacy and config.enable_jit_warmup:
            return (
                "the legacy warmup found the model through a KDA layer; a model without one still launches "
                "attn_res, and the model registers it"
            )
        return super().intended(config, legacy, migrated)


@dataclasses.dataclass(frozen=True)
class KdaConfig(KimiConfig):
    """A Kimi-K3 server: the tokens it drafts per step (0: no speculative decoding) and the KDA heads on this
    rank."""

    num_spec: int = 1
    kda_heads: int = 8


KDA_HEAD_DIM = 128


class KdaEngine(KimiEngine):
    """Kimi-K3's runner whose KDA layer has what the recurrent step and the layer's registration read: its
    speculative tokens, heads, gate parameters and a bound KV cache (the recurrent state of 5 slots). The kernel
    calls FLA's `exp`, which its ops module binds to Triton's: that module runs for real."""

    real_modules = (*KimiEngine.real_modules, "vllm.third_party.flash_linear_attention.ops.op")

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        import triton.language as tl
        from triton.language.extra import libdevice

        stubs = super().stubs(state)
        stubs["vllm.triton_utils"] = {**stubs["vllm.triton_utils"], "tldevice": libdevice}
        # What the ops module reads of FLA's utils (which ask the GPU its name on import): Triton's own answer.
        stubs["vllm.third_party.flash_linear_attention.ops.utils"] = {"is_gather_supported": hasattr(tl, "gather")}
        return stubs

    def kda_layer(self, kda: types.ModuleType, config: KdaConfig, vllm_config: Any) -> Any:
        """The layer as its constructor and `bind_kv_cache` left it (the class is the tree's: its registration runs)."""
        layer = kda.KimiK3DeltaAttention.__new__(kda.KimiK3DeltaAttention)
        heads = config.kda_heads
        layer.num_spec, layer.local_num_heads, layer.head_dim = config.num_spec, heads, KDA_HEAD_DIM
        state = torch.empty(5, heads, KDA_HEAD_DIM, KDA_HEAD_DIM, device="meta")
        layer.kv_cache = [torch.empty(5, heads * KDA_HEAD_DIM, device="meta"), state]
        layer.A_log = torch.empty(heads, device="meta")
        layer.dt_bias = torch.empty(heads * KDA_HEAD_DIM, device="meta")
        layer.gate_lower_bound, layer.model_config = -5.0, vllm_config.model_config
        return layer

    def construct(self, config: KdaConfig, vllm_config: Any, tree: TreeWarmup) -> None:
        self.worker(config, vllm_config, None)
        for layer in vllm_config.compilation_config.static_forward_context.values():
            tree.constructor_registrations("KimiK3DeltaAttention", {"self": layer, "kv_cache": layer.kv_cache})


def _kda_grid() -> list[KdaConfig]:
    return [
        KdaConfig(dtype=dtype, kda_layers=layers, enable_jit_warmup=jit, num_spec=spec, kda_heads=heads)
        for dtype, layers, jit, spec, heads in itertools.product(
            ("bf16", "fp16"), (True, False), (True, False), (0, 1, 3), (2, 8, 64)
        )
    ]


class RecurrentKdaEquivalence(TritonKeyEquivalence):
    family = RECURRENT_KDA.family
    spec = RECURRENT_KDA
    engine = KdaEngine()
    legacy_release = "0.33.0"
    grids = {"full": _kda_grid, "smoke": lambda: _kda_grid()[::6]}
    example = KdaConfig(num_spec=3, kda_heads=8)

    def strategy(self):
        return st.builds(
            KdaConfig,
            dtype=st.sampled_from(("bf16", "fp16")),
            kda_layers=st.booleans(),
            enable_jit_warmup=st.booleans(),
            num_spec=st.sampled_from((0, 1, 2, 3, 7)),
            kda_heads=st.sampled_from((1, 2, 4, 8, 16, 64)),
        )
