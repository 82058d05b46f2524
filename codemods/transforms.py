"""libcst transforms, each small and driven by plain parameters (no family knowledge).

Every transform rewrites only the nodes it is about; libcst keeps all other bytes
(comments, blank lines, quotes, parentheses) as they were. They use plain visitor
methods, not matcher decorators: matcher dispatch on every node is what makes the stock
codemod runner slow on a large repo.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import libcst as cst
from libcst.helpers import get_full_name_for_node

_EMPTY_MODULE = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(node)


def absolute_module(level: int, name: str, package: str) -> str:
    """The absolute module of `from <dots><name> import ...` written in `package` (`level` dots)."""
    base = package.split(".") if level and package else []
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([name] if name else [])])


def resolve_import(node: cst.ImportFrom, package: str) -> str:
    name = get_full_name_for_node(node.module) if node.module is not None else ""
    return absolute_module(len(node.relative), name, package)


def _without_aliases(node, drop: set[str]):
    """An import statement minus the names in `drop`; removed entirely when nothing is left."""
    if isinstance(node.names, cst.ImportStar):
        return node
    kept = [alias for alias in node.names if get_full_name_for_node(alias.name) not in drop]
    if len(kept) == len(node.names):
        return node
    if not kept:
        return cst.RemoveFromParent()
    if getattr(node, "lpar", None) is None or isinstance(node.lpar, cst.MaybeSentinel):
        # Unparenthesized: a trailing comma after the last name would not parse.
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    elif not isinstance(node.names[-1].comma, cst.MaybeSentinel) and isinstance(kept[-1].comma, cst.MaybeSentinel):
        kept[-1] = kept[-1].with_changes(comma=node.names[-1].comma)
    return node.with_changes(names=kept)


@dataclasses.dataclass(frozen=True)
class RenameSingleton:
    """Rename a module-level singleton where this file refers to it.

    exporters: modules that define or re-export the name (imports from them are renamed).
    bare: rename plain `old` names here (the file defines it or imports it unaliased).
    strings: rename string literals equal to `old` (lazy-export tables, `__all__`).
    module_aliases: local dotted names bound to exporter modules (`mod.old` is renamed).
    """

    old: str
    new: str
    exporters: frozenset[str]
    package: str
    bare: bool
    strings: bool
    module_aliases: frozenset[str] = frozenset()


class _Rename(cst.CSTTransformer):
    def __init__(self, op: RenameSingleton):
        super().__init__()
        self.op = op
        self.dotted = {f"{module}.{op.old}" for module in op.exporters}
        self.count = 0

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False  # imported names are renamed below, only when they come from an exporter

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        if isinstance(updated.names, cst.ImportStar) or resolve_import(updated, self.op.package) not in self.op.exporters:
            return updated
        names = []
        for alias in updated.names:
            if isinstance(alias.name, cst.Name) and alias.name.value == self.op.old:
                alias = alias.with_changes(name=cst.Name(self.op.new))
                self.count += 1
            names.append(alias)
        return updated.with_changes(names=names)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        if self.op.bare and updated.value == self.op.old:
            self.count += 1
            return updated.with_changes(value=self.op.new)
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        if updated.attr.value == self.op.old and get_full_name_for_node(original.value) in self.op.module_aliases:
            self.count += 1
            return updated.with_changes(attr=cst.Name(self.op.new))
        return updated

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString:
        value = updated.evaluated_value
        if (self.op.strings and value == self.op.old) or value in self.dotted:
            prefix_len = len(updated.prefix) + len(updated.quote)
            body = updated.value[prefix_len:-len(updated.quote)]
            self.count += 1
            new_body = body.replace(self.op.old, self.op.new) if value == self.op.old else \
                body[: -len(self.op.old)] + self.op.new
            return updated.with_changes(value=updated.value[:prefix_len] + new_body + updated.quote)
        return updated


class _StatementRemover(cst.CSTTransformer):
    """Removes whole statements while keeping the file's vertical spacing.

    The statement after removed code keeps its comments and takes the wider of the gap
    before the removed code and its own gap; at the start of a block, no gap.
    """

    def __init__(self):
        super().__init__()
        self._removed: dict[int, list[cst.EmptyLine]] = {}

    def remove(self, original: cst.BaseStatement) -> cst.RemovalSentinel:
        self._removed[id(original)] = [line for line in original.leading_lines if line.comment is None]
        return cst.RemoveFromParent()

    def _respace(self, original_body, updated_body):
        """Give the statement after removed ones the wider of the two gaps (none at a block's start)."""
        kept = iter(updated_body)
        result: list = []
        carried: list[cst.EmptyLine] | None = None
        for statement in original_body:
            if id(statement) in self._removed:
                if carried is None:
                    carried = self._removed[id(statement)] if result else []
                continue
            node = next(kept)
            if carried is not None and hasattr(node, "leading_lines"):
                own = [line for line in node.leading_lines if line.comment is None]
                comments = [line for line in node.leading_lines if line.comment is not None]
                gap = carried if not result or len(carried) > len(own) else own
                node = node.with_changes(leading_lines=[*gap, *comments])
            carried = None
            result.append(node)
        return result

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._respace(original.body, updated.body))

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self._respace(original.body, updated.body))


