"""JIT monitors: after warmup, any compile in Triton, CuTe DSL or FlyDSL is reported.

Hooks sit on each DSL's compile entry point, never on a launch, so a server that compiles
nothing pays nothing; each backend installs its own (`contract.backends.*.install_compile_hook`:
FlyDSL's MLIR compile, `cutlass.cute.compile`, Triton's `jit_cache_hook` plus `triton.compile`)
and calls `report_compile` here.
A monitor is off until armed (after warmup); armed in "warn" mode it records the compile
and warns, in "error" mode it raises before the compile runs, naming backend, kernel and
specialization.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import warnings
from collections.abc import Iterator
from typing import Any

MODES = ("warn", "error")
_armed: list[JitMonitor] = []
_lock = threading.Lock()


class JitAfterWarmupError(RuntimeError):
    """A kernel compiled after warmup while an error-mode monitor was armed."""


class JitAfterWarmupWarning(RuntimeWarning):
    """A kernel compiled after warmup while a warn-mode monitor was armed."""


@dataclasses.dataclass(frozen=True)
class PostWarmupCompile:
    backend: str
    kernel: str
    specialization: str

    def __str__(self) -> str:
        return f"{self.backend} compiled {self.kernel} after warmup [{self.specialization}]"


class JitMonitor:
    """Collects post-warmup compiles while armed."""

    def __init__(self, mode: str = "warn"):
        if mode not in MODES:
            raise ValueError(f"monitor mode {mode!r}: must be one of {', '.join(MODES)}")
        self.mode = mode
        self.events: list[PostWarmupCompile] = []

    def arm(self) -> None:
        with _lock:
            if self not in _armed:
                _armed.append(self)

    def disarm(self) -> None:
        with _lock:
            if self in _armed:
                _armed.remove(self)

    @contextlib.contextmanager
    def armed(self) -> Iterator[JitMonitor]:
        self.arm()
        try:
            yield self
        finally:
            self.disarm()

    def _observe(self, event: PostWarmupCompile) -> None:
        self.events.append(event)
        if self.mode == "error":
            raise JitAfterWarmupError(str(event))
        warnings.warn(str(event), JitAfterWarmupWarning, stacklevel=4)


def report_compile(backend: str, kernel: str, specialization: str) -> None:
    """Called by the compile hooks; a no-op unless a monitor is armed."""
    if not _armed:
        return
    event = PostWarmupCompile(backend, kernel, specialization)
    with _lock:
        monitors = list(_armed)
    for monitor in monitors:
        monitor._observe(event)


def describe(obj: Any, limit: int = 12) -> str:
    """A short specialization string: an object's scalar attributes (what its compile depends on)."""
    attributes = getattr(obj, "__dict__", {})
    fields = {k: v for k, v in attributes.items() if isinstance(v, (bool, int, float, str)) and not k.startswith("_")}
    return ", ".join(f"{k}={v!r}" for k, v in sorted(fields.items())[:limit]) or type(obj).__name__
