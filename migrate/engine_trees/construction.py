"""A constructor run from the engine tree on every path its undecided branches can take.

A migrated layer registers its kernel in its constructor, but no CPU run can build the layer (sub-layers,
weights, the GPU). So the constructor's own statements run one at a time, in its module, from the tree:
- a statement the stand-ins cannot evaluate binds what it assigns to a names-only value (a value stub);
- an `if` whose test reads a names-only value (a fork's own config flag, a sub-layer's setting) runs both
  arms; one the serving configuration decides (platform, config, parallel sizes) runs the arm it picks;
- `with` and `try` bodies run as any other (their handlers never do); a loop runs whole, or once where it
  returns;
- `self` holds what the constructor assigned, else the class's own methods (run on this `self`), else the
  family's stand-in values; an attribute the constructor assigns is readable only once it has.
A statement that registers runs exactly as written. The construction is broken when one raises (it reads an
attribute the constructor sets only later) or when a path finishes without running one while another path
does (the registration sits in one arm of a branch, below an early return, or under a condition one path
fails). A path that ends in `raise`, or in an assertion the stand-ins show false, builds nothing; nor does one
of a later construction method (`bind_kv_cache`) that returns before its base's call binds anything. Where the
serving configuration turns a registration's gate off, it is off on every path alike.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import types
from collections.abc import Callable
from typing import Any

import torch

from .errors import EngineRunError
from .sources import NamesOnlyUsed, is_names_only, placeholder

# Paths kept after each statement once those that hold the same names are merged; a constructor that still
# has more is one this run cannot cover, and says so.
MOST_PATHS = 64


class ConstructionBroken(EngineRunError):
    """A path of the migrated constructor registers wrongly: it raises while registering, or never registers."""


class _Self:
    """`self` during the run: what the constructor has assigned so far, else the family's stand-in value (or the
    class's own attribute, a method bound to this object); an attribute the constructor assigns later is not
    there yet."""

    def __init__(self, run: ConstructorRun, stand_in: Any, later: dict[str, int], assigned: dict[str, Any]):
        object.__setattr__(self, "_zerojit_run", (run, stand_in, later, assigned))

    def __getattr__(self, name: str) -> Any:
        run, stand_in, later, assigned = object.__getattribute__(self, "_zerojit_run")
        if name in assigned:
            return assigned[name]
        if name in later:
            raise AttributeError(f"self.{name} is read before {run.where} sets it on line {later[name]}")
        value = run.methods.get(name)  # the class's own code runs on this `self`, not on the stand-in
        if isinstance(value, property):
            return value.fget(self)
        if isinstance(value, functools.cached_property):
            return value.func(self)
        if isinstance(value, types.FunctionType):
            return types.MethodType(value, self)
        if hasattr(stand_in, name):
            return getattr(stand_in, name)
        if name.startswith("__"):
            raise AttributeError(name)
        return placeholder(f"{run.owner}.{name}")  # set by a base class: a value stub

    def __setattr__(self, name: str, value: Any) -> None:
        _, stand_in, _, assigned = object.__getattribute__(self, "_zerojit_run")
        assigned[name] = getattr(stand_in, name, value)  # the stand-in's value stub where it has one


@dataclasses.dataclass
class _Path:
    scope: dict[str, Any]  # the constructor's locals
    assigned: dict[str, Any]  # self's attributes set so far
    decisions: tuple[str, ...] = ()
    registered: bool = False
    bound: bool = False  # a later construction method's base call has run (`ConstructorRun.binds_later`)
    end: str | None = None  # "return" or "raise" once the path has left the constructor

    def fork(self, decision: str) -> _Path:
        """This path from here on, apart: its own locals and its own `self`."""
        run, stand_in, later, _ = object.__getattribute__(self.scope["self"], "_zerojit_run")
        assigned = dict(self.assigned)
        scope = dict(self.scope, self=_Self(run, stand_in, later, assigned))
        return dataclasses.replace(self, scope=scope, assigned=assigned, decisions=(*self.decisions, decision))

    def shape(self) -> tuple:
        """What tells this path from another: how it ended, whether it registered, the names it holds, and
        those names' plain values (a number, a string: what a registration may read and pass on)."""
        return (self.end, self.registered, self.bound, _held(self.scope), _held(self.assigned))