@dataclasses.dataclass(frozen=True)
class RemoveLegacyCalls:
    """Remove statement calls `f(...)` of `functions`, their defs, and their imports from `module`.

    A block emptied by the removal is dropped with its `if` (when it has no else), or
    keeps a `pass` so it stays valid.
    """

    functions: frozenset[str]
    import_module: str
    package: str
    remove_defs: bool = False


class _RemoveCalls(_StatementRemover):
    def __init__(self, op: RemoveLegacyCalls):
        super().__init__()
        self.op = op
        self.count = 0

    def _is_removed_call(self, statement: cst.BaseSmallStatement) -> bool:
        return (isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call)
                and isinstance(statement.value.func, cst.Name) and statement.value.func.value in self.op.functions)

    def leave_SimpleStatementLine(self, original, updated):
        if not updated.body:  # its only statement (an import) was removed
            return self.remove(original)
        body = [s for s in updated.body if not self._is_removed_call(s)]
        if len(body) == len(updated.body):
            return updated
        self.count += len(updated.body) - len(body)
        return updated.with_changes(body=body) if body else self.remove(original)

    def leave_ImportFrom(self, original, updated):
        if resolve_import(updated, self.op.package) != self.op.import_module:
            return updated
        result = _without_aliases(updated, set(self.op.functions))
        self.count += result is not updated
        return result

    def leave_FunctionDef(self, original, updated):
        if self.op.remove_defs and updated.name.value in self.op.functions:
            self.count += 1
            return self.remove(original)
        return _keep_valid(updated)

    def leave_If(self, original, updated):
        if not updated.body.body and updated.orelse is None:
            return self.remove(original)
        return _keep_valid(updated)

    def leave_Else(self, original, updated):
        return _keep_valid(updated)

    def leave_For(self, original, updated):
        return _keep_valid(updated)

    def leave_With(self, original, updated):
        return _keep_valid(updated)


def _keep_valid(node):
    """A compound statement whose block was emptied keeps a `pass`."""
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock) and not body.body:
        return node.with_changes(body=body.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])]))
    return node


@dataclasses.dataclass(frozen=True)
class InsertRegistration:
    """Insert `if <gate>: <registration>` into `cls.__init__`, after `insert_after` or at the end."""

    cls: str
    gate: str
    registration: str
    insert_after: str = ""
    imports: tuple[str, ...] = ()


class AnchorError(LookupError):
    """A spec's anchor is not in the file it should be in."""


class _Insert(cst.CSTTransformer):
    def __init__(self, op: InsertRegistration):
        super().__init__()
        self.op = op
        self.found_class = self.found_init = False
        self.count = 0
        self.statement = cst.parse_statement(f"if {op.gate}:\n    {op.registration}\n").with_changes(
            leading_lines=[cst.EmptyLine(indent=False)])

    def leave_ClassDef(self, original, updated):
        if updated.name.value != self.op.cls:
            return updated
        self.found_class = True
        members = list(updated.body.body)
        for index, member in enumerate(members):
            if isinstance(member, cst.FunctionDef) and member.name.value == "__init__":
                self.found_init = True
                members[index] = self._insert(member)
        return updated.with_changes(body=updated.body.with_changes(body=members))

    def _insert(self, init: cst.FunctionDef) -> cst.FunctionDef:
        body = list(init.body.body)
        if any(self.op.registration in code_of(statement) for statement in body):
            return init  # already migrated
        position = len(body)
        if self.op.insert_after:
            matches = [i for i, s in enumerate(body) if self.op.insert_after in _first_line(s)]
            if not matches:
                raise AnchorError(f"{self.op.cls}.__init__ has no statement starting with {self.op.insert_after!r}")
            position = matches[0] + 1
        body.insert(position, self.statement)
        self.count += 1
        return init.with_changes(body=init.body.with_changes(body=body))


