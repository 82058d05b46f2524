"""Legacy code a migration leaves in place, found after the edit, for the summary, the report and the PR body.

The transforms remove what only the legacy step used and is private; what is public stays,
since something outside the repo may import it. A reviewer still needs to hear of it:
  * a public function or class the removed code called or imported, that nothing in the repo
    names any more (e.g. 0.33.0's `warmup_layer_norm_fwd`, once its only caller is gone);
  * a field of a dataclass of a changed module that the removed code read and nothing reads now
    (e.g. `_QwenGDNWarmupConfig.norm_before_gate`): still filled, never used;
  * a function the removal left with nothing to do (a fork's second caller of the legacy step): its callers
    still call it.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from .repo import BY_NAME_WORDS, RepoModules, module_name
from .syntax import where


class Leftovers:
    """The leftovers of a run, read file by file as each transform ends (`add`: the runner's reading then overlaps
    the workers still running), then counted against the whole repo (`found`)."""

    def __init__(self, modules: RepoModules):
        """`modules`: the run's model of the repo as it was."""
        self.modules = modules
        self._files: dict[Path, tuple[list[_Helper], list[str]]] = {}

    def add(self, path: Path, before: str, after: str) -> None:
        """A changed file, before and after the migration."""
        modules = self.modules
        module = module_name(modules.repo, path)[0]
        looks_up = any(word in text for text in (before, after) for word in BY_NAME_WORDS)  # else no function can

        def lookups(function: ast.FunctionDef) -> dict[str, str]:
            return modules.modules_by_string(module, function) if looks_up else {}

        was = _Read(modules.tree(module) or ast.parse(before), lookups)  # the planner read most already
        now = _Read(ast.parse(after), lookups)
        helpers = _unused_helpers(modules, module, was, was.used - now.used)
        said = _unread_fields(modules.repo, path, was.tree, now.tree)
        said += _emptied_functions(modules.repo, path, was, now)
        self._files[path] = helpers, said

    def found(self, texts: Mapping[Path, str]) -> list[str]:
        """`path:line: what` for each leftover of the files added, by path. `texts`: every file of the run as it is
        after the migration (changed files included, deleted ones not)."""
        found = []
        for _, (helpers, said) in sorted(self._files.items()):
            found += [helper.said(self.modules) for helper in helpers if helper.orphaned(self.modules, texts)]
            found += said
        return list(dict.fromkeys(found))


