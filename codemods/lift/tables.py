"""The names the lift knows: torch's allocations and tensor methods, pure builtins and math, logging, and
Python's operators (what the evaluator computes where both sides are known), and what vLLM's helper expands."""

from __future__ import annotations

import ast
import operator

TORCH_TENSORS = {"empty", "zeros", "ones", "full", "tensor", "arange", "empty_strided", "randn", "rand"}
TORCH_LIKE = {"empty_like", "zeros_like", "ones_like", "full_like", "randn_like"}
NEW_TENSORS = {"new_empty", "new_zeros", "new_ones", "new_full"}
SAME_TENSOR = {"contiguous", "zero_", "fill_", "clone", "detach", "normal_", "uniform_"}  # same dtype and layout
PURE_BUILTINS = {"int", "float", "bool", "min", "max", "abs", "len", "round"}
PURE_MATH = {"cdiv", "next_power_of_2", "ceil", "floor", "log2", "prod"}
TENSOR_FACTS = {"stride", "size", "numel", "dim", "element_size", "is_contiguous", "data_ptr"}
SHAPE_FACTS = {"shape", "ndim", "size", "numel", "dim"}  # attributes and methods read off a tensor's shape alone
SAME_SHAPE = SAME_TENSOR | {"to", "float", "half", "bfloat16", "int", "long", "bool", "cuda", "cpu"}
LOGGING = {"debug", "info", "warning", "warning_once", "info_once", "debug_once", "error", "exception"}
OPS = {
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
COMPARE = {
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
NO_VALUE = object()
# What vLLM's helper expands in a provider's expressions (the subset its error names: names, constants, attributes,
# subscripts, tuple/list literals, conditionals, comparisons, boolean operators, not/minus, arithmetic, calls).
EXPANDABLE = (
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
    *OPS,
)
