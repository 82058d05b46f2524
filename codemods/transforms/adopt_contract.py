"""adopt_contract: a kernel class that owns its keys and compile takes the engine's contract base, all of it.

Adopting means more than a base in the class line: the class runs the base's initializer
(vLLM's `VllmJitKernel.__init__` traces `dispatch` and makes the compiled-executor cache that
`compile_key()` and the registry rely on), and it follows the conventions the tree's other
subclasses of that base use (a parameterized base, the marker on the `dispatch` override).
Before anything is written, the tree's own base initializer runs over the class's `dispatch`
(`probe_base_initializer`). A dispatch the base cannot take is rewritten into the form it traces
(codemods.traceable_dispatch), the rewrite proven to return the same key on every path and run
through the base's initializer again; only a dispatch that cannot be rewritten, or whose rewrite
is not proven, is refused, with the base's own reason and the rewrite's.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.util
import linecache
import re
import sys
import textwrap
import uuid
from pathlib import Path

import libcst as cst
import libcst.matchers as m
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from ..repo import RepoModules
from ..syntax import self_stores, source_lines, source_segment
from ..traceable_dispatch import KeyFields, NotRewritable, prove, rewrite
from .base import Command, Operation, code_of, operation

OVERRIDE_MARKER = "# type: ignore[override]"


@operation("adopt_contract")
@dataclasses.dataclass(frozen=True)
class AdoptContract(Operation):
    """Give module-level class `cls` the engine's contract base `base` (imported from `base_module`) as its last
    base, parameterized with `parameter` when not empty; its `__init__` (if it has one) calls the base's first;
    `mark_override`: its `dispatch` def carries the override marker the tree's other subclasses use."""

    cls: str
    base_module: str
    base: str
    parameter: str = ""
    mark_override: bool = False

    def command(self, context: CodemodContext) -> Command:
        return _Adopt(context, self)


@operation("rewrite_dispatch")
@dataclasses.dataclass(frozen=True)
class RewriteDispatch(Operation):
    """Replace the body of module-level class `cls`'s `dispatch` after its docstring by `body` (unindented text,
    proven equal by codemods.traceable_dispatch); the old body's comments stay, above it."""

    cls: str
    body: str

    def command(self, context: CodemodContext) -> Command:
        return _Rewrite(context, self)


@dataclasses.dataclass(frozen=True)
class Conventions:
    """How the tree's other subclasses of the contract base are written."""

    parameterized: bool  # `Base["Cls.CompileKey"]`
    marks_override: bool  # `def dispatch(  # type: ignore[override]`


def sibling_conventions(modules: RepoModules, near: str, base_module: str, base: str) -> Conventions:
    """The conventions of the contract base's subclasses in the kernel's package (its siblings)."""
    package = near.rpartition(".")[0]
    folder = modules.path(near).parent if modules.path(near) else None
    parameterized = marks = False
    for path in sorted(folder.glob("*.py")) if folder else ():
        module = f"{package}.{path.stem}" if path.stem != "__init__" else package
        tree = modules.tree(module)
        if tree is None or base not in modules.path(module).read_text(errors="replace"):
            continue
        lines = source_lines(modules.path(module).read_text(errors="replace"))
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            for expression in node.bases:
                target = expression.value if isinstance(expression, ast.Subscript) else expression
                if modules.reference(module, target) != modules.resolve(base_module, base):
                    continue
                parameterized |= isinstance(expression, ast.Subscript)
                marks |= any(
                    isinstance(item, ast.FunctionDef)
                    and item.name == "dispatch"
                    and OVERRIDE_MARKER in lines[item.lineno - 1]
                    for item in node.body
                )
    return Conventions(parameterized, marks)


