"""Hand zerojit kernels to vLLM's own JIT warmup registry, and turn the monitors on inside vLLM.

vLLM's `JitWarmupRegistry` (vllm/model_executor/warmup/jit_warmup.py) collects
`register(kernel, *args, **kwargs)` calls made while the model runner is built, then at
engine init calls `kernel.get_warmup_keys(*args, **kwargs)` and `kernel.compile_many(keys)`
for each kernel (which must be hashable). `VllmKernel` gives a zerojit kernel exactly
those methods, with serving limits read from the vLLM config.

`register_plugin` is the `vllm.general_plugins` entry point: vLLM calls it in every
process at start-up; it wraps `JitWarmupRegistry.warmup` so that, once warmup returns,
the compilers of the DSLs the process loaded are hooked and a monitor is armed (mode
from ZEROJIT_MONITOR: "warn", the default, or "error"; "off" disables it).
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Iterable
from typing import Any

from .kernel import JitKernel
from .keys import CompileKey
from .limits import ServingLimits
from .monitor import MODES, JitMonitor


def limits_from_vllm_config(vllm_config: Any, arch: str, kv_cache_dtype: str = "auto") -> ServingLimits:
    """ServingLimits from a VllmConfig (scheduler, model, parallel and speculative configs)."""
    scheduler, model = vllm_config.scheduler_config, vllm_config.model_config
    speculative = getattr(vllm_config, "speculative_config", None)
    draft = getattr(speculative, "num_speculative_tokens", 0) or 0
    kernel_config = getattr(vllm_config, "kernel_config", None)
    return ServingLimits(
        max_num_seqs=scheduler.max_num_seqs,
        max_num_batched_tokens=scheduler.max_num_batched_tokens,
        max_model_len=model.max_model_len,
        spec_query_lens=(draft + 1,) if draft else (),
        tp_size=getattr(vllm_config.parallel_config, "tensor_parallel_size", 1),
        arch=arch,
        kv_cache_dtype=kv_cache_dtype,
        enable_jit_warmup=getattr(kernel_config, "enable_jit_warmup", True),
    )


class VllmKernel:
    """A zerojit kernel as vLLM's registry sees one: hashable, get_warmup_keys, compile_many."""

    def __init__(self, kernel: JitKernel, limits: ServingLimits):
        self.kernel, self.limits = kernel, limits

    def __hash__(self) -> int:
        return hash((type(self.kernel), self.kernel.name, self.limits))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VllmKernel) and (other.kernel, other.limits) == (self.kernel, self.limits)

    def get_warmup_keys(self, *args: Any, **params: Any) -> list[CompileKey]:
        if args:
            raise TypeError(f"{self.kernel.name}: register with keyword parameters only, got {args!r}")
        return self.kernel.warmup_keys(self.limits, **params)

    def compile_many(self, keys: Iterable[CompileKey]) -> None:
        self.kernel.compile_many(keys)

    def register_warmup(self, **params: Any) -> None:
        """Register with vLLM's active registry (vLLM ignores a registration made outside one)."""
        from vllm.model_executor.warmup.jit_warmup import JitWarmupRegistry

        JitWarmupRegistry.register(self, **params)


def install_hooks_for_loaded_dsls() -> list[str]:
    """Hook the compilers of the DSLs this process has loaded (loading another could abort it:
    FlyDSL and CuTe DSL cannot share a process). Returns the DSLs hooked."""
    from . import backends

    hooked = []
    for backend in backends.loaded():
        backend.install_compile_hook()
        hooked.append(backend.DSL_MODULE)
    return hooked


def arm_after_warmup(registry_class: Any, mode: str) -> JitMonitor:
    """Wrap `registry_class.warmup` so a monitor in `mode` is armed when it returns; returns the monitor."""
    if mode not in MODES:
        raise ValueError(f"ZEROJIT_MONITOR={mode!r}: must be one of {', '.join(MODES)} or off")
    monitor = JitMonitor(mode)
    original = registry_class.warmup

    @functools.wraps(original)
    def warmup_then_arm(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        install_hooks_for_loaded_dsls()  # warmup imported every DSL the model uses
        monitor.arm()  # stays armed for the life of the serving process
        return result

    registry_class.warmup = warmup_then_arm
    return monitor


def register_plugin() -> JitMonitor | None:
    """vLLM general plugin: hook the installed DSL compilers and arm a monitor after JIT warmup.

    It runs inside vLLM's start-up, so it never raises, whatever the warnings filter: a bad
    ZEROJIT_MONITOR or a vLLM without the JIT warmup registry leaves the monitor off with a
    warning (on stderr when warnings are errors). It also points Triton at zerojit's
    relocatable cache files, so the process can load a Triton bake from wherever it was copied.
    """
    try:
        from .backends import triton

        for name, value in triton.SERVING_ENV.items():
            os.environ.setdefault(name, value)
        mode = os.environ.get("ZEROJIT_MONITOR", "warn")
        if mode == "off":
            return None
        if mode not in MODES:
            _tell(
                f"zerojit: ZEROJIT_MONITOR={mode!r} is not one of {', '.join(MODES)} or off; the JIT monitor stays off"
            )
            return None
        from vllm.model_executor.warmup.jit_warmup import JitWarmupRegistry

        return arm_after_warmup(JitWarmupRegistry, mode)
    except Exception as exc:  # noqa: BLE001 - a plugin must never stop vLLM from starting
        _tell(f"zerojit: the JIT monitor stays off ({type(exc).__name__}: {exc})")
        return None


def _tell(message: str) -> None:
    """A warning that cannot raise: where the filter makes warnings errors (`-W error`), it goes to stderr."""
    try:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    except Exception:  # noqa: BLE001 - the filter turned the warning into an exception
        print(f"warning: {message}", file=sys.stderr)
