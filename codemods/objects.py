"""The engine class of an object a warmup reaches, and what calling it runs: `impl.adapter.warmup_prefill_scoring()`,
`visual.blocks[0].attn.apply_rotary_emb(...)`, `rope(positions, query, key)`.

Read from the code around the expression the way a reviewer would, with `ast`:
- a name narrowed by `isinstance` where the check holds (inside `if isinstance(x, C):`, after `if not
  isinstance(x, C): continue`, in a filtered comprehension), else assigned from an expression of one class,
  a parameter annotated with one, or a module-level object;
- a call of a repo class, of a library's callable (its module names the library), or of a repo function whose
  returns have one class (`next(<generator>, None)`: its items');
- an attribute the constructor of the object's class or of a base stores (`self.adapter = Adapter(...)`), or an
  item of a container it stores (`self.blocks = nn.ModuleList([Block(...) ...])` for `blocks[0]`);
- `self` and `cls` inside a method, `super()` for its base.
Two different classes for one expression leave it unknown. Calling an object runs its `__call__`, else the
methods the engine names (`Engine.object_call`: a torch module's `forward`, vLLM's CustomOp's per-platform ones).
"""

from __future__ import annotations

import ast
import functools

from .compile_units import named_class, target
from .engines import Engine
from .repo import RepoModules
from .syntax import exits, expression_or_none, parameters, self_stores, stores

Class = tuple[str, str]  # (module, class name)
Method = tuple[str, ast.FunctionDef, Class]  # (the module that defines it, the method, the class of `self`)
DEPTH = 8  # names, attributes, returns and stores followed to find one expression's class
_CONTAINERS = ("list", "tuple", "ModuleList", "Sequential")


def class_of(
    modules: RepoModules, module: str, function: ast.FunctionDef, owner: Class | None, node: ast.expr, depth: int = 0
) -> Class | None:
    """The class of what `node`, read in `function` of `module` (a method of `owner`), evaluates to: a repo class,
    or (module, name) of the library callable that built it. Worked out once per run."""
    key = ("class_of", id(function), owner, id(node), depth)
    if key not in modules.memo:
        modules.memo[key] = _class_of(modules, module, function, owner, node, depth) if depth <= DEPTH else None
    return modules.memo[key]


def _class_of(modules, module, function, owner, node, depth) -> Class | None:
    if isinstance(node, ast.Name):
        if node.id in ("self", "cls"):
            return owner
        return _one(_name_classes(modules, module, function, owner, node, depth))
    if isinstance(node, ast.Call):
        return _call_class(modules, module, function, owner, node, depth)
    if isinstance(node, ast.Attribute):
        holder = class_of(modules, module, function, owner, node.value, depth + 1)
        return _one(_stored(modules, holder, node.attr, depth, items=False)) if holder else None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
        holder = class_of(modules, module, function, owner, node.value.value, depth + 1)
        return _one(_stored(modules, holder, node.value.attr, depth, items=True)) if holder else None
    return None


