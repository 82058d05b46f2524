"""The expression evaluator: one function's names and what an expression of it evaluates to, symbolically.

Expressions dispatch on their node type (`Scope._<Node>`); tensor methods through `TENSOR_METHODS`, one entry
per method."""

from __future__ import annotations

import ast
import builtins
import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..syntax import negated
from .layout import contiguous, is_contiguous, like, parts, reshaped, transposed
from .tables import (
    COMPARE,
    NEW_TENSORS,
    NO_VALUE,
    PURE_BUILTINS,
    PURE_MATH,
    SAME_TENSOR,
    TORCH_LIKE,
    TORCH_TENSORS,
)
from .values import (
    DEVICE,
    Device,
    Facts,
    Keywords,
    LiftError,
    MaybeTensor,
    Sequence,
    Tensor,
    Unknown,
    Value,
    binary,
    choice_of,
    is_bool,
    kind_of,
    negated_code,
    nested_shape,
    parse_expr,
    per_case,
)

if TYPE_CHECKING:
    from .provider import Lift


class Scope:
    """One function's symbolic state: its module (for globals) and its names' values."""

    def __init__(self, lift: Lift, module: str, function: ast.FunctionDef, env: dict[str, Any]):
        self.lift, self.module, self.function, self.env = lift, module, function, env

    def where(self, node: ast.AST) -> str:
        return self.lift.modules.where(self.module, getattr(node, "lineno", self.function.lineno))

    def refuse(self, node: ast.AST, why: str) -> LiftError:
        return LiftError(self.where(node), why)

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
            raise self.refuse(node, f"`{ast.unparse(node)}` is used as a number, but it is a {kind_of(found)}")
        return found

    def _Constant(self, node: ast.Constant) -> Value:
        return Value(repr(node.value), node.value)

    def _Name(self, node: ast.Name) -> Any:
        if isinstance(self.env.get(node.id), Unknown):
            raise self.env[node.id].error  # why its value could not be read, where it was assigned
        if node.id in self.env:
            return self.env[node.id]
        return self.lift.global_value(self, node)

    def _Attribute(self, node: ast.Attribute) -> Any:
        holder = self._raw(node.value)
        if isinstance(holder, MaybeTensor):
            holder = holder.tensor
        computed = dict(holder.computed).get(node.attr) if isinstance(holder, Facts) else None
        if computed is not None:  # a property of the step's config, computed as the property does
            return Scope(self.lift, self.module, self.function, {"self": holder}).value(parse_expr(computed))
        if isinstance(holder, Facts):
            found = self.lift.parameter(f"{holder.name}.{node.attr}", node.attr)
            if node.attr in holder.tensors:
                self.lift.tensors.add(found.code)
            return found
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
                return transposed(holder, 0, 1)
            raise self.refuse(node, f"reads `.{node.attr}` of a tensor, which the lift does not model")
        if isinstance(holder, Device):
            return Value(repr("cuda"), "cuda") if node.attr == "type" else holder
        if isinstance(holder, Value):
            return Value(ast.unparse(ast.Attribute(parse_expr(holder.code), node.attr)))
        raise self.refuse(node, f"reads `.{node.attr}` of a {kind_of(holder)}")

    def _Subscript(self, node: ast.Subscript) -> Any:
        holder = self.value(node.value)
        if isinstance(holder, Tensor):
            raise self.refuse(node, "indexes a tensor (a view the lift does not model)")
        index = self.value(node.slice) if not isinstance(node.slice, ast.Slice) else None
        if isinstance(holder, Keywords) and isinstance(index, Value) and index.known in dict(holder.items):

            def missing() -> Any:
                raise self.refuse(node, f"`{ast.unparse(node)}` is missing in some cases (a KeyError there)")

            found = per_case(dict(holder.items)[index.known], missing)
            if found is None:
                raise self.refuse(
                    node, f"`{ast.unparse(node)}` is chosen per case between values the lift cannot write as one"
                )
            return found
        if isinstance(holder, Sequence) and isinstance(index, Value) and isinstance(index.known, int):
            return holder.items[index.known]
        if isinstance(holder, Sequence) and isinstance(node.slice, ast.Slice) and node.slice.step is None:
            low = self.plain(node.slice.lower).known if node.slice.lower else None
            high = self.plain(node.slice.upper).known if node.slice.upper else None
            if all(v is None or isinstance(v, int) for v in (low, high)):
                return Sequence(holder.items[low:high])
        if isinstance(holder, Value) and isinstance(index, Value):
            return Value(ast.unparse(ast.Subscript(parse_expr(holder.code), parse_expr(index.code))))
        if isinstance(holder, Value) and isinstance(node.slice, ast.Slice):  # a value the registration passes
            # Written `x[slice(a, b)]`: vLLM's helper expands a provider's expressions by AST, and takes no `a:b`.
            parts = [node.slice.lower, node.slice.upper] + ([node.slice.step] if node.slice.step else [])
            bounds = ", ".join("None" if part is None else self.plain(part).code for part in parts)
            return Value(f"{ast.unparse(parse_expr(holder.code))}[slice({bounds})]")
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

    def _Dict(self, node: ast.Dict) -> Keywords:
        """A dict of keyword arguments, as a call unpacks it with `**`: string keys, and `**` of such dicts."""
        items: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                items.update(self.keywords(node, value).items)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                items[key.value] = self.value(value)
            else:
                raise self.refuse(node, "builds a dict whose keys are not all strings written out (keyword names)")
        return Keywords(tuple(items.items()))

    def keywords(self, node: ast.AST, spread: ast.expr) -> Keywords:
        """What `**spread` (or `dict(spread)`) passes: a dict of keywords the code builds."""
        found = self.value(spread)
        if not isinstance(found, Keywords):
            raise self.refuse(
                node, f"`{ast.unparse(spread)}` is no dict of keywords the lift can read as the code builds it"
            )
        return found

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
        name, saved = loop.target.id, self.env.get(loop.target.id, NO_VALUE)
        try:
            items = []
            for part in parts.items:
                self.env[name] = part
                items.append(self.value(node.elt))
        finally:
            if saved is NO_VALUE:
                self.env.pop(name, None)
            else:
                self.env[name] = saved
        return Sequence(tuple(items))

    _ListComp = _GeneratorExp

    def _BinOp(self, node: ast.BinOp) -> Value:
        left, right = self.value(node.left), self.value(node.right)
        if isinstance(node.op, ast.Add) and isinstance(left, Sequence) and isinstance(right, Sequence):
            return Sequence(left.items + right.items)
        return binary(node.op, self._as_value(node.left, left), self._as_value(node.right, right))

    def _UnaryOp(self, node: ast.UnaryOp) -> Value:
        if isinstance(node.op, ast.Not) and isinstance(flipped := negated(node.operand), ast.Compare):
            return self.plain(ast.copy_location(flipped, node))  # `not (x is None)` read as `x is not None`
        operand = self.plain(node.operand)
        if operand.fixed:
            value = {
                ast.Not: operator.not_,
                ast.USub: operator.neg,
                ast.UAdd: operator.pos,
                ast.Invert: operator.invert,
            }[type(node.op)](operand.known)
            return Value(repr(value), value)
        if isinstance(node.op, ast.Not) and is_bool(parse_expr(flipped := negated_code(operand.code))):
            return Value(flipped)  # `length > 1`, not `not length <= 1`
        return Value(ast.unparse(ast.UnaryOp(node.op, parse_expr(operand.code))))

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
        return Value(ast.unparse(ast.BoolOp(node.op, [parse_expr(p.code) for p in kept]))) if len(kept) > 1 else kept[0]

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
                return optional.test if is_not else Value(negated_code(optional.test.code))
            if any(
                isinstance(v, (Tensor, Device, Sequence)) or getattr(v, "code", None) in self.lift.tensors
                for v in values
            ):
                return Value(repr(is_not), is_not)  # a tensor, device or sequence is never None
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and all(v is DEVICE for v in values):
            same = isinstance(node.ops[0], ast.Eq)  # the provider's tensors all live on the one device it warms
            return Value(repr(same), same)
        if all(
            isinstance(v, Value)
            and v.fixed
            or isinstance(v, Sequence)
            and all(isinstance(i, Value) and i.fixed for i in v.items)
            for v in values
        ):
            known = [v.known if isinstance(v, Value) else tuple(i.known for i in v.items) for v in values]
            result = all(COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, known, known[1:]))
            return Value(repr(result), result)
        operands = [parse_expr(self._as_value(n, v).code) for n, v in zip([node.left, *node.comparators], values)]
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
        either = choice_of(test, self.value(node.body), self.value(node.orelse))
        if either is None:
            raise self.refuse(node, f"`{ast.unparse(node)}` chooses between values the lift cannot write as one")
        return either

    def _as_value(self, node: ast.expr, found: Any) -> Value:
        if isinstance(found, Value):
            return found
        if isinstance(found, Sequence) and all(isinstance(i, Value) for i in found.items):
            inner = ", ".join(i.code for i in found.items) + ("," if len(found.items) == 1 else "")
            known = tuple(i.known for i in found.items) if all(i.fixed for i in found.items) else NO_VALUE
            return Value(f"({inner})", known)
        raise self.refuse(node, f"`{ast.unparse(node)}` is a {kind_of(found)} where the lift needs a value")

    def _Call(self, node: ast.Call) -> Any:
        if any(k.arg is None for k in node.keywords):
            raise self.refuse(node, f"`{ast.unparse(node)}` unpacks its keyword arguments (**kwargs)")
        func = node.func
        if (
            isinstance(func, ast.Name)
            and func.id == "dict"
            and len(node.args) <= 1
            and self.lift.global_is_builtin(self, "dict")
        ):  # keyword arguments, as {}: `dict(base, a=1)` is base's updated
            items = dict(self.keywords(node, node.args[0]).items) if node.args else {}
            items.update((k.arg, self.value(k.value)) for k in node.keywords)
            return Keywords(tuple(items.items()))
        keywords = {k.arg: k.value for k in node.keywords}
        if isinstance(func, ast.Attribute):
            holder = self.value(func.value) if not self.lift.is_module(self, func.value) else None
            if isinstance(holder, MaybeTensor):
                holder = holder.tensor
            if isinstance(holder, Tensor):
                return self._tensor_method(node, holder, func.attr, keywords)
            module = self.lift.module_of(self, func.value)
            if module == "torch" and func.attr in TORCH_TENSORS | TORCH_LIKE:
                return self._torch_tensor(node, func.attr, keywords)
            if module in ("triton", "math") and func.attr in PURE_MATH or module == "torch" and func.attr == "dtype":
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
            kinds = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
            names = [k.id if isinstance(k, ast.Name) else None for k in kinds]
            builtin = [
                getattr(builtins, n) for n in names if n in dir(builtins) and isinstance(getattr(builtins, n), type)
            ]
            all_builtin = len(builtin) == len(names)  # else a kind the lift cannot test
            # A value the tree fixes, or a domain of literals every one of which answers alike.
            known = (subject.known,) if isinstance(subject, Value) and subject.fixed else ()
            known = known or (self.lift.choices.get(subject.code, ()) if isinstance(subject, Value) else ())
            answers = {isinstance(value, tuple(builtin)) for value in known}
            if len(answers) == 1 and all_builtin:
                (result,) = answers
                return Value(repr(result), result)
            if isinstance(subject, Tensor) and builtin and all_builtin:
                return Value("False", False)  # a tensor is no builtin type
            raise self.refuse(node, f"`{ast.unparse(node)}`: a type test the lift cannot decide")
        if (
            isinstance(func, ast.Name)
            and func.id in PURE_BUILTINS
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
            and (target := self.lift.modules.callee(self.module, self.function, func)) is not None
        ):
            # A fact of the device (its compute units): the launch's tensors live where the step made them, so
            # the step and the launcher read one value, which the registration passes.
            home, name = target
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
        if name in TORCH_LIKE:
            model = self.value(node.args[0])
            if not isinstance(model, Tensor):
                raise self.refuse(node, f"`torch.{name}` of something that is not a tensor")
            return like(model, self.plain(keywords["dtype"]) if "dtype" in keywords else model.dtype)
        dtype = self._dtype(node, keywords)
        if name == "tensor":
            data = self.value(node.args[0]) if node.args else None
            shape = nested_shape(data)
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
            length = binary(
                ast.FloorDiv(),
                binary(ast.Add(), binary(ast.Sub(), stop, start), binary(ast.Sub(), step, Value("1", 1))),
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
        method = TENSOR_METHODS.get(name)
        found = method(self, node, tensor, name, args, keywords) if method else None
        if found is None:
            raise self.refuse(node, f"calls `.{name}()` on a tensor, which the lift does not model")
        return found


# A tensor method the lift models: (scope, call, tensor, method name, evaluated args, keywords) -> what it returns,
# or None where these arguments are outside the model. A new method is one function and one table entry.
TensorMethod = Callable[[Scope, ast.Call, Tensor, str, list[Any], dict[str, ast.expr]], Any]


def _transpose(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Tensor:
    return transposed(tensor, *((0, 1) if name == "t" else (scope.plain(a).known for a in node.args)))


def _same_layout(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Tensor:
    """`clone()` lays out its copy as `empty_like` does (torch's default memory format preserves a dense tensor's
    strides); `contiguous()` copies only a tensor torch does not count contiguous; the others change no layout."""
    return like(tensor, tensor.dtype) if name == "clone" else contiguous(tensor) if name == "contiguous" else tensor


def _split(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Sequence:
    dim = scope.plain(keywords["dim"]).known if "dim" in keywords else (args[1].known if len(args) > 1 else 0)
    if not isinstance(dim, int):
        raise scope.refuse(node, f"`.{name}()` along a dimension the lift cannot read")
    found = parts(tensor, name, args, dim)
    if found is None:
        raise scope.refuse(node, f"`.{name}()` into parts the lift cannot count (`{ast.unparse(node)}`)")
    return found


def _view(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Tensor | None:
    if not all(isinstance(a, Value) for a in args):
        return None
    found = reshaped(tensor, tuple(args))
    if found is None:
        raise scope.refuse(
            node, f"`.{name}()` to a shape the lift cannot match to the tensor's (`{ast.unparse(node)}`)"
        )
    return found


def _as_strided(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Tensor | None:
    if len(args) not in (2, 3) or not all(isinstance(a, Sequence) for a in args[:2]):
        return None
    offset = args[2] if len(args) == 3 else Value("0", 0)
    return Tensor(tensor.dtype, args[0].items, args[1].items, binary(ast.Add(), tensor.offset, offset))


def _new_tensor(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Tensor:
    shape_args = node.args[:-1] if name == "new_full" else node.args
    dtype = scope.plain(keywords["dtype"]) if "dtype" in keywords else tensor.dtype
    return Tensor(dtype, scope._shape(node, shape_args))


def _stride_or_size(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Any:
    every = tensor.stride() if name == "stride" else tensor.shape
    if not args:
        return Sequence(every)
    if len(args) == 1 and isinstance(args[0], Value) and isinstance(args[0].known, int):
        return every[args[0].known]
    return None


def _numel(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Value:
    total = Value("1", 1)
    for size in tensor.shape:
        total = binary(ast.Mult(), total, size)
    return total


def _dim(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Value:
    return Value(str(len(tensor.shape)), len(tensor.shape))


def _is_contiguous(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Value:
    answer = is_contiguous(tensor)
    return Value(repr(answer), answer)


def _data_ptr(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Value:
    return Value("0", 0)  # only its count matters where the step reads it (a table of pointers)


def _to(scope: Scope, node: ast.Call, tensor: Tensor, name: str, args: list[Any], keywords) -> Tensor | None:
    """`.to(dtype)`, `.to(device)` (the device's value, or named by a string) or both: torch keeps the strides (its
    default memory format preserves them); the provider's tensors are metadata on no device."""
    if not set(keywords) <= {"dtype", "device"} or not (args or keywords):
        return None
    dtypes = [a for a in args if a is not DEVICE and not isinstance(getattr(a, "known", None), str)]
    if "dtype" not in keywords and not dtypes:
        return tensor  # a move to the device alone: the same tensor
    return Tensor(scope.plain(keywords["dtype"]) if "dtype" in keywords else dtypes[0], tensor.shape, tensor.strides)


TENSOR_METHODS: dict[str, TensorMethod] = {
    "t": _transpose,
    "transpose": _transpose,
    **dict.fromkeys(SAME_TENSOR, _same_layout),
    "split": _split,
    "chunk": _split,
    "view": _view,
    "reshape": _view,
    "as_strided": _as_strided,
    **dict.fromkeys(NEW_TENSORS, _new_tensor),
    "stride": _stride_or_size,
    "size": _stride_or_size,
    "numel": _numel,
    "dim": _dim,
    "is_contiguous": _is_contiguous,
    "data_ptr": _data_ptr,
    "to": _to,
}
