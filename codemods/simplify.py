"""Conditions and values written the way a maintainer writes them: no expression computed twice, no `not a < b`.

The gates and providers zerojit writes are assembled from conditions and expressions read out
of legacy code, so one value (a config lookup, a block count) can appear several times. Here
each expression is rewritten without changing what it evaluates: a comparison under `not`
inverted, the repo's ceiling division helper where the code spells it out, and every
subexpression of `SHARED_SIZE` nodes or more that occurs twice computed once and named.

Gates compare counts, sizes and config values: `not a < b` is `a >= b` for them (not for a NaN
or for sets, which gates do not compare); `cdiv` is written only where no `/` or float is in sight.
"""

from __future__ import annotations

import ast
import copy
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from .lift.tables import COMPARE

SHARED_SIZE = 8  # nodes (ast.walk's count) from which an expression written twice is written once, named
# A gate names a smaller value too when it computes something (a call, an operator): a lookup such as
# `getattr(config, "block_size", None)` read twice is read once; a plain attribute chain is left as written.
COMPUTED_SIZE = 5

_INVERTED = {
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


def size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))


def condition(code: str, taken: Iterable[str], cdiv: str | None = None, held: dict[str, str] | None = None) -> str:
    """A gate's condition simplified: what the site already holds read from it (`held`: the ast.dump of a value ->
    the local holding it), comparisons under `not` inverted, `(a + b - 1) // b` as `cdiv(a, b)` where the site
    binds the repo's helper as `cdiv`, and a repeated subexpression named by a walrus where it is first evaluated
    (`(block_size := getattr(...)) is not None and ... block_size ...`), when every later use runs after it.
    `taken`: names the site uses, which a new name must not be."""
    tree = ast.parse(code, mode="eval")
    held = held or {}
    for _ in range(2):  # again once the lookups of what the site holds are plain reads
        for dump, name in held.items():
            tree = _Named(dump, name, None).visit(tree)
        tree = _LookedUp(set(held)).visit(tree)
    tree = _Rewrites(cdiv).visit(tree)
    names = set(taken) | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    while (shared := _largest_shared(tree.body, COMPUTED_SIZE, computed=True)) is not None:
        first = _first_unconditional(tree.body, shared)
        if first is None:
            break
        name = _fresh(_name_for(first), names)
        names.add(name)
        tree.body = _Named(shared, name, first).visit(tree.body)
    return _unparsed(tree.body)


def _unparsed(node: ast.expr) -> str:
    """ast.unparse, less the parentheses it gives every later operand of an `and`/`or` chain (its precedence
    rises operand by operand): an operand is parenthesized only where Python needs it."""
    if not isinstance(node, ast.BoolOp):
        return ast.unparse(node)
    loose = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr)
    word = " and " if isinstance(node.op, ast.And) else " or "
    return word.join(f"({ast.unparse(v)})" if isinstance(v, loose) else _unparsed(v) for v in node.values)


def bound_once(
    values: list[ast.expr],
    taken: Iterable[str],
    names: list[str],
    hints: Mapping[str, str] | None = None,
    total: Callable[[ast.expr], bool] = lambda expression: False,
) -> tuple[list[str], list[ast.expr]]:
    """Statements naming each subexpression the `values` share, and the values reading those names instead.

    `names`: a name for each value (its keyword), which a shared expression takes from the first value that is
    that expression; else the keyword it is passed as wherever it is one (`strides=`); else from what it
    computes. `hints`: names the code the values came from gave expressions (ast.dump -> the launcher's local),
    taken first for any that computes, whatever its size (`head_sequences`, read in three arms, not its
    comparisons). Every value is evaluated, in order, after the statements, so an expression is named only where
    its first occurrence always runs (not in an arm of `x if c else y`, nor past the first operand of `and`/`or`,
    nor in a comprehension or lambda, whose names are their own); a statement counts as such an occurrence.
    `total`: what computes without raising wherever it is computed (arithmetic of integers), named from a branch
    too.
    """
    values = [copy.deepcopy(v) for v in values]
    used = set(taken) | {n.id for v in values for n in ast.walk(v) if isinstance(n, ast.Name)}
    named: list[tuple[str, ast.expr]] = []  # (name, expression), each evaluated before the values
    hints = hints or {}

    def first(dump: str) -> tuple[ast.expr, bool]:
        return next(found for e in [*(e for _, e in named), *values] if (found := _occurrence(e, dump, True)))

    def name(dump: str, expression: ast.expr, wanted: str | None) -> None:
        nonlocal named, values
        chosen = _fresh(wanted or _name_for(expression), used)
        used.add(chosen)
        named = [(n, _Named(dump, chosen, None).visit(e)) for n, e in named] + [(chosen, expression)]
        values = [_Named(dump, chosen, None).visit(v) for v in values]

    def everything() -> ast.Tuple:
        return ast.Tuple([*(e for _, e in named), *values], ast.Load())

    for dump, hint in sorted(hints.items(), key=lambda item: -len(item[0])):  # a name's parts after it
        occurrences = [n for n in _outside_scopes(everything()) if ast.dump(n) == dump]
        if not occurrences or not computes(occurrences[0]):
            continue
        read_inside = _chooses(occurrences[0]) and all(ast.dump(v) != dump for v in values)
        if len(occurrences) > 1 or read_inside:
            expression, always = first(dump)
            if always:
                name(dump, expression, hint)
    skipped: set[str] = set()  # shared, but first computed in a branch: computing it up front could fail
    while (shared := _largest_shared(everything(), skip=skipped)) is not None:
        expression, always = first(shared)
        if not always and not total(expression):
            skipped.add(shared)
            continue
        whole = [n for n, v in zip(names, values) if ast.dump(v) == shared]
        name(shared, expression, whole[0] if whole else _keyword_for(values, shared))
    return [f"{n} = {ast.unparse(e)}" for n, e in _in_reading_order(named, values)], values


