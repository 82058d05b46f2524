"""The safety gate: nothing is written unless the migrated tree passes it.

Both halves run file by file in the worker pool: `check_file` on each changed file beside
its transform, `check_references` on every candidate file after the migration.

It is deliberately independent of the transforms (plain `ast` and pyflakes, not the
transforms' libcst resolution), so a transform's blind spot is not also the gate's:
  * every changed file compiles;
  * pyflakes finds no new undefined name, undefined export or redefinition in a changed
    file (findings the file already had are not the migration's);
  * no file in the repo still imports, or names by string, a module the migration deletes,
    or imports a function it deletes;
  * no file still uses the kernel's old public name (imports from the modules that export
    it, attributes of those modules, the definition itself, strings in the exporters);
    comments and docstrings that still mention it are warnings;
  * every name a changed file newly imports from the repo's own modules is there once the
    migration is written (pyflakes sees one file: an import of a name an older release
    lacks would fail only at run time).
"""

from __future__ import annotations

import ast
import dataclasses
import re
import symtable
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from pyflakes import checker as pyflakes_checker
from pyflakes import messages

from .repo import IMPORTERS, absolute_module, callee_names, module_named_by, qualified_names
from .syntax import SCOPES, module_names, own_nodes, source_lines, where

# What a migration may never introduce into a file (pyflakes: F821, F822, F811, F823, F405).
_BLOCKING = (
    messages.UndefinedName,
    messages.UndefinedExport,
    messages.RedefinedWhileUnused,
    messages.UndefinedLocal,
    messages.ImportStarUsage,
)


@dataclasses.dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    what: str

    def render(self, repo: Path) -> str:
        return f"{where(repo, self.path, self.line)}: {self.what}"