def probe_base_initializer(
    modules: RepoModules, base_module: str, base: str, cls_module: str, cls: ast.ClassDef, body: str | None = None
) -> str | None:
    """Run the tree's own base initializer over the class's `dispatch`; None when it takes it, else why not.

    The base's module is loaded from the tree in isolation (vLLM's `jit_warmup` needs only the standard
    library); the class's `dispatch` is compiled from its source into a throwaway subclass, so the base's
    tracer reads the same text it would read in the engine. A base module that needs more than the
    standard library cannot be loaded here: then nothing is probed (None), and `keys diff` remains the proof.
    `body`: probe this body (unindented text) in place of the class's own.
    """
    dispatch = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "dispatch"), None)
    path = modules.path(base_module)
    if dispatch is None or path is None:
        return None
    name = f"_zerojit_probe_{uuid.uuid4().hex}"
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
    except Exception:  # noqa: BLE001 - any failure to load means: cannot probe here
        return None
    finally:
        sys.modules.pop(name, None)
    source = modules.path(cls_module).read_text()
    segment = textwrap.dedent(source_segment(source, dispatch, padded=True))
    if body is not None:  # the tracer reads the parameters and the body, not the annotations of the return
        segment = f"def {dispatch.name}({ast.unparse(dispatch.args)}):\n" + textwrap.indent(body, "    ")
    segment = textwrap.indent(segment, "    ")
    decorators = "".join(f"    @{ast.unparse(d)}\n" for d in dispatch.decorator_list)
    probe = (
        f"from __future__ import annotations\n\nclass Probe(_Base):\n{decorators}{segment}\n"
        "    def compile(self, compile_key):\n        pass\n\n"
        "    def get_warmup_keys(self, *args, **kwargs):\n        return []\n"
    )
    filename = f"<zerojit probe of {cls_module}.{cls.name}.dispatch>"
    linecache.cache[filename] = (len(probe), None, source_lines(probe, keepends=True), filename)
    namespace = {n.id: _Anything() for n in ast.walk(dispatch) if isinstance(n, ast.Name)}
    namespace.update({"_Base": getattr(loaded, base), "__name__": name})
    try:
        exec(compile(probe, filename, "exec"), namespace)  # noqa: S102 - the tree's own code, as the engine runs it
        namespace["Probe"].__abstractmethods__ = frozenset()
        namespace["Probe"]()
    except Exception as exc:  # noqa: BLE001 - the base's own refusal, reported as is
        where = modules.where(cls_module, dispatch)
        return (
            f"{where}: {base}.__init__ from the tree cannot take {cls.name}.dispatch: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0].split('. ')[0]}"
        )
    finally:
        linecache.cache.pop(filename, None)
    return None


class _Anything:
    """Stands for a name of the class's module (its defaults may read one: `torch.float32`); tracing never uses it."""

    def __getattr__(self, name: str) -> _Anything:
        return self

    def __call__(self, *args: object, **kwargs: object) -> _Anything:
        return self

    def __getitem__(self, key: object) -> _Anything:
        return self


