"""Lifting a plain Triton kernel onto the contract: the dispatcher and provider, read from the launcher and the
legacy warmup step.

vLLM's pattern (`triton_kernel_dispatcher_with_warmup`, in the engine's Triton warmup helper) is what
this writes:
  * the launcher's `kernel[grid](...)` becomes a call to a *dispatcher*: a function of the values the
    launch reads that the launcher does not compute purely (its tensors, its runtime arguments), which
    computes the rest (grid, constexprs, strides: the launcher's own statements, copied) and returns
    `(grid, launch_kwargs)`. The decorated dispatcher binds an input to the kernel parameter `x`, `x_ptr`,
    `X` or `X_PTR` of its name, so `launch_kwargs` holds every argument that is not such an input;
  * the *provider* returns the dispatcher inputs to warm. It is the legacy step run symbolically: its
    loops become `WarmupChoices`/`WarmupIntRange` domains, its conditions `_when(...)`, its tensors
    `TritonWarmupTensor(dtype, shape=...)`, then the launcher's own statements up to the launch, with the
    step's arguments, give each dispatcher input. What the step reads from outside (its parameters, their
    attributes) become the provider's keyword parameters: the registration passes them, in the
    construction site's names (what the tool cannot know: `confirm` items until a spec answers them).

Everything is read with `ast`; nothing is imported. A step or launcher the translation does not cover is
refused with the line and why (`LiftError`), never approximated.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import math
import operator
import textwrap
from collections import Counter
from typing import Any

from .repo import RepoModules
from .spec import SpecError

_TORCH_TENSORS = {"empty", "zeros", "ones", "full", "tensor", "arange", "empty_strided", "randn", "rand"}
_TORCH_LIKE = {"empty_like", "zeros_like", "ones_like", "full_like", "randn_like"}
_NEW_TENSORS = {"new_empty", "new_zeros", "new_ones", "new_full"}
_SAME_TENSOR = {"contiguous", "zero_", "fill_", "clone", "detach", "normal_", "uniform_"}  # same dtype and layout
_PURE_BUILTINS = {"int", "float", "bool", "min", "max", "abs", "len", "round"}
_PURE_MATH = {"cdiv", "next_power_of_2", "ceil", "floor", "log2", "prod"}
_TENSOR_FACTS = {"stride", "size", "numel", "dim", "element_size", "is_contiguous", "data_ptr"}
_LOGGING = {"debug", "info", "warning", "warning_once", "info_once", "debug_once", "error", "exception"}
_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.Div: operator.truediv,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_NO_VALUE = object()
# What vLLM's helper expands in a provider's expressions (the subset its error names: names, constants, attributes,
# subscripts, tuple/list literals, conditionals, comparisons, boolean operators, not/minus, arithmetic, calls).
_EXPANDABLE = (
    ast.Name,
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.IfExp,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.BinOp,
    ast.Call,
    ast.keyword,
    ast.Starred,
    ast.Lambda,
    ast.arguments,
    ast.arg,
    ast.expr_context,
    ast.boolop,
    ast.cmpop,
    ast.Not,
    ast.USub,
    *_OPS,
)


class LiftError(SpecError):
    """The launcher or the legacy step holds something the lift cannot translate (where, and why)."""


@dataclasses.dataclass(frozen=True)
class Value:
    """A value as the provider writes it (`code`), with its Python value when the tree fixes it (`known`)."""

    code: str
    known: Any = _NO_VALUE

    @property
    def fixed(self) -> bool:
        return self.known is not _NO_VALUE


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
            running = _binary(ast.Mult(), size, running)
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
            else f", aligned={_binary(ast.Mult(), self.offset, Value(f'{self.dtype.code}.itemsize')).code} % 16 == 0"
        )
        return f"TritonWarmupTensor({self.dtype.code}{aligned}, shape=({shape}){strides})"

    def view(self, shape: tuple[Value, ...], strides: tuple[Value, ...], offset: Value) -> Tensor:
        """A view of this tensor's storage (row-major strides written as None)."""
        compact = Tensor(self.dtype, shape).stride()
        return Tensor(
            self.dtype, shape, None if strides == compact else strides, _binary(ast.Add(), self.offset, offset)
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
    """A step parameter read through its attributes (`config.h`): each attribute is a provider parameter."""

    name: str


@dataclasses.dataclass(frozen=True)
class Sequence:
    items: tuple[Any, ...]


class Device:
    """Where tensors live: the provider's tensors are metadata only, so a device is never written."""


DEVICE = Device()


@dataclasses.dataclass(frozen=True)
class LiftPlan:
    """What the lift writes into the kernel's module, and what it needs from the registration."""

    provider: str  # the provider function's source
    dispatcher: str  # the decorated dispatcher's source up to its body (decorator, def line, docstring)
    returned: str  # the dispatcher's last statement: `return <grid>, dict(<launch arguments>)`
    copied_lines: tuple[int, ...]  # the launcher's statements the dispatcher's body copies, in order
    removed_lines: tuple[int, ...]  # ... those the launcher no longer reads once its launch is the dispatcher's
    unread: tuple[tuple[int, str], ...]  # (line, name): a kept `a, b = ...`'s names it no longer reads (-> `_`)
    launch_line: int  # the launcher's `kernel[grid](...)` statement, replaced by `dispatch_call`
    dispatch_call: str
    parameters: tuple[tuple[str, str], ...]  # the provider's keyword parameters, with what the step read for each
    helper_names: tuple[tuple[str, str], ...]  # (module, name) the kernel's module imports for the new code


def _expr(code: str) -> ast.expr:
    return ast.parse(code, mode="eval").body


def _binary(op: ast.operator, left: Value, right: Value) -> Value:
    if left.fixed and right.fixed:
        value = _OPS[type(op)](left.known, right.known)
        return Value(repr(value), value)
    if isinstance(op, ast.Mult) and (left.known == 1 or right.known == 1):
        return right if left.known == 1 else left
    if isinstance(op, (ast.Add, ast.Sub)) and right.known == 0 or isinstance(op, ast.Add) and left.known == 0:
        return left if right.known == 0 else right
    return Value(ast.unparse(ast.BinOp(_expr(left.code), op, _expr(right.code))))


def _negated(code: str) -> str:
    """`not (code)`, written as a reviewer would (`a != b` for `not a == b`)."""
    node = _expr(code)
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


class _Scope:
    """One function's symbolic state: its module (for globals) and its names' values."""

    def __init__(self, lift: _Lift, module: str, function: ast.FunctionDef, env: dict[str, Any]):
        self.lift, self.module, self.function, self.env = lift, module, function, env

    def where(self, node: ast.AST) -> str:
        return (
            f"{self.lift.modules.path(self.module).relative_to(self.lift.modules.repo).as_posix()}:"
            f"{getattr(node, 'lineno', self.function.lineno)}"
        )

    def refuse(self, node: ast.AST, why: str) -> LiftError:
        return LiftError(f"{self.where(node)}: {why}")

    # -- expressions ---------------------------------------------------------------------------------------
    def value(self, node: ast.expr) -> Any:
        """What `node` evaluates to: a Value, Tensor, Sequence or the device (a step parameter read whole is a
        provider parameter)."""
        found = self._raw(node)
        return self.lift.parameter(found.name, found.name) if isinstance(found, Facts) else found

    def _raw(self, node: ast.expr) -> Any:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise self.refuse(node, f"the lift cannot translate `{ast.unparse(node)}` ({type(node).__name__})")
        return method(node)

    def plain(self, node: ast.expr) -> Value:
        found = self.value(node)
        if not isinstance(found, Value):
            raise self.refuse(
                node, f"`{ast.unparse(node)}` is used as a number, but it is a {type(found).__name__.lower()}"
            )
        return found

    def _Constant(self, node: ast.Constant) -> Value:
        return Value(repr(node.value), node.value)

    def _Name(self, node: ast.Name) -> Any:
        if isinstance(self.env.get(node.id), _Unknown):
            raise LiftError(self.env[node.id].why)  # why its value could not be read, where it was assigned
        if node.id in self.env:
            return self.env[node.id]
        return self.lift.global_value(self, node)

    def _Attribute(self, node: ast.Attribute) -> Any:
        holder = self._raw(node.value)
        if isinstance(holder, MaybeTensor):
            holder = holder.tensor
        if isinstance(holder, Facts):
            return self.lift.parameter(f"{holder.name}.{node.attr}", node.attr)
        if isinstance(holder, Tensor):
            if node.attr == "dtype":
                return holder.dtype
            if node.attr == "shape":
                return Sequence(holder.shape)
            if node.attr == "device":
                return DEVICE
            if node.attr == "ndim":
                return Value(str(len(holder.shape)), len(holder.shape))
            if node.attr == "T" and len(holder.shape) == 2:
                return self._transposed(holder, 0, 1)
            raise self.refuse(node, f"reads `.{node.attr}` of a tensor, which the lift does not model")
        if isinstance(holder, Device):
            return Value(repr("cuda"), "cuda") if node.attr == "type" else holder
        if isinstance(holder, Value):
            return Value(ast.unparse(ast.Attribute(_expr(holder.code), node.attr)))
        raise self.refuse(node, f"reads `.{node.attr}` of a {type(holder).__name__.lower()}")

    def _Subscript(self, node: ast.Subscript) -> Any:
        holder = self.value(node.value)
        if isinstance(holder, Tensor):
            raise self.refuse(node, "indexes a tensor (a view the lift does not model)")
        index = self.value(node.slice) if not isinstance(node.slice, ast.Slice) else None
        if isinstance(holder, Sequence) and isinstance(index, Value) and isinstance(index.known, int):
            return holder.items[index.known]
        if isinstance(holder, Sequence) and isinstance(node.slice, ast.Slice) and node.slice.step is None:
            low = self.plain(node.slice.lower).known if node.slice.lower else None
            high = self.plain(node.slice.upper).known if node.slice.upper else None
            if all(v is None or isinstance(v, int) for v in (low, high)):
                return Sequence(holder.items[low:high])
        if isinstance(holder, Value) and isinstance(index, Value):
            return Value(ast.unparse(ast.Subscript(_expr(holder.code), _expr(index.code))))
        if isinstance(holder, Value) and isinstance(node.slice, ast.Slice):  # a value the registration passes
            # Written `x[slice(a, b)]`: vLLM's helper expands a provider's expressions by AST, and takes no `a:b`.
            bounds = ", ".join(
                "None" if part is None else self.plain(part).code
                for part in (node.slice.lower, node.slice.upper, node.slice.step)
            )
            return Value(f"{ast.unparse(_expr(holder.code))}[slice({bounds})]")
        raise self.refuse(node, f"the lift cannot translate the subscript `{ast.unparse(node)}`")

    def _Tuple(self, node: ast.Tuple) -> Sequence:
        items: list[Any] = []
        for element in node.elts:
            if isinstance(element, ast.Starred):
                spread = self.value(element.value)
                if not isinstance(spread, Sequence):
                    raise self.refuse(node, f"spreads `{ast.unparse(element.value)}`, which is not a sequence")
                items += spread.items
            else:
                items.append(self.value(element))
        return Sequence(tuple(items))

    _List = _Tuple
    _Set = _Tuple

    def _GeneratorExp(self, node: ast.GeneratorExp) -> Sequence:
        """`f(x) for x in parts` over a sequence the lift counts (a tensor's `split` into parts of one size):
        one item per part, each evaluated with its part bound (`q, k, v = (t.view(...) for t in qkv.split(n))`)."""
        if (
            len(node.generators) != 1
            or node.generators[0].ifs
            or node.generators[0].is_async
            or not isinstance(node.generators[0].target, ast.Name)
        ):
            raise self.refuse(
                node,
                f"the lift translates a comprehension of one `for name in ...` without `if`, not `{ast.unparse(node)}`",
            )
        loop = node.generators[0]
        parts = self.value(loop.iter)
        if not isinstance(parts, Sequence):
            raise self.refuse(node, f"`{ast.unparse(loop.iter)}` is not a sequence the lift can count")
        name, saved = loop.target.id, self.env.get(loop.target.id, _NO_VALUE)
        try:
            items = []
            for part in parts.items:
                self.env[name] = part
                items.append(self.value(node.elt))
        finally:
            if saved is _NO_VALUE:
                self.env.pop(name, None)
            else:
                self.env[name] = saved
        return Sequence(tuple(items))

    _ListComp = _GeneratorExp

    def _BinOp(self, node: ast.BinOp) -> Value:
        left, right = self.value(node.left), self.value(node.right)
        if isinstance(node.op, ast.Add) and isinstance(left, Sequence) and isinstance(right, Sequence):
            return Sequence(left.items + right.items)
        return _binary(node.op, self._as_value(node.left, left), self._as_value(node.right, right))

    def _UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self.plain(node.operand)
        if operand.fixed:
            value = {
                ast.Not: operator.not_,
                ast.USub: operator.neg,
                ast.UAdd: operator.pos,
                ast.Invert: operator.invert,
            }[type(node.op)](operand.known)
            return Value(repr(value), value)
        return Value(ast.unparse(ast.UnaryOp(node.op, _expr(operand.code))))

    def _BoolOp(self, node: ast.BoolOp) -> Value:
        parts = [self.plain(v) for v in node.values]
        is_and = isinstance(node.op, ast.And)
        kept = []
        for part in parts:
            if part.fixed and bool(part.known) == is_and:
                continue  # `True and x` is x; `False or x` is x
            if part.fixed:
                return part
            kept.append(part)
        if not kept:
            return parts[-1]
        return Value(ast.unparse(ast.BoolOp(node.op, [_expr(p.code) for p in kept]))) if len(kept) > 1 else kept[0]

    def _Compare(self, node: ast.Compare) -> Value:
        left = self.value(node.left)
        values = [left, *(self.value(c) for c in node.comparators)]
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Is, ast.IsNot))
            and any(isinstance(v, Value) and v.known is None for v in values)
        ):
            is_not = isinstance(node.ops[0], ast.IsNot)
            optional = next((v for v in values if isinstance(v, MaybeTensor)), None)
            if optional is not None:  # present in the cases its test holds for
                return optional.test if is_not else Value(_negated(optional.test.code))
            if any(isinstance(v, (Tensor, Device, Sequence)) for v in values):
                return Value(repr(is_not), is_not)  # a tensor, device or sequence is never None
        if all(
            isinstance(v, Value)
            and v.fixed
            or isinstance(v, Sequence)
            and all(isinstance(i, Value) and i.fixed for i in v.items)
            for v in values
        ):
            known = [v.known if isinstance(v, Value) else tuple(i.known for i in v.items) for v in values]
            result = all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, known, known[1:]))
            return Value(repr(result), result)
        operands = [_expr(self._as_value(n, v).code) for n, v in zip([node.left, *node.comparators], values)]
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq))
            and ast.dump(operands[0]) == ast.dump(operands[1])
        ):
            result = isinstance(node.ops[0], ast.Eq)  # a size compared with itself (`x.stride(0) == n`, x is (m, n))
            return Value(repr(result), result)
        return Value(ast.unparse(ast.Compare(operands[0], node.ops, operands[1:])))

    def _IfExp(self, node: ast.IfExp) -> Any:
        test = self.plain(node.test)
        if test.fixed:
            return self.value(node.body if test.known else node.orelse)
        either = _either(test, self.value(node.body), self.value(node.orelse))
        if either is None:
            raise self.refuse(node, f"`{ast.unparse(node)}` chooses between values the lift cannot write as one")
        return either

    def _as_value(self, node: ast.expr, found: Any) -> Value:
        if isinstance(found, Value):
            return found
        if isinstance(found, Sequence) and all(isinstance(i, Value) for i in found.items):
            inner = ", ".join(i.code for i in found.items) + ("," if len(found.items) == 1 else "")
            known = tuple(i.known for i in found.items) if all(i.fixed for i in found.items) else _NO_VALUE
            return Value(f"({inner})", known)
        raise self.refuse(
            node, f"`{ast.unparse(node)}` is a {type(found).__name__.lower()} where the lift needs a value"
        )

    def _Call(self, node: ast.Call) -> Any:
        if any(k.arg is None for k in node.keywords):
            raise self.refuse(node, f"`{ast.unparse(node)}` unpacks its keyword arguments (**kwargs)")
        func = node.func
        keywords = {k.arg: k.value for k in node.keywords}
        if isinstance(func, ast.Attribute):
            holder = self.value(func.value) if not self.lift.is_module(self, func.value) else None
            if isinstance(holder, MaybeTensor):
                holder = holder.tensor
            if isinstance(holder, Tensor):
                return self._tensor_method(node, holder, func.attr, keywords)
            module = self.lift.module_of(self, func.value)
            if module == "torch" and func.attr in _TORCH_TENSORS | _TORCH_LIKE:
                return self._torch_tensor(node, func.attr, keywords)
            if module in ("triton", "math") and func.attr in _PURE_MATH or module == "torch" and func.attr == "dtype":
                args = [self.plain(a) for a in node.args]
                if all(a.fixed for a in args):
                    value = {
                        "cdiv": lambda a, b: -(-a // b),
                        "next_power_of_2": lambda n: 1 if n <= 1 else 1 << (n - 1).bit_length(),
                    }.get(func.attr, getattr(math, func.attr, None))(*(a.known for a in args))
                    return Value(repr(value), value)
                return Value(f"{ast.unparse(func.value)}.{func.attr}({', '.join(a.code for a in args)})")
        if isinstance(func, ast.Name) and self.lift.is_typing_cast(self, func.id) and len(node.args) == 2:
            return self.value(node.args[1])  # typing.cast: the value itself
        if isinstance(func, ast.Name) and func.id == "isinstance" and self.lift.global_is_builtin(self, func.id):
            subject, kinds = self.value(node.args[0]), node.args[1]
            names = [k.id for k in (kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]) if isinstance(k, ast.Name)]
            builtin = [
                getattr(builtins, n) for n in names if n in dir(builtins) and isinstance(getattr(builtins, n), type)
            ]
            if isinstance(subject, Value) and subject.fixed and len(builtin) == len(names):
                result = isinstance(subject.known, tuple(builtin))
                return Value(repr(result), result)
            if isinstance(subject, Tensor) and builtin:
                return Value("False", False)
            raise self.refuse(node, f"`{ast.unparse(node)}`: a type test the lift cannot decide")
        if (
            isinstance(func, ast.Name)
            and func.id in _PURE_BUILTINS
            and func.id not in self.env
            and self.lift.global_is_builtin(self, func.id)
        ):
            args = [self.value(a) for a in node.args]
            if func.id == "len" and len(args) == 1 and isinstance(args[0], Tensor):
                return args[0].shape[0]
            if func.id == "len" and len(args) == 1 and isinstance(args[0], Sequence):
                return Value(str(len(args[0].items)), len(args[0].items))
            args = [self._as_value(a, v) for a, v in zip(node.args, args)]
            if all(a.fixed for a in args) and not keywords:
                value = getattr(builtins, func.id)(*(a.known for a in args))
                return Value(repr(value), value)
            return Value(f"{func.id}({', '.join(a.code for a in args)})")
        if (
            isinstance(func, ast.Name)
            and func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(self._raw(node.args[0]), Facts)
        ):
            holder = self._raw(node.args[0])
            return self.lift.parameter(f"{holder.name}.{node.args[1].value}", node.args[1].value)
        arguments = [self.value(a) for a in node.args] + [self.value(k.value) for k in node.keywords]
        if (
            isinstance(func, ast.Name)
            and func.id not in self.env
            and any(a is DEVICE for a in arguments)
            and all(a is DEVICE or isinstance(a, Value) and a.fixed for a in arguments)
        ):
            # A fact of the device (its compute units): the launch's tensors live where the step made them, so
            # the step and the launcher read one value, which the registration passes.
            home, name = callee(self.lift.modules, self.module, self.function, func.id)
            return self.lift.parameter(f"{home}.{name}(<the device>)", func.id)
        callee_value = self.value(func)
        if isinstance(callee_value, Value) and all(isinstance(a, (Value, Sequence)) for a in arguments):
            # A call the lift does not model, of names the provider can read: the provider makes it too.
            args = [self._as_value(a, v).code for a, v in zip(node.args, arguments)]
            args += [
                f"{k.arg}={self._as_value(k.value, v).code}" for k, v in zip(node.keywords, arguments[len(args) :])
            ]
            return Value(f"{callee_value.code}({', '.join(args)})")
        raise self.refuse(node, f"calls `{ast.unparse(func)}` with a tensor, which the lift does not translate")

    def _torch_tensor(self, node: ast.Call, name: str, keywords: dict[str, ast.expr]) -> Tensor:
        if name in _TORCH_LIKE:
            like = self.value(node.args[0])
            if not isinstance(like, Tensor):
                raise self.refuse(node, f"`torch.{name}` of something that is not a tensor")
            return Tensor(self.plain(keywords["dtype"]) if "dtype" in keywords else like.dtype, like.shape)
        dtype = self._dtype(node, keywords)
        if name == "tensor":
            data = self.value(node.args[0]) if node.args else None
            shape = _nested_shape(data)
            if shape is None:
                raise self.refuse(node, "`torch.tensor` of data whose shape the lift cannot read")
            return Tensor(dtype, shape)
        if name == "arange":
            bounds = [self.plain(a) for a in node.args]
            start, stop, step = (
                (Value("0", 0), bounds[0], Value("1", 1))
                if len(bounds) == 1
                else (bounds[0], bounds[1], bounds[2] if len(bounds) > 2 else Value("1", 1))
            )
            length = _binary(
                ast.FloorDiv(),
                _binary(ast.Add(), _binary(ast.Sub(), stop, start), _binary(ast.Sub(), step, Value("1", 1))),
                step,
            )
            return Tensor(dtype, (length,))
        args = node.args[:-1] if name == "full" else node.args
        if name == "empty_strided":
            shape, strides = (self._shape(node, [a]) for a in node.args[:2])
            return Tensor(dtype, shape, strides)
        return Tensor(dtype, self._shape(node, args if "size" not in keywords else [keywords["size"]]))

    def _dtype(self, node: ast.Call, keywords: dict[str, ast.expr]) -> Value:
        if "dtype" not in keywords:
            raise self.refuse(
                node, "allocates a tensor with the default dtype; write its dtype= so the key is explicit"
            )
        return self.plain(keywords["dtype"])

    def _shape(self, node: ast.Call, args: list[ast.expr]) -> tuple[Value, ...]:
        values = list(self._Tuple(ast.Tuple(elts=list(args), ctx=ast.Load())).items)
        if len(values) == 1 and isinstance(values[0], Sequence):
            values = list(values[0].items)
        if not all(isinstance(v, Value) for v in values):
            raise self.refuse(node, f"a tensor shape the lift cannot read: `{ast.unparse(node)}`")
        return tuple(values)

    def _tensor_method(self, node: ast.Call, tensor: Tensor, name: str, keywords: dict[str, ast.expr]) -> Any:
        args = list(self._Tuple(ast.Tuple(elts=list(node.args), ctx=ast.Load())).items)
        if name in ("t", "transpose"):
            if name == "t":
                return self._transposed(tensor, 0, 1)
            dims = [self.plain(a).known for a in node.args]
            return self._transposed(tensor, *dims)
        if name in _SAME_TENSOR:
            return Tensor(tensor.dtype, tensor.shape) if name in ("contiguous", "clone") else tensor
        if name in ("split", "chunk"):
            return self._parts(node, tensor, name, args, keywords)
        if name in ("view", "reshape") and all(isinstance(a, Value) for a in args):
            return self._reshaped(node, tensor, name, tuple(args))
        if name == "as_strided" and len(args) in (2, 3) and all(isinstance(a, Sequence) for a in args[:2]):
            offset = args[2] if len(args) == 3 else Value("0", 0)
            return Tensor(tensor.dtype, args[0].items, args[1].items, _binary(ast.Add(), tensor.offset, offset))
        if name in _NEW_TENSORS:
            shape_args = node.args[:-1] if name == "new_full" else node.args
            dtype = self.plain(keywords["dtype"]) if "dtype" in keywords else tensor.dtype
            return Tensor(dtype, self._shape(node, shape_args))
        if (
            name in ("stride", "size")
            and len(args) == 1
            and isinstance(args[0], Value)
            and isinstance(args[0].known, int)
        ):
            return (tensor.stride() if name == "stride" else tensor.shape)[args[0].known]
        if name in ("stride", "size") and not args:
            return Sequence(tensor.stride() if name == "stride" else tensor.shape)
        if name == "numel":
            total = Value("1", 1)
            for size in tensor.shape:
                total = _binary(ast.Mult(), total, size)
            return total
        if name == "dim":
            return Value(str(len(tensor.shape)), len(tensor.shape))
        if name == "is_contiguous":
            return (
                Value(repr(tensor.strides is None), tensor.strides is None)
                if tensor.strides is None
                else Value(repr(tensor.strides == Tensor(tensor.dtype, tensor.shape).stride()))
            )
        if name == "data_ptr":
            return Value("0", 0)  # only its count matters where the step reads it (a table of pointers)
        if name == "to" and set(keywords) <= {"dtype"} and (args or keywords):
            dtype = args[0] if args else self.plain(keywords["dtype"])
            return Tensor(dtype, tensor.shape, tensor.strides)
        raise self.refuse(node, f"calls `.{name}()` on a tensor, which the lift does not model")

    def _parts(
        self, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords: dict[str, ast.expr]
    ) -> Sequence:
        """`tensor.split(sizes, dim)` / `tensor.chunk(n, dim)`: views along `dim`, each at its offset."""
        dim = self.plain(keywords["dim"]).known if "dim" in keywords else (args[1].known if len(args) > 1 else 0)
        if not isinstance(dim, int):
            raise self.refuse(node, f"`.{name}()` along a dimension the lift cannot read")
        dim %= len(tensor.shape)
        size, strides = tensor.shape[dim], tensor.stride()
        if name == "split" and isinstance(args[0], Sequence):
            sizes = list(args[0].items)
        else:
            count = args[0] if name == "chunk" else None
            part = _divided(size, count) if count is not None else args[0]
            total = _divided(size, part) if count is None else count
            if part is None or total is None or not total.fixed:
                raise self.refuse(node, f"`.{name}()` into parts the lift cannot count (`{ast.unparse(node)}`)")
            sizes = [part] * total.known
        parts, offset = [], Value("0", 0)
        for part in sizes:
            shape = tensor.shape[:dim] + (part,) + tensor.shape[dim + 1 :]
            parts.append(tensor.view(shape, strides, offset))
            offset = _binary(ast.Add(), offset, _binary(ast.Mult(), part, strides[dim]))
        return Sequence(tuple(parts))

    def _reshaped(self, node: ast.Call, tensor: Tensor, name: str, shape: tuple[Value, ...]) -> Tensor:
        """`tensor.view(*shape)` / `.reshape(*shape)` where each dimension is kept or split into several (sizes
        matched as products of the same factors); a row-major tensor takes any shape of its size."""
        if tensor.strides is None:
            return Tensor(tensor.dtype, shape, None, tensor.offset)
        unmatched = self.refuse(
            node, f"`.{name}()` to a shape the lift cannot match to the tensor's (`{ast.unparse(node)}`)"
        )
        strides: list[Value] = []
        index, old = 0, tensor.stride()
        # What torch gives a dimension of size 1 instead: it joins the run of dimensions to its right, so each
        # dimension it becomes has the stride that run's outermost one would have one step further out.
        joined = [Value("0", 0)] * len(old)
        for i in range(len(old) - 2, -1, -1):
            size = tensor.shape[i + 1]
            outer = _binary(ast.Mult(), old[i + 1], size)
            joined[i] = outer if i == len(old) - 2 else _if_size_one(size, joined[i + 1], outer)
        for dim, (size, stride) in enumerate(zip(tensor.shape, old)):
            group, product = [], Value("1", 1)
            while index < len(shape) and (not group or not _same_size(product, size)):
                group.append(shape[index])
                product = _binary(ast.Mult(), product, shape[index])
                index += 1
            if not _same_size(product, size):
                raise unmatched
            inner = []
            for part in reversed(group):  # the dimension's parts, row-major within its stride
                inner.append(stride if dim == len(old) - 1 else _if_size_one(size, joined[dim], stride))
                stride = _binary(ast.Mult(), stride, part)
            strides += reversed(inner)
        if not all(s.known == 1 for s in shape[index:]):
            raise unmatched
        strides += [Value("1", 1)] * (len(shape) - index)  # trailing dimensions of size 1
        return tensor.view(shape, tuple(strides), Value("0", 0))

    def _transposed(self, tensor: Tensor, first: int, second: int) -> Tensor:
        shape, strides = list(tensor.shape), list(tensor.stride())
        shape[first], shape[second] = shape[second], shape[first]
        strides[first], strides[second] = strides[second], strides[first]
        return Tensor(tensor.dtype, tuple(shape), tuple(strides))


