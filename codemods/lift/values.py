"""The lift's symbolic values: a number or expression (`Value`), a tensor's dtype, shape and strides
(`Tensor`), an optional tensor, a sequence, keyword arguments, the device, a step parameter read whole (`Facts`),
and a name the lift could not read (`Unknown`)."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from typing import Any

from ..findings import PlacedError
from .tables import NO_VALUE, OPS


class LiftError(PlacedError):
    """The launcher or the legacy step holds something the lift cannot translate (where, and why)."""


@dataclasses.dataclass(frozen=True)
class Value:
    """A value as the provider writes it (`code`), with its Python value when the tree fixes it (`known`)."""

    code: str
    known: Any = NO_VALUE

    @property
    def fixed(self) -> bool:
        return self.known is not NO_VALUE


@dataclasses.dataclass(frozen=True)
class Tensor:
    """A tensor as Triton's key sees it: element type, shape, strides (None: compact row-major)."""

    dtype: Value
    shape: tuple[Value, ...]
    strides: tuple[Value, ...] | None = None
    offset: Value = Value("0", 0)  # elements from its storage's start (a view's): Triton keys 16-byte alignment

    def stride(self) -> tuple[Value, ...]:
        if self.strides is not None:
            return self.strides
        out, running = [], Value("1", 1)
        for size in reversed(self.shape):
            out.append(running)
            running = binary(ast.Mult(), size, running)
        return tuple(reversed(out))

    def code(self) -> str:
        shape = ", ".join(v.code for v in self.shape) + ("," if len(self.shape) == 1 else "")
        strides = (
            ""
            if self.strides is None
            else ", strides=(" + ", ".join(v.code for v in self.strides) + ("," if len(self.strides) == 1 else "") + ")"
        )
        aligned = (
            ""
            if self.offset.fixed and self.offset.known % 16 == 0
            else f", aligned={binary(ast.Mult(), self.offset, Value(f'{self.dtype.code}.itemsize')).code} % 16 == 0"
        )
        return f"TritonWarmupTensor({self.dtype.code}{aligned}, shape=({shape}){strides})"

    def view(self, shape: tuple[Value, ...], strides: tuple[Value, ...], offset: Value) -> Tensor:
        """A view of this tensor's storage (row-major strides written as None)."""
        compact = Tensor(self.dtype, shape).stride()
        return Tensor(
            self.dtype, shape, None if strides == compact else strides, binary(ast.Add(), self.offset, offset)
        )


@dataclasses.dataclass(frozen=True)
class MaybeTensor:
    """`tensor if test else None`, decided per warmed case: an optional input some cases pass and others leave
    out. What the code reads of it (`.stride(0)`) is the tensor's: the legacy code reads it only where it is
    there (`x is None or x.stride(0) == n`), or would fail itself."""

    test: Value
    tensor: Tensor

    def code(self) -> str:
        return f"{self.tensor.code()} if {self.test.code} else None"


