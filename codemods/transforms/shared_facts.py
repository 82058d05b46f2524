"""Registrations that share a method, written as a maintainer writes them together: one `if` for one gate, and
each fact they read bound once.

A registration's block binds the facts its call reads (`hv = self.num_v_heads // self.tp_size`).
Where another registration above it in the same block of the method writes that value in place,
the binding moves up to just above that registration, which then reads the local too; where a
statement above (beside the block, or in the method's own body above the statement holding it)
binds it the same way already, the block does not bind it again. Only a value of names the method
never rebinds is shared, and only where nothing in between changes an attribute of `self` that it
reads (itself or through a method of the class it calls): the local holds what the block would
compute. Only a value of attribute reads, subscripts and arithmetic moves, and only above another
registration's call, which computes it on every run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

import libcst as cst

from ..syntax import body_stores, loads, normalized, parameters, stores
from .base import code_of
from .blocks import Rebuilder, RebuildsBlocks
from .constructor import assigned_names, nodes, statements_in

# What a moved value may hold: reads and arithmetic, nothing that calls or branches.
_PURE = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.BinOp, ast.UnaryOp)
_PURE += (ast.expr_context, ast.operator, ast.unaryop)


def share_facts(
    body: Sequence[cst.BaseStatement],
    block: Sequence[cst.BaseStatement],
    method: cst.FunctionDef,
    changes: Callable[[cst.BaseStatement], set[str]],
    holder: cst.BaseStatement | None = None,
) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement]]:
    """`body`: the statements of the method's block where the registration went, `block` (its statements, in a
    row) among them; `method`: the method before the registration went in; `changes`: the `self.x` a statement
    changes, itself or through a method of the class it calls; `holder`: the statement of the method's own body
    that holds `body` (None: `body` is the method's). The body and the block with each binding of the block that
    a statement above binds the same way, or another registration above reads in place, bound once."""
    body, block = list(body), list(block)
    top = list(method.body.body)
    outer = top[: top.index(holder)] if holder is not None else []  # run before the holder, and so before body
    definition = ast.parse(code_of(method)).body[0]
    deleted = [n.id for n in ast.walk(definition) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del)]
    rebound = body_stores(definition) + deleted
    mentioned = {n.id for n in ast.walk(definition) if isinstance(n, ast.Name)} | set(parameters(definition))
    for name, value in _bindings(block):
        value_tree = ast.parse(value, mode="eval").body
        binding = normalized(f"{name} = {value}")
        shorter, dropped = _without(block, binding)
        if dropped is None or _names(value_tree) & {*rebound, *stores(ast.parse(_code(block)))}:
            continue  # it reads a name the method or the block binds: not what it read above, maybe
        start, size = next(i for i, statement in enumerate(body) if statement is block[0]), len(block)
        if name in mentioned:  # kept where a statement above binds it as the block does, and nothing else does
            scope = [*outer, *body[:start]]
            bound = next((i for i, statement in enumerate(scope) if _as_written(statement) == binding), None)
            if bound is None or rebound.count(name) != 1:
                continue
            between = [*outer[bound + 1 :], holder] if bound < len(outer) else scope[bound + 1 :]
            if not _quiet(between, value_tree, changes):
                continue
        else:
            first = next((i for i in range(start) if _reads_in_place(body[i], value_tree)), None)
            if first is None or not _pure(value_tree) or not _quiet(body[first:start], value_tree, changes):
                continue
            renamed = _Renamed(normalized(value), name)
            earlier = [s.visit(renamed) if _registers(s) else s for s in body[first:start]]
            moved = dropped.with_changes(leading_lines=earlier[0].leading_lines)
            body[first:start] = [moved, earlier[0].with_changes(leading_lines=[]), *earlier[1:]]
            start += 1
        body[start : start + size] = block = shorter
    return body, block


def clobbered(
    block: Sequence[cst.BaseStatement], after: Sequence[cst.BaseStatement]
) -> list[tuple[str, cst.BaseStatement]]:
    """Each local the block binds that a statement running after it reads before binding it again, with that
    statement: the method there would read the block's value, not its own."""
    names = dict.fromkeys(stores(ast.parse(_code(block))))
    trees = [(statement, ast.parse(code_of(statement))) for statement in after] if names else []
    found = []
    for name in names:
        for statement, tree in trees:
            if name in loads(tree):
                found.append((name, statement))
                break
            if name in stores(tree):
                break
    return found


def same_gate(first: cst.BaseStatement, second: cst.BaseStatement) -> bool:
    return all(
        isinstance(s, cst.If) and s.orelse is None and isinstance(s.body, cst.IndentedBlock) for s in (first, second)
    ) and first.test.deep_equals(second.test)


def one_if(earlier: cst.If, later: cst.If, bound_once: bool) -> cst.If:
    """Two `if`s on the same test as one: the later's body after the earlier's, an `if` that opens it joined with
    one that ends the earlier's the same way (a gate the site adds around the registration's own `if`); with
    `bound_once`, the later's `x = ...` that the earlier already binds as it is left out."""
    above, added = earlier.body.body, later.body.body
    if bound_once:
        added = [s for s in added if not _bound_once_as(s, above, above)]
    if above and added and same_gate(above[-1], added[0]):
        body = [*above[:-1], one_if(above[-1], added[0], bound_once), *added[1:]]
    else:
        body = [*above, *added]
    return earlier.with_changes(body=earlier.body.with_changes(body=body))


def _bound_once_as(
    statement: cst.BaseStatement, among: Sequence[cst.BaseStatement], scope: Sequence[cst.BaseStatement]
) -> bool:
    """`statement` is an `x = ...` that one of `among` already is (comments aside), and `scope` binds (or deletes)
    x nowhere else at any depth: the x it would bind is there already."""
    names = assigned_names(statement)
    if len(names) != 1:
        return False
    bound = sum(len((assigned_names(inner) | _deleted(inner)) & names) for s in scope for inner in statements_in(s))
    return bound == 1 and _as_written(statement) in {_as_written(s) for s in among}


def _deleted(statement: cst.BaseStatement) -> set[str]:
    """The names a `del` of the statement line unbinds (as well as any attribute names it mentions)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return set()
    return {name.value for d in statement.body if isinstance(d, cst.Del) for name in nodes(d.target, cst.Name)}


def _as_written(statement: cst.BaseStatement) -> str:
    return normalized(code_of(statement.with_changes(leading_lines=[])))


def _bindings(block: Sequence[cst.BaseStatement]) -> list[tuple[str, str]]:
    """Each `x = <value>` of the block that binds x first, no statement of the block having read x before it: at
    its top level or in the body of an `if` there, in order."""
    code = _code(block)
    found, seen = [], set()
    for statement in _in_order(ast.parse(code).body):
        target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id not in seen | _names(statement.value):
            found.append((target.id, ast.get_source_segment(code, statement.value)))
        seen |= _names(statement)
    return found


def _in_order(statements: list[ast.stmt]):
    """The statements, and those of the `if`s among them, in the order they run (an `if`'s test first)."""
    for statement in statements:
        if isinstance(statement, ast.If):
            yield ast.Expr(statement.test)
            yield from _in_order(statement.body)
            yield from _in_order(statement.orelse)
        else:
            yield statement


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _pure(value: ast.expr) -> bool:
    """Reads and arithmetic only: computed above another registration's call, it does what the call did there."""
    return all(isinstance(n, _PURE) for n in ast.walk(value))


def _reads_in_place(statement: cst.BaseStatement, value: ast.expr) -> bool:
    """A registration's call statement that computes `value` itself on every run (not under a condition)."""
    if not _registers(statement):
        return False
    dump = ast.dump(value)
    pending: list[ast.AST] = list(ast.parse(code_of(statement)).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.expr) and ast.dump(node) == dump:
            return True
        if not isinstance(node, (ast.IfExp, ast.BoolOp, ast.Lambda, ast.comprehension)):
            pending += ast.iter_child_nodes(node)
    return False


def _registers(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_warmup"
        for n in ast.walk(ast.parse(code_of(statement)))
    )


def _quiet(
    between: Sequence[cst.BaseStatement], value: ast.expr, changes: Callable[[cst.BaseStatement], set[str]]
) -> bool:
    """Nothing in `between` changes an attribute of `self` that `value` reads (`changes`: what a statement
    changes, as `share_facts` takes it)."""
    read = {
        f"self.{n.attr}"
        for n in ast.walk(value)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }
    return not any(changes(statement) & read for statement in between)


def _without(
    block: list[cst.BaseStatement], binding: str
) -> tuple[list[cst.BaseStatement], cst.SimpleStatementLine | None]:
    """The block less its first statement written as `binding` (its gap and comments go to the next one), and that
    statement (None where the block has none: the block as it is)."""
    head = cst.SimpleStatementLine([cst.Pass()])  # the block is not where a body starts: its first gap stays
    drop = _Drop(binding)
    shorter = list(cst.IndentedBlock([head, *block]).visit(drop).body[1:])
    return shorter, drop.dropped


class _Drop(RebuildsBlocks, cst.CSTTransformer):
    def __init__(self, binding: str):
        super().__init__()
        self.binding, self.dropped, self.rebuilder = binding, None, Rebuilder(owns_comments=True)

    def leave_SimpleStatementLine(self, original, updated):
        if self.dropped is None and _as_written(original) == self.binding:
            self.dropped = original.with_changes(leading_lines=[])
            self.rebuilder.note(original)
            return cst.RemoveFromParent()
        return updated


class _Renamed(cst.CSTTransformer):
    """Every expression written as `value` (normalized) read as the local `name` instead."""

    def __init__(self, value: str, name: str):
        super().__init__()
        self.value, self.name = value, name

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)
        if isinstance(updated, cst.BaseExpression) and normalized(code_of(original)) == self.value:
            return cst.Name(self.name)
        return updated


def _code(statements: Sequence[cst.BaseStatement]) -> str:
    return cst.Module(body=list(statements)).code
