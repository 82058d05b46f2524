"""A kernel's `dispatch` rewritten into the form a contract base traces, and the rewrite proven equal.

vLLM's `VllmJitKernel.__init__` does not run `dispatch`: it reads its body, which must be assignments of
one name each and one `return self.CompileKey(field=...)`. A dispatch that decides with early returns,
unpacks a tuple or writes `{}` says the same thing in that form: a tuple is assigned to one name and
indexed (at the read, for an element read once), each early return becomes a conditional expression per
key field (a field one branch leaves out takes the key's default), `{}` becomes `dict()`. Laziness is
kept: a value a branch computes and reads once moves into that branch's arm; one read twice is computed
only on that branch (`x = ... if guard else None`), so nothing is evaluated that the original would not.
An `if` that falls through runs what follows it on both of its paths, and a name assigned again gets a
name of its own.

`prove` checks a rewrite by evaluating both bodies symbolically on every path of their conditions:
parameters and module names are opaque terms, calls and lookups build terms (deterministic and free of
side effects, as a traced dispatch must be), `{}` and `dict()` are one term, and a condition is split on
each comparison or name it tests. Equal keys on every path means equal keys for every input.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import itertools
import keyword
import re
from collections import Counter


class NotRewritable(Exception):
    """The dispatch holds something the rewrite does not handle (with the line)."""

    def __init__(self, line: int, why: str):
        super().__init__(why)
        self.line, self.why = line, why


@dataclasses.dataclass(frozen=True)
class KeyFields:
    """The CompileKey dataclass's fields in order, with each default's expression (None: required); `computed`:
    those whose default is not a value the rewrite can write out (`field(...)`)."""

    names: tuple[str, ...]
    defaults: dict[str, ast.expr | None]
    computed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, kernel: ast.ClassDef) -> KeyFields | None:
        """The fields of the class's own `CompileKey` (None: it declares none); NotRewritable where the fields
        are not all written in its body (a base class, `KW_ONLY`)."""
        key = next((n for n in kernel.body if isinstance(n, ast.ClassDef) and n.name == "CompileKey"), None)
        if key is None:
            return None
        if key.bases or key.keywords:
            raise NotRewritable(key.lineno, "CompileKey has a base class, whose fields the rewrite does not read")
        fields = []
        for node in key.body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            annotation = ast.unparse(node.annotation)
            if "KW_ONLY" in annotation:
                raise NotRewritable(node.lineno, "CompileKey declares KW_ONLY fields")
            if not re.search(r"\b(ClassVar|InitVar)\b", annotation):
                fields.append(node)
        computed = frozenset(f.target.id for f in fields if f.value is not None and not _written_value(f.value))
        return cls(tuple(f.target.id for f in fields), {f.target.id: f.value for f in fields}, computed)

    def by_name(self, call: ast.Call) -> dict[str, ast.expr]:
        if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
            raise NotRewritable(call.lineno, "the key is built from unpacked arguments")
        fields = dict(zip(self.names, call.args)) | {k.arg: k.value for k in call.keywords}
        if len(call.args) > len(self.names) or set(fields) - set(self.names):
            raise NotRewritable(call.lineno, "the key is built with fields CompileKey does not declare")
        return fields


def _written_value(node: ast.expr) -> bool:
    """A default the rewrite can write where a branch leaves its field out: a constant or a dotted name."""
    match node:
        case ast.Constant() | ast.Name():
            return True
        case ast.Attribute(value=value):
            return _written_value(value) and not isinstance(value, ast.Constant)
        case ast.UnaryOp(op=ast.USub(), operand=ast.Constant()):
            return True
        case ast.Tuple(elts=elements):
            return all(map(_written_value, elements))
    return False


def is_key(call: ast.Call) -> bool:
    """`self.CompileKey(...)`, `CompileKey(...)` or `<Class>.CompileKey(...)`: a return of the key itself."""
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "CompileKey") or (
        isinstance(func, ast.Attribute) and func.attr == "CompileKey"
    )


# -- the rewrite


@dataclasses.dataclass
class _Block:
    """Straight-line assignments, then a return (`key`) or a two-way branch on `test`."""

    assigns: list[tuple[str, ast.expr]]
    key: ast.Call | None = None
    test: ast.expr | None = None
    then: _Block | None = None
    otherwise: _Block | None = None

    def reads(self, skipped: frozenset[str] = frozenset()) -> Counter:
        """How often each name is read in the block (its assignments' values but those of `skipped` names, its key,
        its branches)."""
        parts = [value for name, value in self.assigns if name not in skipped]
        parts += [self.key] if self.key is not None else [self.test]
        counts = Counter(n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name))
        if self.key is None:
            counts += self.then.reads(skipped) + self.otherwise.reads(skipped)
        return counts

    def first_key(self) -> ast.Call:
        return self.key if self.key is not None else self.then.first_key()


def rewrite(dispatch: ast.FunctionDef, fields: KeyFields, operators: frozenset[str]) -> str:
    """The body of `dispatch` after its docstring (as text, unindented) in the traced form; NotRewritable if it
    cannot be. The docstring, which the tracer skips, stays as the author wrote it. `operators`: the names of the
    `ast` operator classes the engine's tracer evaluates (a dispatch using another cannot be traced at all)."""
    body = dispatch.body
    docstring = body[:1] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else []
    parameters = {n.arg for n in ast.walk(dispatch.args) if isinstance(n, ast.arg)}
    taken = parameters | {n.id for n in ast.walk(dispatch) if isinstance(n, ast.Name)} | set(dir(builtins))
    writer = _Writer(fields, taken, parameters, operators)
    key = writer.lower(writer.block(body[len(docstring) :]), (), {})
    key = ast.Call(key.func, [], [ast.keyword(name, value) for name, value in fields.by_name(key).items()])
    lines = [f"{name} = {ast.unparse(value)}" for name, value in writer.statements]
    lines.append(f"return {ast.unparse(key)}")
    return "\n".join(lines) + "\n"