def _chooses(expression: ast.expr) -> bool:
    """A choice between values by conditions (`a if c else b if d else e`): inside another value, named as the
    launcher names it, it reads as one line even where it is read once (passed as it is, it stays)."""
    return isinstance(expression, ast.IfExp) and isinstance(expression.orelse, ast.IfExp)


def _keyword_for(values: list[ast.expr], dump: str) -> str | None:
    """The keyword an expression is passed as, where every call that passes it passes it as that one keyword."""
    keywords = {
        k.arg
        for v in values
        for call in _outside_scopes(v)
        if isinstance(call, ast.Call)
        for k in call.keywords
        if ast.dump(k.value) == dump
    }
    return keywords.pop() if len(keywords) == 1 and None not in keywords else None


def _in_reading_order(named: list[tuple[str, ast.expr]], values: list[ast.expr]) -> list[tuple[str, ast.expr]]:
    """The named expressions in the order the values first read them, each after the ones it reads."""
    reads = {name: {n.id for n in ast.walk(e) if isinstance(n, ast.Name)} for name, e in named}
    expressions = dict(named)
    ordered: dict[str, ast.expr] = {}

    def place(name: str) -> None:
        if name in expressions and name not in ordered:
            for read in sorted(reads[name] & expressions.keys(), key=list(expressions).index):
                place(read)
            ordered[name] = expressions[name]

    for value in values:
        for node in ast.walk(value):
            if isinstance(node, ast.Name):
                place(node.id)
    for name in expressions:
        place(name)
    return list(ordered.items())


def attribute_form(expression: ast.expr) -> str:
    """The expression's text with each `getattr(x, "a", default)` read as `x.a`: the two agree wherever x has a,
    as the layer does once the constructor set it (where the registration goes)."""
    return ast.unparse(attribute_tree(expression))


def attribute_tree(expression: ast.expr) -> ast.expr:
    """A copy of the expression with each `getattr(x, "a", default)` read as `x.a` (attribute_form's tree)."""
    return _LookedUp(None).visit(copy.deepcopy(expression))


class _LookedUp(ast.NodeTransformer):
    """`getattr(x, "a", default)` as `x.a` where the ast.dump of `x.a` is in `read` (what the site read already
    without a default: the attribute exists, so the lookup never takes its default); None: every such lookup."""

    def __init__(self, read: set[str] | None):
        self.read = read

    def visit_Call(self, node: ast.Call) -> ast.expr:
        node = self.generic_visit(node)
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) == 3
            and not node.keywords
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            plain = ast.Attribute(node.args[0], node.args[1].value, ast.Load())
            if self.read is None or ast.dump(plain) in self.read:
                return plain
        return node


