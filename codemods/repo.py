"""The static model of an engine repo, read with `ast` and never imported.

One place for what the planner, the survey, the safety gate and the engine-tree runner all
need to know about a repo's modules: a file's dotted module name, relative imports resolved
to absolute ones, a module's import table, the calls a function makes and the gates they
run under, where a name is defined, and whether a kernel object is on the warmup contract.
"""

from __future__ import annotations

import ast
import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from libcst.helpers import get_absolute_module_from_package

from .engines import DEFAULT_ENGINE, Engine
from .files import SourceFile, UnreadableSource, read_source, why_skipped
from .syntax import (
    Place,
    body_stores,
    deeper_than,
    exits,
    function_import,
    module_level,
    own_nodes,
    parameters,
    statements,
    where,
)


def module_name(repo: Path, path: Path) -> tuple[str, str]:
    """(module, package) of a file under the repo root: `vllm/a/b.py` is `vllm.a.b` in `vllm.a`."""
    # String arithmetic, not PurePath: the planner names every file of the tree, and Path's parsing was a tenth of
    # a dry run's time.
    inside, root = str(path), str(repo).rstrip(os.sep)
    if inside.startswith(root + os.sep) and inside.endswith(".py") and root not in ("", "."):
        parts = tuple(inside[len(root) + 1 : -3].split(os.sep))
    else:  # a relative root, or the filesystem's
        parts = path.relative_to(repo).with_suffix("").parts
    is_package = parts[-1] == "__init__"
    name = ".".join(parts[:-1] if is_package else parts)
    return name, name if is_package else ".".join(parts[:-1])


def absolute_module(package: str, module: str | None, level: int) -> str:
    """The absolute module of `from {'.' * level}{module} import ...` written in `package` ('' past the top)."""
    return get_absolute_module_from_package(package or None, module, level) or ""


@dataclasses.dataclass(frozen=True)
class Gate:
    test: ast.expr
    holds_when: bool  # False: the call sits in the `else` of `test`, or after `if test: return`
    # The `name = value` statements run before the test (None: those of the call it gates). A local the function
    # binds again after its test (`n = min(n, 8)`) reads here as it was when tested.
    assigned: dict[str, ast.expr] | None = dataclasses.field(default=None, compare=False)


@dataclasses.dataclass(frozen=True)
class CallSite:
    function: ast.FunctionDef
    call: ast.Call
    gates: tuple[Gate, ...]
    assigned: dict[str, ast.expr]  # `name = value` statements run before the call (the latest per name)
    in_loop: bool = False  # the call sits in a loop of the function: it may run any number of times
    # A statement above the call that may return on a path its gates do not say (a return in a loop, a `with` or
    # `try` block, or a branch that does not always leave): None where the gates say every such path.
    after_return: ast.stmt | None = None

    def gate_source(self) -> str | None:
        """The conditions the call runs under, as source: "(a) and not (b)" (None: none)."""
        return " and ".join(("" if g.holds_when else "not ") + f"({ast.unparse(g.test)})" for g in self.gates) or None


Matcher = Callable[[ast.Call, dict[str, ast.expr]], bool]


def call_sites(tree: ast.Module, matches: Matcher, functions: list[ast.FunctionDef] | None = None) -> list[CallSite]:
    """Every call `matches` accepts in the module's top-level functions (or in `functions`), with the gates
    it runs under.

    A call inside a loop is found with the gates around the loop, and says it is in one (`in_loop`). An `if`
    whose one branch always leaves (returns or raises) gates what follows it by the other branch's condition; a
    return the gates cannot say (`after_return`) is left to the caller to refuse.
    """
    walk = _CallSiteWalk(matches)
    for node in tree.body if functions is None else functions:
        if isinstance(node, ast.FunctionDef):
            walk.visit(node.body, node, (), {})
    return walk.sites