@dataclasses.dataclass(frozen=True)
class Facts:
    """A step parameter read through its attributes (`config.h`): each attribute is a provider parameter.
    `tensors`: the attributes its class annotates as a tensor (never None); `computed`: (attribute, what it returns
    over `self`) for properties of its class read as what they compute (`conv_dim` as `2 * self.h * self.k`)."""

    name: str
    tensors: frozenset[str] = frozenset()
    computed: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class Sequence:
    items: tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Keywords:
    """A dict of keyword arguments the code builds (`{"skip_mask": mask, ...}`), to unpack into a call with `**`:
    each name's value, or a `PerCase` where the dict is chosen per case."""

    items: tuple[tuple[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class PerCase:
    """A `**` entry chosen per case (`**(state if flag else {})`): `body` where `test` holds, `orelse` elsewhere;
    either may be None, an entry that case does not pass (the callee's default then)."""

    test: Value
    body: Any
    orelse: Any


class Device:
    """Where tensors live: the provider's tensors are metadata only, so a device is never written."""


DEVICE = Device()


def kind_of(value: Any) -> str:
    """What a symbolic value is, in a refusal's words."""
    return {Keywords: "dict of keywords", MaybeTensor: "tensor or None", PerCase: "value chosen per case"}.get(
        type(value), type(value).__name__.lower()
    )


def parse_expr(code: str) -> ast.expr:
    return ast.parse(code, mode="eval").body


def binary(op: ast.operator, left: Value, right: Value) -> Value:
    if left.fixed and right.fixed:
        value = OPS[type(op)](left.known, right.known)
        return Value(repr(value), value)
    if isinstance(op, ast.Mult) and (left.known == 1 or right.known == 1):
        return right if left.known == 1 else left
    if isinstance(op, (ast.Add, ast.Sub)) and right.known == 0 or isinstance(op, ast.Add) and left.known == 0:
        return left if right.known == 0 else right
    return Value(ast.unparse(ast.BinOp(parse_expr(left.code), op, parse_expr(right.code))))


def negated_code(code: str) -> str:
    """`not (code)`, written as a reviewer would (`a != b` for `not a == b`)."""
    node = parse_expr(code)
    inverse = {
        ast.Eq: ast.NotEq,
        ast.NotEq: ast.Eq,
        ast.Lt: ast.GtE,
        ast.GtE: ast.Lt,
        ast.Gt: ast.LtE,
        ast.LtE: ast.Gt,
        ast.Is: ast.IsNot,
        ast.IsNot: ast.Is,
        ast.In: ast.NotIn,
        ast.NotIn: ast.In,
    }
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return ast.unparse(ast.Compare(node.left, [inverse[type(node.ops[0])]()], node.comparators))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ast.unparse(node.operand)
    return ast.unparse(ast.UnaryOp(ast.Not(), node))


def choice_of(test: Value, body: Any, orelse: Any) -> Any:
    """`body if test else orelse` for a test decided per case: one value the provider can write, or None."""
    if body == orelse:
        return body
    if isinstance(body, Value) and isinstance(orelse, Value):
        if isinstance(body.known, bool) and orelse.known is (not body.known):
            chosen = test.code if body.known else negated_code(test.code)  # `c`, not `True if c else False`
            if is_bool(parse_expr(chosen)):
                return Value(chosen)
        if (either := _either(test, body, orelse)) is not None:
            return either
        return _made_equal(test, body, orelse) or Value(
            ast.unparse(ast.IfExp(parse_expr(test.code), parse_expr(body.code), parse_expr(orelse.code)))
        )
    if isinstance(body, Tensor) and isinstance(orelse, Tensor) and len(body.shape) == len(orelse.shape):
        return _tensor_choice(test, body, orelse)
    if isinstance(body, Tensor) and isinstance(orelse, Value) and orelse.known is None:
        return MaybeTensor(test, body)
    if isinstance(orelse, Tensor) and isinstance(body, Value) and body.known is None:
        return MaybeTensor(Value(negated_code(test.code)), orelse)
    if isinstance(body, Tensor) and isinstance(orelse, MaybeTensor) and orelse.test == test:
        return MaybeTensor(test, body)  # `if x is not None: x = x.contiguous()`: None where the test fails
    if isinstance(body, Keywords) and isinstance(orelse, Keywords):
        left, right = dict(body.items), dict(orelse.items)
        names = [*left, *(name for name in right if name not in left)]
        return Keywords(tuple((name, PerCase(test, left.get(name), right.get(name))) for name in names))
    return None


def _tensor_choice(test: Value, body: Tensor, orelse: Tensor) -> Tensor:
    """One of two tensors of one rank per case, as a tensor whose dtype, sizes, strides and offset are each chosen
    (a cast in one branch chooses the dtype alone; `initial_state if inplace else new_state`, the sizes too)."""

    def pick(pair: tuple[Value, Value]) -> Value:
        return choice_of(test, *pair)

    strides = None if body.strides is None and orelse.strides is None else zip(body.stride(), orelse.stride())
    return Tensor(
        pick((body.dtype, orelse.dtype)),
        tuple(map(pick, zip(body.shape, orelse.shape))),
        None if strides is None else tuple(map(pick, strides)),
        pick((body.offset, orelse.offset)),
    )


def per_case(entry: Any, missing: Callable[[], Any]) -> Any:
    """An entry of `Keywords` as one value: a `PerCase` chosen per case, `missing()` where a case leaves it out;
    None where the lift cannot write the choice as one value."""
    if not isinstance(entry, PerCase):
        return entry
    body, orelse = (missing() if v is None else per_case(v, missing) for v in (entry.body, entry.orelse))
    return None if body is None or orelse is None else choice_of(entry.test, body, orelse)


def _either(test: Value, body: Value, orelse: Value) -> Value | None:
    """`True if a else b` as `a or b`, `a and b` for `b if a else False` (and the negated two), where every part is
    a bool (else `or` would give `a` itself); None otherwise."""
    fixed, other = (body, orelse) if isinstance(body.known, bool) else (orelse, body)
    condition = test.code if (fixed is body) == fixed.known else negated_code(test.code)
    if not (isinstance(fixed.known, bool) and is_bool(parse_expr(condition)) and is_bool(parse_expr(other.code))):
        return None
    joined = ast.BoolOp(ast.Or() if fixed.known else ast.And(), [parse_expr(condition), parse_expr(other.code)])
    return Value(ast.unparse(joined))


def is_bool(node: ast.expr) -> bool:
    """Whether `node` is True or False whatever it reads: a comparison, a `not`, or `and`/`or` of those."""
    if isinstance(node, ast.BoolOp):
        return all(map(is_bool, node.values))
    return isinstance(node, ast.Compare) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)


def _made_equal(test: Value, body: Value, orelse: Value) -> Value | None:
    """`b if a != b else a` is `b`, and `a if a == b else b` is `b`: the two values the test compares, the one
    that holds whichever way it goes (`x = x.to(s.dtype)` only where `x.dtype != s.dtype`). None for any other."""
    compared = parse_expr(test.code)
    if not (isinstance(compared, ast.Compare) and len(compared.ops) == 1):
        return None
    sides = {ast.unparse(compared.left), ast.unparse(compared.comparators[0])}
    if {ast.unparse(parse_expr(body.code)), ast.unparse(parse_expr(orelse.code))} != sides or len(sides) != 2:
        return None
    return {ast.NotEq: body, ast.Eq: orelse}.get(type(compared.ops[0]))


def nested_shape(data: Any) -> tuple[Value, ...] | None:
    if isinstance(data, Sequence):
        inner = [nested_shape(item) for item in data.items]
        if data.items and (None in inner or len(set(inner)) != 1):
            return None
        return (Value(str(len(data.items)), len(data.items)), *(inner[0] if data.items else ()))
    return () if isinstance(data, Value) else None


def names_in(code: str) -> set[str]:
    return {n.id for n in ast.walk(parse_expr(code)) if isinstance(n, ast.Name)}


class Unknown:
    """A name whose value the lift could not read (an error only if the launch needs it): `error` says where and
    why."""

    def __init__(self, error: LiftError):
        self.error = error


def from_literal(value: Any) -> Any:
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return Keywords(tuple((key, from_literal(item)) for key, item in value.items()))
    if isinstance(value, (tuple, list, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return Sequence(tuple(from_literal(v) for v in items))
    return Value(repr(value), value)
