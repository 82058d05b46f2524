"""A provider's integer sizes read as polynomials, so that an exact division is written as its quotient (and
`h * d + h * d` as `2 * h * d`).

The lift writes what the legacy step computed: a tensor made by `torch.arange(0, num_tokens + 1, step)` has
`(num_tokens + 1 + (step - 1)) // step` elements, and the launcher's `cu_seqlens.numel() - 1` is one less.
With `num_tokens = num_sequences * step` among the provider's locals, the division is exact and the count is
`num_sequences + 1`: a reviewer reads that, not the division. A local that assigns one term is read as that
term; any other stays a name (a divisor `step = spec + 1` divides as `step`). A floor division `p // q`
equals the quotient `p / q` whenever q divides p as a polynomial (for any q that is not 0) and the quotient's
names are integers: a name is taken for one where the provider passes it as a tensor's size, or assigns it
`int(...)` or an integer polynomial of such names. Anything else is left as written.
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from collections.abc import Callable, Mapping

Polynomial = dict[tuple[str, ...], int]  # the sorted names of a term (repeated for powers) -> its coefficient


def quotients(
    expressions: list[ast.expr], definitions: Mapping[str, ast.expr], values: list[ast.expr]
) -> list[ast.expr]:
    """Copies of `expressions` with each arithmetic subexpression of integers written as the polynomial it is
    (an exact division as its quotient), where that is shorter. `definitions`: the provider's locals, name ->
    what it assigns; `values`: what the provider returns, whose tensor sizes are integers."""
    integers = _integers(values, definitions)
    return [_Quotients(definitions, integers).visit(copy.deepcopy(e)) for e in expressions]


def total(definitions: Mapping[str, ast.expr]) -> Callable[[ast.expr], bool]:
    """Whether an expression computes without raising wherever it is computed: a polynomial, with no division, of
    names assigned `int(...)` (a size that may be None where a guard drops the case does not count)."""
    ints = _int_locals(definitions)

    def computes_anywhere(expression: ast.expr) -> bool:
        polynomial = _polynomial(expression, {})
        return (
            polynomial is not None
            and not any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv) for n in ast.walk(expression))
            and all(name in ints for term in polynomial for name in term)
        )

    return computes_anywhere


def _integers(values: list[ast.expr], definitions: Mapping[str, ast.expr]) -> set[str]:
    """Names that hold integers: a size some tensor of the provider has, `int(...)`, or a polynomial of those."""
    found = {
        element.id
        for tree in [*values, *definitions.values()]
        for call in ast.walk(tree)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "TritonWarmupTensor"
        for keyword in call.keywords
        if keyword.arg == "shape" and isinstance(keyword.value, ast.Tuple)
        for element in keyword.value.elts
        if isinstance(element, ast.Name)
    }
    found |= _int_locals(definitions)
    while True:
        more = {
            name
            for name, value in definitions.items()
            if name not in found
            and (polynomial := _polynomial(value, {})) is not None
            and all(symbol in found for term in polynomial for symbol in term)
        }
        if not more:
            return found
        found |= more


def _int_locals(definitions: Mapping[str, ast.expr]) -> set[str]:
    """The locals assigned `int(...)`."""
    return {
        name
        for name, value in definitions.items()
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "int"
    }


class _Quotients(ast.NodeTransformer):
    def __init__(self, definitions: Mapping[str, ast.expr], integers: set[str]):
        self.definitions, self.integers = definitions, integers

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        polynomial = _polynomial(node, self.definitions)
        if polynomial is None or not all(symbol in self.integers for term in polynomial for symbol in term):
            return self.generic_visit(node)
        written = _expression(polynomial, _order(node, self.definitions))
        return written if _size(written) < _size(node) else self.generic_visit(node)


def _polynomial(node: ast.expr, definitions: Mapping[str, ast.expr], depth: int = 0) -> Polynomial | None:
    """What `node` computes as a polynomial of names (a local replaced by what it assigns), or None: it is not
    one, or it divides where the division is not exact."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {(): node.value} if node.value else {}
    if isinstance(node, ast.Name):  # a local that assigns one term (`num_sequences * step`) is that term
        inner = _polynomial(definitions[node.id], definitions, depth + 1) if node.id in definitions else None
        return inner if inner is not None and len(inner) == 1 and depth < 8 else {(node.id,): 1}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _polynomial(node.operand, definitions, depth)
        return None if operand is None else {term: -c for term, c in operand.items()}
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        return None
    left, right = _polynomial(node.left, definitions, depth), _polynomial(node.right, definitions, depth)
    if left is None or right is None:
        return None
    if isinstance(node.op, ast.FloorDiv):
        return _divided(left, right)
    if isinstance(node.op, ast.Mult):
        product: Counter = Counter()
        for (a, x), (b, y) in ((a, b) for a in left.items() for b in right.items()):
            product[tuple(sorted(a + b))] += x * y
        return {term: c for term, c in product.items() if c}
    sign = 1 if isinstance(node.op, ast.Add) else -1
    summed = Counter(left)
    for term, c in right.items():
        summed[term] += sign * c
    return {term: c for term, c in summed.items() if c}


def _divided(dividend: Polynomial, divisor: Polynomial) -> Polynomial | None:
    """The quotient where `divisor` is one term (a name, a product of names, a number) dividing every term."""
    if len(divisor) != 1:
        return None
    ((names, coefficient),) = divisor.items()
    quotient = {}
    for term, c in dividend.items():
        rest = Counter(term) - Counter(names)
        if sum(rest.values()) != len(term) - len(names) or c % coefficient:
            return None
        quotient[tuple(sorted(rest.elements()))] = c // coefficient
    return quotient


def _order(node: ast.expr, definitions: Mapping[str, ast.expr]) -> list[str]:
    """The names a polynomial of `node` reads, in the order the code first names them (through its locals)."""
    seen: list[str] = []
    for name in _names_in_order(node):
        expanded = name in definitions and len(_polynomial(definitions[name], definitions) or {}) == 1
        seen += [n for n in (_order(definitions[name], definitions) if expanded else [name]) if n not in seen]
    return seen


def _names_in_order(node: ast.AST) -> list[str]:
    """The names `node` reads, as its code spells them from left to right."""
    if isinstance(node, ast.Name):
        return [node.id]
    return [name for child in ast.iter_child_nodes(node) for name in _names_in_order(child)]


def _expression(polynomial: Polynomial, order: list[str]) -> ast.expr:
    """The polynomial as code: terms of higher degree first, names in the code's order, the constant last."""
    rank = {name: i for i, name in enumerate(order)}
    terms = sorted(polynomial.items(), key=lambda t: (-len(t[0]), [rank.get(n, len(rank)) for n in t[0]]))
    parts = [
        (coefficient < 0, " * ".join([str(abs(coefficient))] * (abs(coefficient) != 1 or not names) + list(names)))
        for names, coefficient in ((sorted(n, key=lambda x: rank.get(x, len(rank))), c) for n, c in terms)
    ]
    if not parts:
        return ast.Constant(0)
    written = ("-" if parts[0][0] else "") + parts[0][1]
    written += "".join(f" {'-' if negative else '+'} {term}" for negative, term in parts[1:])
    return ast.parse(written, mode="eval").body


def _size(node: ast.expr) -> int:
    return sum(1 for _ in ast.walk(node))