def receiver(
    modules: RepoModules, module: str, function: ast.FunctionDef, owner: Class | None, node: ast.expr
) -> Class | None:
    """The class whose method `node.<name>(...)` calls: a repo class named there (`Function.apply`, a static
    method), the base of `owner` for `super()`, else the class of the object `node` is."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "super" and owner is not None:
        bases = _lineage(modules, owner)[1:]
        return bases[0] if bases else None
    return named_class(modules, module, function, node) or class_of(modules, module, function, owner, node)


def stored_functions(modules: RepoModules, cls: Class, attribute: str) -> list[tuple[str, str]]:
    """The repo functions the constructors of `cls` and its bases store as `self.<attribute>` (each branch's, both
    arms of a conditional expression)."""
    named = []
    for home, init, value in _stores(modules, cls, attribute):
        arms = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
        named += [target(modules, home, init, v) for v in arms if isinstance(v, ast.Name | ast.Attribute)]
    return [n for n in named if n and n[1] and isinstance(modules.definition(*n), ast.FunctionDef)]


def called_methods(modules: RepoModules, engine: Engine, cls: Class, name: str) -> list[Method]:
    """What `obj.<name>(...)` runs on an object (or the class) `cls`: the method, what the engine says the name
    runs (`Engine.class_calls`), or what calling the object stored there runs."""
    method = modules.method_of(cls, name)
    if method is not None:
        return [(*method, cls)]
    runs = [method for called, method in engine.class_calls if called == name]
    if runs:
        return [(*found, cls) for method in runs if (found := modules.method_of(cls, method)) is not None]
    held = _one(_stored(modules, cls, name, 0, items=False))
    return object_call(modules, engine, held) if held else []


def object_call(modules: RepoModules, engine: Engine, cls: Class) -> list[Method]:
    """The methods that calling an object of `cls` runs: its `__call__` in the repo, else `Engine.object_call`."""
    own = modules.method_of(cls, "__call__")
    found = [own] if own else [found for name in engine.object_call if (found := modules.method_of(cls, name))]
    return [(*method, cls) for method in found]


def _name_classes(modules, module, function, owner, node: ast.Name, depth) -> list[Class | None]:
    name = node.id
    narrowing = _narrowed(function).get(id(node), ())
    narrowed = [found for kind in narrowing if (found := named_class(modules, module, function, kind))]
    if narrowed:
        return narrowed
    arguments = function.args
    annotated = [
        named_class(modules, module, function, _annotation(a.annotation))
        for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
        if a.arg == name and a.annotation is not None
    ]
    found = [class_of(modules, module, function, owner, v, depth + 1) for v in _assigned(function).get(name, ())]
    found += annotated
    if found or name in parameters(function):
        return found
    singleton = modules.reference(module, ast.Name(id=name, ctx=ast.Load()))  # a module-level object
    statement = modules.definition(*singleton) if singleton else None
    if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        named = modules.resolve(singleton[0], func.id) if isinstance(func, ast.Name) else None
        if named and named[1] and isinstance(modules.definition(*named), ast.ClassDef):
            return [named]
    return []


@functools.lru_cache(maxsize=4096)
def _assigned(function: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    """name -> the values `function` assigns to it."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for target in _targets(node):
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
    return assigned


