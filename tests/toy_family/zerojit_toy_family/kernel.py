"""A toy kernel for the contract's tests: its compile is real Python code generation.

`compile(key)` writes the source of a polynomial evaluator unrolled to the key's degree
(Horner form, one statement per coefficient) and compiles it with Python's compiler;
the code object is the "variant". A disk cache stores the marshalled code objects, so a
second process finds them cached. Degrees above MAX_DEGREE refuse to compile, which is
how the tests provoke a failing key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
import os
from pathlib import Path
from typing import Any

from zerojit.contract import Choice, CompileKey, JitKernel, Outcome, Parallelism, Range, ServingLimits
from zerojit.contract.cache import record_artifact

from . import backend as toy_backend

MAX_DEGREE = 64


@dataclasses.dataclass(frozen=True)
class PolyKey(CompileKey):
    degree: int
    dtype: str


class PolyKernel(JitKernel):
    name = "toy_poly"
    family = "toy"
    backend = toy_backend.NAME
    parallelism = toy_backend.PARALLELISM

    def __init__(self, cache_dir: Path | None = None, degree_cap: int | None = None):
        self.cache_dir = cache_dir
        self.degree_cap = degree_cap  # a model-side cap the tests can set to provoke failures
        self.variants: dict[PolyKey, Any] = {}

    def dispatch(self, *, num_terms: int, dtype: str) -> PolyKey | None:
        if num_terms == 0:
            return None
        degree = 1 << (num_terms - 1).bit_length()  # bucket the term count up to a power of two
        return PolyKey(degree=degree, dtype="fp32" if dtype == "fp32" else "bf16")

    def key_space(self, limits: ServingLimits, *, max_terms: int, dtypes: tuple[str, ...] = ("bf16",)):
        return Range.powers_of_two("num_terms", 1, max_terms) * Choice("dtype", dtypes)

    def _source(self, key: PolyKey) -> str:
        if key.degree > MAX_DEGREE:
            raise ValueError(f"degree {key.degree} exceeds MAX_DEGREE={MAX_DEGREE}")
        lines = [f"def poly_{key.degree}_{key.dtype}(x, c):", "    acc = c[0]"]
        lines += [f"    acc = acc * x + c[{i}]" for i in range(1, key.degree + 1)]
        lines.append("    return acc")
        return "\n".join(lines)

    def variant(self, key: PolyKey) -> str:
        """The toy backend's own identity of a variant: its generated code (which refuses bad degrees too)."""
        return hashlib.sha256(self._source(key).encode()).hexdigest()

    def compile(self, key: PolyKey) -> Outcome:
        return toy_backend.compiled_during(self._compile, key)

    def _compile(self, key: PolyKey) -> Outcome:
        if key in self.variants:
            return Outcome.CACHED
        cache_dir = self.cache_dir or toy_backend.settings["cache_dir"]
        path = Path(cache_dir) / f"{key.digest()}.marshal" if cache_dir else None
        if path is not None and path.exists():
            record_artifact(path)
            self.variants[key] = marshal.loads(path.read_bytes())
            return Outcome.CACHED
        code = compile(self._source(key), f"<poly {key}>", "exec")
        if path is not None:
            path.write_bytes(marshal.dumps(code))
            record_artifact(path)
        self.variants[key] = code
        return Outcome.COMPILED

    def evaluate(self, key: PolyKey, x: float, coeffs: list[float]) -> float:
        namespace: dict[str, Any] = {}
        exec(self.variants[key], namespace)
        return namespace[f"poly_{key.degree}_{key.dtype}"](x, coeffs)

    def variant_count(self) -> int:
        return toy_backend.variant_count(self)


class ProcessPolyKernel(PolyKernel):
    """The toy kernel declared for worker processes (they compile into its disk cache)."""

    parallelism = Parallelism.PROCESSES


class SharedVariantPolyKernel(ProcessPolyKernel):
    """A toy backend whose variant is the degree alone: both dtypes of one degree are one variant."""

    name = "toy_poly_shared"

    def variant(self, key: PolyKey) -> str:
        return f"degree {key.degree}"


_set_up_in: int | None = None  # the process that first ran configure_recorded (a forked worker inherits it)


def configure_recorded(log: str) -> None:
    """Worker set-up that appends `<pid> <pid that first ran it>` to `log`: a worker forked from a server that
    ran it already inherits the server's pid; a spawned worker, or the server itself, writes its own."""
    global _set_up_in
    if _set_up_in is None:
        _set_up_in = os.getpid()
    with open(log, "a") as out:
        out.write(f"{os.getpid()} {_set_up_in}\n")


def configure_worker() -> None:
    """Worker-process set-up for the toy backend (it needs none; the executor requires one)."""