class _Rewrites(ast.NodeTransformer):
    def __init__(self, cdiv: str | None):
        self.cdiv = cdiv

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        node = self.generic_visit(node)
        inner = node.operand
        if isinstance(node.op, ast.Not) and isinstance(inner, ast.Compare) and len(inner.ops) == 1:
            return ast.Compare(inner.left, [_INVERTED[type(inner.ops[0])]()], inner.comparators)
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        node = self.generic_visit(node)
        # (a + b - 1) // b
        if (
            self.cdiv
            and isinstance(node.op, ast.FloorDiv)
            and isinstance(node.left, ast.BinOp)
            and isinstance(node.left.op, ast.Sub)
            and isinstance(node.left.right, ast.Constant)
            and node.left.right.value == 1
            and isinstance(node.left.left, ast.BinOp)
            and isinstance(node.left.left.op, ast.Add)
            and ast.dump(node.left.left.right) == ast.dump(node.right)
            and not any(_fractional(n) for n in ast.walk(node))  # a ceiling division of integers only
        ):
            return ast.Call(ast.Name(self.cdiv, ast.Load()), [node.left.left.left, node.right], [])
        return node


def inverted(node: ast.expr) -> ast.expr:
    """A copy of `node` with each comparison under `not` inverted (`not len(x) < 2` as `len(x) >= 2`), as `condition`
    writes gates: what an intended difference names is read the same way."""
    return _Rewrites(None).visit(copy.deepcopy(node))


def _fractional(node: ast.AST) -> bool:
    return isinstance(node, ast.Div) or isinstance(node, ast.Constant) and isinstance(node.value, float)


def repeats(code: str) -> bool:
    """Whether `code` (an expression) writes a subexpression of SHARED_SIZE nodes or more twice."""
    return _largest_shared(ast.parse(code, mode="eval").body) is not None


def _largest_shared(
    tree: ast.AST, smallest: int = SHARED_SIZE, computed: bool = False, skip: Iterable[str] = ()
) -> str | None:
    """The ast.dump of the largest subexpression of at least `smallest` nodes that occurs twice or more (with
    `computed`: of at least SHARED_SIZE, or of `smallest` if it calls or operates), less those in `skip`."""

    def worth(node: ast.expr) -> bool:
        n = size(node)
        return n >= SHARED_SIZE or n >= smallest and (not computed or computes(node))

    counts = Counter(ast.dump(n) for n in _outside_scopes(tree) if worth(n))
    sizes = {ast.dump(n): size(n) for n in _outside_scopes(tree)}
    shared = [dump for dump, count in counts.items() if count > 1 and dump not in skip]
    return max(shared, key=lambda dump: sizes[dump], default=None)


def computes(node: ast.expr) -> bool:
    """Whether evaluating `node` calls or operates (not a plain name, constant or attribute chain)."""
    return any(isinstance(n, (ast.Call, ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp)) for n in ast.walk(node))


def _first_unconditional(tree: ast.expr, dump: str) -> ast.expr | None:
    """The first occurrence of `dump` in evaluation order, if it is one that every other occurrence runs after:
    outside every branch (the later operands of `and`/`or`, the arms of `x if c else y`, a chained comparison's
    later operands) except the top-level `and` chain, whose later operands run only after the earlier ones."""
    atoms = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
    for atom in atoms:
        found = _occurrence(atom, dump, unconditional=True)
        if found is not None:
            node, unconditional = found
            return node if unconditional else None
    return None


def _occurrence(node: ast.expr, dump: str, unconditional: bool) -> tuple[ast.expr, bool] | None:
    if ast.dump(node) == dump:
        return node, unconditional
    for child, always in _children(node):
        found = _occurrence(child, dump, unconditional and always)
        if found is not None:
            return found
    return None


_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)  # names of their own inside


def _children(node: ast.expr) -> list[tuple[ast.expr, bool]]:
    """The expressions inside `node` in the order Python evaluates them, each with whether it always runs (none
    inside a comprehension or lambda: their names are their own)."""
    if isinstance(node, ast.BoolOp):
        return [(v, i == 0) for i, v in enumerate(node.values)]
    if isinstance(node, ast.IfExp):
        return [(node.test, True), (node.body, False), (node.orelse, False)]
    if isinstance(node, ast.Compare):
        return [(node.left, True)] + [(c, i == 0) for i, c in enumerate(node.comparators)]
    if isinstance(node, ast.Call):
        return [(e, True) for e in [node.func, *node.args, *(k.value for k in node.keywords)]]
    if isinstance(node, ast.Dict):
        return [(e, True) for k, v in zip(node.keys, node.values) for e in (k, v) if e is not None]
    if isinstance(node, _SCOPES):
        return []
    return [(child, True) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]


