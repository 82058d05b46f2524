"""What a constructor's statements set, change and call, and where they sit: the facts that place a registration."""

from __future__ import annotations

import ast
import contextlib
import contextvars
from collections.abc import Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

from ..syntax import body_stores, parameters, stores
from .base import code_of

_BRANCHING = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)


def outside_branches(
    function: cst.FunctionDef, statement: cst.BaseStatement, reads: set[str] = frozenset()
) -> cst.BaseStatement:
    """The outermost `if`, loop, `try` or `match` of `function` holding `statement` after which every path has
    what the registration reads (`reads`: `self.x` and local names) that the branch sets, else the statement: what
    follows it runs once on every path that reaches it (a `with` runs its body once, so it is not left). Where one
    arm alone builds what the registration reads (nothing set it before), the registration stays in that arm: only
    it has the object."""
    for holder in (s for s in holders(function, statement) if isinstance(s, _BRANCHING)):
        inside = {a for s in statements_in(holder) for a in assigned_names(s)} & reads
        top = function.body.body
        earlier = top[: next(i for i, s in enumerate(top) if s is top_level(function, holder))]
        # set before the branch too: the branch changes it, so the registration reads it after the branch
        if all(_set_on_every_path([holder], a) or _set_on_every_path(earlier, a) for a in inside):
            return holder
    return statement


def holders(function: cst.FunctionDef, statement: cst.BaseStatement) -> list[cst.BaseStatement]:
    """The compound statements of `function` that hold `statement`, outermost first."""
    holders: list[cst.BaseStatement] = []

    class Find(cst.CSTVisitor):
        def __init__(self):
            super().__init__()
            self.stack: list[cst.BaseStatement] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is statement:
                holders.extend(self.stack)
                return False
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.BaseExpression, cst.BaseSmallStatement)):
                return False
            if isinstance(node, cst.BaseCompoundStatement):
                self.stack.append(node)
            return True

        def on_leave(self, original: cst.CSTNode) -> None:
            if self.stack and self.stack[-1] is original:
                self.stack.pop()

    function.body.visit(Find())
    return holders


def top_level(init: cst.FunctionDef, statement: cst.BaseStatement) -> cst.BaseStatement:
    """The statement of `init`'s own body that is or holds `statement`."""
    return [*holders(init, statement), statement][0]


def quiet_between(init: cst.FunctionDef, holder: cst.BaseStatement, until, reads: set[str]) -> bool:
    """Nothing after `holder` up to the top-level statement holding `until` (None: the end of `init`) can change
    what the registration reads: no assignment of a name it reads, no call of a method of `self`, of an
    initializer, or with `self` as an argument (any of which may set attributes)."""
    body = list(init.body.body)
    start = next(i for i, s in enumerate(body) if s is holder) + 1
    top = None if until is None else top_level(init, until)
    end = len(body) if top is None else next(i for i, s in enumerate(body) if s is top) + 1
    for statement in body[start:end]:
        if any(assigned_names(s) & reads for s in statements_in(statement)):
            return False
        for call in nodes(statement, cst.Call):
            func = call.func
            method = isinstance(func, cst.Attribute) and (is_self(func.value) or func.attr.value == "__init__")
            if method or any(is_self(a.value) for a in call.args):
                return False
    return True


