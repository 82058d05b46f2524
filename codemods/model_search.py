"""Which layers a legacy step warmed: the filters of its model search, read as conditions on the registering layer.

A step that searches the model (`_ll_bf16_router_shapes_from_model(model)`, `_qwen_gdn_warmup_config(...)`) warms
only the layers its loop keeps: those past each `if ...: continue`, inside each `if` around what it collects
(a `yield`, a `return`, an `.add(...)`), through the repo generators it loops over, and a comprehension's `if`s;
a search written inline, `next((m for m in model.modules() if ...), None)`, keeps those its `if`s pass.
Each filter is put in the layer's names (the loop variable is the layer, `@self`; the loop's locals are what they
were assigned), so the planner finds it in the registration's own code, carries it into the registration's gate,
or refuses it at its line: a fork's filter is never dropped silently.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Iterator

from .guards import LAYER_ITERATORS, SELF, Atom, Frame, GuardsUnreadable, canonical, first_layer_found, search_call
from .repo import RepoModules
from .syntax import conjuncts, function_import, is_docstring, loads, negated, statements, stores

_COLLECTING = {"add", "append", "extend", "update", "setdefault"}


def filters(modules: RepoModules, atom: Atom) -> list[Atom]:
    """The filters of the search whose result `atom` tests (none when it tests no search of the repo)."""
    call = search_call(modules, atom.expression)
    if call is None:
        return []
    loop = first_layer_found(call)
    if loop is None:
        return _filters(modules, *_searched(modules, call), depth=0)
    layer = {ast.dump(loop.target): ast.Name(SELF)}
    found = []
    for test in loop.ifs:  # canonical already: the loop's variable is the layer
        for part in conjuncts(_Renamed(layer).visit(copy.deepcopy(test))):
            text = ast.unparse(part)
            found.append(Atom(text, text, atom.where, False, part, frozenset({ast.dump(part)}), at_layer=True))
    return found


class _Renamed(ast.NodeTransformer):
    """An expression with each name in `names` (by its dump) replaced."""

    def __init__(self, names: dict[str, ast.expr]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.copy(self.names.get(ast.dump(node), node))


def _searched(modules: RepoModules, call: ast.Call) -> tuple[str, ast.FunctionDef, dict]:
    """The search a call runs: its module, its function, and its parameters as the call binds them."""
    home, _, name = call.func.id.rpartition(".")
    function = modules.definition(home, name)
    return home, function, _bound(modules, home, function, call)


def _bound(modules: RepoModules, module: str, function: ast.FunctionDef, call: ast.Call) -> dict:
    """The search's parameters as the legacy step's call binds them (its arguments, else their defaults): a
    filter on `min_k` is one on the constant the step passed."""
    signature = function.args
    positional = [*signature.posonlyargs, *signature.args]
    bound = {p.arg: (a, None) for p, a in zip(positional, call.args)}
    bound.update((k.arg, (k.value, None)) for k in call.keywords if k.arg)
    defaults = zip(positional[len(positional) - len(signature.defaults) :], signature.defaults)
    home = Frame(module, None, {}, {})
    for parameter, default in [*defaults, *zip(signature.kwonlyargs, signature.kw_defaults)]:
        if default is not None:
            bound.setdefault(parameter.arg, (default, home))
    return bound


def in_layer_terms(modules: RepoModules, atom: Atom) -> Atom:
    """The atom with each field it reads of a search's result (`gdn_config.conv_kernel_size`) replaced by what the
    search put there from the layer it found (`int(@self.conv_kernel_size)`): a condition on that layer, which the
    registering layer answers in its own names. The atom unchanged where it reads no such field."""

    fields = _LayerFields(modules)
    form = fields.visit(copy.deepcopy(atom.expression))
    if not fields.found:
        return atom
    return dataclasses.replace(atom, canonical=ast.unparse(form), expression=form, at_layer=True)


class _LayerFields(ast.NodeTransformer):
    """in_layer_terms's rewrite. A class of the module, not one made in the function: a class is a cycle, and what
    its methods close over (the run's repo model) would wait for the garbage collector."""

    def __init__(self, modules: RepoModules):
        self.modules, self.found = modules, False

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        node = self.generic_visit(node)
        call = search_call(self.modules, node.value)
        if call is None or call is not node.value:
            return node
        if first_layer_found(call) is not None:  # the layer itself
            self.found = True
            return ast.Attribute(ast.Name(SELF), node.attr)
        value = _returned_field(self.modules, *_searched(self.modules, call), node.attr)
        if value is None:
            return node
        self.found = True
        return value


def _returned_field(
    modules: RepoModules, module: str, function: ast.FunctionDef, bound: dict, field: str
) -> ast.expr | None:
    """What the search's one `return Result(..., field=value)` inside its layer loop puts in `field`, in the
    layer's names (None: no such return, or more than one)."""
    found = []
    for loop, layer, _ in _layer_loops(modules, module, function):
        assigned = {layer: ast.Name(SELF)}
        for statement in loop.body:
            _assign(statement, assigned)
            if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Call):
                found += [(k.value, dict(assigned)) for k in statement.value.keywords if k.arg == field]
    if len(found) != 1:
        return None
    value, assigned = found[0]
    return canonical(modules, value, Frame(module, function, assigned, bound, _imports(function, value)))