def _first_line(statement: cst.BaseStatement) -> str:
    """The statement's own first line: its leading comments and blank lines are not part of it."""
    return code_of(statement.with_changes(leading_lines=[])).strip().splitlines()[0]


def _import_lines_missing(module: cst.Module, lines: tuple[str, ...]) -> list[cst.SimpleStatementLine]:
    present = {code_of(s).strip() for s in module.body if isinstance(s, cst.SimpleStatementLine)}
    return [cst.parse_statement(line + "\n") for line in lines if line not in present]


def _add_imports(module: cst.Module, lines: tuple[str, ...]) -> cst.Module:
    missing = _import_lines_missing(module, lines)
    if not missing:
        return module
    body = list(module.body)
    last_import = max((i for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine)
                       and isinstance(s.body[0], (cst.Import, cst.ImportFrom))), default=-1)
    body[last_import + 1:last_import + 1] = missing
    return module.with_changes(body=body)


class _NameUses(cst.CSTVisitor):
    """Counts loads of each plain name outside import statements (string mentions count too)."""

    def __init__(self):
        super().__init__()
        self.uses: Counter[str] = Counter()

    def visit_Import(self, node):
        return False

    def visit_ImportFrom(self, node):
        return False

    def visit_Name(self, node):
        self.uses[node.value] += 1

    def visit_SimpleString(self, node):
        value = node.evaluated_value
        if isinstance(value, str) and value.isidentifier():
            self.uses[value] += 1


def _uses(module: cst.Module) -> Counter[str]:
    visitor = _NameUses()
    module.visit(visitor)
    return visitor.uses


def _bound_name(alias: cst.ImportAlias) -> str:
    """The local name an import alias binds (`import a.b` binds `a`)."""
    if alias.asname is not None:
        return alias.asname.name.value
    return get_full_name_for_node(alias.name).split(".")[0]


class _DropImports(_StatementRemover):
    """Drop imported names in `names` (names the change left without any use)."""

    def __init__(self, names: set[str]):
        super().__init__()
        self.names = names
        self.count = 0

    def leave_SimpleStatementLine(self, original, updated):
        return updated if updated.body else self.remove(original)

    def _drop(self, updated):
        if isinstance(updated.names, cst.ImportStar):
            return updated
        drop = {get_full_name_for_node(a.name) for a in updated.names if _bound_name(a) in self.names}
        if not drop:
            return updated
        self.count += 1
        return _without_aliases(updated, drop)

    def leave_ImportFrom(self, original, updated):
        return self._drop(updated)

    def leave_Import(self, original, updated):
        return self._drop(updated)


Operation = RenameSingleton | RemoveLegacyCalls | InsertRegistration


def apply(source: str, operations: list[Operation]) -> tuple[str, Counter[str]]:
    """Apply operations in order to one file; return the new source and per-transform counts.

    Imports whose names were used before and are unused after are dropped (only those).
    """
    counts: Counter[str] = Counter()
    module = cst.parse_module(source)
    before = _uses(module)
    for op in operations:
        if isinstance(op, RenameSingleton):
            transformer: cst.CSTTransformer = _Rename(op)
            name = "rename_singleton"
        elif isinstance(op, RemoveLegacyCalls):
            transformer = _RemoveCalls(op)
            name = "remove_legacy_step" if op.remove_defs else "remove_legacy_call"
        else:
            transformer = _Insert(op)
            name = "insert_registration"
        module = module.visit(transformer)
        if isinstance(op, InsertRegistration):
            if not transformer.found_class:
                raise AnchorError(f"class {op.cls} not found")
            if not transformer.found_init:
                raise AnchorError(f"class {op.cls} has no __init__")
            if transformer.count:
                module = _add_imports(module, op.imports)
        counts[name] += transformer.count
    after = _uses(module)
    orphaned = {name for name, n in before.items() if n and not after[name]}
    if orphaned:
        dropper = _DropImports(orphaned)
        module = module.visit(dropper)
        counts["drop_unused_imports"] += dropper.count
    return module.code, +counts