class _Writer:
    def __init__(self, fields: KeyFields, taken: set[str], parameters: set[str], operators: frozenset[str]):
        self.fields, self.taken, self.parameters, self.operators = fields, taken, parameters, operators
        self.statements: list[tuple[str, ast.expr]] = []
        self.bound: set[str] = set()
        # The names a tuple assignment bound, and the name given to the tuple: none is assigned where nothing reads
        # it, and an element read once is read as `t[0]`.
        self.unpacked: set[str] = set()
        self.paths = 1  # what follows an `if` is read on both of its paths: a bound on the copies

    def block(self, statements: list[ast.stmt], renames: dict[str, str] | None = None) -> _Block:
        """The statements up to each path's return. An `if` that falls through runs what follows it on both of its
        paths; a name a path assigns again takes a fresh name there (`renames`: each name the path assigned, by
        the name its latest value has), since the traced body binds each name once."""
        block, renames = _Block([]), dict(renames or {})

        def read(node: ast.expr) -> ast.expr:
            value = _plain(node, operators=self.operators)
            return _substitute(value, {old: ast.Name(new) for old, new in renames.items() if old != new})

        def assigned(name: str) -> str:
            renames[name] = self._fresh(name) if name in renames else name
            return renames[name]

        for index, statement in enumerate(statements):
            match statement:
                case (
                    ast.Assign(targets=[ast.Name(id=name)], value=value)
                    | ast.AnnAssign(target=ast.Name(id=name), value=value)
                ) if value is not None:
                    value = read(value)
                    block.assigns.append((assigned(name), value))
                case ast.Assign(targets=[ast.Tuple(elts=elts) | ast.List(elts=elts)], value=value) if all(
                    isinstance(e, ast.Name) for e in elts
                ):
                    # Unpacking any iterable is indexing its tuple (a tuple or list display is one already).
                    whole = self._fresh(_shared_name([e.id for e in elts]))
                    value = read(value)
                    if not isinstance(value, ast.Tuple | ast.List):
                        value = ast.copy_location(ast.Call(ast.Name("tuple"), [value], []), statement)
                    block.assigns.append((whole, value))
                    self.unpacked.add(whole)
                    names = [assigned(e.id) for e in elts]
                    block.assigns += [
                        (name, ast.copy_location(ast.Subscript(ast.Name(whole), ast.Constant(i)), statement))
                        for i, name in enumerate(names)
                    ]
                    self.unpacked |= set(names)
                case ast.Return(value=ast.Call() as call) if is_key(call):
                    block.key = read(call)
                    return block
                case ast.If(test=test, body=then, orelse=otherwise):
                    self.paths += 1
                    if self.paths > _PATHS:
                        raise NotRewritable(statement.lineno, f"more than {_PATHS} paths through dispatch")
                    rest = statements[index + 1 :]
                    block.test = read(test)
                    block.then = self.block(then + rest, renames)
                    block.otherwise = self.block(otherwise + rest, renames)
                    return block
                case ast.Pass():
                    continue
                case ast.Return():
                    raise NotRewritable(statement.lineno, "a path returns something other than CompileKey(...)")
                case _:
                    raise NotRewritable(statement.lineno, f"`{ast.unparse(statement).splitlines()[0]}`")
        line = statements[-1].end_lineno if statements else 0
        raise NotRewritable(line, "a path through dispatch ends without returning a CompileKey(...)")

    def lower(self, block: _Block, guard: tuple[tuple[ast.Name, bool], ...], inline: dict) -> ast.Call:
        """The key `block` returns, as one call; its assignments go to `statements`, evaluated only under
        `guard` (the named conditions on the way to the block, each with the value it has there). A value
        the block reads once under a guard is written where it is read (`inline`)."""
        reads, inline, unread = block.reads(), dict(inline), frozenset()
        while more := {n for n, _ in block.assigns if n in self.unpacked and n not in unread and not reads[n]}:
            unread |= more  # `_`, names nothing reads, then a tuple none of whose elements is read
            reads = block.reads(unread)
        for name, value in block.assigns:
            value = _substitute(value, inline)
            if name in unread:
                continue
            if (guard or name in self.unpacked) and reads[name] == 1:
                inline[name] = value
                continue
            if name in self.bound or (guard and name in self.parameters):  # another path's: a name of its own
                inline[name] = ast.Name(self._fresh(name))
                name = inline[name].id
            self.bound.add(name)
            self.statements.append((name, _guarded(value, guard) if guard else value))
        if block.key is not None:
            return _substitute(block.key, inline)
        test, start = _substitute(block.test, inline), len(self.statements)
        named = _condition_name(self.fields.by_name(block.then.first_key()))
        condition = test if isinstance(test, ast.Name) else ast.Name(self._fresh(named))
        first = self.lower(block.then, (*guard, (condition, True)), inline)
        second = self.lower(block.otherwise, (*guard, (condition, False)), inline)
        key = self._merged(first, second, condition)
        if condition is test:
            return key
        written = [value for _, value in self.statements[start:]] + [key]
        if sum(_reads(value, condition.id) for value in written) > 1 or _reads(key, condition.id) > 1:
            self.bound.add(condition.id)
            value = _guarded(test, guard, otherwise=False) if guard else test
            self.statements.insert(start, (condition.id, value))
            return key
        self.statements[start:] = [(n, _substitute(v, {condition.id: test})) for n, v in self.statements[start:]]
        return _substitute(key, {condition.id: test})

    def _merged(self, first: ast.Call, second: ast.Call, condition: ast.Name) -> ast.Call:
        """One key: each field the two keys set differently chosen by the condition."""
        one, two = self.fields.by_name(first), self.fields.by_name(second)
        keywords = []
        for name in self.fields.names:
            if name not in one and name not in two:
                continue
            default = self.fields.defaults[name]
            if (name not in one or name not in two) and default is None:
                raise NotRewritable(first.lineno, f"one path leaves out CompileKey's required field `{name}`")
            if (name not in one or name not in two) and name in self.fields.computed:
                raise NotRewritable(first.lineno, f"one path leaves out `{name}`, whose default is computed")
            a, b = one.get(name, default), two.get(name, default)
            keywords.append(ast.keyword(name, a if ast.dump(a) == ast.dump(b) else ast.IfExp(condition, a, b)))
        return ast.Call(first.func, [], keywords)

    def _fresh(self, name: str) -> str:
        candidate = next(
            c for c in itertools.chain([name], (f"{name}_{n}" for n in itertools.count(2))) if c not in self.taken
        )
        self.taken.add(candidate)
        return candidate