def _filters(modules: RepoModules, module: str, function: ast.FunctionDef, bound: dict, depth: int) -> list[Atom]:
    """The filters of every loop of `function` over the model's layers (and of the generators it loops over)."""
    found, scope = [], (module, function, bound)
    for node in statements(function):
        if isinstance(node, ast.While):
            _unreadable(modules, module, node, "walks the model in a `while` loop")
    for loop, layer, generator in _layer_loops(modules, module, function):
        if generator is not None and depth < 4:
            found += _filters(modules, *generator, {}, depth=depth + 1)
        _check_stops(modules, module, loop, layer)
        found += _loop_filters(modules, scope, loop.body, {layer: ast.Name(SELF)})
        _check_refiltered(modules, module, function, loop)
    for node in ast.walk(function):
        layer = _layer(node.target, node.iter) if isinstance(node, ast.comprehension) else None
        if layer and _walks_layers(node.iter):
            for test in node.ifs:
                found += _atom(modules, scope, {layer: ast.Name(SELF)}, test, True)
    return found


def _unreadable(modules: RepoModules, module: str, node: ast.AST, what: str) -> None:
    raise GuardsUnreadable(
        modules.where(module, node),
        f"the legacy step's model search {what}: which layers it warmed cannot be read as conditions each layer "
        "checks; migrate this kernel by hand",
    )


def _check_stops(modules: RepoModules, module: str, loop: ast.For, layer: str) -> None:
    """A search that stops early keeps layers by their order, which no layer can check for itself: a `break`, or a
    `return` under an `if` that returns something other than what it built from this layer."""
    found = {layer} | {name for s in loop.body for name in stores(s)}
    for node in statements(loop):
        if isinstance(node, ast.Break) and _loop_of(loop, node) is loop:
            _unreadable(modules, module, node, "stops at a `break`")
        if isinstance(node, ast.If):
            for inner in (n for n in statements(node) if isinstance(n, ast.Return) and n.value is not None):
                if not loads(inner.value) & found:
                    _unreadable(modules, module, inner, "returns early, with what it found so far")


def _loop_of(loop: ast.For, node: ast.AST) -> ast.AST:
    """The innermost loop of `loop`'s body (or `loop` itself) that holds `node`."""
    holder = loop
    for inner in statements(loop):
        if inner is not loop and isinstance(inner, (ast.For, ast.While)) and node in statements(inner):
            holder = inner
    return holder


def _check_refiltered(modules: RepoModules, module: str, function: ast.FunctionDef, loop: ast.For) -> None:
    """What the loop collected, filtered again after it (`tuple(s for s in shapes if ...)`): not a layer's check."""
    for node in ast.walk(function):
        if isinstance(node, ast.comprehension) and node.ifs and node.iter.lineno > loop.end_lineno:
            _unreadable(modules, module, node.iter, "filters what it collected again after its loop")