def _factors(size: Value) -> Counter:
    """A size as the product it is written as: its factors' code, counted (a literal 1 is no factor)."""
    node = _expr(size.code)
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


def _divided(size: Value, by: Value) -> Value | None:
    """`size // by` where `by` divides `size` exactly (in numbers, or as a factor it is written with), else None."""
    if size.fixed and by.fixed:
        return Value(repr(size.known // by.known), size.known // by.known) if size.known % by.known == 0 else None
    whole, part = _factors(size), _factors(by)
    rest = whole - part
    if not part or rest + part != whole:
        return None
    literal = all(factor.isdigit() for factor in rest)  # `3 * h * d` by `h * d`: three, a number
    return Value(
        " * ".join(sorted(rest.elements())) or "1", math.prod(int(f) for f in rest.elements()) if literal else _NO_VALUE
    )


def _either(test: Value, body: Any, orelse: Any) -> Any:
    """`body if test else orelse` for a test decided per case: one value the provider can write, or None."""
    if body == orelse:
        return body
    if isinstance(body, Value) and isinstance(orelse, Value):
        return Value(ast.unparse(ast.IfExp(_expr(test.code), _expr(body.code), _expr(orelse.code))))
    if isinstance(body, Tensor) and isinstance(orelse, Value) and orelse.known is None:
        return MaybeTensor(test, body)
    if isinstance(orelse, Tensor) and isinstance(body, Value) and body.known is None:
        return MaybeTensor(Value(_negated(test.code)), orelse)
    return None


def _nested_shape(data: Any) -> tuple[Value, ...] | None:
    if isinstance(data, Sequence):
        inner = [_nested_shape(item) for item in data.items]
        if data.items and (None in inner or len(set(inner)) != 1):
            return None
        return (Value(str(len(data.items)), len(data.items)), *(inner[0] if data.items else ()))
    return () if isinstance(data, Value) else None


class _Lift:
    """One lift: walks the legacy step to the launcher call, then the launcher to the kernel launch."""

    def __init__(self, modules: RepoModules, kernel_module: str, launcher: str):
        self.modules = modules
        self.kernel_module, self.launcher = kernel_module, launcher  # where the provider goes; whose launch it is
        self.parameters: dict[str, str] = {}  # provider parameter -> what the step read (`config.h`)
        self.statements: list[str] = []  # the provider's body, in order
        self.taken: set[str] = set()  # the provider's names so far
        self.dynamic: set[str] = set()  # provider locals that depend on the case being warmed (a domain)
        self.local_code: dict[str, str] = {}  # provider local -> the expression it is assigned
        self.guards: list[str] = []  # the case-independent `_when` conditions so far
        self.launcher_def: ast.FunctionDef | None = None

    # -- names -------------------------------------------------------------------------------------------
    def parameter(self, source: str, wanted: str) -> Value:
        for name, read in self.parameters.items():
            if read == source:
                return Value(name)
        name = self.fresh(wanted)
        self.parameters[name] = source
        return Value(name)

    def fresh(self, wanted: str) -> str:
        name, index = wanted, 2
        while name in self.taken or name in (
            "dict",
            "TritonWarmupTensor",
            "WarmupChoices",
            "WarmupIntRange",
            "_when",
            "torch",
            "triton",
        ):
            name, index = f"{wanted}_{index}", index + 1
        self.taken.add(name)
        return name

    def module_of(self, scope: _Scope, node: ast.expr) -> str | None:
        """The module a name refers to in `scope`'s module, when it names one (`torch`, `triton`)."""
        if not isinstance(node, ast.Name) or node.id in scope.env:
            return None
        target, attribute = self.modules.imports(scope.module).get(node.id, (None, "?"))
        if target is not None and target.endswith("triton_utils") and attribute in ("triton", "tl"):
            return attribute  # the engine's re-export of Triton itself
        return target if target is not None and attribute is None else None

    def is_module(self, scope: _Scope, node: ast.expr) -> bool:
        if isinstance(node, ast.Name) and node.id not in scope.env:
            found = self.modules.imports(scope.module).get(node.id)
            if found is not None and (found[1] is None or found[0].endswith("triton_utils")):
                return True
        return False

    def is_typing_cast(self, scope: _Scope, name: str) -> bool:
        return name not in scope.env and (
            _function_import(scope.function, name) or self.modules.imports(scope.module).get(name)
        ) == ("typing", "cast")

    def global_is_builtin(self, scope: _Scope, name: str) -> bool:
        return self.modules.definition(scope.module, name) is None and name not in self.modules.imports(scope.module)

    def global_value(self, scope: _Scope, node: ast.Name) -> Any:
        """A module-level name: a constant the tree spells out is copied; a module must be bound at home too."""
        name = node.id
        found = self.modules.imports(scope.module).get(name)
        local_import = _function_import(scope.function, name)
        if local_import is not None:
            found = local_import
        if found is not None and (found[1] is None or found[0].endswith("triton_utils")):
            home = self.modules.imports(self.kernel_module).get(name)
            if home != found:
                raise scope.refuse(
                    node, f"reads the module `{name}`, which {self.kernel_module} does not import under that name"
                )
            return Value(name)
        module, target = (found[0], found[1]) if found else (scope.module, name)
        module, target = self.modules.resolve(module, target)
        bindings = _module_bindings(self.modules.tree(module), target) if target else []
        definition = self.modules.definition(module, target) if target else None
        if len(bindings) > 1:
            raise scope.refuse(
                node,
                f"reads `{name}` ({module}), which its module binds {len(bindings)} times "
                "(the lift copies a constant only when it has one value)",
            )
        value = bindings[0].value if bindings and isinstance(bindings[0], (ast.Assign, ast.AnnAssign)) else None
        if value is not None:
            try:
                literal = ast.literal_eval(_frozen(value))
            except ValueError:
                literal = _NO_VALUE
            if literal is not _NO_VALUE:
                return _literal(literal)
        if name in dir(builtins) and found is None and definition is None:
            known = getattr(builtins, name)
            return Value(repr(known), known) if known in (True, False, None) else Value(name)
        if target and self.modules.resolve(self.kernel_module, name) == (module, target):
            return Value(name)  # the kernel's module names the same object: the provider may read it
        raise scope.refuse(
            node,
            f"reads `{name}` ({module}), which is not a constant the lift can copy and "
            f"not a name {self.kernel_module} binds",
        )

    # -- statements --------------------------------------------------------------------------------------
    def walk(self, scope: _Scope, body: list[ast.stmt], is_target, gates: bool = False) -> ast.AST | None:
        """Run `body` symbolically until `is_target(statement)` names the launch; return that node.

        `gates`: `body` is the legacy step's own; an early return there whose condition reads what the provider
        cannot (the platform, the runner) is a gate of the registration, which codemods.guards carries.
        """
        for index, statement in enumerate(body):
            found = is_target(scope, statement)
            if found is not None:
                return found
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # a docstring
            if isinstance(statement, (ast.Import, ast.ImportFrom, ast.Assert, ast.Pass, ast.Global)):
                continue
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                self._assign(scope, statement.targets[0].id, statement.value, statement)
                continue
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and _unpacked_names(statement.targets[0])
            ):
                self._unpack(scope, _unpacked_names(statement.targets[0]), statement.value, statement)
                continue
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
                self._assign(scope, statement.target.id, statement.value, statement)
                continue
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Call)
                and _is_side_effect_free(scope, statement.value)
            ):
                continue
            if isinstance(statement, ast.If):
                try:
                    test = scope.plain(statement.test)
                except LiftError:
                    if (
                        gates
                        and _exits(statement.body)
                        and not statement.orelse
                        and not _holds(scope, statement.body, is_target)
                    ):
                        continue
                    raise
                inside = _holds(scope, statement.body, is_target)
                elsewhere = _holds(scope, statement.orelse, is_target)
                if test.fixed:
                    branch = statement.body if test.known else statement.orelse
                    found = self.walk(scope, branch, is_target)
                    if found is not None:
                        return found
                    if _exits(branch):
                        return None
                    continue
                if inside or elsewhere:
                    self.when(test.code if inside else _negated(test.code))
                    return self.walk(scope, statement.body if inside else statement.orelse, is_target)
                if any(isinstance(n, ast.Break) for branch in (statement.body, statement.orelse) for n in branch):
                    raise scope.refuse(
                        statement,
                        "leaves its loop under a condition (`break`): the cases after it "
                        "depend on the order, which the provider's domains do not have",
                    )
                for branch, rest, keep in (
                    (statement.body, statement.orelse, _negated(test.code)),
                    (statement.orelse, statement.body, test.code),
                ):
                    if _exits(branch):
                        self.when(keep)  # the cases that get past it take the other branch
                        if not _exits(rest):
                            self.walk(scope, rest, is_target)
                        break
                else:
                    if _binds(statement.body) or _binds(statement.orelse):
                        self._merge(scope, statement, test)
                continue
            if isinstance(statement, ast.For) and _holds(scope, statement.body, is_target):
                self._domain(scope, statement)
                return self.walk(scope, statement.body, is_target)
            if isinstance(statement, (ast.With, ast.Try)):
                found = self.walk(scope, statement.body, is_target, gates)
                if found is not None:
                    return found
                continue
            if isinstance(statement, ast.Return) and index == len(body) - 1:
                return None
            if (
                not _binds([statement])
                and not _holds(scope, [statement], is_target)
                and not isinstance(statement, (ast.Return, ast.Raise, ast.Continue, ast.Break))
            ):
                continue
            first = ast.unparse(statement).splitlines()[0]
            raise scope.refuse(statement, f"the lift cannot translate this statement (`{first}`)")
        return None

    def when(self, condition: str) -> None:
        """A `_when(condition)`; one that holds or fails for every case alike also guards what follows it."""
        self.statements.append(f"_when({condition})")
        if not self.depends(condition) & self.dynamic:
            self.guards.append(condition)

    def depends(self, code: str) -> set[str]:
        """The provider names `code` reads, through its locals' definitions too."""
        names, pending = set(), list(_names_in(code))
        while pending:
            name = pending.pop()
            if name not in names:
                names.add(name)
                pending += _names_in(self.local_code.get(name, "None"))
        return names

    def guard(self, code: str) -> str | None:
        """The earlier case-independent `_when`s about a value `code` reads, as one test (None: there are none).
        vLLM's helper evaluates the provider's case-independent locals and its domains before it applies any
        `_when`, so one that reads what an early return of the step guarded (`x is None`) must be written to be
        evaluated only where that guard holds."""
        read = self.depends(code)
        conditions = [c for c in self.guards if _names_in(c) & read]
        return " and ".join(f"({c})" if " or " in c else c for c in conditions) or None

    def _assign(self, scope: _Scope, name: str, value: ast.expr, statement: ast.stmt) -> None:
        try:
            found = scope.value(value)
        except LiftError as exc:
            found = self._from_site(scope, value, name) or _Unknown(str(exc))
        if (
            isinstance(found, Value)
            and not found.fixed
            and scope.function.name != self.launcher
            and not found.code.isidentifier()
        ):
            local = self.fresh(name)
            dynamic = bool(self.depends(found.code) & self.dynamic)
            guard = None if dynamic else self.guard(found.code)
            self.statements.append(f"{local} = {found.code}" + (f" if {guard} else None" if guard else ""))
            self.local_code[local] = found.code
            if dynamic:
                self.dynamic.add(local)
            found = Value(local)
        scope.env[name] = found

    def _merge(self, scope: _Scope, statement: ast.If, test: Value) -> None:
        """An if/else whose condition depends on the case, setting values: each name it sets becomes
        `a if test else b` (a name neither branch can give one value reads as unknown, refused where read)."""
        if any(
            isinstance(n, (ast.Return, ast.Raise, ast.Continue, ast.Break))
            for branch in (statement.body, statement.orelse)
            for s in branch
            for n in ast.walk(s)
        ):
            raise scope.refuse(
                statement,
                "sets values under a condition the lift cannot decide "
                f"(`{ast.unparse(statement.test)}`) and leaves under another",
            )
        outcomes = []
        for branch in (statement.body, statement.orelse):
            inner, written = _Scope(self, scope.module, scope.function, dict(scope.env)), len(self.statements)
            try:
                self.walk(inner, branch, lambda _scope, _statement: None)
            except LiftError as exc:
                inner.env.update({name: _Unknown(str(exc)) for s in branch for name in _stored(s)})
            if len(self.statements) > written:  # a provider local the other cases would compute too
                del self.statements[written:]
                inner.env.update(
                    {
                        name: _Unknown(
                            scope.refuse(
                                statement,
                                f"sets `{name}` under a condition the lift cannot decide, from a value it computes",
                            ).args[0]
                        )
                        for s in branch
                        for name in _stored(s)
                    }
                )
            outcomes.append(inner.env)
        body, orelse = outcomes
        for name in {n for s in statement.body + statement.orelse for n in _stored(s)}:
            unknown = next((env[name] for env in outcomes if isinstance(env.get(name), _Unknown)), None)
            either = _either(test, body.get(name), orelse.get(name)) if unknown is None else None
            if either is None and unknown is None:
                unknown = _Unknown(
                    scope.refuse(
                        statement,
                        f"sets `{name}` under a condition the lift cannot decide "
                        f"(`{ast.unparse(statement.test)}`) to values it cannot "
                        "write as one",
                    ).args[0]
                )
            scope.env[name] = unknown if unknown is not None else either

    def _from_site(self, scope: _Scope, value: ast.expr, name: str) -> Value | None:
        """A value the provider cannot compute (the step calls legacy code, or reads what only the engine has)
        but that is one value per registration, not per warmed case: the registration passes it, a parameter
        whose source the confirm item quotes. None where it depends on the case being warmed, or on a tensor."""
        if scope.function is self.launcher_def or isinstance(value, (ast.Name, ast.Constant)):
            return None
        for read in _loads(value):
            bound = scope.env.get(read)
            if (
                isinstance(bound, (Tensor, MaybeTensor, _Unknown))
                or isinstance(bound, Value)
                and _names_in(bound.code) & self.dynamic
            ):
                return None
        where = f"{scope.where(value).rpartition(':')[2]}"
        return self.parameter(f"{ast.unparse(value)} ({scope.module}:{where})", name.lstrip("_"))

    def _inlined(self, scope: _Scope, loop: ast.For, code: str) -> str:
        """`code` with the provider's locals written out: vLLM's helper evaluates a domain with the provider's
        parameters only, before any of its assignments."""
        locals_ = self.local_code

        class Inline(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.expr:
                return Inline().visit(_expr(locals_[node.id])) if node.id in locals_ else node

        used = _names_in(code)
        if used & self.dynamic:
            raise scope.refuse(
                loop, "a loop whose values depend on another loop's value: the provider's domains are independent"
            )
        return ast.unparse(Inline().visit(_expr(code)))

    def _guarded_domain(self, domain: str) -> str:
        """A domain no case of which is evaluated where an earlier case-independent `_when` fails (empty there)."""
        call = _expr(domain)
        values = ast.unparse(
            call.args[0].value
            if len(call.args) == 1 and isinstance(call.args[0], ast.Starred)
            else ast.Tuple(call.args)
        )
        guard = self.guard(values)
        if guard is None:
            return domain
        empty = "(0, 0)" if call.func.id == "WarmupIntRange" else "()"
        return f"{call.func.id}(*({values} if {guard} else {empty}))"

    def _unpack(self, scope: _Scope, names: list[str], value: ast.expr, statement: ast.stmt) -> None:
        try:
            found = scope.value(value)
        except LiftError as exc:
            scope.env.update({name: _Unknown(str(exc)) for name in names})
            return
        if isinstance(found, Value) and not found.fixed:
            found = Sequence(tuple(Value(f"{found.code}[{index}]") for index in range(len(names))))
        if not isinstance(found, Sequence) or len(found.items) != len(names):
            why = scope.refuse(statement, f"unpacks `{ast.unparse(value)}` into {len(names)} names")
            scope.env.update({name: _Unknown(str(why)) for name in names})
            return
        scope.env.update(zip(names, found.items))

    def _domain(self, scope: _Scope, loop: ast.For) -> None:
        names = [loop.target.id] if isinstance(loop.target, ast.Name) else _unpacked_names(loop.target)
        if not names or loop.orelse:
            raise scope.refuse(
                loop, "a loop whose variable is not one name or a tuple of names (or with an else) is not translated"
            )
        iterable = loop.iter
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "range"
            and "range" not in scope.env
        ):
            bounds = [scope.plain(a).code for a in iterable.args]
            domain = f"WarmupIntRange({', '.join(bounds if len(bounds) > 1 else ['0', *bounds])})"
        else:
            try:
                values = scope.value(iterable)
            except LiftError:
                values = self._from_site(scope, iterable, "_".join(names) + "_values")
                if values is None:
                    raise
            if isinstance(values, Sequence):
                items = [scope._as_value(iterable, v) for v in values.items]
                if isinstance(iterable, ast.Set) or any(isinstance(n, ast.Set) for n in ast.walk(iterable)):
                    items = list({i.code: i for i in items}.values())
                domain = f"WarmupChoices({', '.join(i.code for i in items)})"
            elif isinstance(values, Value):
                domain = f"WarmupChoices(*{values.code})"
            else:
                raise scope.refuse(loop, f"a loop over `{ast.unparse(iterable)}`, which the lift cannot read")
        domain = self._inlined(scope, loop, self._guarded_domain(domain))
        local = self.fresh(names[0] if len(names) == 1 else "_".join(names))
        self.statements.append(f"{local} = {domain}")
        self.dynamic.add(local)
        if len(names) == 1:
            scope.env[names[0]] = Value(local)
            return
        for index, name in enumerate(names):  # each a named part of the domain's value
            part = self.fresh(name)
            self.statements.append(f"{part} = {local}[{index}]")
            self.dynamic.add(part)
            scope.env[name] = Value(part)


