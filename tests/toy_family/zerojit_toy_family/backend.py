"""The toy family's compiler backend: Python's own compiler, marshalled code objects as its disk cache.

It implements `zerojit.contract.backends.Backend` as a module, as the built-in backends do, which
is all a family that brings its own DSL has to provide.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from zerojit.contract import Outcome, Parallelism

NAME = "python"
DSL_MODULE = "zerojit_toy_family"
LOADS = (".marshal",)  # its compiled code objects
PARALLELISM = Parallelism.THREADS  # the toy's compiles are short; threads are enough to exercise overlap
settings: dict[str, Path | None] = {"cache_dir": None}  # where kernels without a cache of their own compile to


def configure(arch: str, cache_dir: Path | None = None) -> Path | None:
    """Point every toy kernel without a cache of its own at `cache_dir` (Python compiles for any arch)."""
    settings["cache_dir"] = cache_dir
    return cache_dir


def fingerprint() -> dict[str, str]:
    """Nothing to pin: the toy's caches live and die with the tests' own interpreter."""
    return {}


def install_compile_hook() -> None:
    """Nothing to hook: the toy's compiles are its own code, which counts them."""


def compiled_during(handle: Callable[..., Outcome], *args: Any, **kwargs: Any) -> Outcome:
    """Run one compile (`handle` is the kernel's compile step), which says itself whether it compiled."""
    return handle(*args, **kwargs)


def variant_count(handle: Any) -> int:
    return len(handle.variants)
