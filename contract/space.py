"""Declared warmup key spaces: named axes combined lazily, expanded through `dispatch`.

A space yields *points*: dicts of dispatch inputs. Expansion calls the kernel's own
`dispatch(**point)` as ordinary Python on each point and keeps the distinct keys in
first-seen order, so the warmup compiles exactly what the runtime would ask for.

    space = (Choice("causal", (False, True))
             * Range.powers_of_two("seqlen", 1, limits.max_model_len)).where(
                 lambda p: p["seqlen"] > 1 or not p["causal"])
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from .keys import CompileKey

Point = dict[str, Any]


class KeySpace(ABC):
    """A lazily enumerated set of dispatch-input points over named axes."""

    @property
    @abstractmethod
    def axes(self) -> tuple[str, ...]: ...

    @abstractmethod
    def points(self) -> Iterator[Point]: ...

    def __mul__(self, other: KeySpace) -> Product:
        return Product(self, other)

    def where(self, predicate: Callable[[Point], bool]) -> Where:
        return Where(self, predicate)

    def __iter__(self) -> Iterator[Point]:
        return self.points()


def next_power_of_two(value: int) -> int:
    """The smallest power of two at or above `value` (1 for anything below 2): how kernels bucket sizes."""
    return 1 << max(0, value - 1).bit_length()


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"axis name {name!r} must be a Python identifier (it becomes a dispatch keyword)")
    return name


class Choice(KeySpace):
    """One axis over explicit values, in the order given."""

    def __init__(self, name: str, values: Iterable[Any]):
        self.name = _check_name(name)
        self.values = tuple(values)
        if not self.values:
            raise ValueError(f"Choice {name!r} has no values")

    @property
    def axes(self) -> tuple[str, ...]:
        return (self.name,)

    def points(self) -> Iterator[Point]:
        return ({self.name: v} for v in self.values)


class Empty(KeySpace):
    """No points: what a kernel declares for a configuration it never runs in."""

    def __init__(self, axes: tuple[str, ...] = ()):
        self._axes = axes

    @property
    def axes(self) -> tuple[str, ...]:
        return self._axes

    def points(self) -> Iterator[Point]:
        return iter(())


class Range(KeySpace):
    """One integer axis from `start` to `stop` inclusive, advanced by `step`.

    `step` is an int (arithmetic progression) or a function value -> next value
    (custom progressions such as powers of two). `stop` itself is always visited, so a
    progression never skips the limit it is bounded by.
    """

    def __init__(self, name: str, start: int, stop: int, step: int | Callable[[int], int] = 1):
        self.name = _check_name(name)
        if stop < start:
            raise ValueError(f"Range {name!r}: stop {stop} is below start {start}")
        if isinstance(step, int) and step <= 0:
            raise ValueError(f"Range {name!r}: step must be positive, got {step}")
        self.start, self.stop, self.step = start, stop, step

    @classmethod
    def powers_of_two(cls, name: str, start: int, stop: int) -> Range:
        """start, then each next power of two above the previous value, then stop."""
        return cls(name, start, stop, step=lambda v: 1 << v.bit_length())

    @property
    def axes(self) -> tuple[str, ...]:
        return (self.name,)

    def _advance(self, value: int) -> int:
        if isinstance(self.step, int):
            return value + self.step
        nxt = self.step(value)
        if nxt <= value:
            raise ValueError(f"Range {self.name!r}: progression went from {value} to {nxt}; it must increase")
        return nxt

    def points(self) -> Iterator[Point]:
        value = self.start
        while value < self.stop:
            yield {self.name: value}
            value = self._advance(value)
        yield {self.name: self.stop}


class Zip(KeySpace):
    """Rows of several axes that move in lockstep (each row is one point)."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]):
        if not rows:
            raise ValueError("Zip has no rows")
        names = tuple(rows[0])
        for name in names:
            _check_name(name)
        for index, row in enumerate(rows):
            if tuple(row) != names:
                raise ValueError(f"Zip row {index} has axes {tuple(row)}, expected {names}")
        self.rows = tuple(dict(row) for row in rows)
        self._axes = names

    @property
    def axes(self) -> tuple[str, ...]:
        return self._axes

    def points(self) -> Iterator[Point]:
        return (dict(row) for row in self.rows)


class Product(KeySpace):
    """Cartesian product of spaces with disjoint axes; the last factor varies fastest."""

    def __init__(self, *factors: KeySpace):
        flat: list[KeySpace] = []
        for factor in factors:
            flat.extend(factor.factors if isinstance(factor, Product) else (factor,))
        seen: set[str] = set()
        for factor in flat:
            overlap = seen.intersection(factor.axes)
            if overlap:
                raise ValueError(f"Product factors share axes {sorted(overlap)}")
            seen.update(factor.axes)
        self.factors = tuple(flat)

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(name for factor in self.factors for name in factor.axes)

    def points(self) -> Iterator[Point]:
        # The outermost factor streams, so a long leading axis is never materialized;
        # the inner factors are re-walked for each outer point, so they are listed once.
        outer, *inner = self.factors
        inner_points = [tuple(f.points()) for f in inner]
        for head in outer.points():
            for combo in itertools.product(*inner_points):
                point: Point = dict(head)
                for part in combo:
                    point.update(part)
                yield point


class Where(KeySpace):
    """The points of a space that satisfy a predicate over the whole point."""

    def __init__(self, inner: KeySpace, predicate: Callable[[Point], bool]):
        self.inner, self.predicate = inner, predicate

    @property
    def axes(self) -> tuple[str, ...]:
        return self.inner.axes

    def points(self) -> Iterator[Point]:
        return (p for p in self.inner.points() if self.predicate(p))


def expand(space: KeySpace, dispatch: Callable[..., CompileKey | None]) -> list[CompileKey]:
    """The distinct keys `dispatch` maps the space's points to, in first-seen order.

    A point for which dispatch returns None launches nothing compiled and is skipped.
    """
    seen: dict[CompileKey, None] = {}
    for point in space.points():
        key = dispatch(**point)
        if key is not None:
            seen.setdefault(key, None)
    return list(seen)
