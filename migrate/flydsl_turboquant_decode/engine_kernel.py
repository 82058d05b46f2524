"""Where the room's kernels come from: vLLM's own TurboQuant decode launcher module, never a copy of it.

`v1/attention/ops/flydsl_turboquant_decode.py` holds the launcher (`flydsl_turboquant_decode_attention`),
its kernel cache (`_KERN_CACHE`, filled by `_get_kernel`, which builds the vendored FlyDSL kernel
`flydsl_kernels/tq_decode.py` and wraps it in a `@flyc.jit` launch) and the Triton reduction it runs
next (`_reduce_partitions`). From the installed vLLM when it runs here (a gfx950 host with FlyDSL);
otherwise vLLM 0.33.0's own modules, run from its release tree (fetched from PyPI once and cached)
beside three value stubs: the logger, `vllm.triton_utils` (Triton itself) and the platform's
`on_gfx950()`, which is true because the family compiles for gfx950 whatever this host is.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import subprocess
import types
from collections.abc import Iterator
from typing import Any

from zerojit.contract.kernel import BackendConfigError

FAMILY = "flydsl-turboquant-decode"
LAUNCHER_MODULE = "vllm.v1.attention.ops.flydsl_turboquant_decode"
KERNELS_PACKAGE = "vllm.v1.attention.ops.flydsl_kernels"
KERNEL_MODULES = (
    LAUNCHER_MODULE,
    KERNELS_PACKAGE,
    f"{KERNELS_PACKAGE}.tq_decode",
    f"{KERNELS_PACKAGE}.buffer_utils",
    f"{KERNELS_PACKAGE}.mma_utils",
)
KERNEL_RELEASE = "0.33.0"  # the tree the kernels are compiled from when vLLM does not run them here


ENGINE_LOGS = logging.getLogger("zerojit.engine")  # the engine's own log lines: errors only, unless raised
ENGINE_LOGS.setLevel(logging.ERROR)


class EngineLogger(logging.LoggerAdapter):
    """vLLM's logger as its modules use it (`info_once` / `warning_once` too), under `zerojit.engine`."""

    def __init__(self, name: str):
        super().__init__(ENGINE_LOGS.getChild(name), {})

    def info_once(self, message: str, *args: Any, **kwargs: Any) -> None:
        self.info(message, *args)

    def warning_once(self, message: str, *args: Any, **kwargs: Any) -> None:
        self.warning(message, *args)


def engine_stubs() -> dict[str, dict[str, Any]]:
    """The values the launcher's modules read from the rest of vLLM (see the module docstring)."""
    import triton
    import triton.language as tl

    return {
        "vllm.logger": {"init_logger": EngineLogger},
        "vllm.triton_utils": {"triton": triton, "tl": tl, "HAS_TRITON": True},
        "vllm.platforms.rocm": {"on_gfx950": lambda: True},
    }


@functools.cache
def _tree_sources() -> Any:
    from zerojit.migrate.engine_trees.releases import vllm_tree
    from zerojit.migrate.engine_trees.sources import EngineSources

    return EngineSources(vllm_tree(KERNEL_RELEASE), "vllm", KERNEL_MODULES, engine_stubs())


@functools.cache
def launcher_module() -> types.ModuleType:
    """The engine's launcher module, with FlyDSL available to it (see the module docstring)."""
    try:
        module = importlib.import_module(LAUNCHER_MODULE)
        if module.is_flydsl_available():
            return module
    except ModuleNotFoundError:
        pass
    try:
        sources = _tree_sources()
    except (OSError, subprocess.CalledProcessError, StopIteration) as exc:
        raise BackendConfigError(
            f"{FAMILY} compiles vLLM's own kernels: install vllm, or let zerojit fetch vLLM "
            f"{KERNEL_RELEASE}'s sources from PyPI (that failed: {exc})"
        ) from None
    with sources.installed():
        module = sources.module(LAUNCHER_MODULE)
        if not module.is_flydsl_available():
            raise BackendConfigError(f"vLLM {KERNEL_RELEASE}'s TurboQuant launcher cannot load FlyDSL here")
    return module


@contextlib.contextmanager
def compile_only_launches(module: types.ModuleType) -> Iterator[None]:
    """While open, the launcher's own launches compile and never run: its FlyDSL launch is compile-only already
    (COMPILE_ONLY=1; its stream argument is FlyDSL's null stream, torch's CUDA stream needing a GPU), and its
    Triton reduction goes through the kernel's own launch path with `warmup=True`."""
    import flydsl.expr as fx
    import torch

    reduce = module._reduce_partitions

    class CompileOnly:
        def __getitem__(self, grid: Any) -> Any:
            return lambda *args, **kwargs: reduce.warmup(*args, grid=grid, **kwargs)

    saved = torch.cuda.current_stream
    module._reduce_partitions, torch.cuda.current_stream = CompileOnly(), lambda *_: fx.Stream(None)
    try:
        yield
    finally:
        module._reduce_partitions, torch.cuda.current_stream = reduce, saved
