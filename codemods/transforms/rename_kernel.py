"""rename_kernel: the kernel takes its private name wherever a file refers to it."""

from __future__ import annotations

import dataclasses
import functools
import re
from importlib.util import resolve_name

import libcst as cst
from libcst.codemod import CodemodContext

from .base import Command, Operation, operation

_ATTRIBUTE_FUNCTIONS = frozenset({"builtins.getattr", "builtins.hasattr", "builtins.setattr"})
# A file can look a module up by a string only through these (the text prefilter, then the callees; `modules`:
# sys.modules under any alias of sys).
_BY_STRING = re.compile(r"\b(import_module|__import__|modules)\b")
_IMPORTERS = frozenset({"importlib.import_module", "builtins.__import__", "importlib.__import__"})
_CALLEES = sorted({name.rsplit(".", 1)[1] for name in _ATTRIBUTE_FUNCTIONS | _IMPORTERS})  # as the file spells them
# In the set of modules an expression may be: one named at run time, and a value that is no such import.
_COMPUTED, _OTHER = "<a module named at run time>", "<not an import by name>"


@operation("rename_kernel")
@dataclasses.dataclass(frozen=True)
class RenameKernel(Operation):
    """Rename the kernel `old` -> `new` wherever this file refers to it.

    exporters: modules that define or re-export it (`exporter.old` are its fully qualified
    names). In an exporter, string literals equal to `old` are renamed too (lazy-export
    tables, `__all__`); anywhere, dotted strings `exporter.old` and the name argument of
    `getattr` / `hasattr` on an exporter module. A module imported by a literal string
    (`importlib.import_module("exporter")`, `__import__("exporter", fromlist=[...])`,
    `sys.modules["exporter"]`, directly or through a name assigned from it) counts as the exporter:
    `getattr(mod, "old")` and `mod.old` are renamed, and refused where the module's name is computed at run time.
    """

    old: str
    new: str
    exporters: frozenset[str]

    def command(self, context: CodemodContext) -> Command:
        return _Rename(context, self)


