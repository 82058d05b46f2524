"""Small facts about Python syntax trees (`ast`) that the planner, the survey, the JIT map and the lift share.

Each rule is written once here: which names a node reads or binds, whether a block leaves its enclosing
block, which import inside a function binds a name, and how a place in a repo is shown ("path:line").
"""

from __future__ import annotations

import ast
import builtins
import collections
import copy
import dataclasses
import difflib
import functools
import hashlib
import re
import symtable
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

_ANNOTATED = re.compile(r"^(\s*[A-Za-z_][\w.]*)\s*:[^=]+=\s*")


def holds_anchor(line: str, anchor: str) -> bool:
    """Whether a statement's line holds `anchor` (a spec's insert_after), its annotation aside:
    `self.norm: RMSNormGated = RMSNormGated(` holds `self.norm = RMSNormGated(`."""
    return anchor in line or anchor in _ANNOTATED.sub(r"\1 = ", line, count=1)


def source_segment(source: str, node: ast.AST, *, padded: bool = False) -> str | None:
    """`ast.get_source_segment`, with the source's lines found once: the standard one splits the whole source at
    every call, and a lift asks for dozens of segments of one kernel file. The segment is cut from the node's own
    lines, and the standard function reads it there."""
    if getattr(node, "end_lineno", None) is None or getattr(node, "end_col_offset", None) is None:
        return None
    starts = _line_starts(source)
    first, last = node.lineno - 1, node.end_lineno - 1
    lines = source[starts[first] : starts[last + 1] if last + 1 < len(starts) else len(source)]
    place = types.SimpleNamespace(
        lineno=1, end_lineno=last - first + 1, col_offset=node.col_offset, end_col_offset=node.end_col_offset
    )
    return ast.get_source_segment(lines, place, padded=padded)


@functools.lru_cache(maxsize=16)
def _line_starts(source: str) -> list[int]:
    """Where each line of `source` starts, lines ending as the parser ends them (\\r\\n, \\r or \\n)."""
    return [0, *(match.end() for match in re.finditer(r"\r\n|\r|\n", source))]


def loads(node: ast.AST) -> set[str]:
    """The names `node` reads."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def parameters(function: ast.FunctionDef) -> list[str]:
    """A function's parameter names, in order (`*args` and `**kwargs` last)."""
    a = function.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)] + [
        p.arg for p in (a.vararg, a.kwarg) if p is not None
    ]