def _layer_loops(
    modules: RepoModules, module: str, function: ast.FunctionDef
) -> Iterator[tuple[ast.For, str, tuple[str, ast.FunctionDef] | None]]:
    """Each `for` of `function` over the model's layers: the loop, its layer variable, and the repo generator it
    iterates (None where it walks the layers itself)."""
    for node in statements(function):
        if isinstance(node, ast.For) and (layer := _layer(node.target, node.iter)):
            generator = _generator(modules, module, node.iter)
            if generator is not None or _walks_layers(node.iter):
                yield node, layer, generator


def _layer(target: ast.expr, iterable: ast.expr) -> str | None:
    """The loop variable that holds the layer (`module`; the second of `name, module` over `.items()`,
    `.named_modules()` or `enumerate(...)`)."""
    if isinstance(target, ast.Name):
        return target.id
    iterable = _unwrapped(iterable, keep_enumerate=True)
    pairs = {"items", "named_modules", "named_children"}
    named = isinstance(iterable, ast.Call) and (
        getattr(iterable.func, "attr", "") in pairs or getattr(iterable.func, "id", "") == "enumerate"
    )
    if named and isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
        return target.elts[1].id
    return None


def _unwrapped(iterable: ast.expr, keep_enumerate: bool = False) -> ast.expr:
    """The iterable inside `list(...)`, `tuple(...)`, `sorted(...)`, `reversed(...)`, `iter(...)` (and
    `enumerate(...)` unless kept): the same layers, in some order."""
    wrappers = {"list", "tuple", "sorted", "reversed", "iter"} | (set() if keep_enumerate else {"enumerate"})
    while isinstance(iterable, ast.Call) and getattr(iterable.func, "id", None) in wrappers and iterable.args:
        iterable = iterable.args[0]
    return iterable


def _walks_layers(iterable: ast.expr) -> bool:
    """`model.modules()`, `context.values()`, ...; or a generator expression over one (its `if`s are filters too)."""
    iterable = _unwrapped(iterable)
    if isinstance(iterable, ast.GeneratorExp):
        iterable = _unwrapped(iterable.generators[0].iter)
    return isinstance(iterable, ast.Call) and getattr(iterable.func, "attr", None) in LAYER_ITERATORS


def _generator(modules: RepoModules, module: str, iterable: ast.expr) -> tuple[str, ast.FunctionDef] | None:
    """The repo generator function the loop iterates (`_iter_qwen_gdn_layers(...)`), with its module."""
    if not isinstance(iterable, ast.Call) or not isinstance(iterable.func, ast.Name):
        return None
    home, name = modules.resolve(module, iterable.func.id)
    function = modules.definition(home, name) if name else None
    if isinstance(function, ast.FunctionDef) and any(isinstance(n, ast.Yield) for n in ast.walk(function)):
        return home, function
    return None


def _loop_filters(modules: RepoModules, scope: tuple, body: list[ast.stmt], assigned: dict) -> list[Atom]:
    """The filters of one loop body, in order: `if t: continue` keeps `not t`; `if t:` around what the loop
    collects keeps `t` (and its own filters)."""
    found = []
    for statement in body:
        _assign(statement, assigned)
        if not isinstance(statement, ast.If) or statement.orelse:
            continue
        if isinstance(statement.body[-1], ast.Continue):
            found += _atom(modules, scope, assigned, statement.test, False)
        elif _collects(statement.body):
            found += _atom(modules, scope, assigned, statement.test, True)
            found += _loop_filters(modules, scope, statement.body, dict(assigned))
    return found