def _guarded(value: ast.expr, guard, otherwise: object = None) -> ast.expr:
    """`value` evaluated only where `guard` holds; elsewhere the constant `otherwise`."""
    tests = [test if holds else ast.UnaryOp(ast.Not(), test) for test, holds in guard]
    if otherwise is False:
        return ast.BoolOp(ast.And(), [*tests, value])
    if len(guard) == 1 and not guard[0][1]:  # `None if c else value` reads better than `value if not c else None`
        return ast.IfExp(guard[0][0], ast.Constant(otherwise), value)
    test = tests[0] if len(tests) == 1 else ast.BoolOp(ast.And(), tests)
    return ast.IfExp(test, value, ast.Constant(otherwise))


def _reads(value: ast.AST, name: str) -> int:
    return sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value))


def _substitute(node: ast.expr, names: dict[str, ast.expr]) -> ast.expr:
    class Substitute(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.expr:
            return copy.deepcopy(names[name.id]) if name.id in names else name

    return Substitute().visit(copy.deepcopy(node)) if names else node


def _plain(node: ast.expr, operators: frozenset[str]) -> ast.expr:
    """`{}` as `dict()`, `{"a": x}` as `dict(a=x)` (the tracer evaluates calls, not dict displays); NotRewritable
    where the expression uses an operator the engine's tracer does not evaluate."""

    class Plain(ast.NodeTransformer):
        def visit_Dict(self, display: ast.Dict) -> ast.expr:
            self.generic_visit(display)
            keys = [k.value if isinstance(k, ast.Constant) else None for k in display.keys]
            if not all(isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k) for k in keys):
                raise NotRewritable(display.lineno, f"`{ast.unparse(display)}` has keys a dict() call cannot name")
            if len(set(keys)) < len(keys):
                raise NotRewritable(display.lineno, f"`{ast.unparse(display)}` repeats a key")
            call = ast.Call(ast.Name("dict"), [], [ast.keyword(k, v) for k, v in zip(keys, display.values)])
            return ast.copy_location(call, display)

        def generic_visit(self, node: ast.AST) -> ast.AST:
            ops = [node.op] if isinstance(node, ast.BinOp | ast.UnaryOp) else getattr(node, "ops", [])
            for op in ops:
                if type(op).__name__ not in operators:
                    raise NotRewritable(
                        node.lineno, f"`{ast.unparse(node)}`: the engine's tracer does not evaluate this operator"
                    )
            return super().generic_visit(node)

    return Plain().visit(copy.deepcopy(node))