def stores(node: ast.AST) -> list[str]:
    """The names `node` binds where it runs, in order (a name bound twice is listed twice). A function defined
    there binds its name; what its body binds is its own (`body_stores`)."""
    if isinstance(node, _DEFINITIONS):
        return [node.name]
    functions = (*_DEFINITIONS, ast.Lambda)
    inner = {id(n) for f in ast.walk(node) if isinstance(f, functions) for n in ast.walk(f) if n is not f}
    return [
        n.name if isinstance(n, _DEFINITIONS) else n.id
        for n in ast.walk(node)
        if id(n) not in inner
        and (isinstance(n, _DEFINITIONS) or isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    ]


def body_stores(function: ast.FunctionDef) -> list[str]:
    """The names a function's body binds: its locals, less its parameters."""
    return [name for statement in function.body for name in stores(statement)]


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope (a module, class or function), without the insides of the functions, lambdas and
    classes in it (those themselves are included)."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, SCOPES):
            pending += ast.iter_child_nodes(node)


def self_reads(node: ast.AST, required: bool = False) -> set[str]:
    """The x of each `self.x` that `node` reads, and of each `getattr(self, "x"[, default])` or `hasattr(self, "x")`;
    `required`: only those that fail where `self` lacks x (neither a default nor `hasattr`)."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and ast.unparse(n.value) == "self":
            found.add(n.attr)
        elif isinstance(n, ast.Call) and ast.unparse(n.func) in ("getattr", "hasattr") and len(n.args) >= 2:
            owner, name = n.args[:2]
            if ast.unparse(owner) == "self" and isinstance(name, ast.Constant) and isinstance(name.value, str):
                if not required or ast.unparse(n.func) == "getattr" and len(n.args) == 2:
                    found.add(name.value)
    return found


def self_stores(node: ast.AST) -> Iterator[tuple[str, ast.stmt]]:
    """Each `self.x` an assignment inside `node` stores (`=`, annotated, augmented, or one target of several), with
    its statement (an assignment is a statement, so the walk enters no expression)."""
    for statement in (node, *statements(node)):
        if isinstance(statement, ast.Assign):
            targets = list(statement.targets)
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
            targets = [statement.target]
        else:
            continue
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets.extend(target.elts)
            elif isinstance(target, ast.Starred):
                targets.append(target.value)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                yield target.attr, statement


def module_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """The module's statements that run at import, in order: its body's, and those of the `if` and `try` blocks
    there (`if HAS_TRITON: @triton.jit def kernel(...)` defines `kernel` too)."""
    for statement in tree.body:
        yield statement
        if isinstance(statement, ast.If | ast.Try):
            blocks = [statement.body, statement.orelse, *(h.body for h in getattr(statement, "handlers", ()))]
            for block in [*blocks, getattr(statement, "finalbody", [])]:
                yield from module_level(ast.Module(body=block, type_ignores=[]))


def enclosing_class(tree: ast.Module, line: int) -> ast.ClassDef | None:
    """The module's top-level class whose lines hold `line` (None: none does)."""
    return next((c for c in tree.body if isinstance(c, ast.ClassDef) and c.lineno <= line <= c.end_lineno), None)


def exits(block: list[ast.stmt], *, in_loop: bool = False) -> bool:
    """The block ends by leaving what encloses it: a return or a raise, and inside a loop's body a `continue`
    (which leaves the rest of that iteration)."""
    ends = (ast.Return, ast.Raise, ast.Continue) if in_loop else (ast.Return, ast.Raise)
    return bool(block) and isinstance(block[-1], ends)


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def statements(node: ast.AST) -> list[ast.AST]:
    """Every statement nested in `node` (with each `except` handler and `case`), in `ast.walk`'s order, found
    without entering an expression: a statement only ever sits in another's block (a lambda holds none)."""
    found, queue = [], collections.deque([node])
    while queue:
        current = queue.popleft()
        for field in current._fields:
            block = getattr(current, field) if field in _BLOCKS else None
            if isinstance(block, list):
                found += block
                queue += block
    return found


def module_names(table: symtable.SymbolTable) -> set[str]:
    """The names a module binds (its `symtable`): assigned, imported or defined at its top level, in any block, or
    declared global and assigned in a function of it."""
    names = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    for child in _descendants(table):
        names |= {s.get_name() for s in child.get_symbols() if s.is_declared_global() and s.is_assigned()}
    return names


def _descendants(table: symtable.SymbolTable) -> Iterator[symtable.SymbolTable]:
    for child in table.get_children():
        yield child
        yield from _descendants(child)


def function_import(function: ast.FunctionDef, name: str) -> tuple[str, str | None] | None:
    """The absolute import inside `function` that binds `name`: (module, attribute), or (module, None) for a
    module; None when the function imports no such name itself."""
    return function_imports(function)[0].get(name)


def relative_function_import(function: ast.FunctionDef, name: str) -> tuple[str | None, str, int] | None:
    """The relative import inside `function` that binds `name`: (module as written, attribute, level)."""
    return function_imports(function)[1].get(name)


@functools.lru_cache(maxsize=8192)
def function_imports(function: ast.FunctionDef) -> tuple[dict[str, tuple[str, str | None]], dict[str, tuple]]:
    """The names `function`'s own imports bind, the first import of each: absolute ones, then relative ones. Read
    once per function (the trees a run reads are never edited)."""
    absolute: dict[str, tuple[str, str | None]] = {}
    relative: dict[str, tuple[str | None, str, int]] = {}
    for node in statements(function):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                bound = alias.asname or alias.name
                if node.level:
                    relative.setdefault(bound, (node.module, alias.name, node.level))
                else:
                    absolute.setdefault(bound, (node.module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                absolute.setdefault(alias.asname or top, (alias.name if alias.asname else top, None))
    return absolute, relative


# Deeper than this, a tree that Python parsed may still be too deep for ast.unparse and for the recursive helpers
# that read it (`@d()()()...` 400 times fails at Python's default recursion limit); real code stays far below.
READABLE_DEPTH = 200


def deeper_than(tree: ast.AST, limit: int = READABLE_DEPTH) -> bool:
    """Does the tree nest deeper than `limit` (counted without recursion, so it holds for any depth)?"""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


@dataclasses.dataclass(frozen=True)
class Place:
    """Where something is, as messages show it (`path:line`): the file relative to the repo, and the line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def where(repo: Path, path: Path, line: int) -> Place:
    """The place of a line of a file of the repo."""
    return Place(path.relative_to(repo).as_posix(), line)


def is_docstring(statement: ast.stmt) -> bool:
    """A string written as a statement: a docstring (it does nothing)."""
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def conjunction(parts: list[str]) -> str:
    """Conditions joined by `and`, each once (empty ones left out), in parentheses where one binds looser than `and`
    (`a or b`)."""
    unique = list(dict.fromkeys(filter(None, parts)))
    if len(unique) <= 1:
        return "".join(unique)
    return ast.unparse(ast.BoolOp(ast.And(), [ast.parse(part, mode="eval").body for part in unique]))


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def source_lines(text: str, keepends: bool = False) -> list[str]:
    """The text's lines as Python and ruff count them, so that a line number from `ast`, libcst or ruff indexes them
    from 1: ended by `\\n`, `\\r\\n` or `\\r` only (`str.splitlines` also ends one at a form feed, a PEP 8 page
    break a comment may hold, and at a few other characters)."""
    found = _LINE.findall(text)
    return found if keepends else [line.rstrip("\r\n") for line in found]


def kept_lines(before: str, after: str, edited: bool = False) -> dict[int, int]:
    """Lines of `after` kept as they were from `before`: after's line number -> before's (1-based); `edited`: also
    the lines of a block edited in place (replaced by as many lines), each where it was."""
    matcher = difflib.SequenceMatcher(None, source_lines(before), source_lines(after), autojunk=False)
    return {
        j1 + k + 1: i1 + k + 1
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag == "equal" or (edited and tag == "replace" and i2 - i1 == j2 - j1)
        for k in range(j2 - j1)
    }


def negated(test: ast.expr) -> ast.expr:
    """The test's negation, written as a reader would (a flipped comparison, `not` dropped, De Morgan's `or`)."""
    flips = {
        ast.Eq: ast.NotEq,
        ast.NotEq: ast.Eq,
        ast.In: ast.NotIn,
        ast.NotIn: ast.In,
        ast.Is: ast.IsNot,
        ast.IsNot: ast.Is,
    }
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in flips:
        return ast.Compare(test.left, [flips[type(test.ops[0])]()], test.comparators)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return ast.BoolOp(ast.And(), [negated(v) for v in test.values])
    return ast.UnaryOp(ast.Not(), test)


def conjuncts(test: ast.expr) -> list[ast.expr]:
    """The parts of an `and`, flattened."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in conjuncts(value)]
    return [test]


def imported_in(code: str) -> set[str]:
    """The names a snippet binds by `from ... import` at any depth."""
    return {
        alias.asname or alias.name
        for n in ast.walk(ast.parse(code))
        if isinstance(n, ast.ImportFrom)
        for alias in n.names
    }


def local_names(function: ast.FunctionDef) -> set[str]:
    """The names a function stores anywhere in its body (its locals, comprehension variables included)."""
    return {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def definition_digest(
    tree: ast.Module, qualname: str, parameters: Callable[[ast.AST, ast.expr], Signature | None] | None = None
) -> tuple[ast.AST, str] | None:
    """The module-level definition `qualname` names (`f`, `Class`, `Class.method`) and a digest of what it says: its
    code less docstrings, layout, log lines and the names of its functions' locals (16 hex digits of a SHA-256; see
    `_what_it_says`), or only its parameters where `qualname` ends in `()`, or only its calls of `g` and the
    assignments of what they pass where it ends in `(g)` (with the first such call: what a caller passes a step);
    None where the module has no such definition or call. `parameters(definition, func)`: the parameters of what a
    call of it calls, where known (None: not known), so that arguments passed by position or by name say the same."""
    qualname, _, called = qualname.removesuffix(")").partition("(") if qualname.endswith(")") else (qualname, "", None)
    node: ast.AST = tree
    for part in qualname.split("."):
        node = next((n for n in getattr(node, "body", []) if isinstance(n, _DEFINITIONS) and n.name == part), None)
        if node is None:
            return None
    if called == "":
        bare = copy.deepcopy(node.args)
    else:
        bare = copy.deepcopy(node)
        for call in (n for n in ast.walk(bare) if isinstance(n, ast.Call) and _last_name(n.func) == called):
            call.pinned = True  # marked before a local name of `g` (imported in the function) is numbered
        bare = _what_it_says(bare, functools.partial(parameters, node) if parameters else None)
    if called:
        calls = [n for n in ast.walk(bare) if getattr(n, "pinned", False)]
        if not calls:
            return None
        node, bare, renumbered = calls[0], [*_feeding(bare, calls), *calls], {}
        for n in (n for part in bare for n in ast.walk(part)):  # locals numbered among what is pinned: one added
            for field in ("id", "name", "rest"):  # elsewhere in the caller changes nothing the calls pass
                if str(value := getattr(n, field, None)).startswith("local "):
                    setattr(n, field, renumbered.setdefault(value, f"local {len(renumbered)}"))
    return node, hashlib.sha256(_dump(bare).encode()).hexdigest()[:16]


def _feeding(function: ast.AST, calls: list[ast.Call]) -> list[ast.stmt]:
    """The assignments in `function` of the locals the calls pass, and of the locals those read, in source order:
    what a call passes is what it was computed from (a filter, a log line, another call around it are not)."""
    assignments = [n for n in ast.walk(function) if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)]
    read = {n.id for call in calls for n in ast.walk(call) if isinstance(n, ast.Name) and n.id.startswith("local ")}
    found: list[ast.stmt] = []
    while new := [s for s in assignments if s not in found and read & set(stores(s))]:
        found += new
        read |= {n.id for s in new for n in ast.walk(s) if isinstance(n, ast.Name)}
    return sorted(found, key=lambda s: (s.lineno, s.col_offset))


def _last_name(func: ast.expr) -> str | None:
    """`g` of a call of `g`, `m.g` or `self.g`."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _dump(node: object) -> str:
    """`ast.dump` less its empty fields: the same on every Python the project runs on, where a newer `ast` adds a
    field (3.12's `type_params`) that code without the feature leaves empty."""
    if isinstance(node, ast.AST):
        fields = (
            f"{name}={_dump(value)}" for name, value in ast.iter_fields(node) if value is not None and value != []
        )
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return f"[{', '.join(map(_dump, node))}]"
    return repr(node)


_LOGGERS = {"logger", "log", "logging"}  # the names a module's logger goes by
_LEVELS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}  # and `<level>_once`
# What a log line's arguments may hold and still do nothing: reads and arithmetic, `len`/`str`/`repr` of them. Not a
# subscript (a defaultdict inserts), a walrus, a comprehension, `*args` or `list(it)` (they consume or bind).
_INERT = (
    ast.Constant, ast.Name, ast.Attribute, ast.JoinedStr, ast.FormattedValue, ast.Tuple, ast.keyword,
    ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)  # fmt: skip
_INERT_CALLS = {"len", "str", "repr"}


class Signature(NamedTuple):
    """A function's parameters as a call binds them: those it takes by position (or by name), then by name only."""

    positional: tuple[str, ...]
    keyword_only: tuple[str, ...]


def signature(function: ast.FunctionDef, bound: bool = False) -> Signature:
    """`function`'s parameters as a call binds them; `bound`: called as a bound method (its first is not passed)."""
    positional = [a.arg for a in function.args.posonlyargs + function.args.args]
    return Signature(tuple(positional[bound:]), tuple(a.arg for a in function.args.kwonlyargs))


def _what_it_says(node: ast.AST, parameters: Callable[[ast.expr], Signature | None] | None = None) -> ast.AST:
    """`node` (a copy) less what cannot change what it does: docstrings, statements that only log (`_logs`), how a
    call whose callee's `parameters` are known passes its arguments (`_by_name`), and the names it binds for itself
    (`_own_names`), numbered in the order a breadth-first walk meets them."""
    for inner in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(inner, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                docstring = field == "body" and len(block) > 1 and is_docstring(block[0])
                kept = [s for s in block[docstring:] if not _logs(s)]
                bare_try = field == "finalbody" and not getattr(inner, "handlers", None)  # needs its `finally`
                setattr(inner, field, kept or ([ast.Pass()] if field == "body" or bare_try else []))
    if parameters is not None:
        for call in [n for n in ast.walk(node) if isinstance(n, ast.Call)]:
            _by_name(call, parameters(call.func))
    own = _own_names(node)
    numbered: dict[str, str] = {}

    def number(name: str) -> str:
        return numbered.setdefault(name, f"local {len(numbered)}") if name in own else name

    for n in ast.walk(node):
        if isinstance(n, ast.alias):
            bound = n.asname or n.name  # `from m import X` is numbered as `from m import X as <n>`
            n.asname = number(bound) if bound in own else n.asname
        elif isinstance(n, ast.Nonlocal):
            n.names = [number(name) for name in n.names]
        else:
            for field in ("id", "name", "rest"):  # a name read or bound; a def's, a capture's, a `**rest`'s
                if isinstance(getattr(n, field, None), str):
                    setattr(n, field, number(getattr(n, field)))
    return node


def _by_name(call: ast.Call, parameters: Signature | None) -> None:
    """Every argument of `call` passed by name, in the order of the callee's `parameters`: `f(a, b=x)`, `f(a, x)` and
    `f(b=x, a=a)` say the same. Only where each argument only reads (`_inert`: the order they are evaluated in cannot
    matter) and all of them bind to a parameter (no `*args`, no `**kwargs`, none the callee lacks)."""
    arguments = [*call.args, *call.keywords]
    if parameters is None or not all(_inert(a) for a in arguments) or len(call.args) > len(parameters.positional):
        return  # a `*args` does not read only
    bound = dict(zip(parameters.positional, call.args))
    names = (*parameters.positional, *parameters.keyword_only)
    for keyword in call.keywords:
        if keyword.arg not in names or keyword.arg in bound:
            return  # `**kwargs`, or a name the callee does not take: the call says what it says
        bound[keyword.arg] = keyword.value
    call.args, call.keywords = [], [ast.keyword(arg=name, value=bound[name]) for name in names if name in bound]


def _inert(argument: ast.AST) -> bool:
    """Whether an argument does nothing but read (`_INERT`)."""
    return all(
        isinstance(n, _INERT) or isinstance(n, ast.Call) and ast.unparse(n.func) in _INERT_CALLS
        for n in ast.walk(argument)
    )


def _logs(statement: ast.stmt) -> bool:
    """Whether a statement only logs: `logger.info(...)` (a logging method of a name a logger goes by) whose
    arguments do nothing (`_INERT`)."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    call = statement.value
    logger = call.func.value if isinstance(call.func, ast.Attribute) else None
    return (
        isinstance(logger, ast.Name)
        and logger.id in _LOGGERS
        and call.func.attr.removesuffix("_once") in _LEVELS
        and all(_inert(argument) for argument in [*call.args, *call.keywords])
    )


_BY_NAME = {"locals", "vars", "dir", "eval", "exec"}  # builtins that read a scope's names as strings


def _own_names(node: ast.AST) -> set[str]:
    """The names only `node`'s functions bind for themselves (Python's own scopes, `symtable`): a function's locals
    and the cells its inner functions read. Never a name any scope reads from its module or the builtins, takes as a
    parameter (callers pass it by name), binds in a class body (an attribute), imports as `import a.b` (the name is
    what it imports), gives a nested def or class (its `__name__`), or spells `__private` (mangled in a class); and
    none at all where the code reads names as strings (`locals()`, `eval`): renaming those would change what the
    code does."""
    if any(isinstance(n, ast.Name) and n.id in _BY_NAME for n in ast.walk(node)):
        return set()
    kept = {a.name.split(".")[0] for a in ast.walk(node) if isinstance(a, ast.alias) and not a.asname and "." in a.name}
    kept |= {n.name for n in ast.walk(node) if isinstance(n, _DEFINITIONS)}
    own: set[str] = set()
    tables = [symtable.symtable(ast.unparse(node), "<pinned>", "exec")]
    while tables:
        table = tables.pop()
        tables += table.get_children()
        for symbol in table.get_symbols():
            name = symbol.get_name()
            local = (symbol.is_local() or symbol.is_free()) and not (symbol.is_parameter() or symbol.is_global())
            private = name.startswith("__") and not name.endswith("__")
            if table.get_type() == "function" and local and not private:
                own.add(name)
            else:
                kept.add(name)
    return own - kept


def holds_call_like(tree: ast.AST, call_source: str, kernels: set[str]) -> bool:
    """Whether `tree` makes a call shaped as `call_source` (a registration `kernel.register_warmup(a=..., b=...)`):
    the same method of one of `kernels` (the kernel's names: an alias too), as many positional arguments, the same
    keywords; their values may be written otherwise (in a site's names, or a fact read once for several calls)."""
    call = next(n for n in ast.walk(ast.parse(call_source)) if isinstance(n, ast.Call))
    wanted = _call_shape(call, {ast.unparse(call.func).rpartition(".")[0]})
    return any(isinstance(n, ast.Call) and _call_shape(n, kernels) == wanted for n in ast.walk(tree))


def _call_shape(call: ast.Call, kernels: set[str]) -> tuple:
    func = call.func
    owner, _, method = ast.unparse(func).rpartition(".")
    return owner in kernels, method, len(call.args), sorted(k.arg or "**" for k in call.keywords)


def free_names(source: str, mode: str) -> set[str]:
    """Names a snippet reads that it does not bind itself (the first name of each attribute chain)."""
    tree = ast.parse(source, mode=mode)
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    stored |= {
        (a.asname or a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - stored


def normalized(code: str) -> str:
    """Code with its layout gone (whitespace, and the trailing commas a formatter adds or drops), for comparison."""
    return re.sub(r",([)\]}])", r"\1", "".join(code.split()))


def expression_or_none(text: str) -> ast.expr | None:
    """`text` parsed as one expression; None where it is not one."""
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def renaming(ours: str, theirs: str) -> dict[str, str] | None:
    """The names of the code `ours` that `theirs` spells another way (`layer` -> `kda_layer`), where renaming them
    one to one (builtins never) makes the two the same code; None where no such renaming does, or none is needed."""
    try:
        mine, other = ast.parse(ours), ast.parse(theirs)
    except SyntaxError:
        return None
    pairs = [
        (a.id, b.id)
        for a, b in zip(ast.walk(mine), ast.walk(other))
        if isinstance(a, ast.Name) and isinstance(b, ast.Name)
    ]
    renamed = dict(pairs)
    if len(renamed) != len(set(pairs)) or len(set(renamed.values())) != len(renamed):
        return None  # not one to one
    renamed = {a: b for a, b in renamed.items() if a != b}
    if not renamed or any(hasattr(builtins, name) for pair in renamed.items() for name in pair):
        return None
    for node in ast.walk(mine):
        if isinstance(node, ast.Name):
            node.id = renamed.get(node.id, node.id)
    return renamed if ast.dump(mine) == ast.dump(other) else None