class ConstructorRun:
    """Method `function` of class `owner` (in the tree's file `path`), run on every path in `namespace` (the
    module's names it reads); `methods`: the class's other methods, as `self` finds them; `registers(call)`
    says whether a call is a registration."""

    def __init__(
        self,
        namespace: dict[str, Any],
        path: str,
        owner: str,
        function: ast.FunctionDef,
        methods: dict[str, Any],
        registers: Callable[[ast.Call], bool],
    ):
        self.namespace, self.path, self.owner, self.function = namespace, path, owner, function
        self.methods = methods
        self.where = f"{path}: {owner}.{function.name}"
        self._registers = registers
        # A later construction method (`bind_kv_cache`) that calls the base's own: a path that leaves before that
        # call binds nothing, and registers nothing (the migration registers after it). A constructor's every
        # path builds the layer.
        self.binds_later = function.name != "__init__" and any(
            _calls_base(node, function.name) for node in ast.walk(function)
        )
        self._code: dict[int, types.CodeType] = {}

    def registering(self, node: ast.AST) -> bool:
        """A statement (or expression) that makes a registration call."""
        return any(isinstance(n, ast.Call) and self._registers(n) for n in ast.walk(node))

    def _gate(self, node: ast.stmt) -> bool:
        """An `if` that holds only registrations (and the imports they need): the registration's own condition,
        which raising is a broken construction (it reads what the constructor sets only later)."""
        return (
            isinstance(node, ast.If)
            and not node.orelse
            and self.registering(node)
            and all(isinstance(s, (ast.Import, ast.ImportFrom)) or self.registering(s) for s in node.body)
        )

    def run(self, bound: dict[str, Any]) -> list[_Path]:
        """Every path through the method with its parameters `bound` (`self`: the family's stand-in)."""
        later = {
            target.attr: target.lineno
            for node in ast.walk(self.function)
            for target in _targets(node)
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
        }
        assigned: dict[str, Any] = {}
        scope = dict(bound, self=_Self(self, bound.get("self"), later, assigned))
        paths = self._block(self.function.body, [_Path(scope, assigned)])
        finished = [path for path in paths if path.end != "raise" and (path.bound or not self.binds_later)]
        registered = [path for path in finished if path.registered]
        shared = {decision for path in registered for decision in path.decisions}
        for path in finished if registered else ():
            if not path.registered:
                taken = [decision for decision in path.decisions if decision not in shared] or path.decisions
                raise ConstructionBroken(
                    f"{self.where} finishes without registering where {'; '.join(taken)} (other paths register)"
                )
        return paths

    def _block(self, block: list[ast.stmt], paths: list[_Path]) -> list[_Path]:
        for statement in block:
            following: list[_Path] = []
            for path in paths:
                following += [path] if path.end else self._statement(statement, path)
            paths = _merged(following)
            if len(paths) > MOST_PATHS:
                raise EngineRunError(
                    f"{self.where}: more than {MOST_PATHS} paths through its undecided branches "
                    f"by line {statement.lineno}"
                )
        return paths

    def _statement(self, statement: ast.stmt, path: _Path) -> list[_Path]:
        match statement:
            case ast.If():
                return self._branch(statement, path)
            case ast.Return():
                path.end = "return"
                return [path]
            case ast.Raise():
                path.end = "raise"
                return [path]
            case ast.Assert(test=test) if self._fails(test, path):
                path.end = "raise"
                return [path]
            case ast.With() | ast.Try():  # the body as any other; handlers do not run (no statement raises here)
                for item in getattr(statement, "items", ()):
                    self._bind(item.optional_vars, path)
                body = statement.body + getattr(statement, "orelse", []) + getattr(statement, "finalbody", [])
                return self._block(body, [path])
            case ast.For() | ast.While() if self.registering(statement):
                raise EngineRunError(f"{self.where}: a registration inside a loop, line {statement.lineno}")
            case ast.For() | ast.While() if any(isinstance(n, ast.Return) for n in ast.walk(statement)):
                self._bind(getattr(statement, "target", None), path)  # once, to follow its return
                return self._block(statement.body, [path])
        registering = self.registering(statement)
        try:
            self._exec(statement, path)
        except NamesOnlyUsed:
            if registering:
                raise  # what the registration reads, the family must stub
            self._bind_targets(statement, path)
        except Exception as exc:
            if registering:
                raise ConstructionBroken(
                    f"{self.where} registers on line {statement.lineno} (`{_first_line(statement)}`), "
                    f"which raises {type(exc).__name__}: {exc}"
                ) from exc
            self._bind_targets(statement, path)
        if registering:
            path.registered = True
        if self.binds_later and any(_calls_base(node, self.function.name) for node in ast.walk(statement)):
            path.bound = True
        return [path]

    def _branch(self, statement: ast.If, path: _Path) -> list[_Path]:
        try:
            decided = self._decided(statement.test, path)
        except Exception as exc:
            if not self._gate(statement):
                decided = None  # the stand-ins cannot tell: either arm
            else:
                raise ConstructionBroken(
                    f"{self.path}:{statement.lineno}: the registration's gate `{ast.unparse(statement.test)}` raises "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        if decided is None:
            condition = f"line {statement.lineno}: {ast.unparse(statement.test)}"
            arms = self._block(statement.body, [path.fork(condition)])
            return arms + self._block(statement.orelse, [path.fork(f"{condition} is false")])
        return self._block(statement.body if decided else statement.orelse, [path])

    def _decided(self, test: ast.expr, path: _Path) -> bool | None:
        """The test's truth value, or None where it reads a names-only value (either arm can run); raises what
        evaluating it raises otherwise."""
        try:
            value = self._eval(test, path)
        except NamesOnlyUsed:
            return None
        stubbed = is_names_only(value) or any(
            self._stub(node, path) for node in ast.walk(test) if isinstance(node, (ast.Name, ast.Attribute))
        )
        try:
            return None if stubbed else bool(value)
        except NamesOnlyUsed:
            return None

    def _fails(self, test: ast.expr, path: _Path) -> bool:
        """An assertion the stand-ins show false (the path builds nothing); one they cannot evaluate holds."""
        try:
            return self._decided(test, path) is False
        except Exception:  # noqa: BLE001 - not shown false
            return False

    def _stub(self, node: ast.expr, path: _Path) -> bool:
        try:
            return is_names_only(self._eval(node, path))
        except Exception:  # noqa: BLE001 - the whole test was evaluated; a part alone may not be
            return False

    def _eval(self, node: ast.expr, path: _Path) -> Any:
        """`node`'s value in the path's scope; a name it binds (`(x := ...) is not None`) is bound there too."""
        scope = self._globals(path)
        value = eval(self._compiled(ast.Expression(node), node), scope)
        for bound in (n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr)):
            path.scope[bound] = scope[bound]
        return value

    def _exec(self, statement: ast.stmt, path: _Path) -> None:
        scope = self._globals(path)
        exec(self._compiled(ast.Module([statement], []), statement), scope)
        names = self.namespace
        path.scope.update({k: v for k, v in scope.items() if k not in names or v is not names[k]})

    def _globals(self, path: _Path) -> dict[str, Any]:
        return {**self.namespace, **path.scope}

    def _compiled(self, tree: ast.AST, node: ast.AST) -> types.CodeType:
        key = id(node)
        if key not in self._code:
            mode = "eval" if isinstance(tree, ast.Expression) else "exec"
            self._code[key] = compile(tree, self.path, mode)
        return self._code[key]

    def _bind_targets(self, statement: ast.stmt, path: _Path) -> None:
        """Value stubs for what a statement the stand-ins cannot evaluate would have assigned (a name it assigned
        before holds no value it had then)."""
        for node in ast.walk(statement):
            for target in _targets(node):
                self._bind(target, path)

    def _bind(self, target: ast.expr | None, path: _Path) -> None:
        """`target` given a names-only value, as an assignment the stand-ins cannot evaluate would leave it."""
        match target:
            case ast.Name(id=name):
                path.scope[name] = placeholder(f"{self.owner}.{name}")()
            case ast.Attribute(value=ast.Name(id="self"), attr=attr):
                setattr(path.scope["self"], attr, placeholder(f"{self.owner}.{attr}")())
            case ast.Tuple(elts=elements) | ast.List(elts=elements):
                for element in elements:
                    self._bind(element.value if isinstance(element, ast.Starred) else element, path)