def _names_in(code: str) -> set[str]:
    return {n.id for n in ast.walk(_expr(code)) if isinstance(n, ast.Name)}


def _unpacked_names(target: ast.expr) -> list[str]:
    """`a, b = ...`'s names (empty for any other target)."""
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]
    return []


class _Unknown:
    """A name whose value the lift could not read (an error only if the launch needs it)."""

    def __init__(self, why: str):
        self.why = why


def _module_bindings(tree: ast.Module | None, name: str) -> list[ast.stmt]:
    """The module-level statements that bind `name` by assignment (a constant has exactly one)."""
    found = []
    for statement in getattr(tree, "body", []):
        targets = (
            statement.targets
            if isinstance(statement, ast.Assign)
            else [statement.target]
            if isinstance(statement, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found.append(statement)
    return found


def _frozen(node: ast.expr) -> ast.expr:
    """`frozenset({...})` / `tuple(...)` of a literal as the literal (for ast.literal_eval)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "tuple", "set")
        and len(node.args) == 1
    ):
        return node.args[0]
    return node


def _literal(value: Any) -> Any:
    if isinstance(value, (tuple, list, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return Sequence(tuple(_literal(v) for v in items))
    return Value(repr(value), value)


def _function_import(function: ast.FunctionDef, name: str) -> tuple[str, str | None] | None:
    for node in ast.walk(function):
        if isinstance(node, ast.ImportFrom) and not node.level:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return node.module, alias.name
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    return alias.name if alias.asname else alias.name.split(".")[0], None
    return None


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue))


def _binds(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) for s in body for n in ast.walk(s))


def _holds(scope: _Scope, body: list[ast.stmt], is_target) -> bool:
    return any(is_target(scope, s) is not None for stmt in body for s in ast.walk(stmt) if isinstance(s, ast.stmt))


def _is_side_effect_free(scope: _Scope, call: ast.Call) -> bool:
    """A call statement that compiles nothing: logging, a tensor's in-place initialisation."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "logger":
        return func.attr in _LOGGING
    if isinstance(func, ast.Attribute) and func.attr in _SAME_TENSOR and isinstance(func.value, ast.Name):
        return isinstance(scope.env.get(func.value.id), Tensor)
    return False


def _function(modules: RepoModules, module: str, name: str, what: str) -> ast.FunctionDef:
    home, target = modules.resolve(module, name)
    node = modules.definition(home, target) if target else None
    if not isinstance(node, ast.FunctionDef):
        raise LiftError(f"{what} {module}.{name} is not a function defined in the repo")
    return node


def _is_triton_kernel(modules: RepoModules, module: str, name: str) -> bool:
    """`name`, read in `module`, is a function of the repo decorated as a Triton kernel."""
    home, target = modules.resolve(module, name)
    node = modules.definition(home, target) if target else None
    return isinstance(node, ast.FunctionDef) and any(
        ast.unparse(d.func if isinstance(d, ast.Call) else d).endswith(("jit", "heuristics", "autotune"))
        for d in node.decorator_list
    )


def launched_kernels(modules: RepoModules, module: str, launcher: str) -> list[str]:
    """The Triton kernels of the repo that `module.launcher` launches (`kernel[grid](...)`), by the names it uses."""
    function = _function(modules, module, launcher, "the launcher")
    names = [
        node.func.value.id
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name)
    ]
    return [name for name in dict.fromkeys(names) if _is_triton_kernel(modules, module, name)]


def _kernel_parameters(kernel: ast.FunctionDef) -> list[str]:
    return [a.arg for a in kernel.args.posonlyargs + kernel.args.args + kernel.args.kwonlyargs]


def _bind_call(scope: _Scope, function: ast.FunctionDef, call: ast.Call) -> dict[str, Any]:
    """The values `call` passes to `function`'s parameters (with the function's own defaults for the rest)."""
    args = function.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg or args.kwarg:
        raise scope.refuse(call, f"{function.name} takes *args/**kwargs: the dispatcher needs explicit parameters")
    bound: dict[str, ast.expr] = dict(zip(positional, call.args))
    bound.update({k.arg: k.value for k in call.keywords})
    return {name: scope.value(value) for name, value in bound.items()}


def _defaults(function: ast.FunctionDef) -> dict[str, ast.expr]:
    args = function.args
    positional = args.posonlyargs + args.args
    out = {a.arg: d for a, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults)}
    out.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return out