def _shared_name(names: list[str]) -> str:
    """One name for a tuple the names were unpacked from: their common leading words, else all of them."""
    words = [n.strip("_").split("_") for n in names]
    common = list(itertools.takewhile(lambda w: len(set(w)) == 1, zip(*words)))
    return "_".join(w[0] for w in common) if common else "_".join(n.strip("_") for n in names)


def _condition_name(key: dict[str, ast.expr]) -> str:
    """A branch's condition named after the string its first key sets (`backend="dotprod"` -> `dotprod`)."""
    for value in key.values():
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            word = re.sub(r"\W+", "_", value.value.lower()).strip("_")
            if word.isidentifier() and not keyword.iskeyword(word):
                return word
    return "early_return"


# -- the proof

_PATHS = 4096  # condition assignments tried before the proof gives up


class _Split(Exception):
    """Evaluation reached a condition the path has not decided."""

    def __init__(self, term: tuple):
        self.term = term


class _Unproven(Exception):
    pass


def prove(old: ast.FunctionDef, new_body: str, fields: KeyFields) -> str | None:
    """None when the rewritten body returns the key `old` returns on every path, else a path where they differ."""
    new = ast.parse(new_body).body
    pending: list[dict] = [{}]
    tried = 0
    while pending:
        truths = pending.pop()
        tried += 1
        if tried > _PATHS:
            return f"more than {_PATHS} paths through the conditions; not proven"
        try:
            a, b = _Symbolic(truths, fields).run(old.body), _Symbolic(truths, fields).run(new)
        except _Split as split:
            pending += [{**truths, split.term: False}, {**truths, split.term: True}]
            continue
        except _Unproven as why:
            return str(why)
        if a != b:
            decided = " and ".join(f"`{_show(t)}` is {v}" for t, v in truths.items()) or "every input"
            if a[0] == b[0] == "key":
                fields = [(n, x, y) for (n, x), (_, y) in zip(a[1], b[1]) if x != y]
                return f"where {decided}: " + "; ".join(
                    f"{name} is `{_show(y)}`, not `{_show(x)}`" for name, x, y in fields
                )
            return f"where {decided}: the rewrite returns `{_show(b)}`, not `{_show(a)}`"
    return None