class _CallSiteWalk:
    """call_sites's walk of a function's blocks: a class, where a closure that calls itself would be a cycle that
    keeps what it closes over (the matcher, and the repo model behind it) until the garbage collector runs."""

    def __init__(self, matches: Matcher):
        self.matches = matches
        self.sites: list[CallSite] = []

    def visit(
        self,
        block: list[ast.stmt],
        function: ast.FunctionDef,
        gates: tuple[Gate, ...],
        assigned: dict[str, ast.expr],
        returned: ast.stmt | None = None,
    ) -> None:
        for statement in block:
            if isinstance(statement, ast.If):
                assigned.update(
                    {
                        n.target.id: n.value
                        for n in ast.walk(statement.test)
                        if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)
                    }
                )
                tested = dict(assigned)
                then, otherwise = Gate(statement.test, True, tested), Gate(statement.test, False, tested)
                self.visit(statement.body, function, gates + (then,), dict(assigned), returned)
                self.visit(statement.orelse, function, gates + (otherwise,), dict(assigned), returned)
                if exits(statement.body) and not exits(statement.orelse):
                    gates, rest = gates + (otherwise,), statement.orelse
                elif exits(statement.orelse) and not exits(statement.body):
                    gates, rest = gates + (then,), statement.body
                else:
                    rest = [statement]
                returned = returned or (statement if any(map(_returns, rest)) else None)
                continue
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue  # not run by this function
            inner = [n for n in ast.walk(statement) if isinstance(n, ast.Call) and self.matches(n, assigned)]
            in_loop = isinstance(statement, (ast.For, ast.AsyncFor, ast.While))
            if isinstance(statement, (ast.With, ast.AsyncWith, ast.Try)):
                for body in (
                    statement.body,
                    *(h.body for h in getattr(statement, "handlers", ())),
                    getattr(statement, "orelse", []),
                    getattr(statement, "finalbody", []),
                ):
                    self.visit(body, function, gates, assigned, returned)
            else:
                self.sites.extend(CallSite(function, call, gates, dict(assigned), in_loop, returned) for call in inner)
            # A return in an `except` handler leaves on an error path, as a raise does: no gate says either.
            kept = (
                [*statement.body, *statement.orelse, *statement.finalbody]
                if isinstance(statement, ast.Try)
                else [statement]
            )
            returned = returned or (statement if any(map(_returns, kept)) else None)
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                assigned[statement.targets[0].id] = statement.value


def _returns(statement: ast.stmt) -> bool:
    """Whether the statement holds a `return` of the function it is in (not one of a function inside it)."""
    return isinstance(statement, ast.Return) or any(isinstance(n, ast.Return) for n in own_nodes(statement))


def import_table(tree: ast.Module, importer: str, is_package: bool = False) -> dict[str, tuple[str, str | None]]:
    """Local name -> (module, name) for `from m import name`, (module, None) for `import m [as x]`, anywhere
    in the file of module `importer` (relative imports resolved against it)."""
    table: dict[str, tuple[str, str | None]] = {}
    for node in statements(tree):
        if isinstance(node, ast.ImportFrom):
            source = absolute_module(importer if is_package else importer.rpartition(".")[0], node.module, node.level)
            for alias in node.names:
                table[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.name if alias.asname else alias.name.split(".")[0]
                table[alias.asname or bound] = (bound, None)
    return table


def calls_to(tree: ast.Module, importer: str, module: str, name: str, defined_here: bool = False) -> Matcher:
    """A matcher for calls of `module.name` however the file of `importer` imports it (or defines it,
    `defined_here`): by a bound name, or as an attribute of the module bound to a name or spelled out."""
    table = import_table(tree, importer)
    parent, _, last = module.rpartition(".")
    names = {local for local, source in table.items() if source == (module, name)}
    modules = {local for local, source in table.items() if source in ((parent, last), (module, None))}
    if defined_here:
        names.add(name)

    def matches(call: ast.Call, assigned: dict[str, ast.expr]) -> bool:
        func = call.func
        if isinstance(func, ast.Name):
            return func.id in names
        return (
            isinstance(func, ast.Attribute)
            and func.attr == name
            and (ast.unparse(func.value) in modules or ast.unparse(func.value) == module)
        )

    return matches


def method_calls(holder: str, method: str) -> Matcher:
    """A matcher for `<...>.holder.method()`, also through a local assigned from `<...>.holder`."""

    def matches(call: ast.Call, assigned: dict[str, ast.expr]) -> bool:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == method):
            return False
        target = assigned.get(func.value.id, func.value) if isinstance(func.value, ast.Name) else func.value
        return ast.unparse(target).split(".")[-1] == holder

    return matches


