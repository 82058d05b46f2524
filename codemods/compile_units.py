"""Kernels a warmup compiles through a registry of providers, as vLLM 0.33.0's `cutedsl_warmup` does.

A registry is a module-level collection that a function of its module fills with its argument (the
provider: an engine object that registers itself, `register_..._provider(self)`, or a module-level one);
the warmup reads the collection and asks each provider, by a literal method name, for what to compile
(`getattr(provider, "get_..._compile_units")`). Each provider class's method is followed, with `self`
bound to it, to the CuTe DSL kernels it compiles: the repo classes whose objects `cute.compile` takes
(`cute.compile(Kernel(...), ...)`, `cute.compile(launch, kernel, ...)` with `kernel = Kernel(...)`),
through the methods of `self`, of objects its constructor stores on `self` and of repo classes it names
(`Kernel.compile(...)`), repo functions, and the constructors of the repo classes it builds; the
survey follows the warmup's own functions the same way. Read with `ast`, like the survey.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterable, Iterator

from .repo import RepoModules, absolute_module
from .syntax import function_import, parameters, relative_function_import, statements

CUTE = "cutlass.cute"
_ADDS = ("add", "append")
FOLLOW_DEPTH = 4  # calls followed from a provider's method to the `cute.compile` that builds a kernel


@dataclasses.dataclass(frozen=True)
class Registry:
    module: str
    name: str  # the module-level collection
    registers: tuple[str, ...]  # the functions of its module that add their argument to it
    methods: tuple[str, ...]  # what the warmup asks each provider for, by name


def registries(modules: RepoModules, module: str, nodes: Iterable[ast.AST]) -> list[Registry]:
    """The registries of `module` that `nodes` (what can run of a warmup function of it) read, with the method
    names those nodes look up with getattr."""
    tree = modules.tree(module)
    nodes = list(nodes)
    methods = tuple(
        sorted(
            {
                n.args[1].value
                for n in nodes
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id == "getattr"
                and len(n.args) >= 2
                and isinstance(n.args[1], ast.Constant)
                and isinstance(n.args[1].value, str)
            }
        )
    )
    read = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    found = []
    for name in sorted(read & _collections(tree)) if tree is not None and methods else ():
        registers = tuple(f.name for f in tree.body if isinstance(f, ast.FunctionDef) and _adds_its_argument(f, name))
        if registers:
            found.append(Registry(module, name, registers, methods))
    return found


def providers(
    modules: RepoModules, registry: Registry, mentioning: Callable[[str], Iterable[str]]
) -> list[tuple[str, str]]:
    """(module, class) of each provider: the class of a method that registers `self`, or of a module-level object
    a function registers (`_PROVIDER = Provider()`). `mentioning(word)`: the modules whose text holds it."""
    found: dict[tuple[str, str], None] = {}
    wanted = {(registry.module, name) for name in registry.registers}
    for home in sorted({m for name in registry.registers for m in mentioning(name)}):
        tree = modules.tree(home)
        for owner, function in _functions(tree) if tree is not None else ():
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call) and n.args):
                argument = _name(call.args[0])
                if argument is None or target(modules, home, function, call.func) not in wanted:
                    continue
                if argument == "self" and owner is not None:
                    found[(home, owner)] = None
                elif isinstance(built := modules.definition(home, argument), ast.Assign) and isinstance(
                    built.value, ast.Call
                ):
                    cls = named_class(modules, home, function, built.value.func)
                    found.update({cls: None} if cls else {})
    return list(found)


def registry_providers(
    modules: RepoModules, module: str, nodes: Iterable[ast.AST], mentioning: Callable[[str], Iterable[str]]
) -> Iterator[tuple[tuple[str, str], str, tuple[str, ast.FunctionDef] | None]]:
    """(provider "module:Class", the method the warmup asks it for, (module, method) where defined or None) for
    each provider of a registry of `module` that `nodes` read."""
    for registry in registries(modules, module, nodes):
        for provider in providers(modules, registry, mentioning):
            for name in registry.methods:
                yield provider, name, modules.method_of(provider, name)


def registry_kernels(
    modules: RepoModules, module: str, nodes: Iterable[ast.AST], mentioning: Callable[[str], Iterable[str]]
) -> Iterator[tuple[tuple[str, str], str, str]]:
    """(kernel, "module:Class.method" that compiles it, "module:Class" of its provider) for each CuTe DSL kernel
    the providers of a registry of `module` that `nodes` read compile."""
    for provider, name, found in registry_providers(modules, module, nodes, mentioning):
        for kernel in compiled_kernels(modules, found[0], provider, found[1]) if found else ():
            yield kernel, f"{provider[0]}:{provider[1]}.{name}", f"{provider[0]}:{provider[1]}"


def compiled_kernels(
    modules: RepoModules,
    module: str,
    owner: tuple[str, str] | None,
    function: ast.FunctionDef,
    nodes: list[ast.AST] | None = None,
) -> list[tuple[str, str]]:
    """The repo classes whose objects `function` of `module` (a method of the class `owner`, or a module function:
    None) compiles with `cute.compile`, itself or through what it reaches (see the module). `nodes`: what can run
    of `function` (codemods.reachable), when not all of it."""
    found: dict[tuple[str, str], None] = {}
    pending = [(module, owner, function, 0)]
    seen: set[int] = set()
    while pending:
        home, owner, function, depth = pending.pop(0)
        if id(function) in seen:
            continue
        seen.add(id(function))
        assigned = _assigned_calls(function)
        for node in nodes if nodes is not None and depth == 0 else ast.walk(function):
            if isinstance(node, ast.Call) and _is_cute_compile(modules, home, function, node.func):
                built = [b for a in node.args for b in ([a] if isinstance(a, ast.Call) else assigned.get(_name(a), []))]
                found.update({c: None for b in built if (c := named_class(modules, home, function, b.func))})
            if depth >= FOLLOW_DEPTH:
                continue
            for followed in _followed(modules, home, owner, function, node):
                pending.append((*followed, depth + 1))
    return list(found)


def _followed(
    modules: RepoModules, home: str, owner: tuple[str, str] | None, function: ast.FunctionDef, node: ast.AST
) -> list[tuple[str, tuple[str, str] | None, ast.FunctionDef]]:
    """(module, class, function) that `node` leads to: a method of a repo class named in it, of `self`, or of an
    object the constructor stores on `self`, a repo function it calls, or the constructor of a repo class it
    builds. A method is read in the module of the class that defines it, its own or a base."""
    cls, name = None, getattr(node, "attr", None)
    if isinstance(node, ast.Attribute) and (named := named_class(modules, home, function, node.value)):
        cls = named  # a static or class method: `Kernel.compile(...)`
    elif isinstance(node, ast.Attribute) and owner is not None and _name(node.value) == "self":
        cls = owner
    elif isinstance(node, ast.Attribute) and owner is not None and isinstance(node.value, ast.Attribute):
        cls = _held(modules, owner, node.value.attr) if _name(node.value.value) == "self" else None
    elif isinstance(node, ast.Call):
        called = target(modules, home, function, node.func)
        definition = modules.definition(*called) if called and called[1] else None
        if isinstance(definition, ast.FunctionDef):
            return [(called[0], None, definition)]
        if isinstance(definition, ast.ClassDef):
            cls, name = called, "__init__"
    found = modules.method_of(cls, name) if cls else None
    return [(found[0], cls, found[1])] if found else []


def _held(modules: RepoModules, owner: tuple[str, str], attribute: str) -> tuple[str, str] | None:
    """The repo class of the object the constructor of `owner` stores as `self.<attribute>` (one assignment of a
    call)."""
    found = modules.method_of(owner, "__init__")
    calls = [
        s.value
        for s in (statements(found[1]) if found else ())
        if isinstance(s, ast.Assign)
        and isinstance(s.value, ast.Call)
        and any(isinstance(t, ast.Attribute) and _name(t.value) == "self" and t.attr == attribute for t in s.targets)
    ]
    return named_class(modules, found[0], found[1], calls[0].func) if len(calls) == 1 else None


def named_class(modules: RepoModules, module: str, function: ast.FunctionDef | None, node: ast.expr | None):
    """The repo class (module, name) that `node`, read in `function` of `module`, names; None for anything else."""
    named = target(modules, module, function, node) if node is not None else None
    return named if named and named[1] and isinstance(modules.definition(*named), ast.ClassDef) else None


def target(modules: RepoModules, module: str, function: ast.FunctionDef | None, func: ast.expr):
    """What a name or `module.name` read in `function` of `module` is, with the function's own imports (relative
    ones included) before the module's."""
    if isinstance(func, ast.Name) and function is not None:
        imported = _imported_in(modules, module, function, func.id)
        if imported is not None:
            return modules.resolve(*imported) if imported[1] else (imported[0], None)
    return modules.callee(module, function, func) if function is not None else None


