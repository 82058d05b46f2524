"""Stride algebra: a tensor view's sizes and strides as torch gives them (`split`/`chunk`, `view`/`reshape`,
transposes), written as code over the sizes the step knows only by name. tests/test_lift_views.py checks it against
torch on meta tensors."""

from __future__ import annotations

import ast
import itertools
import math
from collections import Counter
from typing import Any

from .tables import NO_VALUE
from .values import Sequence, Tensor, Value, binary, parse_expr


def _factors(size: Value) -> Counter:
    """A size as the product it is written as: its factors' code, counted (a literal 1 is no factor)."""
    node = parse_expr(size.code)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(Value(ast.unparse(node.left))) + _factors(Value(ast.unparse(node.right)))
    return Counter() if size.known == 1 or size.code == "1" else Counter([ast.unparse(node)])


def _if_size_one(size: Value, one: Value, other: Value) -> Value:
    """`one if size == 1 else other`, decided where the size is known (or both are the same)."""
    if size.fixed or one == other:
        return one if size.known == 1 else other
    return Value(f"{one.code} if {size.code} == 1 else {other.code}")


def _same_size(a: Value, b: Value) -> bool:
    """The same number (both known), or products of the same factors as written."""
    return a.known == b.known if a.fixed and b.fixed else _factors(a) == _factors(b)


def divided(size: Value, by: Value) -> Value | None:
    """`size // by` where `by` divides `size` exactly (in numbers, or as a factor it is written with), else None."""
    if size.fixed and by.fixed:
        return Value(repr(size.known // by.known), size.known // by.known) if size.known % by.known == 0 else None
    whole, part = _factors(size), _factors(by)
    rest = whole - part
    if not part or rest + part != whole:
        return None
    literal = all(factor.isdigit() for factor in rest)  # `3 * h * d` by `h * d`: three, a number
    return Value(
        " * ".join(sorted(rest.elements())) or "1", math.prod(int(f) for f in rest.elements()) if literal else NO_VALUE
    )


def parts(tensor: Tensor, name: str, args: list[Any], dim: int) -> Sequence | None:
    """`tensor.split(sizes, dim)` / `tensor.chunk(n, dim)`: views along `dim`, each at its offset (None: parts
    the lift cannot count)."""
    dim %= len(tensor.shape)
    size, strides = tensor.shape[dim], tensor.stride()
    if name == "split" and isinstance(args[0], Sequence):
        sizes = list(args[0].items)
    else:
        count = args[0] if name == "chunk" else None
        part = divided(size, count) if count is not None else args[0]
        total = divided(size, part) if count is None else count
        if part is None or total is None or not total.fixed:
            return None
        sizes = [part] * total.known
    views, offset = [], Value("0", 0)
    for part in sizes:
        shape = tensor.shape[:dim] + (part,) + tensor.shape[dim + 1 :]
        views.append(tensor.view(shape, strides, offset))
        offset = binary(ast.Add(), offset, binary(ast.Mult(), part, strides[dim]))
    return Sequence(tuple(views))


def reshaped(tensor: Tensor, shape: tuple[Value, ...]) -> Tensor | None:
    """`tensor.view(*shape)` / `.reshape(*shape)` where each dimension is kept or split into several (sizes
    matched as products of the same factors); a row-major tensor takes any shape of its size. None: a shape the
    lift cannot match to the tensor's."""
    if tensor.strides is None:
        return Tensor(tensor.dtype, shape, None, tensor.offset)
    strides: list[Value] = []
    index, old = 0, tensor.stride()
    # What torch gives a dimension of size 1 instead: it joins the run of dimensions to its right, so each
    # dimension it becomes has the stride that run's outermost one would have one step further out.
    joined = [Value("0", 0)] * len(old)
    for i in range(len(old) - 2, -1, -1):
        size = tensor.shape[i + 1]
        outer = binary(ast.Mult(), old[i + 1], size)
        joined[i] = outer if i == len(old) - 2 else _if_size_one(size, joined[i + 1], outer)
    for dim, (size, stride) in enumerate(zip(tensor.shape, old)):
        group, product = [], Value("1", 1)
        while index < len(shape) and (not group or not _same_size(product, size)):
            group.append(shape[index])
            product = binary(ast.Mult(), product, shape[index])
            index += 1
        if not _same_size(product, size):
            return None
        inner = []
        for part in reversed(group):  # the dimension's parts, row-major within its stride
            inner.append(stride if dim == len(old) - 1 else _if_size_one(size, joined[dim], stride))
            stride = binary(ast.Mult(), stride, part)
        strides += reversed(inner)
    if not all(s.known == 1 for s in shape[index:]):
        return None
    strides += [Value("1", 1)] * (len(shape) - index)  # trailing dimensions of size 1
    return tensor.view(shape, tuple(strides), Value("0", 0))


def transposed(tensor: Tensor, first: int, second: int) -> Tensor:
    shape, strides = list(tensor.shape), list(tensor.stride())
    shape[first], shape[second] = shape[second], shape[first]
    strides[first], strides[second] = strides[second], strides[first]
    return Tensor(tensor.dtype, tuple(shape), tuple(strides))


def like(tensor: Tensor, dtype: Value) -> Tensor:
    """`torch.empty_like(tensor)` (and the other `*_like`): torch keeps the strides of a tensor whose elements fill
    its extent exactly (non-overlapping and dense, a transposed one too: `x.t()` of a `(1, n)` tensor keeps
    `(1, n)`, which Triton keys apart from the `(1, 1)` a meta tensor's `empty_like` gives); another it lays out
    compact, in row-major order as the lift's views are."""
    if tensor.strides is None or not _dense(tensor.shape, tensor.strides):
        return Tensor(dtype, tensor.shape)
    return Tensor(dtype, tensor.shape, tensor.strides)


def contiguous(tensor: Tensor) -> Tensor:
    """`tensor.contiguous()`: the tensor itself where torch counts it contiguous already (`x.t()` of a `(1, n)`
    tensor keeps its `(1, n)` strides, and its storage offset), else a compact row-major copy."""
    return tensor if is_contiguous(tensor) else Tensor(tensor.dtype, tensor.shape)


def is_contiguous(tensor: Tensor) -> bool:
    """torch's test: innermost first, each dimension of more than one element has the stride of the elements inside
    it (c10 skips the others; an empty tensor is contiguous). A size known only by name is taken as more than one."""
    if tensor.strides is None or any(size.fixed and size.known == 0 for size in tensor.shape):
        return True
    required = Value("1", 1)
    for size, stride in zip(reversed(tensor.shape), reversed(tensor.strides)):
        if size.fixed and size.known == 1:
            continue
        if not _same_size(stride, required):
            return False
        required = binary(ast.Mult(), size, required)
    return True


def _dense(shape: tuple[Value, ...], strides: tuple[Value, ...]) -> bool:
    """Some order of the dimensions of more than one element (c10 skips those) has the compact strides."""
    dimensions = [i for i, size in enumerate(shape) if not (size.fixed and size.known < 2)]
    for order in itertools.permutations(dimensions):  # innermost first
        required = Value("1", 1)
        for i in order:
            if not _same_size(strides[i], required):
                break
            required = binary(ast.Mult(), shape[i], required)
        else:
            return True
    return False