class _Symbolic:
    """Evaluates a dispatch body to a term on one path: `truths` decides each condition term it tests."""

    def __init__(self, truths: dict, fields: KeyFields):
        self.truths, self.fields, self.names = truths, fields, {}

    def run(self, body: list[ast.stmt]) -> tuple:
        for statement in body:
            match statement:
                case ast.Expr(value=ast.Constant(value=str())) | ast.Pass():
                    continue
                case ast.Assign(targets=[target], value=value) | ast.AnnAssign(target=target, value=value) if (
                    value is not None
                ):
                    self.bind(target, self.eval(value))
                case ast.If(test=test, body=then, orelse=otherwise):
                    result = self.run(then if self.truth(self.eval(test)) else otherwise)
                    if result is not None:
                        return result
                case ast.Return(value=ast.Call() as call) if is_key(call):
                    return self.key(call)
                case _:
                    raise _Unproven(f"line {statement.lineno}: cannot evaluate `{ast.unparse(statement)}`")
        return None

    def bind(self, target: ast.expr, value: tuple) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if value[0] not in ("tuple", "list"):  # unpacking iterates: the elements of `tuple(value)`
                value = ("call", self.names.get("tuple", ("name", "tuple")), (value,), ())
            for index, element in enumerate(target.elts):
                self.bind(element, self.item(value, ("const", index)))
        else:
            raise _Unproven(f"cannot evaluate the assignment to `{ast.unparse(target)}`")

    def key(self, call: ast.Call) -> tuple:
        """A CompileKey(...) with every field: those the call leaves out take the class's defaults, evaluated
        where the class declares them (the module's names, not the body's)."""
        given, declared = self.fields.by_name(call), _Symbolic(self.truths, self.fields)
        values = {}
        for name in self.fields.names:
            default = self.fields.defaults[name]
            if name in given:
                values[name] = self.eval(given[name])
            else:
                values[name] = ("missing",) if default is None else declared.eval(default)
        return ("key", tuple(values.items()))

    def truth(self, term: tuple) -> bool:
        match term:
            case ("const", value):
                return bool(value)
            case ("not", inner):
                return not self.truth(inner)
            case ("dict", ()) | ("tuple", ()) | ("list", ()):
                return False
            case ("tuple" | "list", _):
                return True
        if term not in self.truths:
            raise _Split(term)
        return self.truths[term]

    def item(self, value: tuple, index: tuple) -> tuple:
        if value[0] in ("tuple", "list") and index[0] == "const" and isinstance(index[1], int):
            elements = value[1]
            if -len(elements) <= index[1] < len(elements):
                return elements[index[1]]
        return ("item", value, index)

    def eval(self, node: ast.expr) -> tuple:
        match node:
            case ast.Constant(value=value):
                return ("const", value)
            case ast.Name(id=name):
                return self.names.get(name, ("name", name))
            case ast.Attribute(value=value, attr=attr):
                return ("attr", self.eval(value), attr)
            case ast.Subscript(value=value, slice=index):
                return self.item(self.eval(value), self.eval(index))
            case ast.Tuple(elts=elements) | ast.List(elts=elements):
                return ("tuple" if isinstance(node, ast.Tuple) else "list", tuple(map(self.eval, elements)))
            case ast.Dict(keys=keys, values=values) if all(k is not None for k in keys):
                return ("dict", tuple(zip(map(self.eval, keys), map(self.eval, values))))
            case ast.Call(func=ast.Name(id="dict"), args=[], keywords=keywords) if "dict" not in self.names and all(
                k.arg for k in keywords
            ):
                return ("dict", tuple((("const", k.arg), self.eval(k.value)) for k in keywords))
            case ast.Call(func=func, args=args, keywords=keywords) if all(k.arg for k in keywords) and not any(
                isinstance(a, ast.Starred) for a in args
            ):
                named = tuple(sorted((k.arg, self.eval(k.value)) for k in keywords))
                return ("call", self.eval(func), tuple(map(self.eval, args)), named)
            case ast.IfExp(test=test, body=body, orelse=orelse):
                return self.eval(body if self.truth(self.eval(test)) else orelse)
            case ast.BoolOp(op=op, values=values):
                for value in values[:-1]:  # `a or b` is a when a is true, else b (`and`: when false)
                    term = self.eval(value)
                    if self.truth(term) == isinstance(op, ast.Or):
                        return term
                return self.eval(values[-1])
            case ast.UnaryOp(op=ast.Not(), operand=operand):
                return ("const", not self.truth(self.eval(operand)))
            case ast.UnaryOp(op=op, operand=operand):
                return ("unary", type(op).__name__, self.eval(operand))
            case ast.BinOp(left=left, op=op, right=right):
                return ("binary", type(op).__name__, self.eval(left), self.eval(right))
            case ast.Compare(left=left, ops=ops, comparators=comparators):
                terms = [self.eval(left), *map(self.eval, comparators)]
                parts = [("compare", type(op).__name__, a, b) for op, a, b in zip(ops, terms, terms[1:])]
                for part in parts[:-1]:  # a chain is the first false link, else the last
                    if not self.truth(part):
                        return part
                return parts[-1]
        raise _Unproven(f"line {node.lineno}: cannot evaluate `{ast.unparse(node)}`")


def _show(term: tuple) -> str:
    match term:
        case ("const", value):
            return repr(value)
        case ("name", name):
            return name
        case ("attr", value, attr):
            return f"{_show(value)}.{attr}"
        case ("item", value, index):
            return f"{_show(value)}[{_show(index)}]"
        case ("tuple" | "list", elements):
            return f"({', '.join(map(_show, elements))})"
        case ("dict", items):
            return "{" + ", ".join(f"{_show(k)}: {_show(v)}" for k, v in items) + "}"
        case ("call", func, args, named):
            return f"{_show(func)}({', '.join([*map(_show, args), *(f'{k}={_show(v)}' for k, v in named)])})"
        case ("compare", op, a, b):
            return f"{_show(a)} {_OPERATORS.get(op, op)} {_show(b)}"
        case ("key", values):
            return "CompileKey(" + ", ".join(f"{k}={_show(v)}" for k, v in values) + ")"
        case ("binary" | "unary", op, *operands):
            return f"{op}({', '.join(map(_show, operands))})"
    return str(term)


_OPERATORS = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">=", "Is": "is", "IsNot": "is not"}
_OPERATORS |= {"In": "in", "NotIn": "not in"}