def _targets(node: ast.AST) -> list[ast.expr]:
    match node:
        case ast.Assign(targets=targets):
            return list(targets)
        case ast.AnnAssign(target=target) | ast.AugAssign(target=target) | ast.For(target=target):
            return [target]
        case ast.NamedExpr(target=target):
            return [target]
    return []


def _held(names: dict[str, Any]) -> frozenset:
    return frozenset((name, value) if _plain(value) else name for name, value in names.items())


def _plain(value: Any) -> bool:
    """A value compared by what it is: a number, string, dtype, enum member, or a tuple of them."""
    if isinstance(value, tuple | frozenset):
        return all(map(_plain, value))
    return isinstance(value, bool | int | float | str | type(None) | torch.dtype | enum.Enum)


def _merged(paths: list[_Path]) -> list[_Path]:
    """Paths alike in `shape`, as one (the first): they differ only in values no plain comparison tells apart."""
    kept: dict[tuple, _Path] = {}
    for path in paths:
        kept.setdefault(path.shape(), path)
    return list(kept.values())


def _calls_base(node: ast.AST, method: str) -> bool:
    """`super().<method>(...)` or `Base.<method>(self, ...)` (codemods.transforms.constructor.calls_parent, read on
    Python's own tree)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method):
        return False
    receiver = node.func.value
    if isinstance(receiver, ast.Call):
        return isinstance(receiver.func, ast.Name) and receiver.func.id == "super"
    first = node.args[0] if node.args else None
    self_receiver = isinstance(receiver, ast.Name) and receiver.id == "self"
    return not self_receiver and isinstance(first, ast.Name) and first.id == "self"


def _first_line(statement: ast.stmt) -> str:
    return ast.unparse(statement).splitlines()[0]