class RepoModules:
    """The engine package's modules, parsed on demand, with their import tables."""

    def __init__(
        self, repo: Path, package: str, engine: Engine = DEFAULT_ENGINE, files: Mapping[Path, SourceFile] | None = None
    ):
        """`files`: files already read (the planner's), whose parsed trees the model shares."""
        self.repo, self.package, self.engine, self.files = repo, package, engine, files or {}
        self._trees: dict[str, ast.Module | None] = {}
        self.unreadable: dict[str, str] = {}  # module -> why its file cannot be read ("path:line: why")
        self._imports: dict[str, dict[str, tuple[str, str | None]]] = {}
        self._definitions: dict[tuple[str, str], list[ast.stmt]] = {}
        self._paths: dict[str, Path | None] = {}
        self._reaches: dict[tuple, int] = {}
        self._locals: dict[int, tuple[ast.FunctionDef, set[str]]] = {}  # the function is kept: its id stays its own
        self.memo: dict[tuple, object] = {}  # what the analyses reading this repo work out once per run

    def path(self, module: str) -> Path | None:
        """The module's file (None: no such module, or one that is not a regular file, see `unreadable`)."""
        if module not in self._paths:
            self._paths[module] = self._find(module)
        return self._paths[module]

    def _find(self, module: str) -> Path | None:
        base = self.repo / Path(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
            if candidate.exists() or candidate.is_symlink():
                self.unreadable[module] = f"{candidate}: {why_skipped(candidate, self.repo)}"
                return None
        return None

    def tree(self, module: str) -> ast.Module | None:
        """The module parsed (None: missing or unreadable; `unreadable` says why for a file that is there)."""
        if module not in self._trees:
            path = self.path(module)
            try:
                self._trees[module] = (self.files.get(path) or read_source(path)).tree if path else None
            except SyntaxError as exc:
                self._trees[module] = None
                where = f"{path}:{exc.lineno}: does not parse" if exc.lineno else f"{path}"  # a null byte: no line
                self.unreadable[module] = f"{where}: {exc.msg}"
            except (UnreadableSource, ValueError) as exc:  # ValueError: a null byte, on Python 3.11
                self._trees[module] = None
                self.unreadable[module] = str(exc) if isinstance(exc, UnreadableSource) else f"{path}: {exc}"
            except OSError as exc:  # a file the process may not read
                self._trees[module] = None
                self.unreadable[module] = f"{path}: cannot read it ({exc.strerror or exc})"
            except (RecursionError, MemoryError):  # an expression nested past what the parser can hold
                self._trees[module] = None
                self.unreadable[module] = f"{path}: too deeply nested for Python's parser"
        return self._trees[module]

    def drop_deep_trees(self) -> list[str]:
        """Mark every module parsed so far that nests too deeply to be read (syntax.deeper_than) as unreadable; the
        modules marked. For a reader that hit Python's recursion limit: it drops these and reads again."""
        deep = [module for module, tree in self._trees.items() if tree is not None and deeper_than(tree)]
        for module in deep:
            self._trees[module] = None
            self.unreadable[module] = f"{self.path(module)}: nested too deeply to read"
        return deep

    def why_unreadable(self, module: str) -> str | None:
        """Why a module that is there cannot be read (None: it reads, or it is not there at all)."""
        return self.unreadable.get(module) if self.tree(module) is None else None

    def ours(self, module: str) -> bool:
        return module == self.package or module.startswith(self.package + ".")

    def imports(self, module: str) -> dict[str, tuple[str, str | None]]:
        """The module's import table (`import_table`), cached."""
        if module not in self._imports:
            tree = self.tree(module)
            is_package = (self.path(module) or Path()).name == "__init__.py"
            self._imports[module] = import_table(tree, module, is_package) if tree else {}
        return self._imports[module]

    def modules_by_string(self, module: str, function: ast.FunctionDef) -> dict[str, str]:
        """Names `function` (of `module`) assigns a module it looks up by a literal name."""
        package = module if (self.path(module) or Path()).name == "__init__.py" else module.rpartition(".")[0]
        bound, found = import_bindings(self.imports(module)), {}
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                named = module_named_by(node.value, bound, module, package)
                if named:
                    found[node.targets[0].id] = named
        return found

    def definition(self, module: str, name: str) -> ast.stmt | None:
        """The statement of `module` that binds `name` last at its top level; else the first binding inside a
        top-level `if` or `try` (`if HAS_TRITON: def kernel`), None where that is an import (`try: import x`,
        read through the imports). A conditional rebinding (`if is_cpu(): f = f_cpu`) or a fallback (`else:
        triton = Placeholder()`) never hides the main path's."""
        found = self.alternatives(module, name)
        return found[0] if found else None

    def alternatives(self, module: str, name: str) -> list[ast.stmt]:
        """`definition`'s answer, and where the module binds `name` only inside `if`/`try` blocks, each of those
        definitions (`if is_rocm(): def launch ... else: def launch ...`: either may run)."""
        if (module, name) not in self._definitions:
            tree, found = self.tree(module), []
            top = [node for node in tree.body if _binds(node, name)] if tree else []
            nested = [node for node in module_level(tree) if _binds(node, name) or _imports(node, name)] if tree else []
            if any(not _placeholder(node) for node in nested):  # `kernel = None` before `if HAS_TRITON: def kernel`
                top = [node for node in top if not _placeholder(node)]
                nested = [node for node in nested if not _placeholder(node)]
            if top:
                found = [top[-1]]
            elif nested and not _imports(nested[0], name):
                found = [nested[0], *(n for n in nested[1:] if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))]
            self._definitions[(module, name)] = found
        return self._definitions[(module, name)]

    def resolve(self, module: str, name: str, depth: int = 0) -> tuple[str, str | None]:
        """Where `name` in `module` is defined: (module, name), or (module, None) for a module."""
        if depth < 4 and self.definition(module, name) is None:
            source = self.imports(module).get(name)
            if source is not None:
                target, attribute = source
                if attribute is None:
                    return target, None
                if self.definition(target, attribute) is None and self.path(f"{target}.{attribute}") is not None:
                    return f"{target}.{attribute}", None  # `from package import submodule`
                return self.resolve(target, attribute, depth + 1)
            package = self.path(module)
            if package is not None and package.name == "__init__.py" and self.path(f"{module}.{name}") is not None:
                return f"{module}.{name}", None  # a submodule of the package, which it does not import itself
        return module, name

    def shown(self, module: str) -> str:
        """The module's file as messages show it: relative to the repo."""
        return self.path(module).relative_to(self.repo).as_posix()

    def where(self, module: str, node: ast.AST | int) -> Place:
        """The place (`path:line`) of a node (or a line) of the module."""
        return where(self.repo, self.path(module), node if isinstance(node, int) else node.lineno)

    def callee(self, module: str, function: ast.FunctionDef, func: ast.expr) -> tuple[str, str | None] | None:
        """What a call's function in `function` (of `module`) is: a name the function imports itself or one of its
        module's, or an attribute of a module either imports (`ops.launch`); None for anything else."""
        if isinstance(func, ast.Name):
            found = function_import(function, func.id)
            if found is None and func.id in self._locals_of(function):
                return None  # a parameter or a local: what it holds is not known here
            found = found or self.imports(module).get(func.id)
            return self.resolve(*found) if found and found[1] else self.resolve(module, func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = self.callee(module, function, func.value)
            if owner is not None and owner[1] is None:  # a module
                return self.resolve(owner[0], func.attr)
        return None

    def _locals_of(self, function: ast.FunctionDef) -> set[str]:
        """The names a function binds itself (its parameters and the names it assigns), kept per function."""
        if id(function) not in self._locals:
            self._locals[id(function)] = (function, set(parameters(function)) | set(body_stores(function)))
        return self._locals[id(function)][1]

    def reaches(self, module: str, name: str | None, wanted: tuple[str, str], depth: int = 3) -> int:
        """How many calls deep `module.name`, an engine function, calls `wanted` (itself: 1; 0: not within
        `depth`)."""
        key = (module, name, wanted, depth)
        if key not in self._reaches:
            self._reaches[key] = self._reached(module, name, wanted, depth)
        return self._reaches[key]

    def _reached(self, module: str, name: str | None, wanted: tuple[str, str], depth: int) -> int:
        function = self.definition(module, name) if name else None
        if not isinstance(function, ast.FunctionDef) or depth == 0:
            return 0
        found = []
        for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
            target = self.callee(module, function, call.func)
            if target == wanted:
                return 1
            inner = self.reaches(*target, wanted, depth - 1) if target not in (None, (module, name)) else 0
            found += [inner + 1] if inner else []
        return min(found, default=0)

    def off_contract(self, module: str, name: str) -> str | None:
        """None when `module.name` can register with the contract (it has `register_warmup`); else why not.

        Read statically: an object whose class, or a base class defined in the repo, defines
        `register_warmup`; or a function or object made by a decorator (factory) defined in the repo that
        builds such an object. A kernel of another library (a plain `@triton.jit` function) is off it.
        """
        asked = f"{module}.{name}"
        module, name = self.resolve(module, name)  # a name the module imports is judged where it is defined
        node = self.definition(module, name) if name else None
        if node is None:
            return f"{asked} is not defined at the top level of a module in the repo"
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            factory = node.value.func
            if self._has_register(module, factory) or self._builds_registering(module, factory):
                return None
            return (
                f"{name} = {ast.unparse(factory)}(...) ({module}:{node.lineno}) makes an object with no "
                "register_warmup (neither its class nor a base class in the repo defines one)"
            )
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if any(self._builds_registering(module, decorator) for decorator in node.decorator_list):
                return None
            decorators = ", ".join(f"@{dotted_name(d)}" for d in node.decorator_list) or "no decorator"
            return (
                f"{name} ({module}:{node.lineno}) is a {type(node).__name__.removesuffix('Def').lower()} with "
                f"{decorators}: it has no register_warmup (a JITFunction, for one, does not)"
            )
        return f"{name} ({module}:{node.lineno}) is not an object the contract can register"

    def kernel_class(self, module: str, name: str) -> tuple[str, ast.ClassDef] | None:
        """The repo class `module.name = Class(...)` is an object of, with its module."""
        module, name = self.resolve(module, name)
        node = self.definition(module, name) if name else None
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            return self._class(module, node.value.func)
        return None

    def method(self, module: str, cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
        """`cls.name` as the class or its first base in the repo that defines it (None: not found in the repo)."""
        found = self.defining(module, cls, name)
        return found[1] if found else None

    def method_of(self, cls: tuple[str, str], name: str) -> tuple[str, ast.FunctionDef] | None:
        """The method `name` of the repo class `cls` (module, class name), its own or a base's, with the module that
        defines it; None where `cls` is no repo class or has no such method."""
        node = self.definition(*cls)
        return self.defining(cls[0], node, name) if isinstance(node, ast.ClassDef) else None

    def defining(self, module: str, cls: ast.ClassDef, name: str, depth: int = 0) -> tuple[str, ast.FunctionDef] | None:
        """`method`'s answer with the module of the class that defines it (where its names are read)."""
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                return module, item
        for base in cls.bases:
            found = self._class(module, base)
            if found is not None and depth < 8 and (hit := self.defining(found[0], found[1], name, depth + 1)):
                return hit
        return None

    def lineage(self, module: str, cls: ast.ClassDef, depth: int = 0) -> list[str]:
        """The class's qualified name and its bases' that the repo defines (`module.Class`), the class first."""
        found = [f"{module}.{cls.name}"]
        for base in cls.bases if depth < 8 else ():
            if (parent := self._class(module, base)) is not None:
                found += self.lineage(*parent, depth + 1)
        return found

    def reference(self, module: str, node: ast.AST) -> tuple[str, str] | None:
        """What a name or `module.name` read in `module` refers to in the engine package: (module, name)."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            target, name = self.resolve(module, node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            holder, holder_name = self.resolve(module, node.value.id)
            if holder_name is not None or self.tree(holder) is None:
                return None
            target, name = self.resolve(holder, node.attr)
        else:
            return None
        return (target, name) if name and self.ours(target) else None

    def _class(self, module: str, expression: ast.expr) -> tuple[str, ast.ClassDef] | None:
        """The repo class an expression names (`Name`, `module.Name`, `Base[...]`), with its module."""
        found = self.reference(module, expression.value if isinstance(expression, ast.Subscript) else expression)
        node = self.definition(*found) if found else None
        return (found[0], node) if isinstance(node, ast.ClassDef) else None

    def _has_register(self, module: str, expression: ast.expr, depth: int = 0) -> bool:
        """The class `expression` names, or one of its bases in the repo, defines register_warmup."""
        found = self._class(module, expression)
        if found is None or depth > 8:
            return False
        home, cls = found
        return any(isinstance(item, ast.FunctionDef) and item.name == "register_warmup" for item in cls.body) or any(
            self._has_register(home, base, depth + 1) for base in cls.bases
        )

    def _builds_registering(self, module: str, decorator: ast.expr) -> bool:
        """A decorator (or decorator factory) defined in the repo whose body builds a registering object."""
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if not isinstance(target, ast.Name):
            return False
        home, name = self.resolve(module, target.id)
        function = self.definition(home, name) if name else None
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        return any(isinstance(call, ast.Call) and self._has_register(home, call.func) for call in ast.walk(function))


def _binds(node: ast.stmt, name: str) -> bool:
    """`node` defines `name`: a function, a class, or a plain or annotated assignment to it."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def _placeholder(node: ast.stmt) -> bool:
    """`name = None`: a binding that stands in until a real one (a conditional `def`) replaces it."""
    value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else False
    return isinstance(value, ast.Constant) and value.value is None


def _imports(node: ast.stmt, name: str) -> bool:
    return isinstance(node, ast.Import | ast.ImportFrom) and any(
        (alias.asname or alias.name.split(".")[0]) == name for alias in node.names
    )


def dotted_name(node: ast.expr) -> str:
    """`a.b.c` as written (a call's callee for a call)."""
    return ast.unparse(node.func if isinstance(node, ast.Call) else node)


def qualified_names(node: ast.AST, bound: Mapping[str, set[str]]) -> set[str]:
    """The fully qualified names an expression `a.b.c` may denote, through what the file's imports bind (`bound`:
    local name -> qualified names)."""
    if isinstance(node, ast.Name):
        return bound.get(node.id, set())
    if isinstance(node, ast.Attribute):
        return {f"{base}.{node.attr}" for base in qualified_names(node.value, bound)}
    return set()


def import_bindings(table: Mapping[str, tuple[str, str | None]]) -> dict[str, set[str]]:
    """An import table (`import_table`) as `qualified_names` reads it."""
    return {name: {f"{home}.{attribute}" if attribute else home} for name, (home, attribute) in table.items()}


IMPORTERS = {"importlib.import_module", "importlib.__import__", "builtins.__import__", "__import__"}  # by a name
BY_NAME_WORDS = ("modules", "import_module", "__import__")  # code that spells none looks no module up by name


def callee_names(func: ast.expr, bound: Mapping[str, set[str]]) -> set[str]:
    """What a call's callee may be: its qualified names, and a bare name as written (a builtin such as
    `__import__` or `getattr` binds no import)."""
    return qualified_names(func, bound) | ({func.id} if isinstance(func, ast.Name) else set())


def module_named_by(node: ast.AST, bound: Mapping[str, set[str]], module: str, package: str) -> str | None:
    """The module an expression looks up by a literal name: `importlib.import_module("a.b")` (relative ones under
    their package), `__import__("a.b", fromlist=[...])` (without a fromlist: `a`), `sys.modules["a.b"]`,
    `sys.modules.get("a.b")` (or `__name__`: `module`); None for anything else (`bound` as in `qualified_names`)."""

    def key_names(key: ast.expr | None) -> str | None:  # a literal, or the module's own __name__
        if isinstance(key, ast.Name) and key.id == "__name__":
            return module
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None

    if isinstance(node, ast.Subscript):
        return key_names(node.slice) if "sys.modules" in qualified_names(node.value, bound) else None
    if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    callee = callee_names(node.func, bound)
    if "sys.modules.get" in callee:
        return key_names(node.args[0] if node.args else None)
    if not callee & IMPORTERS:
        return None
    by_path = "importlib.import_module" in callee
    args = dict(zip(("name", "package") if by_path else ("name", "globals", "locals", "fromlist", "level"), node.args))
    args |= {k.arg: k.value for k in node.keywords if k.arg}
    const = {key: arg.value for key, arg in args.items() if isinstance(arg, ast.Constant)}
    name = const.get("name")
    if not isinstance(name, str):
        return None
    if by_path:
        level = len(name) - len(name.lstrip("."))
        if not level:
            return name
        here = {"__package__": package, "__name__": module}
        base = here.get(args["package"].id) if isinstance(args.get("package"), ast.Name) else const.get("package")
        return (absolute_module(base, name[level:] or None, level) or None) if isinstance(base, str) else None
    level = const.get("level", 0 if "level" not in args else None)
    fromlist = args.get("fromlist", ast.Constant(None))
    if not isinstance(level, int) or not isinstance(fromlist, (ast.List, ast.Tuple, ast.Constant)):
        return None
    listed = bool(fromlist.value if isinstance(fromlist, ast.Constant) else fromlist.elts)
    # Without a fromlist, __import__("a.b") returns the first module named: `a` (relative: the package's child).
    named = name if listed else name.partition(".")[0]
    return (absolute_module(package, named or None, level) or None) if level else named
