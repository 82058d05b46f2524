"""Where the room's kernel comes from: vLLM's own `layer_norm_fwd_kernel`, never a copy of it.

From the installed vLLM when there is one; otherwise vLLM 0.33.0's own module, run from its
release tree (fetched from PyPI once and cached) with `triton` as its only real dependency.
Kept apart from the key logic so that compiling never needs the legacy side, and the
legacy side never needs the key logic to find the kernel.
"""

from __future__ import annotations

import functools
import importlib
import subprocess
from typing import Any

from zerojit.contract.kernel import BackendConfigError

FAMILY = "fla-layer-norm"
KERNEL_MODULE = "vllm.third_party.flash_linear_attention.ops.layernorm_guard"
KERNEL_RELEASE = "0.33.0"  # the tree the kernel is compiled from when vLLM is not installed


def triton_stub() -> dict[str, Any]:
    """vLLM's `vllm.triton_utils` as the kernel's module sees it: the real Triton."""
    import triton
    import triton.language as tl

    return {"triton": triton, "tl": tl, "HAS_TRITON": True}


def kernel_from_tree() -> Any:
    """`layer_norm_fwd_kernel` defined by vLLM's own module in the release's tree (fetched once, cached)."""
    from zerojit.migrate.engine_trees.releases import vllm_tree
    from zerojit.migrate.engine_trees.sources import EngineSources

    sources = EngineSources(vllm_tree(KERNEL_RELEASE), "vllm", (KERNEL_MODULE,), {"vllm.triton_utils": triton_stub()})
    with sources.installed():
        return sources.module(KERNEL_MODULE).layer_norm_fwd_kernel


@functools.cache
def engine_kernel() -> Any:
    """The engine's JIT'd kernel: from the installed vLLM when there is one, else from vLLM 0.33.0's tree."""
    try:
        return importlib.import_module(KERNEL_MODULE).layer_norm_fwd_kernel
    except ModuleNotFoundError:
        try:
            return kernel_from_tree()
        except (OSError, subprocess.CalledProcessError, StopIteration) as exc:
            raise BackendConfigError(
                f"{FAMILY} compiles vLLM's own kernel: install vllm, or let zerojit fetch vLLM "
                f"{KERNEL_RELEASE}'s sources from PyPI (that failed: {exc})"
            ) from None