@dataclasses.dataclass(frozen=True)
class Renamed:
    """The kernel's old public name and the modules that exported it (`module.old` must be gone)."""

    old: str
    new: str
    exporters: frozenset[str]


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the migration deletes and renames, for the gate to look for."""

    deleted_modules: frozenset[str]
    deleted_functions: frozenset[str]  # fully qualified
    renamed: tuple[Renamed, ...]

    def words(self) -> set[str]:
        return (
            {m.rsplit(".", 1)[-1] for m in self.deleted_modules}
            | {f.rsplit(".", 1)[-1] for f in self.deleted_functions}
            | {r.old for r in self.renamed}
        )


def _pyflakes(path: Path, source: str) -> tuple[Counter, dict]:
    tree = ast.parse(source, filename=str(path))
    found = pyflakes_checker.Checker(tree, filename=str(path)).messages
    blocking = [m for m in found if isinstance(m, _BLOCKING)]
    keys = Counter(_key(m) for m in blocking)
    lines = {_key(m): m.lineno for m in blocking}
    return keys, lines


def _key(message: messages.Message) -> tuple[str, tuple]:
    """A finding as it survives an edit elsewhere in the file: its kind and arguments, without the line of the
    earlier binding that a redefinition names (code the migration inserts above moves it)."""
    return type(message).__name__, tuple(a for a in message.message_args if not isinstance(a, int))


def _new_findings(path: Path, before: str, after: str) -> list[Finding]:
    new, lines = _pyflakes(path, after)
    if not new:
        return []  # the usual case: the original need not be checked at all
    old, _ = _pyflakes(path, before)
    out = []
    for key in new - old:
        kind, args = key
        out.append(
            Finding(path, lines[key], f"the migration introduces {kind} ({', '.join(map(str, args))}) (pyflakes)")
        )
    return out


def _bindings(tree: ast.AST, package: str) -> dict[str, set[str]]:
    """Local name -> fully qualified names it is bound to by an import anywhere in the file."""
    bound: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound.setdefault(alias.asname, set()).add(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    bound.setdefault(top, set()).add(top)
        elif isinstance(node, ast.ImportFrom):
            source = absolute_module(package, node.module, node.level)
            for alias in node.names:
                bound.setdefault(alias.asname or alias.name, set()).add(f"{source}.{alias.name}")
    return bound


def _references(
    path: Path, tree: ast.Module, bound: Mapping[str, set[str]], module: str, package: str, facts: Facts
) -> Iterable[Finding]:
    deleted = facts.deleted_modules
    gone = deleted | facts.deleted_functions

    def is_gone(name: str) -> bool:
        return name in gone or any(name.startswith(d + ".") for d in deleted)

    old_names = {f"{e}.{r.old}": r for r in facts.renamed for e in r.exporters}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_gone(alias.name):
                    yield Finding(path, node.lineno, f"imports {alias.name}, which the migration deletes")
        elif isinstance(node, ast.ImportFrom):
            source = absolute_module(package, node.module, node.level)
            if is_gone(source):
                yield Finding(path, node.lineno, f"imports from {source}, which the migration deletes")
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if is_gone(full) and not is_gone(source):
                    yield Finding(path, node.lineno, f"imports {full}, which the migration deletes")
                if full in old_names:
                    yield Finding(
                        path,
                        node.lineno,
                        f"imports {alias.name} from {source}: the kernel is now {old_names[full].new}",
                    )
        elif isinstance(node, (ast.Name, ast.Attribute)):
            for name in qualified_names(node, bound):
                if name in old_names and not (isinstance(node, ast.Name)):
                    yield Finding(path, node.lineno, f"uses {name}: the kernel is now {old_names[name].new}")
                if name in facts.deleted_functions and isinstance(node, ast.Attribute):  # `module.helper(...)`
                    yield Finding(path, node.lineno, f"uses {name}, which the migration deletes")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if is_gone(node.value):
                yield Finding(path, node.lineno, f"names {node.value} in a string; the migration deletes it")
            if node.value in old_names or any(node.value == r.old and module in r.exporters for r in facts.renamed):
                yield Finding(path, node.lineno, f"names the kernel's old name {node.value!r} in a string")
    for renamed in facts.renamed:
        if module in renamed.exporters:
            for node in _module_level(tree):
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                if any(isinstance(t, ast.Name) and t.id == renamed.old for t in targets) or (
                    isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == renamed.old
                ):
                    yield Finding(path, node.lineno, f"still defines {renamed.old}: the kernel is now {renamed.new}")
            for node in ast.walk(tree):
                if isinstance(node, ast.Global) and renamed.old in node.names:
                    yield Finding(path, node.lineno, f"declares global {renamed.old}: the kernel is now {renamed.new}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Name)
                and node.id == renamed.old
                and isinstance(node.ctx, ast.Load)
                and bound.get(node.id, set()) & {f"{e}.{renamed.old}" for e in renamed.exporters}
            ):
                yield Finding(path, node.lineno, f"uses {renamed.old}: the kernel is now {renamed.new}")


def _module_level(tree: ast.Module) -> Iterable[ast.stmt]:
    """Statements that bind module globals: the top level and the blocks of top-level if / try (not defs)."""
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            pending += [
                *node.body,
                *node.orelse,
                *getattr(node, "finalbody", []),
                *(s for h in getattr(node, "handlers", []) for s in h.body),
            ]


def check_file(path: Path, before: str, after: str) -> list[Finding]:
    """The per-file half of the gate (it runs beside each file's transform): compiles, no new pyflakes findings."""
    try:
        compile(after, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return [Finding(path, exc.lineno or 0, f"the migrated file would not compile: {exc.msg}")]
    return _new_findings(path, before, after)


def check_references(
    path: Path, module: str, package: str, source: str, facts: Facts
) -> tuple[list[Finding], list[Finding]]:
    """The repo-wide half, one file at a time: nothing refers to what was deleted or renamed.

    Run on every file that could refer to them (the text prefilter's candidates: a reference
    always names them), after the migration. Returns (violations, warnings).
    """
    words = facts.words()
    if not words or not re.search(r"\b(" + "|".join(map(re.escape, sorted(words))) + r")\b", source):
        return [], []
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError:
        return [], []  # a file that never parsed is not the migration's to judge
    bound = _bindings(tree, package)
    found = list(_references(path, tree, bound, module, package, facts))
    if _BY_STRING.search(source):  # a module imported by a string: the text names how
        found += _looked_up_by_string(path, tree, bound, module, package, facts)
    flagged = {f.line for f in found}
    warnings = [
        Finding(path, number, f"still mentions {renamed.old} (a comment or docstring?)")
        for renamed in facts.renamed
        for number, text in enumerate(source_lines(source), 1)
        if number not in flagged and re.search(rf"\b{re.escape(renamed.old)}\b", text)
    ]
    return found, warnings + list(_computed_names(path, tree, bound, facts))


def _computed_names(path: Path, tree: ast.Module, bound: Mapping[str, set[str]], facts: Facts) -> Iterable[Finding]:
    """Module or attribute names computed at run time where they may name what the migration deletes or renames."""
    watched = facts.deleted_modules | {e for r in facts.renamed for e in r.exporters}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        callee = callee_names(node.func, bound)
        if callee & IMPORTERS and not isinstance(node.args[0], ast.Constant):
            yield Finding(
                path, node.lineno, "imports a module by a computed name; check it names nothing the migration deletes"
            )
        elif (
            callee & {"getattr", "hasattr"}
            and len(node.args) > 1
            and not isinstance(node.args[1], ast.Constant)
            and qualified_names(node.args[0], bound) & watched
        ):
            yield Finding(
                path,
                node.lineno,
                "reads an attribute of a migrated module by a computed name; check it names no renamed kernel",
            )


_BY_STRING = re.compile(r"\b(import_module|__import__|modules)\b")  # modules: sys.modules, sys aliased too
_ATTRIBUTE_FUNCTIONS = ("getattr", "hasattr", "setattr")


def _looked_up_by_string(
    path: Path, tree: ast.Module, bound: Mapping[str, set[str]], module: str, package: str, facts: Facts
) -> Iterable[Finding]:
    """The old name read off an exporter that the code imports by a literal string: `getattr` / `hasattr` /
    `setattr(<import>, "old")` and `<import>.old`, where <import> is `importlib.import_module("exporter")`,
    `__import__("exporter", fromlist=[...])`, `sys.modules["exporter"]` (`module_named_by`), an attribute of one
    (a submodule), or a name assigned from one in the same function (or an enclosing one, or at module level, where
    the function does not bind the name itself)."""
    renamed = {(exporter, r.old): r for r in facts.renamed for exporter in r.exporters}
    if not renamed:
        return

    def modules_of(node: ast.AST, names: Mapping[str, set[str]]) -> set[str]:
        if isinstance(node, ast.Attribute):
            return {f"{m}.{node.attr}" for m in modules_of(node.value, names)}
        if isinstance(node, ast.NamedExpr):
            return modules_of(node.value, names)
        if isinstance(node, ast.Name):
            return names.get(node.id, set())
        imported = module_named_by(node, bound, module, package)
        return {imported} if imported else set()

    def scope(node: ast.AST, outer: Mapping[str, set[str]]) -> Iterable[Finding]:
        own = list(own_nodes(node))
        bound_here = (
            {n.id for n in own if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            | {n.arg for n in own if isinstance(n, ast.arg)}
            | {n.asname or n.name.split(".")[0] for n in own if isinstance(n, ast.alias)}
            | {n.name for n in own if isinstance(n, SCOPES) and not isinstance(n, ast.Lambda)}
        )
        names = {name: modules for name, modules in outer.items() if name not in bound_here}
        for n in sorted(
            (n for n in own if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and n.value),
            key=lambda n: (n.lineno, n.col_offset),
        ):
            for target in getattr(n, "targets", None) or [n.target]:
                if isinstance(target, ast.Name) and (modules := modules_of(n.value, names)):
                    names.setdefault(target.id, set()).update(modules)
        for n in own:
            if isinstance(n, ast.Attribute):
                target, attr, how = n.value, n.attr, "an attribute"
            elif (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id in _ATTRIBUTE_FUNCTIONS
                and len(n.args) > 1
                and isinstance(n.args[1], ast.Constant)
                and isinstance(n.args[1].value, str)
            ):
                target, attr, how = n.args[0], n.args[1].value, f"{n.func.id}()"
            else:
                continue
            for exporter in sorted(modules_of(target, names)):
                if (exporter, attr) in renamed:
                    yield Finding(
                        path,
                        n.lineno,
                        f"looks up {attr!r} by name ({how}) on {exporter}, imported by a "
                        f"string: the kernel is now {renamed[exporter, attr].new}",
                    )
        for n in own:
            if isinstance(n, SCOPES):
                yield from scope(n, outer if isinstance(node, ast.ClassDef) else names)

    yield from scope(tree, {})


_IMPORT = re.compile(r"^[ \t]*(from[ \t]+\.*[\w.]*[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)", re.M)


def _imports(path: Path, repo: Path, source: str) -> dict[tuple[str, str | None], int]:
    """(module, name) -> line of each import statement of `source` (name None: `import module`), relative ones made
    absolute from the file's place in the repo; found by their text, then each statement parsed alone."""
    parts = path.relative_to(repo).with_suffix("").parts
    package = ".".join(parts if parts[-1] == "__init__" else parts[:-1]).removesuffix(".__init__")
    found: dict[tuple[str, str | None], int] = {}
    for match in _IMPORT.finditer(source):
        try:
            (statement,) = ast.parse(match.group(1).strip()).body
        except (SyntaxError, ValueError):
            continue  # a line inside a string, say: not an import the file runs
        line = source.count("\n", 0, match.start()) + 1
        if isinstance(statement, ast.ImportFrom):
            module = absolute_module(package, statement.module, statement.level)
            found.update({(module, alias.name): line for alias in statement.names if alias.name != "*"})
        elif isinstance(statement, ast.Import):
            found.update({(alias.name, None): line for alias in statement.names})
    return found


def check_imports(repo: Path, changes: Iterable[tuple[Path, str, str | None]]) -> list[Finding]:
    """Every (path, before, after) change's new imports from the repo's own packages resolve in the migrated tree:
    the module is there and binds the name (defines or imports it, or has it as a submodule)."""
    changes = list(changes)
    after = {path: text for path, _, text in changes}
    found: list[Finding] = []
    bound: dict[Path, set[str]] = {}
    for path, before, text in changes:
        if text is None:
            continue
        earlier = _imports(path, repo, before)
        for (module, name), line in _imports(path, repo, text).items():
            if (module, name) in earlier or not (repo / module.split(".")[0]).is_dir():
                continue  # imported before, or another library's
            base = repo.joinpath(*module.split("."))
            file = next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f in after or f.is_file()), None)
            source = None if file is None else after[file] if file in after else file.read_text()
            if source is None:
                found.append(Finding(path, line, f"imports {module}, which the migrated tree does not have"))
                continue
            if file not in bound:
                bound[file] = _bound(source, file)
            if name is None or name in bound[file] or (base / f"{name}.py").is_file() or (base / name).is_dir():
                continue  # `import module`, a name it binds, or a submodule
            found.append(Finding(path, line, f"imports {name} from {module}, which neither defines nor imports it"))
    return found


def _bound(source: str, file: Path) -> set[str]:
    """The names a module binds at its top level; every name where it may bind any (a star import, a module
    `__getattr__`)."""
    names = module_names(symtable.symtable(source, str(file), "exec"))
    return _Every() if "__getattr__" in names or re.search(r"\bimport\s+\*", source) else names


class _Every(set):
    def __contains__(self, name: object) -> bool:
        return True
