"""The JIT warmup contract a kernel implements.

A kernel owns four things next to its runtime code:
  * its `CompileKey` type,
  * `dispatch(**inputs)`: the plain-Python map from one concrete launch to its key
    (None when the launch compiles nothing), used unchanged at runtime and at warmup,
  * `key_space(limits, **params)`: the declared dispatch inputs a server with these
    limits can produce, for the model parameters it registered with,
  * a compile-only adapter: `compile(key)` builds the variant without launching it and
    says whether it was compiled or found in the backend's cache; `variant_count()`
    counts the variants held in memory.

`register_warmup(**params)` hands the kernel to the registry that is capturing model
construction; outside a capture window the call is recorded as missed, never dropped.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar

from .keys import CompileKey
from .limits import ServingLimits
from .space import KeySpace, expand


class Outcome(str, enum.Enum):
    COMPILED = "compiled"
    CACHED = "cached"


class BackendConfigError(RuntimeError):
    """A compiler backend cannot be used as asked in this process (one line: what and why)."""


class Parallelism(str, enum.Enum):
    """How a backend's compiles may overlap: not at all, on threads, or in worker processes.

    Threads help only where the compiler releases the GIL; processes pay a start-up
    (importing torch and the DSL) that only long compiles repay.
    """

    SERIAL = "serial"
    THREADS = "threads"
    PROCESSES = "processes"


class JitKernel(ABC):
    """Base of every warmable kernel; see the module docstring for the contract."""

    name: ClassVar[str]
    family: ClassVar[str]
    backend: ClassVar[str]
    parallelism: ClassVar[Parallelism] = Parallelism.SERIAL

    @abstractmethod
    def dispatch(self, **inputs: Any) -> CompileKey | None: ...

    @abstractmethod
    def key_space(self, limits: ServingLimits, **params: Any) -> KeySpace: ...

    @abstractmethod
    def compile(self, key: CompileKey) -> Outcome: ...

    @abstractmethod
    def variant_count(self) -> int: ...

    def variant(self, key: CompileKey) -> str:
        """The backend's own identity of what compiling `key` builds; keys that share one compile once.

        Resolved without compiling (a backend reads its compile-cache key); by default every
        key is a variant of its own.
        """
        return key.digest()

    def variant_cached(self, variant: str) -> bool:
        """Whether the backend's disk cache already holds `variant` (then loading it needs no worker)."""
        return False

    def warmup_keys(self, limits: ServingLimits, **params: Any) -> list[CompileKey]:
        return expand(self.key_space(limits, **params), self.dispatch)

    def compile_many(self, keys: Iterable[CompileKey]) -> list[Outcome]:
        return [self.compile(key) for key in keys]

    def launch(self, **inputs: Any) -> CompileKey | None:
        """The runtime path, compile-only: dispatch, then compile the variant on a miss."""
        key = self.dispatch(**inputs)
        if key is not None:
            self.compile(key)
        return key

    def register_warmup(self, **params: Any) -> bool:
        """Register with the capturing registry; False (and recorded) when none is capturing."""
        from .registry import register_warmup

        return register_warmup(self, stacklevel=3, **params)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
