"""vLLM 0.29.0's own pre-migration key logic, loaded from its wheel sources as an oracle.

Real vLLM code: `model_executor/warmup/jit_warmup.py` (the AST-traced dispatch expansion),
`v1/attention/backends/fa_utils.py` (`get_flash_attn_version`), `.../mla/prefill/base.py`,
`.../mla/prefill/flash_attn.py` (`FA4MLAPrefillKernel.get_warmup_keys`) and
`models/inkling/nvidia/ops/fa4_rel_attention.py` (`InklingFA4RelAttentionKernel`).

Stubbed, and only these (names the modules import or call while expanding keys):
  vllm.envs.VLLM_BATCH_INVARIANT; vllm.logger.init_logger (a silent logger);
  vllm.platforms.current_platform (CUDA, with the device capability under test);
  vllm.utils.torch_utils (is_quantized_kv_cache, kv_cache_dtype_str_to_dtype), and for 0.33.0
  vllm.v1.kv_cache_interface.is_quantized_kv_cache;
  vllm._custom_ops and vllm.vllm_flash_attn (names only; every FA version "supported");
  vllm.config.get_current_vllm_config_or_none (the config under test);
  quant_utils.kFp8StaticTensorSym (a placeholder); mla_attention.get_mla_dims (the dims under test);
  vllm.distributed.get_tensor_model_parallel_world_size (the TP size under test).
torch is the real (CPU) torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
from collections import namedtuple
from pathlib import Path
from typing import Any

import torch

from zerojit.codemods.engine_trees import vllm_tree

Capability = namedtuple("Capability", "major minor")
REAL_MODULES = (
    "vllm.model_executor.warmup.jit_warmup",
    "vllm.v1.attention.backends.fa_utils",
    "vllm.v1.attention.backends.mla.prefill.base",
    "vllm.v1.attention.backends.mla.prefill.flash_attn",
    "vllm.models.inkling.nvidia.ops.fa4_rel_attention",
)


class _Platform:
    capability = Capability(9, 0)

    def get_device_capability(self):
        return self.capability

    def is_device_capability(self, value: int) -> bool:
        return self.capability.major * 10 + self.capability.minor == value

    def is_device_capability_family(self, value: int) -> bool:
        return self.capability.major == value // 10

    def has_device_capability(self, value: int) -> bool:
        return self.capability.major * 10 + self.capability.minor >= value

    def is_cuda(self) -> bool:
        return True

    def is_xpu(self) -> bool:
        return False

    def is_rocm(self) -> bool:
        return False


def _singleton(module: types.ModuleType, name: str) -> Any:
    """The kernel singleton, public before the 0.30.0 migration and private after it."""
    return getattr(module, name, None) or getattr(module, f"_{name}")


class _Logger:
    def __getattr__(self, name: str):
        return lambda *args, **kwargs: None


def stub_module(name: str, **attrs: Any) -> types.ModuleType:
    stub = types.ModuleType(name)
    stub.__dict__.update(attrs)
    stub.__path__ = []  # importable as a package too
    return stub


class VllmSources:
    """Some of a vLLM release's real modules, loaded from its wheel sources beside named stubs.

    The stubs and modules are in sys.modules only inside `installed()` (vLLM imports some
    names lazily, at call time), so nothing leaks into other tests.
    """

    def __init__(self, version: str, real_modules: tuple[str, ...], stubs: dict[str, dict[str, Any]]):
        self.root = vllm_tree(version)
        self.stubs = {name: stub_module(name, **attrs) for name, attrs in stubs.items()}
        self.modules: dict[str, types.ModuleType] = {}
        with self.installed():
            for name in real_modules:
                self.modules[name] = self._load(name)

    @contextlib.contextmanager
    def installed(self):
        def ours(name: str) -> bool:
            return name == "vllm" or name.startswith("vllm.") or name in self.stubs

        saved = {name: module for name, module in sys.modules.items() if ours(name)}
        sys.modules.update(self.stubs)
        sys.modules.update(self.modules)
        try:
            yield
        finally:
            for name in [n for n in sys.modules if ours(n)]:
                del sys.modules[name]
            sys.modules.update(saved)

    def _load(self, name: str) -> types.ModuleType:
        path = self.root / Path(*name.split(".")).with_suffix(".py")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module


class Oracle(VllmSources):
    """The vLLM 0.29.0 key-logic modules above, with their stubs."""

    def __init__(self, version: str = "0.29.0"):
        self.platform = _Platform()
        self.envs = types.SimpleNamespace(VLLM_BATCH_INVARIANT=False)
        self.state: dict[str, Any] = {"config": None, "mla_dims": None, "tp": 1}
        super().__init__(version, REAL_MODULES, self._stub_attrs())

    def _stub_attrs(self) -> dict[str, dict[str, Any]]:
        state = self.state
        return {
            "vllm": {}, "vllm.envs": vars(self.envs), "vllm.logger": {"init_logger": lambda name: _Logger()},
            "vllm.platforms": {"current_platform": self.platform},
            "vllm.utils": {}, "vllm.utils.torch_utils": {
                "is_quantized_kv_cache": lambda dtype: dtype not in ("auto", "bfloat16", "float16"),
                "kv_cache_dtype_str_to_dtype": lambda dtype, model_config: model_config.dtype},
            "vllm._custom_ops": {"reshape_and_cache_flash": None},
            "vllm.v1.kv_cache_interface": {  # where 0.33.0 keeps it
                "is_quantized_kv_cache": lambda dtype: dtype not in ("auto", "bfloat16", "float16")},
            "vllm.vllm_flash_attn": {"compile_flash_attn_varlen_func_from_specs": None,
                                     "flash_attn_varlen_func": None, "get_scheduler_metadata": None},
            "vllm.vllm_flash_attn.flash_attn_interface": {"is_fa_version_supported": lambda v: v in (2, 3, 4),
                                                          "fa_version_unsupported_reason": lambda v: None},
            "vllm.config": {"get_current_vllm_config_or_none": lambda: state["config"]},
            "vllm.model_executor": {}, "vllm.model_executor.warmup": {}, "vllm.model_executor.layers": {},
            "vllm.model_executor.layers.quantization": {}, "vllm.model_executor.layers.quantization.utils": {},
            "vllm.model_executor.layers.quantization.utils.quant_utils": {"kFp8StaticTensorSym": object()},
            "vllm.model_executor.layers.attention": {},
            "vllm.model_executor.layers.attention.mla_attention": {"get_mla_dims": lambda mc: state["mla_dims"]},
            "vllm.distributed": {"get_tensor_model_parallel_world_size": lambda: state["tp"]},
            "vllm.v1": {}, "vllm.v1.attention": {}, "vllm.v1.attention.backends": {},
            "vllm.v1.attention.backends.mla": {}, "vllm.v1.attention.backends.mla.prefill": {},
            "vllm.models": {}, "vllm.models.inkling": {}, "vllm.models.inkling.nvidia": {},
            "vllm.models.inkling.nvidia.ops": {},
        }

    def fa4_mla_keys(self, *, capability: tuple[int, int], qk_nope: int, qk_rope: int, v_head_dim: int,
                     heads_per_rank: int, dtype: torch.dtype, forced_fa_version: int | None,
                     batch_invariant: bool = False) -> list:
        flash_attn = self.modules["vllm.v1.attention.backends.mla.prefill.flash_attn"]
        config = types.SimpleNamespace(
            model_config=types.SimpleNamespace(dtype=dtype, is_diffusion=False, hf_text_config=None,
                                               get_num_attention_heads=lambda parallel: heads_per_rank),
            attention_config=types.SimpleNamespace(flash_attn_version=forced_fa_version),
            parallel_config=None, cache_config=None)
        self.platform.capability = Capability(*capability)
        self.envs.VLLM_BATCH_INVARIANT = batch_invariant
        self.state.update(config=config, mla_dims=types.SimpleNamespace(
            qk_nope_head_dim=qk_nope, qk_rope_head_dim=qk_rope, v_head_dim=v_head_dim))
        with self.installed():
            flash_attn.envs.VLLM_BATCH_INVARIANT = batch_invariant
            return _singleton(flash_attn, "FA4_MLA_PREFILL_KERNEL").get_warmup_keys(config)

    def inkling_keys(self, *, capability: tuple[int, int], tp: int, hf_config: Any, dtype: torch.dtype,
                     block_size: int, max_num_seqs: int, max_num_batched_tokens: int, max_model_len: int) -> list:
        ops = self.modules["vllm.models.inkling.nvidia.ops.fa4_rel_attention"]
        config = types.SimpleNamespace(
            scheduler_config=types.SimpleNamespace(max_num_seqs=max_num_seqs,
                                                   max_num_batched_tokens=max_num_batched_tokens),
            model_config=types.SimpleNamespace(hf_config=hf_config, dtype=dtype, max_model_len=max_model_len),
            cache_config=types.SimpleNamespace(cache_dtype="auto", block_size=block_size))
        self.platform.capability = Capability(*capability)
        ops._use_sheared_bias.cache_clear()
        self.state.update(config=config, tp=tp)
        with self.installed():
            return _singleton(ops, "INKLING_FA4_REL_ATTENTION_KERNEL").get_warmup_keys(config)