class _Adopt(Command):
    SKIPS = (cst.BaseStatement,)  # it edits module-level classes only (their bodies as a whole)

    @functools.cached_property
    def scopes(self):
        """It reads the module's scope only: no function body is needed."""
        return self.outlined_scopes(keep=lambda function: False)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        if original.name.value != self.op.cls or not isinstance(self.parent(), cst.Module):
            return updated
        if any(code_of(arg.value).split("[")[0].rsplit(".", 1)[-1] == self.op.base for arg in updated.bases):
            return updated  # adopted already
        scope = self.scopes[original]
        bound = f"{self.op.base_module}.{self.op.base}" in self.qualified(scope, self.op.base)
        if self.op.base in scope and not bound:
            self.refuse(
                original, f"{self.op.base} already names something else in this module; adopt the contract by hand"
            )
            return updated
        if not bound:
            AddImportsVisitor.add_needed_import(self.context, self.op.base_module, self.op.base)
        self.count += 1
        base = cst.parse_expression(f'{self.op.base}["{self.op.parameter}"]' if self.op.parameter else self.op.base)
        bases = (
            [*updated.bases[:-1], updated.bases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
            if updated.bases
            else []
        )
        body = [
            self._initialized(member)
            if isinstance(member, cst.FunctionDef) and member.name.value == "__init__"
            else member
            for member in updated.body.body
        ]
        return updated.with_changes(
            bases=[*bases, cst.Arg(base)],
            lpar=cst.LeftParen(),
            rpar=cst.RightParen(),
            body=updated.body.with_changes(body=body),
        )

    @staticmethod
    def _initialized(init: cst.FunctionDef) -> cst.FunctionDef:
        """`__init__` calling the base's first (after its docstring), unless it calls an `__init__` already."""
        if "__init__(" in code_of(init.body):
            return init
        statements = list(init.body.body)
        first = (
            1
            if statements
            and isinstance(statements[0], cst.SimpleStatementLine)
            and isinstance(statements[0].body[0], cst.Expr)
            and isinstance(statements[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString))
            else 0
        )
        statements.insert(first, cst.parse_statement("super().__init__()\n"))
        return init.with_changes(body=init.body.with_changes(body=statements))

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        module = super().transform_module_impl(tree)
        if not (self.op.mark_override and self.count):
            return module
        return cst.parse_module(_marked(module.code, self.op.cls))


class _Rewrite(Command):
    SKIPS = (cst.BaseStatement,)  # it edits a module-level class's dispatch only

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        if original.name.value != self.op.cls or not isinstance(self.parent(), cst.Module):
            return updated
        body = [
            self._rewritten(member)
            if isinstance(member, cst.FunctionDef) and member.name.value == "dispatch"
            else member
            for member in updated.body.body
        ]
        return updated.with_changes(body=updated.body.with_changes(body=body))

    def _rewritten(self, dispatch: cst.FunctionDef) -> cst.FunctionDef:
        self.count += 1
        statements = list(dispatch.body.body)
        docstring = statements[:1] if statements and m.matches(statements[0], _DOCSTRING) else []
        rest = dispatch.body.with_changes(body=statements[len(docstring) :])
        body = "".join(f"{comment.value}\n" for comment in m.findall(rest, m.Comment())) + self.op.body
        rewritten = cst.parse_statement("def dispatch():\n" + textwrap.indent(body, "    "))
        return dispatch.with_changes(body=dispatch.body.with_changes(body=[*docstring, *rewritten.body.body]))


_DOCSTRING = m.SimpleStatementLine(body=[m.Expr(value=m.SimpleString() | m.ConcatenatedString())])


def _marked(code: str, cls: str) -> str:
    """The class's `def dispatch(` line with the override marker (the tree's other subclasses carry it)."""
    lines = source_lines(code, keepends=True)
    inside = False
    for index, line in enumerate(lines):
        if re.match(rf"class {re.escape(cls)}\b", line):
            inside = True
        elif inside and line[:1] not in (" ", "\t", "\n", "#", ""):
            break
        elif inside and re.match(r"\s+def dispatch\(", line) and OVERRIDE_MARKER not in line:
            body, end = line.rstrip("\r\n"), line[len(line.rstrip("\r\n")) :]
            lines[index] = f"{body}  {OVERRIDE_MARKER}{end}"
            break
    return "".join(lines)


def adoption(
    modules: RepoModules, cls_module: str, cls: ast.ClassDef, base_module: str, base: str
) -> tuple[list[Operation], str | None]:
    """The operations that make `cls` adopt the contract base as the tree's conventions write it (its dispatch
    rewritten first where the base cannot trace it), or why it cannot be."""
    operations: list[Operation] = []
    why = probe_base_initializer(modules, base_module, base, cls_module, cls)
    if why:
        rewritten, why_not = traceable(modules, cls_module, cls)
        if why_not is None:
            why_not = probe_base_initializer(modules, base_module, base, cls_module, cls, rewritten)
        if why_not is not None:
            return [], f"{why}; rewriting it: {why_not}"
        operations.append(RewriteDispatch(cls.name, rewritten))
    conventions = sibling_conventions(modules, cls_module, base_module, base)
    has_key = any(isinstance(n, ast.ClassDef) and n.name == "CompileKey" for n in cls.body)
    parameter = f"{cls.name}.CompileKey" if conventions.parameterized and has_key else ""
    marks = conventions.marks_override and any(
        isinstance(n, ast.FunctionDef) and n.name == "dispatch" for n in cls.body
    )
    return [*operations, AdoptContract(cls.name, base_module, base, parameter, marks)], None


def traceable(modules: RepoModules, cls_module: str, cls: ast.ClassDef) -> tuple[str, str | None]:
    """`cls.dispatch`'s body rewritten into the traced form and proven equal, or why it cannot be."""
    dispatch = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "dispatch")
    try:
        fields = KeyFields.of(cls)
        if fields is None:
            return "", f"{modules.where(cls_module, cls)}: {cls.name} declares no CompileKey to read the fields of"
        body = rewrite(dispatch, fields, modules.engine.traced_operators)
        unproven = prove(dispatch, body, fields)
    except NotRewritable as exc:
        return "", f"{modules.where(cls_module, exc.line)}: {exc.why}"
    except Exception as exc:  # noqa: BLE001 - a dispatch the rewrite did not foresee is refused, never a traceback
        return "", f"{modules.where(cls_module, dispatch)}: the rewrite failed ({type(exc).__name__}: {exc})"
    return body, unproven and f"{modules.where(cls_module, dispatch)}: the rewrite is not proven equal: {unproven}"


def shadowed_state(modules: RepoModules, cls_module: str, cls: ast.ClassDef, base_module: str, base: str) -> list[str]:
    """`path:line: why` for each attribute the class's `__init__` sets that the base's initializer sets too
    (the class's value replaces the base's, with whatever key schema the class gave it)."""
    base_node = modules.definition(*modules.resolve(base_module, base))
    base_init = next(
        (n for n in getattr(base_node, "body", ()) if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if base_init is None or init is None:
        return []
    ours = self_attributes(base_init)
    path = Path(modules.path(cls_module)).relative_to(modules.repo).as_posix()
    return [
        f"{path}:{line}: {cls.name}.__init__ sets self.{attribute} after the base's initializer set it: "
        f"{base}'s own use of it (compiled executors keyed by CompileKey) sees the class's value"
        for attribute, line in self_attributes(init).items()
        if attribute in ours
    ]


def self_attributes(function: ast.FunctionDef) -> dict[str, int]:
    """`self.x` the function assigns (at any depth), with the first line."""
    found = {}
    for attribute, statement in self_stores(function):
        found.setdefault(attribute, statement.lineno)
    return found
