"""Serving limits: the engine configuration that bounds every warmup key space.

Values are checked when the object is made, so a plan is never expanded from a
configuration the engine itself would refuse; each refusal names the field and the rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

KNOWN_ARCHS = ("sm90", "sm100", "sm103", "sm110", "sm120", "sm121", "gfx942", "gfx950")
KNOWN_DTYPES = ("bf16", "fp16", "fp32", "fp8")
KNOWN_KV_DTYPES = (
    "auto",
    "bf16",
    "fp16",
    "fp8",
    "nvfp4",  # and vLLM's TurboQuant presets (quantized K and V)
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
)
# Serving dtype names -> torch dtype attributes: the one table every backend, family and legacy side reads.
TORCH_DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp8": "float8_e4m3fn"}


def torch_dtype(name: str) -> Any:
    """The torch dtype of a serving dtype name ("bf16" -> torch.bfloat16)."""
    import torch

    return getattr(torch, TORCH_DTYPE_NAMES[name])


def serving_dtype(dtype: Any) -> str:
    """The serving dtype name of a torch dtype (torch.bfloat16 -> "bf16"); KeyError for one without a name."""
    import torch

    for name, attribute in TORCH_DTYPE_NAMES.items():
        if dtype == getattr(torch, attribute):
            return name
    raise KeyError(dtype)


def device_capability(arch: str) -> tuple[int, int]:
    """What the device reports as (major, minor): sm90 -> (9, 0), sm103 -> (10, 3), gfx950 -> (9, 5)."""
    if arch not in KNOWN_ARCHS:
        raise ValueError(f"unknown arch {arch!r}; known: {', '.join(KNOWN_ARCHS)}")
    digits = arch.removeprefix("sm").removeprefix("gfx")
    return (int(digits[:-1]) if arch.startswith("sm") else int(digits[0])), int(digits[-1])


class LimitsError(ValueError):
    """A serving limit breaks a rule; `field` and `rule` say which."""

    def __init__(self, field: str, value: Any, rule: str):
        self.field, self.value, self.rule = field, value, rule
        super().__init__(f"serving limit {field}={value!r} refused: {rule}")


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise LimitsError(name, value, "must be an integer")
    if value <= 0:
        raise LimitsError(name, value, "must be at least 1")


@dataclasses.dataclass(frozen=True)
class ServingLimits:
    """What one server may be asked to run; warmup must cover every step inside it.

    spec_query_lens are the query lengths of speculative decode steps
    (1 + number of draft tokens), empty when speculative decoding is off.
    """

    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    spec_query_lens: tuple[int, ...] = ()
    tp_size: int = 1
    dtype: str = "bf16"
    kv_cache_dtype: str = "auto"
    arch: str = "sm90"
    enable_chunked_prefill: bool = True
    enable_jit_warmup: bool = True

    def __post_init__(self) -> None:
        for name in ("max_num_seqs", "max_num_batched_tokens", "max_model_len", "tp_size"):
            _positive_int(name, getattr(self, name))
        spec = self.spec_query_lens
        if isinstance(spec, list):
            object.__setattr__(self, "spec_query_lens", spec := tuple(spec))
        if not isinstance(spec, tuple):
            raise LimitsError("spec_query_lens", spec, "must be a tuple of query lengths")
        for length in spec:
            _positive_int("spec_query_lens", length)
            if length < 2:
                raise LimitsError("spec_query_lens", spec, "a speculative step carries at least 2 query tokens")
        if list(spec) != sorted(set(spec)):
            raise LimitsError("spec_query_lens", spec, "must be strictly increasing (no repeats)")
        if self.dtype not in KNOWN_DTYPES:
            raise LimitsError("dtype", self.dtype, f"must be one of {', '.join(KNOWN_DTYPES)}")
        if self.kv_cache_dtype not in KNOWN_KV_DTYPES:
            raise LimitsError("kv_cache_dtype", self.kv_cache_dtype, f"must be one of {', '.join(KNOWN_KV_DTYPES)}")
        if self.arch not in KNOWN_ARCHS:
            raise LimitsError("arch", self.arch, f"unknown arch; known: {', '.join(KNOWN_ARCHS)}")
        if self.max_num_batched_tokens < self.max_num_seqs * self.max_query_len:
            raise LimitsError(
                "max_num_batched_tokens",
                self.max_num_batched_tokens,
                f"a decode step of max_num_seqs={self.max_num_seqs} sequences x {self.max_query_len} "
                f"query tokens needs {self.max_num_seqs * self.max_query_len} tokens per step",
            )
        if self.max_model_len < self.max_query_len:
            raise LimitsError(
                "max_model_len",
                self.max_model_len,
                f"smaller than one step of a sequence ({self.max_query_len} tokens)",
            )
        if not self.enable_chunked_prefill and self.max_model_len > self.max_num_batched_tokens:
            raise LimitsError(
                "max_model_len",
                self.max_model_len,
                f"without chunked prefill a whole prompt is one step, so it must not exceed "
                f"max_num_batched_tokens={self.max_num_batched_tokens}",
            )

    @property
    def max_query_len(self) -> int:
        """Most query tokens one decoding sequence carries in a step."""
        return max((1, *self.spec_query_lens))

    @property
    def decode_query_lens(self) -> tuple[int, ...]:
        """Query lengths a decode step can have: plain decode plus each speculative length."""
        return (1, *self.spec_query_lens)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ServingLimits:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise LimitsError(unknown[0], data[unknown[0]], f"unknown serving limit; known: {', '.join(sorted(names))}")
        for field in dataclasses.fields(cls):
            if field.name not in data and field.default is dataclasses.MISSING:
                raise LimitsError(field.name, None, "is required")
        return cls(**data)

    def replace(self, **changes: Any) -> ServingLimits:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