class _Read:
    """What one walk of a file's tree finds: the names it imports from elsewhere or calls (what removed code may
    have been the last user of), its `from` imports by local name, its calls of a function of a module it looks up
    by name (`sys.modules.get("m").f()`, as "m.f"), and its functions."""

    def __init__(self, tree: ast.Module, lookups: Callable[[ast.FunctionDef], dict[str, str]]):
        """`lookups`: the names a function binds to a module it looks up by name, and the module of each."""
        self.tree = tree
        self.used: set[str] = set()
        self.imported: dict[str, str] = {}  # local name -> the name imported
        self.looked_up: dict[str, tuple[str, str]] = {}  # "m.f" -> (m, f)
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                self.used.update(alias.name for alias in node.names)
                self.imported.update((alias.asname or alias.name, alias.name) for alias in node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                self.used.add(node.func.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.append(node)
                self._looked_up(node, lookups(node))

    def _looked_up(self, function: ast.FunctionDef, modules: dict[str, str]) -> None:
        for node in ast.walk(function) if modules else ():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if isinstance(node.func.value, ast.Name) and node.func.value.id in modules:
                    home = modules[node.func.value.id]
                    self.used.add(f"{home}.{node.func.attr}")
                    self.looked_up[f"{home}.{node.func.attr}"] = (home, node.func.attr)


@dataclasses.dataclass(frozen=True)
class _Helper:
    """A public function or class of the repo that a changed file imported and no longer uses."""

    home: str
    name: str
    definition: ast.FunctionDef | ast.ClassDef

    def orphaned(self, modules: RepoModules, texts: Mapping[Path, str]) -> bool:
        """Nothing in the repo names it any more but its own module (its definition, and `__all__`)."""
        home_path = modules.path(self.home)
        if home_path not in texts:
            return False  # deleted with the legacy module
        word = re.compile(rf"\b{re.escape(self.name)}\b")
        uses = sum(len(word.findall(text)) for text in texts.values() if self.name in text)
        own = len(word.findall(texts[home_path]))
        return uses - own == 0 and own <= 1 + _exported(modules, self.home, self.name)

    def said(self, modules: RepoModules) -> str:
        return (
            f"{modules.where(self.home, self.definition)}: {self.name}() is public and kept, but nothing in the repo "
            "calls it any more (the removed legacy step was its only caller)"
        )


def _unused_helpers(modules: RepoModules, module: str, was: _Read, gone: Iterable[str]) -> list[_Helper]:
    found = []
    for local in sorted(gone):
        if local not in was.imported and local not in was.looked_up:
            continue
        source = was.looked_up.get(local) or modules.imports(module).get(local)
        if source is None or source[1] is None or source[1].startswith("_"):
            continue
        home, defined = modules.resolve(*source)
        definition = modules.definition(home, defined) if defined else None
        if isinstance(definition, (ast.FunctionDef, ast.ClassDef)) and modules.ours(home):
            found.append(_Helper(home, defined, definition))
    return found


def _exported(modules: RepoModules, module: str, name: str) -> int:
    """1 when the module lists `name` in `__all__` (one more mention that is not a use)."""
    tree = modules.tree(module)
    for node in tree.body if tree else ():
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return int(any(isinstance(e, ast.Constant) and e.value == name for e in getattr(node.value, "elts", ())))
    return 0


def _emptied_functions(repo: Path, path: Path, before: _Read, after: _Read) -> list[str]:
    """Functions of the file that did something before and now do nothing (a docstring or `pass` is all that is
    left): the removed legacy call was their whole body, and what calls them still does."""
    did = {f.name for f in before.functions if not _does_nothing(f)}
    return [
        f"{where(repo, path, f.lineno)}: {f.name}() does nothing any more (the removed legacy call was all it did); "
        "remove it and its calls, or give it work"
        for f in after.functions
        if f.name in did and _does_nothing(f)
    ]


def _does_nothing(function: ast.FunctionDef) -> bool:
    return all(
        isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        for s in function.body
    )


def _unread_fields(repo: Path, path: Path, before: ast.Module, tree: ast.Module) -> list[str]:
    """Dataclass fields of the file read (through a parameter annotated with the class) before, not after."""
    classes = [
        n
        for n in tree.body
        if isinstance(n, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in n.decorator_list)
    ]
    if not classes:
        return []
    found = []
    was, now = _field_reads(before, [c.name for c in classes]), _field_reads(tree, [c.name for c in classes])
    for cls in classes:
        fields = {
            n.target.id: n.lineno for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
        }
        for field in sorted(set(fields) & (was[cls.name] - now[cls.name])):
            found.append(
                f"{where(repo, path, fields[field])}: {cls.name}.{field} is still filled "
                "but nothing reads it any more (the removed legacy step did)"
            )
    return found


def _field_reads(tree: ast.Module, classes: list[str]) -> dict[str, set[str]]:
    """For each class, the attributes read off a parameter or local annotated with it (`config: cls`,
    `cls | None`); each function walked once for them all."""
    names = {cls: re.compile(rf"\b{re.escape(cls)}\b") for cls in classes}
    reads: dict[str, set[str]] = {cls: set() for cls in classes}
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        body = list(ast.walk(function))
        annotated = [(a.arg, a.annotation) for a in (*function.args.posonlyargs, *function.args.args)]
        annotated += [(a.arg, a.annotation) for a in function.args.kwonlyargs]
        annotated += [
            (n.target.id, n.annotation) for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
        ]
        annotations = [(name, ast.unparse(annotation)) for name, annotation in annotated if annotation]
        for cls, word in names.items():
            typed = {name for name, annotation in annotations if word.search(annotation)}
            if typed:
                reads[cls] |= {
                    n.attr
                    for n in body
                    if isinstance(n, ast.Attribute)
                    and isinstance(n.ctx, ast.Load)
                    and isinstance(n.value, ast.Name)
                    and n.value.id in typed
                }
    return reads