def _outside_scopes(tree: ast.AST):
    """Every expression of `tree` but those inside a comprehension or lambda."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.expr):
            yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


class _Named(ast.NodeTransformer):
    """Every occurrence of `dump` read as `name`; the one at `first` (if any) binding it with a walrus."""

    def __init__(self, dump: str, name: str, first: ast.expr | None):
        self.dump, self.name, self.first = dump, name, first

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, _SCOPES):
            return node  # its names are its own
        if isinstance(node, ast.expr) and ast.dump(node) == self.dump:
            if node is self.first:
                return ast.NamedExpr(ast.Name(self.name, ast.Store()), node)
            return ast.parse(self.name, mode="eval").body  # a name, or an attribute (`self.block_size`)
        return super().visit(node)


def _name_for(node: ast.expr) -> str:
    """A name for what an expression computes: the attribute `getattr` reads, the attribute it reads, the function
    it calls."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr
    if isinstance(node, ast.Subscript):
        return _name_for(node.value)
    return "value"


def _fresh(name: str, taken: set[str]) -> str:
    name = name if name.isidentifier() else "value"
    if name not in taken:
        return name
    return next(f"{name}_{i}" for i in range(2, 1000) if f"{name}_{i}" not in taken)


def literal_choices(domain: str) -> tuple | None:
    """The values of `WarmupChoices(<literals>)` (None for any other domain)."""
    call = ast.parse(domain, mode="eval").body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "WarmupChoices"):
        return None
    try:
        return tuple(ast.literal_eval(argument) for argument in call.args) if not call.keywords else None
    except ValueError:
        return None


def holds_for_every(condition: str, choices: dict[str, tuple]) -> bool:
    """`condition` true for every combination of the `choices` it reads, and of both truth values of each other name
    it reads only as a truth value (`not x and any((x, x))`, whatever `x` holds), where it reads nothing else and is
    made of comparisons, `and`/`or`/`not`, `any`/`all` of a tuple, names and constants (anything else: False, not
    known to hold)."""
    tree = ast.parse(condition, mode="eval").body
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} - {"any", "all"}
    domains = {name: (False, True) for name in _read_for_truth(tree)} | choices
    if not read or not read <= domains.keys():
        return False
    names = sorted(read)
    try:
        return all(
            evaluate(tree, dict(zip(names, case))) for case in itertools.product(*(domains[name] for name in names))
        )
    except (TypeError, NotEvaluable):
        return False


def _read_for_truth(tree: ast.expr) -> set[str]:
    """The names `tree`, a condition, reads only for their truth value: under `not`, `and`/`or` and `any`/`all` of a
    tuple, never compared or computed with."""
    truth, other = set(), set()

    def visit(node: ast.AST, for_truth: bool) -> None:
        match node:
            case ast.Name(id=name):
                (truth if for_truth else other).add(name)
            case ast.UnaryOp(op=ast.Not(), operand=operand):
                visit(operand, True)
            case ast.BoolOp(values=parts):
                for part in parts:
                    visit(part, for_truth)
            case ast.Call(func=ast.Name(id="any" | "all"), args=[ast.Tuple(elts=items)], keywords=[]):
                for item in items:
                    visit(item, True)
            case _:
                for child in ast.iter_child_nodes(node):
                    visit(child, False)

    visit(tree, True)
    return truth - other


class NotEvaluable(Exception):
    """A part of an expression `evaluate` does not compute: a name without a value, or anything but comparisons,
    `and`/`or`/`not`, `any`/`all` of a tuple, names and constants."""


def evaluate(node: ast.expr, values: Mapping[str, object]) -> object:
    """The value Python gives `node` where each name it reads holds its value in `values` (short-circuits as
    Python does, so a part never reached may be one it cannot compute)."""
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name) if name in values:
            return values[name]
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return not evaluate(operand, values)
        case ast.BoolOp(op=op, values=parts):
            for part in parts:
                value = evaluate(part, values)
                if bool(value) is isinstance(op, ast.Or):
                    return value
            return value
        case ast.Call(func=ast.Name(id="any" | "all" as name), args=[ast.Tuple(elts=items)], keywords=[]) if (
            name not in values
        ):
            return {"any": any, "all": all}[name](evaluate(item, values) for item in items)
        case ast.Compare(left=left, ops=ops, comparators=comparators) if all(
            type(o) in COMPARE and (not isinstance(o, ast.Is | ast.IsNot) or _singleton(c))
            for o, c in zip(ops, comparators)
        ):
            before = evaluate(left, values)
            for op, comparator in zip(ops, comparators):
                after = evaluate(comparator, values)
                if not COMPARE[type(op)](before, after):
                    return False
                before = after
            return True
    raise NotEvaluable(ast.unparse(node))


def _singleton(node: ast.expr) -> bool:
    """`None`, `True` or `False`: what `is` compares by identity reliably (a number's identity is the runtime's)."""
    return isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool))
