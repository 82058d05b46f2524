"""The warmup registry consumed at engine init.

Model construction runs inside `registry.capture()`; every kernel that the model selects
calls `register_warmup(...)` there. After construction the registry expands each
registration into compile keys (`plan()`), and the executor compiles them.

A registration made while no registry is capturing is not dropped silently: it is kept
in a process-wide ledger, warned about, and listed by the next plan.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from .limits import ServingLimits
from .plan import MissedRegistration, PlannedKernel, WarmupPlan

if TYPE_CHECKING:
    from .kernel import JitKernel

_ACTIVE: contextvars.ContextVar[WarmupRegistry | None] = contextvars.ContextVar("zerojit_registry", default=None)
_MISSED: list[MissedRegistration] = []
_MISSED_LOCK = threading.Lock()
F = TypeVar("F", bound=Callable[..., Any])


class MissedRegistrationWarning(RuntimeWarning):
    """register_warmup() ran while no registry was capturing model construction."""


@dataclasses.dataclass(frozen=True)
class Registration:
    kernel: JitKernel
    params: dict[str, Any]
    site: str

    def same_as(self, other: Registration) -> bool:
        """Identity-or-equality: the same kernel (object or equal value) with equal params."""
        same_kernel = self.kernel is other.kernel or self.kernel == other.kernel
        return same_kernel and self.params == other.params


def _call_site(stacklevel: int) -> str:
    frame = sys._getframe(stacklevel)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def register_warmup(kernel: JitKernel, *, stacklevel: int = 2, **params: Any) -> bool:
    """Hand `kernel` to the capturing registry; record a miss when there is none."""
    site = _call_site(stacklevel)
    registry = _ACTIVE.get()
    if registry is not None:
        registry.add(Registration(kernel, params, site))
        return True
    with _MISSED_LOCK:
        _MISSED.append(MissedRegistration(kernel=kernel.name, family=kernel.family, site=site))
    warnings.warn(
        f"{kernel.name}.register_warmup() at {site} ran outside any capture window; "
        "its variants will compile inside requests",
        MissedRegistrationWarning,
        stacklevel=stacklevel,
    )
    return False


def missed_registrations() -> list[MissedRegistration]:
    with _MISSED_LOCK:
        return list(_MISSED)


def clear_missed_registrations() -> None:
    with _MISSED_LOCK:
        _MISSED.clear()


class WarmupRegistry:
    """Collects registrations during model construction and plans their warmup."""

    def __init__(self, limits: ServingLimits):
        self.limits = limits
        self.registrations: list[Registration] = []
        self.duplicates = 0

    def add(self, registration: Registration) -> None:
        if any(registration.same_as(existing) for existing in self.registrations):
            self.duplicates += 1
            return
        self.registrations.append(registration)

    @contextlib.contextmanager
    def capture(self) -> Iterator[WarmupRegistry]:
        """The model-construction window: registrations inside it land here."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def captures(self, fn: F) -> F:
        """Decorator form of `capture()` for a model-construction function."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.capture():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def plan(self) -> WarmupPlan:
        """Expand every registration into its keys; a kernel may be registered with several params."""
        planned = [
            PlannedKernel(
                kernel=reg.kernel,
                params=reg.params,
                site=reg.site,
                keys=tuple(reg.kernel.warmup_keys(self.limits, **reg.params)),
            )
            for reg in self.registrations
        ]
        planned.sort(key=lambda p: (p.kernel.family, p.kernel.name))
        return WarmupPlan(
            limits=self.limits,
            kernels=planned,
            missed=missed_registrations(),
            duplicate_registrations=self.duplicates,
        )