def is_self(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"


def assigned_names(statement: cst.BaseStatement) -> set[str]:
    """The locals (`x`) and attributes (`self.x`) a simple statement line assigns."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return set()
    targets = [t for node in nodes(statement, (cst.AssignTarget, cst.AnnAssign)) for t in _elements(node.target)]
    return {t.value for t in targets if isinstance(t, cst.Name)} | {
        f"self.{t.attr.value}" for t in targets if isinstance(t, cst.Attribute) and is_self(t.value)
    }


def calls_parent(call: cst.Call, method: str) -> bool:
    """`super().<method>(...)` or `Base.<method>(self, ...)`: the base's own `method` (its initializer, or the
    `bind_kv_cache` that binds the cache), which sets what the base holds (not a sub-layer's, `self.x.<method>`)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == method):
        return False
    if isinstance(func.value, cst.Call):
        return isinstance(func.value.func, cst.Name) and func.value.func.value == "super"
    return (
        isinstance(func.value, (cst.Name, cst.Attribute))
        and not is_self(func.value)
        and bool(call.args)
        and is_self(call.args[0].value)
    )


def base_calls(function: cst.FunctionDef, method: str) -> list[cst.BaseStatement]:
    """The statements of `function`'s own body that call the base's `method` (`calls_parent`), or hold such a call."""
    return [s for s in function.body.body if any(calls_parent(c, method) for c in nodes(s, cst.Call))]


def locals_read(code: str, method: cst.FunctionDef) -> list[str]:
    """The names `code` reads that `method` binds (its parameters, locals and imports, not `self`), in the order
    read."""
    function = ast.parse(cst.Module(body=[method]).code).body[0]
    bound = {*body_stores(function), *_imports(function), *parameters(function)} - {"self"}
    tree = ast.parse(code)
    own = {*stores(tree), *_imports(tree)}
    read = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return [name for name in dict.fromkeys(read) if name in bound and name not in own]


def _imports(node: ast.AST) -> set[str]:
    return {
        alias.asname or alias.name.split(".")[0]
        for n in ast.walk(node)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for alias in n.names
    }


def changed_attributes(statement: cst.BaseStatement) -> set[str]:
    """The `self.x` a simple statement line assigns, augments, or changes an attribute or item of
    (`self.norm.weight.data = ...` changes `self.norm`), or changes by a call made for its effect: a method of it
    whose result is dropped (`self.norm.float()`), or an in-place function or `setattr` given it first
    (`nn.init.ones_(self.norm.weight)`, `setattr(self.norm, ...)`, `setattr(self, "norm", ...)`)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return set()
    changed = set()
    for node in nodes(statement, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
        changed.update(filter(None, map(_self_attribute, _elements(node.target))))
    for line in statement.body:
        call = line.value if isinstance(line, cst.Expr) and isinstance(line.value, cst.Call) else None
        if call is None:
            continue
        name = get_full_name_for_node(call.func) or ""
        given = [call.args[0].value] if call.args and (name.endswith("_") or name == "setattr") else []
        if isinstance(call.func, cst.Attribute):
            given.append(call.func.value)
        changed.update(filter(None, map(_self_attribute, given)))
        if name == "setattr" and len(call.args) > 1 and is_self(call.args[0].value):
            attribute = call.args[1].value
            if isinstance(attribute, cst.SimpleString):
                changed.add(f"self.{attribute.evaluated_value}")
    return changed


def _self_attribute(node: cst.BaseExpression) -> str | None:
    """The `self.x` an expression reaches through (`self.norm.weight.data`, `self.kv[0]`), if any."""
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(node, cst.Attribute) and is_self(node.value):
            return f"self.{node.attr.value}"
        node = node.func if isinstance(node, cst.Call) else node.value
    return None


def _set_on_every_path(block: Sequence[cst.BaseStatement], attribute: str) -> bool:
    """Does running `block` set `attribute` whichever way its `if`s go (a loop or `try` may skip it: no)?"""
    for statement in block:
        if attribute in assigned_names(statement):
            return True
        if isinstance(statement, cst.If):
            orelse = statement.orelse
            arms = [
                statement.body.body,
                [orelse] if isinstance(orelse, cst.If) else orelse.body.body if orelse else None,
            ]
            if all(arm is not None and _set_on_every_path(arm, attribute) for arm in arms):
                return True
    return False


def _elements(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What an assignment target assigns: itself, or the elements of a tuple or list of targets."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _elements(e.value)]
    return [target]


class _Statements(cst.CSTVisitor):
    """Every statement of a block, nested blocks included (not nested defs' bodies), in source order."""

    def __init__(self):
        super().__init__()
        self.found: list[cst.BaseStatement] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseStatement):
            self.found.append(node)
        return not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.BaseExpression, cst.BaseSmallStatement))