def binding_target(input_name: str, kernel_parameters: set[str]) -> str | None:
    """The kernel parameter the engine's Triton helper binds a dispatcher input to (`x`, `x_ptr`, `X`, `X_PTR`)."""
    pointer = f"{input_name}_ptr"
    return next((c for c in (input_name, pointer, input_name.upper(), pointer.upper()) if c in kernel_parameters), None)


def plan_lift(
    modules: RepoModules,
    *,
    kernel_module: str,
    kernel: str,
    launcher_module: str,
    launcher: str,
    step_module: str,
    step: str,
    dispatcher_name: str,
    provider_name: str,
    helper_module: str,
    jit_module: str,
    together: tuple[str, ...] = (),
) -> LiftPlan:
    """The dispatcher and provider for `kernel`, launched by `launcher` and warmed by the legacy `step`.

    together: the launcher's other kernels the same migration lifts (each to its own dispatcher); the launcher
    may launch no other Triton kernel, since the step's deletion would take that kernel's warmup with it.
    """
    kernel_def = _function(modules, kernel_module, kernel, "the kernel")
    shown = lambda module: modules.path(module).relative_to(modules.repo).as_posix()  # noqa: E731 - file:line
    for decorator in kernel_def.decorator_list:
        written = ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
        if written.endswith("autotune"):
            raise LiftError(
                f"{shown(kernel_module)}:{kernel_def.lineno}: {kernel} is autotuned (@{written}): the "
                "engine's "
                "helper launches an autotuned kernel for real to pick its config, which a compile-only "
                "warmup cannot do; warm it by hand"
            )
        if not (written.endswith("jit") or written.endswith("heuristics")):
            raise LiftError(
                f"{shown(kernel_module)}:{kernel_def.lineno}: {kernel} is decorated with @{written}, "
                "not "
                "@triton.jit or @triton.heuristics"
            )
    launcher_def = _function(modules, launcher_module, launcher, "the launcher")
    step_def = _function(modules, step_module, step, "the legacy step")
    lift = _Lift(modules, kernel_module, launcher)
    lift.launcher_def = launcher_def
    kernel_parameters = _kernel_parameters(kernel_def)
    launch = _launch_statement(modules, launcher_module, launcher_def, kernel_module, kernel)
    if launch is None:
        raise LiftError(
            f"{shown(launcher_module)}:{launcher_def.lineno}: {launcher} has no `{kernel}[grid](...)` "
            "statement "
            "at its top level (a launch under a condition or in a loop is not lifted)"
        )
    for node in ast.walk(launcher_def):
        if not (isinstance(node, ast.Subscript) and node is not launch.value.func and isinstance(node.value, ast.Name)):
            continue
        if modules.resolve(launcher_module, node.value.id) == modules.resolve(kernel_module, kernel):
            raise LiftError(
                f"{shown(launcher_module)}:{node.lineno}: {launcher} launches {kernel} here too; the "
                "lift moves one launch, and the warmup of this one would be lost (put each on the "
                "dispatcher by hand)"
            )
        if _is_triton_kernel(modules, launcher_module, node.value.id) and node.value.id not in together:
            raise LiftError(
                f"{shown(launcher_module)}:{node.lineno}: {launcher} also launches {node.value.id}, "
                "which the legacy step warms through the same call: the migration would delete that "
                f"warmup with the step (lift {node.value.id} in the same migration, with a spec of its "
                "own and its own dispatcher name)"
            )
    launches = [launch]
    for other in together:
        found = _launch_statement(modules, launcher_module, launcher_def, kernel_module, other)
        if found is None:
            raise LiftError(
                f"{shown(launcher_module)}:{launcher_def.lineno}: {launcher} has no `{other}[grid](...)` "
                "statement at its top level to lift with this one"
            )
        launches.append(found)

    # The step, run up to its call of the launcher.
    step_scope = _Scope(lift, step_module, step_def, {})
    for argument in step_def.args.posonlyargs + step_def.args.args + step_def.args.kwonlyargs:
        annotation = ast.unparse(argument.annotation) if argument.annotation else ""
        step_scope.env[argument.arg] = (
            DEVICE if argument.arg == "device" or "device" in annotation else Facts(argument.arg)
        )

    wanted = modules.resolve(launcher_module, launcher)

    def towards_launcher(scope: _Scope, statement: ast.stmt) -> ast.Call | None:
        """The statement's call of the launcher, or of an engine function that (in turn) calls it."""
        call = getattr(statement, "value", None) if isinstance(statement, (ast.Expr, ast.Assign, ast.Return)) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id not in scope.env:
            target = callee(modules, scope.module, scope.function, call.func.id)
            if target == wanted or reaches(modules, *target, wanted):
                return call
        return None

    _check_step(modules, step_module, step_def, wanted)
    scope, call = step_scope, lift.walk(step_scope, step_def.body, towards_launcher, gates=True)
    while call is not None and callee(modules, scope.module, scope.function, call.func.id) != wanted:
        # An engine function between the step and the launcher (the op the step calls): run it too.
        home, name = callee(modules, scope.module, scope.function, call.func.id)
        function = modules.definition(home, name)
        inner = _Scope(lift, home, function, {})
        bound = _bind_call(scope, function, call)
        for parameter, default in _defaults(function).items():
            bound.setdefault(parameter, inner.value(default))
        inner.env.update(bound)
        scope, call = inner, lift.walk(inner, function.body, towards_launcher)
    if call is None:
        raise LiftError(
            f"{shown(step_module)}:{step_def.lineno}: {step} never calls {launcher} (or an engine "
            "function "
            "that calls it) as a statement the lift follows"
        )
    step_scope = scope
    bound = _bind_call(step_scope, launcher_def, call)
    launcher_scope = _Scope(lift, launcher_module, launcher_def, {})
    for name, default in _defaults(launcher_def).items():
        bound.setdefault(name, launcher_scope.value(default))
    missing = [a.arg for a in launcher_def.args.args + launcher_def.args.kwonlyargs if a.arg not in bound]
    if missing:
        raise LiftError(f"{shown(step_module)}:{call.lineno}: the step's call passes no {', '.join(missing)}")
    launcher_scope.env.update(bound)
    reached = lift.walk(launcher_scope, launcher_def.body, lambda scope, s: s if s is launch else None)
    if reached is None:
        raise LiftError(
            f"{shown(launcher_module)}:{launch.lineno}: the step's arguments never reach the launch "
            "(the launcher returns before it)"
        )

    inputs, kept = _dispatcher_inputs(modules, launcher_module, launcher_def, launch)
    _check_copies(shown(launcher_module), launcher_def, launch, inputs, kept)
    # What the launcher keeps is decided over every launch the migration moves: the dispatchers copy what they
    # need, so a statement only launches read goes even when two of them read it.
    copied = list(
        dict.fromkeys(
            kept
            + [
                s
                for other in launches[1:]
                for s in _dispatcher_inputs(modules, launcher_module, launcher_def, other)[1]
            ]
        )
    )
    source = modules.path(launcher_module).read_text()
    arguments = _launch_arguments(launch, kernel_parameters, shown(launcher_module), source)
    arguments += _defaults_the_helper_would_fill(
        kernel_def, shown(launcher_module), launch, inputs, arguments, modules.path(kernel_module).read_text()
    )
    names = set(kernel_parameters)
    passed = {name: code for name, code in arguments}
    omitted = set()
    for name in inputs:
        target = binding_target(name, names)
        if (
            target is not None
            and passed[target] == name
            and sum(binding_target(n, names) == target for n in inputs) == 1
        ):
            omitted.add(target)
    values = []
    for name in inputs:
        value = launcher_scope.env.get(name)
        if isinstance(value, _Unknown) or value is None:
            raise LiftError(
                value.why
                if value is not None
                else f"{shown(launcher_module)}:{launch.lineno}: the launch reads {name}, which the lift cannot follow"
            )
        if isinstance(value, Device):
            raise LiftError(f"{shown(launcher_module)}:{launch.lineno}: the launch passes a device ({name})")
        code = (
            value.code() if isinstance(value, (Tensor, MaybeTensor)) else launcher_scope._as_value(launch, value).code
        )
        values.append(f"{name}={code}")
    grid = ast.get_source_segment(source, launch.value.func.slice)
    launch_kwargs = [f"{name}={code}" for name, code in arguments if name not in omitted]
    annotations = {
        a.arg: ast.get_source_segment(source, a.annotation)
        for a in launcher_def.args.args + launcher_def.args.kwonlyargs
        if a.annotation is not None
    }
    signature = ", ".join(f"{n}: {annotations[n]}" if n in annotations else n for n in inputs)
    dispatcher = (
        f"@triton_kernel_dispatcher_with_warmup(kernel={kernel}, warmup_inputs={provider_name})\n"
        f"def {dispatcher_name}({signature}) -> DispatchSpec:\n"
        + _docstring(
            f"{launcher}'s launch of {kernel}: the grid and the arguments the inputs do not "
            "bind, so the JIT warmup registry can compile it ahead of time."
        )
    )
    returned = f"return {grid}, " + (f"dict({', '.join(launch_kwargs)})" if launch_kwargs else "{}")
    statements = _read_by(lift.statements, f"dict({', '.join(values)})")
    written = ast.parse("\n".join([*statements, *values]))  # the provider's body: assignments and `_when`s
    odd = next(
        (n for n in ast.walk(written) if not isinstance(n, (*_EXPANDABLE, ast.Module, ast.Expr, ast.Assign))), None
    )
    if odd is not None:
        raise LiftError(
            f"{shown(step_module)}:{step_def.lineno}: the provider would need `{ast.unparse(odd)}` "
            f"({type(odd).__name__}), which vLLM's helper does not expand"
        )
    # What the step read that only the launcher's other kernels use is not this provider's to take.
    read = _loads(written)
    used = {name: what for name, what in lift.parameters.items() if name in read}
    parameters = tuple(used)
    removed = _unread_after(launcher_def, launches, copied)
    header = f"def {provider_name}(*, {', '.join(parameters)}):" if parameters else f"def {provider_name}():"
    provider = (
        header
        + "\n"
        + _docstring(f"What the legacy {step} warmed {kernel} with, as {dispatcher_name} inputs.")
        + "".join(f"    {s}\n" for s in statements)
        + f"    return dict({', '.join(values)})\n"
    )
    used_helpers = [
        (helper_module, n)
        for n in ("DispatchSpec", "TritonWarmupTensor", "triton_kernel_dispatcher_with_warmup")
        if n in provider + dispatcher
    ]
    used_helpers += [(jit_module, n) for n in ("WarmupChoices", "WarmupIntRange", "_when") if f"{n}(" in provider]
    return LiftPlan(
        provider,
        dispatcher,
        returned,
        tuple(s.lineno for s in kept),
        tuple(s.lineno for s in removed),
        tuple(_unread_names(launcher_def, launches, copied, removed)),
        launch.lineno,
        f"{dispatcher_name}({', '.join(f'{n}={n}' for n in inputs)})",
        tuple(used.items()),
        tuple(used_helpers),
    )


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _stored(statement: ast.stmt) -> list[str]:
    return [n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _unread_names(
    launcher: ast.FunctionDef, launches: list[ast.stmt], copied: list[ast.stmt], removed: list[ast.stmt]
) -> list[tuple[int, str]]:
    """(line, name) of names a copied `a, b = ...` the launcher keeps binds that it no longer reads (they become
    `_`); `removed`: the copied statements it no longer keeps (`_unread_after`)."""
    staying = [s for s in copied if s not in removed]
    reads = set().union(*(_loads(s) for s in launcher.body if s not in launches and s not in removed))
    return [
        (s.lineno, name)
        for s in staying
        if isinstance(s, ast.Assign) and _unpacked_names(s.targets[0])
        for name in _unpacked_names(s.targets[0])
        if name not in reads
    ]


def _unread_after(launcher: ast.FunctionDef, launches: list[ast.stmt], copied: list[ast.stmt]) -> list[ast.stmt]:
    """The copied statements the launcher no longer reads once dispatchers make its `launches`."""
    rest = set().union(*(_loads(s) for s in launcher.body if s not in launches and s not in copied))
    staying, removed = list(copied), []
    changed = True
    while changed:
        changed = False
        for statement in list(staying):
            others = rest.union(*(_loads(s) for s in staying if s is not statement))
            if not set(_stored(statement)) & others:
                staying.remove(statement)
                removed.append(statement)
                changed = True
    return sorted(removed, key=launcher.body.index)


def _docstring(text: str, width: int = 79) -> str:
    """A function's docstring, wrapped so no line passes `width` (PEP 8's, within any repo's limit)."""
    lines = textwrap.wrap(text, width - 7)
    if len(lines) == 1:
        return f'    """{lines[0]}"""\n'
    return '    """' + "\n    ".join(lines) + '\n    """\n'


def _read_by(statements: list[str], used: str) -> list[str]:
    """The provider's statements that its return reads, directly or through a later statement (`_when` stays)."""
    kept: list[str] = []
    for statement in reversed(statements):
        target = statement.split(" = ", 1)[0] if " = " in statement and not statement.startswith("_when(") else None
        reads = "\n".join([used, *kept])
        if target is None or target in {n.id for n in ast.walk(ast.parse(reads)) if isinstance(n, ast.Name)}:
            kept.insert(0, statement)
    return kept


def _check_step(modules: RepoModules, module: str, step: ast.FunctionDef, wanted: tuple[str, str]) -> None:
    """The step goes with the migration: it must call the launcher exactly once and do nothing else that a
    deletion would lose (another kernel's warmup, a call kept for its effect); logging and filling the tensors
    it allocates are fine."""
    where = lambda node: f"{modules.path(module).relative_to(modules.repo).as_posix()}:{node.lineno}"  # noqa: E731
    reaching = [
        call
        for call in ast.walk(step)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and ((target := callee(modules, module, step, call.func.id)) == wanted or reaches(modules, *target, wanted))
    ]
    if len(reaching) > 1:
        raise LiftError(
            f"{where(reaching[1])}: {step.name} reaches {wanted[1]} more than once; the provider "
            "translates one call (move each into its own step, or write the provider by hand)"
        )
    for statement in (n for n in ast.walk(step) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)):
        func = statement.value.func
        if (
            statement.value in reaching
            or isinstance(func, ast.Attribute)
            and (
                isinstance(func.value, ast.Name)
                and func.value.id == "logger"
                and func.attr in _LOGGING
                or func.attr in _SAME_TENSOR
            )
        ):
            continue
        raise LiftError(
            f"{where(statement)}: {step.name} also runs `{ast.unparse(func)}(...)`, which the migration "
            "would delete with the step; move it out of the step first"
        )


