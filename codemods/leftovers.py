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
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .repo import RepoModules, module_name
from .syntax import where


def leftovers(modules: RepoModules, changed: Mapping[Path, tuple[str, str]], texts: Mapping[Path, str]) -> list[str]:
    """`path:line: what` for each leftover. `modules`: the run's model of the repo as it was; `changed`: path ->
    (before, after) of each changed file; `texts`: every file of the run as it is after the migration (changed
    files included, deleted ones not)."""
    found = []
    for path, (before, after) in sorted(changed.items()):
        module = module_name(modules.repo, path)[0]
        was, now = modules.tree(module) or ast.parse(before), ast.parse(after)  # the planner read most already
        gone = _used_names(was) - _used_names(now)
        found += _orphaned_helpers(modules, module, was, gone, texts)
        found += _unread_fields(modules.repo, path, was, now)
        found += _emptied_functions(modules.repo, path, was, now)
    return list(dict.fromkeys(found))


def _used_names(tree: ast.Module) -> set[str]:
    """Names a file imports from elsewhere or calls (what removed code may have been the last user of)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            names.add(node.func.id)
    return names


def _orphaned_helpers(
    modules: RepoModules, module: str, tree: ast.Module, gone: Iterable[str], texts: Mapping[Path, str]
) -> list[str]:
    found = []
    imported = {
        alias.asname or alias.name: (node, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    for local in sorted(gone):
        if local not in imported:
            continue
        node, name = imported[local]
        source = modules.imports(module).get(local)
        if source is None or source[1] is None or name.startswith("_"):
            continue
        home, defined = modules.resolve(*source)
        definition = modules.definition(home, defined) if defined else None
        if not isinstance(definition, (ast.FunctionDef, ast.ClassDef)) or not modules.ours(home):
            continue
        word = re.compile(rf"\b{re.escape(defined)}\b")
        uses = sum(len(word.findall(text)) for text in texts.values() if defined in text)
        home_path = modules.path(home)
        if home_path not in texts:
            continue  # deleted with the legacy module
        own = len(word.findall(texts.get(home_path) or home_path.read_text())) if home_path else 0
        if uses - own == 0 and own <= 1 + _exported(modules, home, defined):
            found.append(
                f"{modules.where(home, definition)}: {defined}() is public and kept, but nothing in the repo "
                "calls it any more (the removed legacy step was its only caller)"
            )
    return found


def _exported(modules: RepoModules, module: str, name: str) -> int:
    """1 when the module lists `name` in `__all__` (one more mention that is not a use)."""
    tree = modules.tree(module)
    for node in tree.body if tree else ():
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return int(any(isinstance(e, ast.Constant) and e.value == name for e in getattr(node.value, "elts", ())))
    return 0


def _emptied_functions(repo: Path, path: Path, before: ast.Module, tree: ast.Module) -> list[str]:
    """Functions of the file that did something before and now do nothing (a docstring or `pass` is all that is
    left): the removed legacy call was their whole body, and what calls them still does."""
    did = {f.name for f in ast.walk(before) if _is_function(f) and not _does_nothing(f)}
    return [
        f"{where(repo, path, f.lineno)}: {f.name}() does nothing any more (the removed legacy call was all it did); "
        "remove it and its calls, or give it work"
        for f in ast.walk(tree)
        if _is_function(f) and f.name in did and _does_nothing(f)
    ]


def _is_function(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))


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