@functools.lru_cache(maxsize=4096)
def _narrowed(function: ast.FunctionDef) -> dict[int, list[ast.expr]]:
    """id of each name read in `function` -> the classes `isinstance` narrows it to where it is read: inside
    `if isinstance(x, C):`, after `if not isinstance(x, C): continue` (or return, raise) or `assert isinstance(x,
    C)`, in what a comprehension filtered by one yields; a store of the name ends what narrowed it."""
    found: dict[int, list[ast.expr]] = {}

    def names(node: ast.AST, active: dict[str, list[ast.expr]]) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and active.get(sub.id):
                found[id(sub)] = active[sub.id]

    def expression(node: ast.AST, active: dict[str, list[ast.expr]]) -> None:
        names(node, active)
        for comprehension in ast.walk(node):  # after the outer names: its filters narrow what it yields
            if isinstance(comprehension, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                inner = dict(active)
                for generator in comprehension.generators:
                    for test in generator.ifs:
                        inner |= _isinstance(test, positive=True)
                parts = [comprehension.key, comprehension.value] if isinstance(comprehension, ast.DictComp) else []
                for part in parts or [comprehension.elt]:
                    names(part, inner)

    def block(statements: list[ast.stmt], active: dict[str, list[ast.expr]], in_loop: bool) -> None:
        active = dict(active)
        for statement in statements:
            visit(statement, active, in_loop)
            if isinstance(statement, ast.If) and exits(statement.body, in_loop=in_loop):
                active |= _isinstance(statement.test, positive=False)
                continue
            for name in stores(statement):
                active.pop(name, None)
            if isinstance(statement, ast.Assert):
                active |= _isinstance(statement.test, positive=True)

    def visit(statement: ast.stmt, active: dict[str, list[ast.expr]], in_loop: bool) -> None:
        if isinstance(statement, ast.If):
            expression(statement.test, active)
            block(statement.body, active | _isinstance(statement.test, positive=True), in_loop)
            block(statement.orelse, active | _isinstance(statement.test, positive=False), in_loop)
        elif isinstance(statement, ast.For | ast.AsyncFor | ast.While):
            header = statement.test if isinstance(statement, ast.While) else statement.iter
            expression(header, active)
            bound = set(stores(statement.target)) if isinstance(statement, ast.For | ast.AsyncFor) else set()
            block(statement.body, {k: v for k, v in active.items() if k not in bound}, True)
            block(statement.orelse, active, in_loop)
        elif isinstance(statement, ast.With | ast.AsyncWith):
            for item in statement.items:
                expression(item.context_expr, active)
            block(statement.body, active, in_loop)
        elif isinstance(statement, ast.Try):
            for part in (statement.body, *(h.body for h in statement.handlers), statement.orelse, statement.finalbody):
                block(part, active, in_loop)
        elif not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            expression(statement, active)

    block(function.body, {}, False)
    return found


def _isinstance(test: ast.expr, *, positive: bool) -> dict[str, list[ast.expr]]:
    """name -> [class] that `test` being true (`positive`) or false proves by `isinstance`: `isinstance(x, C)`,
    `... and isinstance(x, C)` when true; `not isinstance(x, C)`, `... or not isinstance(x, C)` when false."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _isinstance(test.operand, positive=not positive)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if positive else ast.Or):
        return {name: kinds for value in test.values for name, kinds in _isinstance(value, positive=positive).items()}
    if (
        positive
        and isinstance(test, ast.Call)
        and getattr(test.func, "id", None) == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[0], ast.Name)
    ):
        return {test.args[0].id: [test.args[1]]}
    return {}


def _call_class(modules, module, function, owner, call: ast.Call, depth) -> Class | None:
    if isinstance(call.func, ast.Name) and call.func.id == "next" and call.args:
        items = call.args[0]
        return (
            class_of(modules, module, function, owner, items.elt, depth + 1)
            if isinstance(items, ast.GeneratorExp)
            else None
        )
    called = target(modules, module, function, call.func)
    definition = modules.definition(*called) if called and called[1] else None
    if isinstance(definition, ast.ClassDef) or (called and called[1] and not modules.ours(called[0])):
        return called  # a repo class, or what a library's callable builds (its module names the library)
    if not isinstance(definition, ast.FunctionDef):
        return None
    returned = [
        class_of(modules, called[0], definition, None, r.value, depth + 1)
        for r in ast.walk(definition)
        if isinstance(r, ast.Return) and r.value is not None and not _is_none(r.value)
    ]
    if definition.returns is not None:
        returned.append(named_class(modules, called[0], definition, _annotation(definition.returns)))
    return _one(returned)


def _stored(modules: RepoModules, cls: Class, attribute: str, depth: int, *, items: bool) -> list[Class | None]:
    """The classes of what the constructors of `cls` and its bases store as `self.<attribute>` (`items`: of its
    items)."""
    found = []
    for home, init, value in _stores(modules, cls, attribute):
        for expression in _items(value) if items else [value]:
            found.append(class_of(modules, home, init, cls, expression, depth + 1))
    return found


def _stores(modules: RepoModules, cls: Class, attribute: str) -> list[tuple[str, ast.FunctionDef, ast.expr]]:
    """(module, constructor, value) of each `self.<attribute> = value` in the constructors of `cls` and its repo
    bases (a subclass's runs its base's through `super().__init__`)."""
    found = []
    for base in _lineage(modules, cls):
        node = modules.definition(*base)
        init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        for name, statement in self_stores(init) if init is not None else ():
            if name == attribute and statement.value is not None:
                found.append((base[0], init, statement.value))
    return found


def _lineage(modules: RepoModules, cls: Class) -> list[Class]:
    """`cls` and its repo bases, nearest first."""
    node = modules.definition(*cls)
    if not isinstance(node, ast.ClassDef):
        return []
    return [tuple(name.rsplit(".", 1)) for name in modules.lineage(cls[0], node)]


def _items(value: ast.expr) -> list[ast.expr]:
    """The item expressions of a container built in place: `[A(), B()]`, `[A() for ...]`, `nn.ModuleList(...)`."""
    if isinstance(value, ast.Call) and value.args:
        name = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
        return _items(value.args[0]) if name in _CONTAINERS else []
    if isinstance(value, ast.List | ast.Tuple):
        return list(value.elts)
    if isinstance(value, ast.ListComp | ast.GeneratorExp):
        return [value.elt]
    return []


def _annotation(node: ast.expr) -> ast.expr | None:
    """The class an annotation names: `C`, `"C"`, `mod.C`, `C | None`, `Optional[C]`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        node = expression_or_none(node.value)
        if node is None:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [side for side in (node.left, node.right) if not _is_none(side)]
        return _annotation(sides[0]) if len(sides) == 1 else None
    if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Optional":
        return _annotation(node.slice)
    return node if isinstance(node, ast.Name | ast.Attribute) else None


def _targets(statement: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return statement.targets if isinstance(statement, ast.Assign) else [statement.target]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _one(found: list[Class | None]) -> Class | None:
    distinct = set(found)
    return distinct.pop() if len(distinct) == 1 else None