def _imported_in(modules: RepoModules, module: str, function: ast.FunctionDef, name: str):
    """What the function's own import binds `name` to (`syntax.function_import`), its relative imports too."""
    found = function_import(function, name)
    if found is not None:
        return found
    relative = relative_function_import(function, name)
    if relative is None:
        return None
    path = modules.path(module)
    package = module if path is not None and path.name == "__init__.py" else module.rpartition(".")[0]
    written, attribute, level = relative
    return absolute_module(package, written, level), attribute


def _is_cute_compile(modules: RepoModules, module: str, function: ast.FunctionDef, func: ast.expr) -> bool:
    if not (isinstance(func, ast.Attribute) and func.attr == "compile" and isinstance(func.value, ast.Name)):
        return False
    imported = _imported_in(modules, module, function, func.value.id) or modules.imports(module).get(func.value.id)
    return imported is not None and (imported == (CUTE, None) or imported == (CUTE.rpartition(".")[0], "cute"))


def _assigned_calls(function: ast.FunctionDef) -> dict[str, list[ast.Call]]:
    """name -> the calls the function assigns to it (every branch's)."""
    found: dict[str, list[ast.Call]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.value)
    return found


def _collections(tree: ast.Module) -> set[str]:
    """Module-level names bound to a collection: a call with no arguments (`set()`, `weakref.WeakSet()`), or an
    empty literal."""
    found = set()
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        target = node.target if isinstance(node, ast.AnnAssign) else target
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        empty = (isinstance(value, ast.List | ast.Set) and not value.elts) or (
            isinstance(value, ast.Dict) and not value.keys
        )
        if isinstance(target, ast.Name) and (empty or (isinstance(value, ast.Call) and not value.args)):
            found.add(target.id)
    return found


def _adds_its_argument(function: ast.FunctionDef, collection: str) -> bool:
    own = set(parameters(function))
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in _ADDS
        and _name(n.func.value) == collection
        and len(n.args) == 1
        and _name(n.args[0]) in own
        for n in ast.walk(function)
    )


def _functions(tree: ast.Module):
    """(class name or None, function) for every top-level function and method of a top-level class."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield None, node
        elif isinstance(node, ast.ClassDef):
            yield from ((node.name, f) for f in node.body if isinstance(f, ast.FunctionDef))


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None
