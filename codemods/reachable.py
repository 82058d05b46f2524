"""What a function can run when a call fixes some of its parameters: vLLM's warmups call engine helpers with
constant arguments and defaults that pick one path (`backend="gluon"` returns before the Triton kernels;
`fuse_gate` left at its default skips the gate kernel), and a kernel on a path the call never takes is not one
the warmup compiles.

Only what is certain is left out: the branch of an `if` whose test the known values decide, and what follows
a block that always returns or raises; a statement that runs counts whole (a part its own `and` skips
included). A value is known from a constant argument, a constant default of a
parameter the call does not pass, and a name assigned from what `simplify.evaluate` computes of those; a
statement that may store a name (a loop, a `with`, a `try`, an unpacking) makes it unknown again.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .simplify import NotEvaluable, evaluate
from .syntax import stores


def call_arguments(function: ast.FunctionDef, call: ast.Call) -> dict[str, object]:
    """The parameters `call` fixes: its constant arguments, and the constant defaults of those it does not pass
    (none when it passes `*args` or `**kwargs`, or the function is decorated: a decorator may pass them)."""
    if function.decorator_list:
        return {}
    arguments = function.args
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    known: dict[str, object] = {}
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    passed = set(positional[: len(call.args)]) | {k.arg for k in call.keywords}
    if not starred and not any(k.arg is None for k in call.keywords):
        defaults = [*[None] * (len(positional) - len(arguments.defaults)), *arguments.defaults]
        defaults += arguments.kw_defaults
        names = positional + [a.arg for a in arguments.kwonlyargs]
        known |= {
            name: default.value
            for name, default in zip(names, defaults)
            if isinstance(default, ast.Constant) and name not in passed
        }
    for name, argument in zip(positional, call.args):
        if isinstance(argument, ast.Starred):
            break
        if isinstance(argument, ast.Constant):
            known[name] = argument.value
    known |= {k.arg: k.value.value for k in call.keywords if k.arg and isinstance(k.value, ast.Constant)}
    return known


def reachable(function: ast.FunctionDef, known: Mapping[str, object]) -> list[ast.AST]:
    """Every node of `function`'s body that can run when its parameters hold `known` (the others: anything)."""
    walk = _Walk()
    walk.block(function.body, dict(known))
    return walk.nodes


class _Walk:
    def __init__(self):
        self.nodes: list[ast.AST] = []

    def block(self, block: list[ast.stmt], values: dict[str, object]) -> bool:
        """Walk the statements in order; True when the block always leaves (what follows it never runs)."""
        return any(self.statement(statement, values) for statement in block)

    def statement(self, statement: ast.stmt, values: dict[str, object]) -> bool:
        if isinstance(statement, ast.If):
            self.nodes += ast.walk(statement.test)
            taken = _known(statement.test, values)
            _forget(statement.test, values)
            if taken is not None:
                return self.block(statement.body if taken else statement.orelse, values)
            body, orelse = dict(values), dict(values)
            leaves_body, leaves_orelse = self.block(statement.body, body), self.block(statement.orelse, orelse)
            paths = [path for path, leaves in ((body, leaves_body), (orelse, leaves_orelse)) if not leaves]
            values.clear()
            if not paths:
                return True
            values.update({k: v for k, v in paths[0].items() if all(_same(p.get(k, _NONE), v) for p in paths)})
            return False
        self.nodes += ast.walk(statement)
        target = _assigned_name(statement)
        value = _known_value(statement.value, values) if target else _NONE
        _forget(statement, values)
        if target and value is not _NONE:
            values[target] = value
        return isinstance(statement, (ast.Return, ast.Raise))


_NONE = object()  # no value known


def _known_value(node: ast.expr | None, values: Mapping[str, object]) -> object:
    try:
        return evaluate(node, values) if node is not None else _NONE
    except (NotEvaluable, TypeError):
        return _NONE


def _known(test: ast.expr, values: Mapping[str, object]) -> bool | None:
    value = _known_value(test, values)
    return None if value is _NONE else bool(value)


def _assigned_name(statement: ast.stmt) -> str | None:
    """`name` of `name = value` or `name: T = value` (one plain target)."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        target = statement.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def _forget(node: ast.AST, values: dict[str, object]) -> None:
    """Every name `node` may store is unknown from here on."""
    for name in stores(node):
        values.pop(name, None)


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b
