"""zerojit's JIT warmup contract: keys, key spaces, limits, registry, executor, coverage."""

from .coverage import CoverageReport, verify_zero_jit
from .executor import execute
from .kernel import JitKernel, Outcome, Parallelism
from .keys import CompileKey
from .limits import LimitsError, ServingLimits
from .plan import WarmupPlan
from .registry import (
    MissedRegistrationWarning,
    WarmupRegistry,
    clear_missed_registrations,
    missed_registrations,
    register_warmup,
)
from .report import WarmupReport
from .space import Choice, Empty, KeySpace, Product, Range, Where, Zip, expand, next_power_of_two

__all__ = [
    "Choice",
    "CompileKey",
    "Empty",
    "CoverageReport",
    "JitKernel",
    "KeySpace",
    "LimitsError",
    "MissedRegistrationWarning",
    "Outcome",
    "Parallelism",
    "Product",
    "Range",
    "ServingLimits",
    "Where",
    "WarmupPlan",
    "WarmupRegistry",
    "WarmupReport",
    "Zip",
    "clear_missed_registrations",
    "execute",
    "expand",
    "missed_registrations",
    "next_power_of_two",
    "register_warmup",
    "verify_zero_jit",
]