def statements_in(node: cst.CSTNode) -> list[cst.BaseStatement]:
    """`node` if it is a statement, and every statement inside it at any depth (not nested defs' bodies)."""
    collector = _Statements()
    node.visit(collector)
    return collector.found


_KEPT: contextvars.ContextVar[dict[int, tuple[cst.CSTNode, list]] | None] = contextvars.ContextVar("kept", default=None)


@contextlib.contextmanager
def walks_kept():
    """While it lasts, `nodes` walks each tree once and keeps every node it found: placing a registration reads
    each statement of a constructor several times (what it sets, changes, calls)."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def nodes(tree: cst.CSTNode, kinds) -> list:
    """Every node of `kinds` in `tree` (nested functions included), in source order."""
    kept = _KEPT.get()
    if kept is None:
        return _walk(tree, kinds)
    if id(tree) not in kept:  # the tree is kept beside its nodes, so its id stays its own
        kept[id(tree)] = (tree, _walk(tree, cst.CSTNode))
    return [node for node in kept[id(tree)][1] if isinstance(node, kinds)]


def _walk(tree: cst.CSTNode, kinds) -> list:
    found = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, kinds):
                found.append(node)
            return True

    tree.visit(Collect())
    return found


def first_line(statement: cst.BaseStatement) -> str:
    """The statement's own first line: its leading comments and blank lines are not part of it."""
    return code_of(statement.with_changes(leading_lines=[])).strip().splitlines()[0]


class StatementLines:
    """The first and last line of each statement of a method, as libcst's PositionProvider gives them on the method
    alone (a module of its own: `code`), read off `ast` at a fifth of the cost. Both trees hold the same statements
    in the same order: a libcst line of statements is as many of `ast`'s, a compound statement one, block by block."""

    def __init__(self, method: cst.FunctionDef):
        self.code = cst.Module(body=[method]).code
        self._lines: dict[int, tuple[int, int]] = {}
        self._pair([method], ast.parse(self.code).body)

    def start(self, statement: cst.BaseStatement) -> int:
        return self._lines[id(statement)][0]

    def end(self, statement: cst.BaseStatement) -> int:
        return self._lines[id(statement)][1]

    def _pair(self, statements: Sequence[cst.BaseStatement], nodes: list[ast.stmt]) -> None:
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                first, last, nodes = nodes[0], nodes[len(statement.body) - 1], nodes[len(statement.body) :]
                self._lines[id(statement)] = first.lineno, last.end_lineno
                continue
            node, nodes = nodes[0], nodes[1:]
            self._lines[id(statement)] = node.lineno, node.end_lineno
            for block, inner in _blocks(statement, node):
                self._pair(block, inner)


def _blocks(statement: cst.BaseCompoundStatement, node: ast.stmt) -> list[tuple[list, list[ast.stmt]]]:
    """The blocks of a compound statement, each as libcst's statements and `ast`'s (an `elif` is an `if` in both
    trees' `else`; a block written on its header's line holds no libcst statement)."""

    def held(part: cst.CSTNode | None) -> list:
        suite = part.body if isinstance(part, (cst.Else, cst.Finally)) else part
        return list(suite.body) if isinstance(suite, cst.IndentedBlock) else []

    if isinstance(statement, cst.If):
        orelse = [statement.orelse] if isinstance(statement.orelse, cst.If) else held(statement.orelse)
        return [(held(statement.body), node.body), (orelse, node.orelse)]
    if isinstance(statement, (cst.For, cst.While)):
        return [(held(statement.body), node.body), (held(statement.orelse), node.orelse)]
    if isinstance(statement, (cst.Try, cst.TryStar)):
        handlers = [(held(h.body), n.body) for h, n in zip(statement.handlers, node.handlers)]
        ends = [(held(statement.orelse), node.orelse), (held(statement.finalbody), node.finalbody)]
        return [(held(statement.body), node.body), *handlers, *ends]
    if isinstance(statement, cst.Match):
        return [(held(case.body), n.body) for case, n in zip(statement.cases, node.cases)]
    return [(held(statement.body), node.body)]  # with, def, class