def callee(modules: RepoModules, module: str, function: ast.FunctionDef, name: str) -> tuple[str, str | None]:
    """What `name` called in `function` (of `module`) is: a name it imports itself, or one of its module's."""
    found = _function_import(function, name) or modules.imports(module).get(name)
    return modules.resolve(*found) if found and found[1] else modules.resolve(module, name)


def reaches(modules: RepoModules, module: str, name: str | None, wanted: tuple[str, str], depth: int = 3) -> int:
    """How many calls deep `module.name`, an engine function, calls `wanted` (itself: 1; 0: not within `depth`)."""
    function = modules.definition(module, name) if name else None
    if not isinstance(function, ast.FunctionDef) or depth == 0:
        return 0
    found = []
    for call in (n for n in ast.walk(function) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
        target = callee(modules, module, function, call.func.id)
        if target == wanted:
            return 1
        inner = reaches(modules, *target, wanted, depth - 1) if target != (module, name) else 0
        found += [inner + 1] if inner else []
    return min(found, default=0)


def _defaults_the_helper_would_fill(
    kernel: ast.FunctionDef,
    launcher_file: str,
    launch: ast.Expr,
    inputs: list[str],
    arguments: list[tuple[str, str]],
    kernel_source: str,
) -> list[tuple[str, str]]:
    """Kernel parameters the launch leaves to their defaults that the engine's helper would fill: from an input
    of their name (`x`, `x_ptr`, `X`, `X_PTR`) or from a bound input's stride (`<x>_stride[_N]`). Each is
    passed its default explicitly, so the dispatcher launches what the launcher did."""
    names = _kernel_parameters(kernel)
    passed = {name for name, _ in arguments}
    bound = passed | {t for n in inputs if (t := binding_target(n, set(names))) is not None}
    positional = kernel.args.posonlyargs + kernel.args.args
    defaults = {a.arg: d for a, d in zip(positional[::-1], kernel.args.defaults[::-1])}
    defaults.update({a.arg: d for a, d in zip(kernel.args.kwonlyargs, kernel.args.kw_defaults) if d is not None})
    filled = []
    for name in names:
        if name in passed:
            continue
        stem, separator, dim = name.rpartition("_stride") if "_stride" in name else name.rpartition("_STRIDE")
        dim = dim.removeprefix("_")
        source = stem if stem in bound else f"{stem}_ptr" if separator == "_stride" else f"{stem}_PTR"
        strided = bool(separator) and (not dim or dim.isdigit()) and source in bound
        if name in bound or strided:
            if name not in defaults:
                raise LiftError(
                    f"{launcher_file}:{launch.lineno}: the engine's helper would fill the kernel "
                    f"parameter {name}, which the launch does not pass"
                )
            filled.append((name, ast.get_source_segment(kernel_source, defaults[name])))
    return filled


def _check_copies(
    module: str, launcher: ast.FunctionDef, launch: ast.stmt, inputs: list[str], copied: list[ast.stmt]
) -> None:
    """The dispatcher can copy these statements: none of them shares its line with another statement, and none
    sets a name the dispatcher takes as an input (the copy would overwrite what the launcher passes)."""
    lines = [s.lineno for s in launcher.body]
    for statement in copied:
        if lines.count(statement.lineno) > 1 or launcher.body[lines.index(statement.lineno)] is not statement:
            raise LiftError(
                f"{module}:{statement.lineno}: this line holds several statements; split it before "
                "the lift copies one of them"
            )
        clobbered = sorted(set(_stored(statement)) & set(inputs))
        if clobbered:
            raise LiftError(
                f"{module}:{statement.lineno}: the launch needs {', '.join(clobbered)} as the launcher "
                "leaves it, which this statement (copied into the dispatcher) would set again"
            )
    if lines.count(launch.lineno) > 1:
        raise LiftError(f"{module}:{launch.lineno}: the launch shares its line with another statement")


def _launch_statement(
    modules: RepoModules, module: str, launcher: ast.FunctionDef, kernel_module: str, kernel: str
) -> ast.Expr | None:
    """The launcher's top-level `kernel[grid](...)` statement."""
    for statement in launcher.body:
        if (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Subscript)
            and isinstance(statement.value.func.value, ast.Name)
        ):
            name = statement.value.func.value.id
            if modules.resolve(module, name) == modules.resolve(kernel_module, kernel):
                return statement
    return None