def _assign(statement: ast.stmt, assigned: dict) -> None:
    """Follow a local the loop assigns: `w = ...`, and `n, k = weight.shape` (k is `weight.shape[1]`)."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, ast.Name):
            assigned[target.id] = statement.value
        elif isinstance(target, ast.Tuple):
            assigned.update(
                (element.id, ast.Subscript(statement.value, ast.Constant(index)))
                for index, element in enumerate(target.elts)
                if isinstance(element, ast.Name)
            )


def _imports(function: ast.FunctionDef, node: ast.expr) -> dict:
    """The names `node` reads that the function imports itself (`from m import GateLinear` inside it)."""
    return {name: found for name in loads(node) if (found := function_import(function, name))}


def _collects(body: list[ast.stmt]) -> bool:
    return any(
        isinstance(node, (ast.Yield, ast.Return))
        or (isinstance(node, ast.Call) and getattr(node.func, "attr", None) in _COLLECTING)
        for statement in body
        for node in ast.walk(statement)
    )


def _atom(modules: RepoModules, scope: tuple, assigned: dict, test: ast.expr, holds: bool) -> list[Atom]:
    """The filter `test` (kept where it holds, or where it does not: a `continue`'s), one atom per conjunct."""
    module, function, bound = scope
    kept = test if holds else negated(test)
    frame = Frame(module, function, dict(assigned), bound, _imports(function, test))
    spelled = {ast.dump(test), ast.dump(kept)}
    where = str(modules.where(module, test))
    found = []
    for part in conjuncts(kept):
        form = canonical(modules, part, frame)
        inlined = _predicate_conjuncts(modules, form, depth=0)
        # A predicate's own conditions are each named by the call and what it checks, and never matched by the
        # call's spelling: a fork that changes the predicate's body changes what the filter is.
        parts = (
            [(ast.unparse(part), form, frozenset(spelled | {ast.dump(part), ast.dump(form)}))]
            if inlined is None
            else [
                (f"{ast.unparse(part)}: {written}", inner, frozenset({ast.dump(inner)})) for written, inner in inlined
            ]
        )
        found += [
            Atom(ast.unparse(c), written, where, False, c, spellings, at_layer=True) for written, c, spellings in parts
        ]
    return found


def _predicate_conjuncts(modules: RepoModules, form: ast.expr, depth: int) -> list[tuple[str, ast.expr]] | None:
    """A call of a repo predicate (`_is_qwen_gdn_layer(@self)`: a function whose body is one `return`) as the
    conjuncts it returns, each as the function writes it and in canonical terms with its parameters bound to the
    call's arguments; `all(f(x) for x in (a, b))` over a literal tuple is one conjunct per element. None for
    anything else."""
    if not (isinstance(form, ast.Call) and isinstance(form.func, ast.Name) and "." in form.func.id) or depth > 3:
        return None
    home, _, name = form.func.id.rpartition(".")
    function = modules.definition(home, name) if modules.ours(home) else None
    body = [s for s in getattr(function, "body", []) if not is_docstring(s)]
    signature = getattr(function, "args", None)
    if not (
        isinstance(function, ast.FunctionDef)
        and len(body) == 1
        and isinstance(body[0], ast.Return)
        and body[0].value is not None
        and not form.keywords
        and not signature.vararg
        and not signature.kwonlyargs
        and len(form.args) == len(signature.posonlyargs + signature.args)
    ):
        return None
    arguments = {p.arg: (a, None) for p, a in zip(signature.posonlyargs + signature.args, form.args)}
    found = []
    for part in conjuncts(body[0].value):
        for written, assigned in _unrolled(part):
            inner = canonical(modules, written, Frame(home, function, assigned, arguments))
            if isinstance(inner, ast.Constant) and inner.value is True:
                continue  # holds for every layer
            deeper = _predicate_conjuncts(modules, inner, depth + 1)
            found += deeper if deeper is not None else [(ast.unparse(_substituted(written, assigned)), inner)]
    return found


def _unrolled(part: ast.expr) -> list[tuple[ast.expr, dict]]:
    """`all(e for x in (a, b))` as `e` with x bound to each literal element; anything else as itself."""
    if (
        isinstance(part, ast.Call)
        and isinstance(part.func, ast.Name)
        and part.func.id == "all"
        and len(part.args) == 1
        and isinstance(generator := part.args[0], ast.GeneratorExp)
        and len(generator.generators) == 1
        and not (loop := generator.generators[0]).ifs
        and isinstance(loop.target, ast.Name)
        and isinstance(loop.iter, (ast.Tuple, ast.List))
        and all(isinstance(e, ast.Constant) for e in loop.iter.elts)
    ):
        return [(generator.elt, {loop.target.id: element}) for element in loop.iter.elts]
    return [(part, {})]


def _substituted(node: ast.expr, assigned: dict) -> ast.expr:
    """`node` with each name `assigned` binds to a constant written as that constant."""

    class Bind(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.expr:
            return copy.copy(assigned[name.id]) if name.id in assigned else name

    return Bind().visit(copy.deepcopy(node))