class _Rename(Command):
    @functools.cached_property
    def scopes(self):
        """It asks only about names spelled like the kernel's old name and about calls of getattr/hasattr/setattr
        and of the importers (by those names, or by what the file imports them as), so functions that name none of
        them need no scopes: resolved on the outline keeping the functions that do."""
        code = self.context.versions.code(self.context.wrapper.module)
        spellings = {self.op.old, *_CALLEES, *re.findall(rf"\b(?:{'|'.join(_CALLEES)})\s+as\s+(\w+)", code)}
        return self.scopes_naming(spellings)

    def __init__(self, context: CodemodContext, op: RenameKernel):
        super().__init__(context, op)
        self.targets = {f"{module}.{op.old}" for module in op.exporters}
        self.in_exporter = context.full_module_name in op.exporters
        self.star_from_exporter = False

    def _renames(self, node: cst.CSTNode) -> bool:
        return bool(self.fqns(node) & self.targets)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if isinstance(node.names, cst.ImportStar) and self.import_source(node) in self.op.exporters:
            self.star_from_exporter = True
        return False  # the names of an import are handled in leave_ImportFrom

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        if isinstance(updated.names, cst.ImportStar) or self.import_source(original) not in self.op.exporters:
            return updated
        names = []
        for alias in updated.names:
            if isinstance(alias.name, cst.Name) and alias.name.value == self.op.old:
                renamed = {"name": cst.Name(self.op.new)}
                if alias.asname is not None and getattr(alias.asname.name, "value", None) == self.op.old:
                    # `old as old`, an explicit re-export: it re-exports the new name the same way.
                    renamed["asname"] = alias.asname.with_changes(name=cst.Name(self.op.new))
                alias = alias.with_changes(**renamed)
                self.count += 1
            names.append(alias)
        return updated.with_changes(names=names)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        if original.value != self.op.old:
            return updated
        if self._renames(original):
            self.count += 1
            return updated.with_changes(value=self.op.new)
        if self.star_from_exporter and not self.fqns(original):
            self.refuse(
                original,
                f"uses {self.op.old} from a star import of its module; after the rename it is "
                f"private and a star import does not bind it: import {self.op.new} by name",
            )
        return updated

    def leave_Global(self, original: cst.Global, updated: cst.Global) -> cst.Global:
        """`global old` in a function of an exporter declares the kernel's own name."""
        if not self.in_exporter or not any(item.name.value == self.op.old for item in original.names):
            return updated
        self.count += 1
        return updated.with_changes(
            names=[
                item.with_changes(name=cst.Name(self.op.new)) if item.name.value == self.op.old else item
                for item in updated.names
            ]
        )

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        if original.attr.value == self.op.old and (
            self._renames(original) or self._looked_up_by_string(original, original.value)
        ):
            self.count += 1
            return updated.with_changes(attr=cst.Name(self.op.new))
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """getattr / hasattr / setattr on an exporter module name the kernel by string; so may __import__'s fromlist."""
        callee = self.fqns(original.func)
        if callee & _IMPORTERS:
            return self._fromlist(original, updated)
        if not callee & _ATTRIBUTE_FUNCTIONS or len(original.args) < 2:
            return updated
        target, name = original.args[0].value, original.args[1].value
        if not isinstance(name, cst.SimpleString):
            modules = self.fqns(target) | (self.imported(target) if self.by_string else set())
            if modules & self.op.exporters:
                self.warn(
                    original,
                    f"a computed attribute name of {min(modules & self.op.exporters)} may name {self.op.old}; "
                    "check it by hand",
                )
            return updated
        if name.evaluated_value != self.op.old or not (
            self.fqns(target) & self.op.exporters or self._looked_up_by_string(original, target)
        ):
            return updated
        args = list(updated.args)
        args[1] = args[1].with_changes(value=_restring(name, self.op.new))
        self.count += 1
        return updated.with_changes(args=args)

    # A module imported by a string.

    @functools.cached_property
    def by_string(self) -> bool:
        """Whether the file may look a module up by a string at all (the text names import_module, __import__ or
        sys.modules)."""
        return bool(_BY_STRING.search(self.context.versions.code(self.context.wrapper.module)))

    def imported(self, node: cst.BaseExpression) -> frozenset[str]:
        """The modules `node` may be where it is an import of a module named by a string (`import_module("a.b")`,
        `__import__(...)`, `sys.modules["a.b"]`, `sys.modules.get("a.b")`), an attribute of one (a submodule), or a
        name assigned from one; empty where it is none.
        _COMPUTED stands for a module named at run time, _OTHER for another value a name may hold."""
        if isinstance(node, cst.Attribute):
            return frozenset(
                m if m in (_COMPUTED, _OTHER) else f"{m}.{node.attr.value}" for m in self.imported(node.value)
            )
        if isinstance(node, cst.NamedExpr):
            return self.imported(node.value)
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            listed = "sys.modules" in self.fqns(node.value)
            return frozenset({self._module_name(node.slice[0].slice.value)}) if listed else frozenset()
        if isinstance(node, cst.Call) and "sys.modules.get" in self.fqns(node.func):
            return frozenset({self._module_name(node.args[0].value if node.args else None)})
        if isinstance(node, cst.Call):
            return frozenset({self._import_of(node)}) if self.fqns(node.func) & _IMPORTERS else frozenset()
        if not isinstance(node, cst.Name) or (scope := self.scopes.get(node)) is None:
            return frozenset()
        modules = set()
        for assignment in scope[node.value]:
            value = base = self._assigned.get(id(getattr(assignment, "node", None)))
            while isinstance(base, cst.Attribute):
                base = base.value
            if not (isinstance(value, cst.Name) and value.value == "None"):  # `mod = None` before the import
                modules |= (self.imported(value) if isinstance(base, (cst.Call, cst.Subscript)) else set()) or {_OTHER}
        return frozenset(modules) if modules - {_OTHER} else frozenset()

    @functools.cached_property
    def _assigned(self) -> dict[int, cst.BaseExpression]:
        """The value of each plain assignment to a name (`=`, annotated, `:=`), by the target's Name node: what
        ScopeProvider's assignments point at."""
        collector = _Assignments()
        self.context.wrapper.module.visit(collector)
        return collector.values

    def _module_name(self, key: cst.BaseExpression | None) -> str:
        """The module a `sys.modules` key names: a literal, or this module's `__name__`; else _COMPUTED."""
        if isinstance(key, cst.Name) and key.value == "__name__":
            return self.context.full_module_name
        return _literal(key) or _COMPUTED

    def _import_of(self, call: cst.Call, whole: bool = False) -> str:
        """The module a call of import_module / __import__ returns (`whole`: the one it imports, which __import__
        without a fromlist does not return), or _COMPUTED where its arguments are not literals."""
        by_path = "importlib.import_module" in self.fqns(call.func)
        params = ("name", "package") if by_path else ("name", "globals", "locals", "fromlist", "level")
        args = {}
        for index, arg in enumerate(call.args):
            if arg.star or (arg.keyword is None and index >= len(params)):
                return _COMPUTED
            args[arg.keyword.value if arg.keyword else params[index]] = arg.value
        name = _literal(args.get("name"))
        if name is None:
            return _COMPUTED
        if by_path:
            package = args.get("package")
            here = {"__package__": self.context.full_package_name, "__name__": self.context.full_module_name}
            return _resolved(name, here.get(package.value) if isinstance(package, cst.Name) else _literal(package))
        level = args.get("level")
        if not (level is None or isinstance(level, cst.Integer)):
            return _COMPUTED
        depth = 0 if level is None else level.evaluated_value
        module = _resolved("." * depth + name, self.context.full_package_name)
        if whole or module == _COMPUTED:
            return module
        fromlist = args.get("fromlist")
        if fromlist is None or (isinstance(fromlist, cst.Name) and fromlist.value == "None"):
            listed = False
        elif isinstance(fromlist, (cst.List, cst.Tuple)):
            listed = bool(fromlist.elements)
        else:
            return _COMPUTED
        # Without a fromlist, __import__("a.b.c") returns `a` (relative: the package's first named child).
        return module if listed else module[: len(module) - len(name) + len(name.partition(".")[0])]

    def _looked_up_by_string(self, node: cst.CSTNode, target: cst.BaseExpression) -> bool:
        """Whether `node`, a lookup of the kernel's old name on `target`, reads it from an exporter imported by a
        string; refused where the module may be an exporter but the migration cannot tell."""
        modules = self.imported(target) if self.by_string else frozenset()
        exporters = modules & self.op.exporters
        if _COMPUTED in modules:
            self.refuse(
                node,
                f"looks up {self.op.old} on a module imported by a name computed at run time, which "
                f"may be {_one_of(self.op.exporters)}, where the kernel is now {self.op.new}: name "
                "the module by a literal string, or import the kernel by name",
            )
        elif exporters and modules - exporters:
            others = sorted(modules - exporters - {_OTHER}) or ["another value"]
            self.refuse(
                node,
                f"looks up {self.op.old} on a name that may be {min(exporters)}, where the kernel is "
                f"now {self.op.new}, or {others[0]}: the migration cannot rename only one of them",
            )
        return bool(exporters) and modules <= exporters

    def _fromlist(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """`__import__("exporter", fromlist=["old"])` names the kernel too."""
        for index, arg in enumerate(original.args):
            if (arg.keyword.value if arg.keyword else index) in ("fromlist", 3):
                break
        else:
            return updated
        if (
            not isinstance(arg.value, (cst.List, cst.Tuple))
            or self._import_of(original, whole=True) not in self.op.exporters
        ):
            return updated
        renamed = [
            element.with_changes(value=_restring(element.value, self.op.new))
            if isinstance(element.value, cst.SimpleString) and element.value.evaluated_value == self.op.old
            else element
            for element in updated.args[index].value.elements
        ]
        if renamed == list(updated.args[index].value.elements):
            return updated
        self.count += 1
        args = list(updated.args)
        args[index] = args[index].with_changes(value=args[index].value.with_changes(elements=renamed))
        return updated.with_changes(args=args)

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString:
        value = original.evaluated_value
        if self.in_exporter and value == self.op.old:
            self.count += 1
            return _restring(updated, self.op.new)
        if value in self.targets:
            self.count += 1
            return _restring(updated, value[: -len(self.op.old)] + self.op.new)
        return updated


def _restring(node: cst.SimpleString, text: str) -> cst.SimpleString:
    """The same string literal (prefix and quotes kept) with new text."""
    start = len(node.prefix) + len(node.quote)
    return node.with_changes(value=node.value[:start] + text + node.quote)


def _resolved(name: str, package: str | None) -> str:
    """An absolute module name, from one that may be relative to `package`; _COMPUTED where it cannot be."""
    try:
        return resolve_name(name, package)
    except (ImportError, ValueError):
        return _COMPUTED


def _one_of(modules: frozenset[str]) -> str:
    return " or ".join(sorted(modules)[:3]) + (f" (or {len(modules) - 3} more)" if len(modules) > 3 else "")


def _literal(node: cst.BaseExpression | None) -> str | None:
    """The text of a string literal (implicitly concatenated ones too); None for anything else."""
    value = node.evaluated_value if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) else None
    return value if isinstance(value, str) else None


class _Assignments(cst.CSTVisitor):
    """Collects the value of each plain assignment to a name, by the target's Name node."""

    def __init__(self):
        super().__init__()
        self.values: dict[int, cst.BaseExpression] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.values[id(target.target)] = node.value

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self.values[id(node.target)] = node.value

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if isinstance(node.target, cst.Name):
            self.values[id(node.target)] = node.value