def _launch_arguments(
    launch: ast.Expr, kernel_parameters: list[str], module: str, source: str
) -> list[tuple[str, str]]:
    call = launch.value
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise LiftError(f"{module}:{launch.lineno}: the launch unpacks its arguments (*args/**kwargs)")
    if len(call.args) > len(kernel_parameters):
        raise LiftError(f"{module}:{launch.lineno}: the launch passes more arguments than the kernel takes")
    named = [(name, ast.get_source_segment(source, value)) for name, value in zip(kernel_parameters, call.args)]
    return named + [(k.arg, ast.get_source_segment(source, k.value)) for k in call.keywords]


def _dispatcher_inputs(
    modules: RepoModules, module: str, launcher: ast.FunctionDef, launch: ast.Expr
) -> tuple[list[str], list[ast.stmt]]:
    """The dispatcher's parameters (what the launch reads that the launcher does not compute purely before it)
    and the launcher's statements it copies (those pure computations, in order)."""
    index = launcher.body.index(launch)
    before = launcher.body[:index]
    definitions: dict[str, list[ast.stmt]] = {}
    for statement in before:
        for name in dict.fromkeys(_stored(statement)):
            definitions.setdefault(name, []).append(statement)
    parameters = [a.arg for a in launcher.args.posonlyargs + launcher.args.args + launcher.args.kwonlyargs]
    inputs: list[str] = []
    kept: list[ast.stmt] = []

    def need(node: ast.AST) -> None:
        for name in sorted(
            {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)},
            key=lambda n: (n not in parameters, n),
        ):
            statements = definitions.get(name, [])
            if len(statements) == 1 and _pure_assignment(statements[0], name):
                if statements[0] not in kept:
                    kept.append(statements[0])
                    need(statements[0].value if isinstance(statements[0], ast.Assign) else statements[0])
            elif statements or name in parameters:
                if name not in inputs:
                    inputs.append(name)

    need(launch)
    order = {name: i for i, name in enumerate(parameters)}
    inputs.sort(
        key=lambda n: (order.get(n, len(order)), min((before.index(s) for s in definitions.get(n, [])), default=0))
    )
    return inputs, kept


def _pure_assignment(statement: ast.stmt, name: str) -> bool:
    """`name = <expression>` that allocates nothing and calls only shape arithmetic, or an if/else of such
    assignments under such a condition (copied into the dispatcher)."""
    if isinstance(statement, ast.If):  # each branch sets every name it sets, from what was there before
        sets = [{n for s in branch for n in _stored(s)} for branch in (statement.body, statement.orelse)]
        return (
            name in sets[0]
            and sets[0] == sets[1]
            and not sets[0] & _loads(statement)
            and _pure_expression(statement.test)
            and all(_pure_assignment(s, n) for s in statement.body + statement.orelse for n in _stored(s)[:1])
        )
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and (
            isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == name
            or name in _unpacked_names(statement.targets[0])
        )
    ):
        return False
    return _pure_expression(statement.value)


def _pure_expression(expression: ast.expr) -> bool:
    for node in ast.walk(expression):
        if isinstance(node, ast.Call):
            func = node.func
            callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if callee not in _PURE_BUILTINS | _PURE_MATH | _TENSOR_FACTS | {"is_arch_support_pdl"}:
                return False
        if isinstance(node, (ast.NamedExpr, ast.Await, ast.Yield, ast.Lambda)):
            return False
    return True
