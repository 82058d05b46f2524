"""The statement walker that builds the provider: the legacy step's loops become domains, its conditions
`_when(...)`, its assignments provider locals, as it runs symbolically towards the launch."""

from __future__ import annotations

import ast
import builtins
from typing import Any

from .. import simplify
from ..repo import RepoModules
from ..syntax import conjunction, exits, function_import, loads, stores
from . import polynomials
from .evaluator import Scope
from .tables import LOGGING, NO_VALUE, SAME_TENSOR
from .values import (
    Keywords,
    LiftError,
    MaybeTensor,
    PerCase,
    Sequence,
    Tensor,
    Unknown,
    Value,
    choice_of,
    from_literal,
    names_in,
    negated_code,
    parse_expr,
)


class Lift:
    """One lift: walks the legacy step to the launcher call, then the launcher to the kernel launch."""

    def __init__(self, modules: RepoModules, module: str, launcher: str):
        self.modules = modules
        self.module, self.launcher = module, launcher  # where the provider goes (the launcher's); whose launch it is
        self.parameters: dict[str, str] = {}  # provider parameter -> what the step read (`config.h`)
        self.statements: list[str] = []  # the provider's body, in order
        self.taken: set[str] = set()  # the provider's names so far
        self.dynamic: set[str] = set()  # provider locals that depend on the case being warmed (a domain)
        self.local_code: dict[str, str] = {}  # provider local -> the expression it is assigned
        self.guards: list[str] = []  # the case-independent `_when` conditions so far
        self.choices: dict[str, tuple] = {}  # a `WarmupChoices` local of literal values -> those values
        self.tensors: set[str] = set()  # provider parameters the step's annotations say are tensors (never None)
        self.launcher_def: ast.FunctionDef | None = None

    # -- names -------------------------------------------------------------------------------------------
    def parameter(self, source: str, wanted: str) -> Value:
        for name, read in self.parameters.items():
            if read == source:
                return Value(name)
        name = self.fresh(wanted)
        self.parameters[name] = source
        return Value(name)

    def fresh(self, wanted: str) -> str:
        name, index = wanted, 2
        while name in self.taken or name in (
            "dict",
            "TritonWarmupTensor",
            "WarmupChoices",
            "WarmupIntRange",
            "_when",
            "torch",
            "triton",
        ):
            name, index = f"{wanted}_{index}", index + 1
        self.taken.add(name)
        return name

    def module_of(self, scope: Scope, node: ast.expr) -> str | None:
        """The module a name refers to in `scope`'s module, when it names one (`torch`, `triton`)."""
        if not isinstance(node, ast.Name) or node.id in scope.env:
            return None
        target, attribute = self.modules.imports(scope.module).get(node.id, (None, "?"))
        if (
            target is not None
            and target.endswith(self.modules.engine.triton_reexport)
            and attribute in ("triton", "tl")
        ):
            return attribute  # the engine's re-export of Triton itself
        return target if target is not None and attribute is None else None

    def is_module(self, scope: Scope, node: ast.expr) -> bool:
        if isinstance(node, ast.Name) and node.id not in scope.env:
            found = self.modules.imports(scope.module).get(node.id)
            if found is not None and (found[1] is None or found[0].endswith(self.modules.engine.triton_reexport)):
                return True
        return False

    def is_typing_cast(self, scope: Scope, name: str) -> bool:
        return name not in scope.env and (
            function_import(scope.function, name) or self.modules.imports(scope.module).get(name)
        ) == ("typing", "cast")

    def global_is_builtin(self, scope: Scope, name: str) -> bool:
        return self.modules.definition(scope.module, name) is None and name not in self.modules.imports(scope.module)

    def global_value(self, scope: Scope, node: ast.Name) -> Any:
        """A module-level name: a constant the tree spells out is copied; a module must be bound at home too."""
        name = node.id
        found = self.modules.imports(scope.module).get(name)
        local_import = function_import(scope.function, name)
        if local_import is not None:
            found = local_import
        if found is not None and (found[1] is None or found[0].endswith(self.modules.engine.triton_reexport)):
            home = self.modules.imports(self.module).get(name)
            if home != found:
                raise scope.refuse(
                    node, f"reads the module `{name}`, which {self.module} does not import under that name"
                )
            return Value(name)
        module, target = (found[0], found[1]) if found else (scope.module, name)
        module, target = self.modules.resolve(module, target)
        bindings = self._bindings_in(module, target) if target else []
        definition = self.modules.definition(module, target) if target else None
        if len(bindings) > 1:
            raise scope.refuse(
                node,
                f"reads `{name}` ({module}), which its module binds {len(bindings)} times "
                "(the lift copies a constant only when it has one value)",
            )
        value = bindings[0].value if bindings and isinstance(bindings[0], (ast.Assign, ast.AnnAssign)) else None
        if value is not None:
            try:
                literal = ast.literal_eval(_frozen(value))
            except ValueError:
                literal = NO_VALUE
            if literal is not NO_VALUE:
                return from_literal(literal)
        if name in dir(builtins) and found is None and definition is None:
            known = getattr(builtins, name)
            return Value(repr(known), known) if known in (True, False, None) else Value(name)
        if target and self.modules.resolve(self.module, name) == (module, target):
            return Value(name)  # the provider's module names the same object: the provider may read it
        raise scope.refuse(
            node,
            f"reads `{name}` ({module}), which is not a constant the lift can copy and not a name {self.module} binds",
        )

    def _bindings_in(self, module: str, name: str) -> list[ast.AST]:
        """Where `module` binds `name`: its assignments, and its changes in place anywhere (`_LENGTHS.append(64)`,
        `_OPTIONS["a"] = 1`: each binds it again), found for every name in one walk a run."""
        key = ("changes in place", module)
        if key not in self.modules.memo:
            changes: dict[str, list[ast.AST]] = {}
            for node in ast.walk(self.modules.tree(module) or ast.Module(body=[], type_ignores=[])):
                if (changed := _changed_name(node)) is not None:
                    changes.setdefault(changed, []).append(node)
            self.modules.memo[key] = changes
        return _module_bindings(self.modules.tree(module), name) + self.modules.memo[key].get(name, [])

    # -- statements --------------------------------------------------------------------------------------
    def walk(self, scope: Scope, body: list[ast.stmt], is_target, gates: bool = False) -> ast.AST | None:
        """Run `body` symbolically until `is_target(statement)` names the launch; return that node.

        `gates`: `body` is the legacy step's own; an early return there whose condition reads what the provider
        cannot (the platform, the runner) is a gate of the registration, which codemods.guards carries.
        """
        for index, statement in enumerate(body):
            found = is_target(scope, statement)
            if found is not None:
                return found
            changed = _changed_in_place(scope, statement)
            if changed is not None:
                what = _changed_name(changed)
                raise scope.refuse(
                    changed, f"changes `{what}` in place, which the lift does not follow (it reads it as built)"
                )
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # a docstring
            if isinstance(statement, (ast.Import, ast.ImportFrom, ast.Assert, ast.Pass, ast.Global)):
                continue
            if isinstance(statement, ast.FunctionDef):  # a closure (a grid function): only a call would run it
                scope.env[statement.name] = Unknown(scope.refuse(statement, f"{statement.name} is a local function"))
                continue
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                self._assign(scope, statement.targets[0].id, statement.value, statement)
                continue
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and unpacked_names(statement.targets[0])
            ):
                self._unpack(scope, unpacked_names(statement.targets[0]), statement.value, statement)
                continue
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
                self._assign(scope, statement.target.id, statement.value, statement)
                continue
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Call)
                and _is_side_effect_free(scope, statement.value)
            ):
                continue
            if isinstance(statement, ast.If):
                try:
                    test = scope.plain(statement.test)
                except LiftError:
                    if (
                        gates
                        and exits(statement.body, in_loop=True)
                        and not statement.orelse
                        and not _holds(scope, statement.body, is_target)
                    ):
                        continue
                    raise
                inside = _holds(scope, statement.body, is_target)
                elsewhere = _holds(scope, statement.orelse, is_target)
                if test.fixed:
                    branch = statement.body if test.known else statement.orelse
                    found = self.walk(scope, branch, is_target)
                    if found is not None:
                        return found
                    if exits(branch, in_loop=True):
                        return None
                    continue
                if inside or elsewhere:
                    self.when(test.code if inside else negated_code(test.code))
                    return self.walk(scope, statement.body if inside else statement.orelse, is_target)
                if any(isinstance(n, ast.Break) for branch in (statement.body, statement.orelse) for n in branch):
                    raise scope.refuse(
                        statement,
                        "leaves its loop under a condition (`break`): the cases after it "
                        "depend on the order, which the provider's domains do not have",
                    )
                for branch, rest, keep in (
                    (statement.body, statement.orelse, negated_code(test.code)),
                    (statement.orelse, statement.body, test.code),
                ):
                    if exits(branch, in_loop=True):
                        self.when(keep)  # the cases that get past it take the other branch
                        if not exits(rest, in_loop=True):
                            self.walk(scope, rest, is_target)
                        break
                else:
                    if _binds(statement.body) or _binds(statement.orelse):
                        self._merge(scope, statement, test)
                continue
            if isinstance(statement, ast.For) and _holds(scope, statement.body, is_target):
                carried = _carried(scope, statement.body)
                if carried is not None:
                    raise scope.refuse(
                        carried[1],
                        f"`{carried[0]}` may hold here what an earlier pass of the loop set, and the provider's cases "
                        "are independent",
                    )
                self._domain(scope, statement)
                return self.walk(scope, statement.body, is_target)
            if isinstance(statement, (ast.With, ast.Try)):
                found = self.walk(scope, statement.body, is_target, gates)
                if found is not None:
                    return found
                continue
            if isinstance(statement, ast.Return) and index == len(body) - 1:
                return None
            if (
                not _binds([statement])
                and not _holds(scope, [statement], is_target)
                and not isinstance(statement, (ast.Return, ast.Raise, ast.Continue, ast.Break))
            ):
                continue
            first = ast.unparse(statement).splitlines()[0]
            raise scope.refuse(statement, f"the lift cannot translate this statement (`{first}`)")
        return None

    def when(self, condition: str) -> None:
        """A `_when(condition)`; one that holds or fails for every case alike also guards what follows it. One
        every value of the choices it reads satisfies (`length != 0` over `WarmupChoices(1, 2, 16)`) says nothing
        and is not written."""
        if simplify.holds_for_every(condition, self.choices):
            return
        self.statements.append(f"_when({condition})")
        if not self.depends(condition) & self.dynamic:
            self.guards.append(condition)

    def depends(self, code: str) -> set[str]:
        """The provider names `code` reads, through its locals' definitions too."""
        names, pending = set(), list(names_in(code))
        while pending:
            name = pending.pop()
            if name not in names:
                names.add(name)
                pending += names_in(self.local_code.get(name, "None"))
        return names

    def guard(self, code: str) -> str | None:
        """The earlier case-independent `_when`s about a value `code` reads, as one test (None: there are none).
        vLLM's helper evaluates the provider's case-independent locals and its domains before it applies any
        `_when`, so one that reads what an early return of the step guarded (`x is None`) must be written to be
        evaluated only where that guard holds."""
        read = self.depends(code)
        conditions = [c for c in self.guards if names_in(c) & read]
        return conjunction(conditions) or None

    def _assign(self, scope: Scope, name: str, value: ast.expr, statement: ast.stmt) -> None:
        try:
            found = scope.value(value)
        except LiftError as exc:
            found = self._from_site(scope, value, name) or Unknown(exc)
        if (
            isinstance(found, Value)
            and not found.fixed
            and scope.function.name != self.launcher
            and not found.code.isidentifier()
        ):
            local = self.fresh(name)
            dynamic = bool(self.depends(found.code) & self.dynamic)
            # Arithmetic of int(...) locals cannot raise where a guard fails: it needs none.
            total = polynomials.total({n: parse_expr(c) for n, c in self.local_code.items()})(parse_expr(found.code))
            guard = None if dynamic or total else self.guard(found.code)
            self.statements.append(f"{local} = {found.code}" + (f" if {guard} else None" if guard else ""))
            self.local_code[local] = found.code
            if dynamic:
                self.dynamic.add(local)
            found = Value(local)
        scope.env[name] = found

    def _merge(self, scope: Scope, statement: ast.If, test: Value) -> None:
        """An if/else whose condition depends on the case, setting values: each name it sets becomes
        `a if test else b` (a name neither branch can give one value reads as unknown, refused where read)."""
        if any(
            isinstance(n, (ast.Return, ast.Raise, ast.Continue, ast.Break))
            for branch in (statement.body, statement.orelse)
            for s in branch
            for n in ast.walk(s)
        ):
            raise scope.refuse(
                statement,
                "sets values under a condition the lift cannot decide "
                f"(`{ast.unparse(statement.test)}`) and leaves under another",
            )
        outcomes = []
        for branch in (statement.body, statement.orelse):
            inner, written = Scope(self, scope.module, scope.function, dict(scope.env)), len(self.statements)
            try:
                self.walk(inner, branch, lambda _scope, _statement: None)
            except LiftError as exc:
                inner.env.update({name: Unknown(exc) for s in branch for name in stores(s)})
            if len(self.statements) > written:  # a provider local the other cases would compute too
                del self.statements[written:]
                inner.env.update(
                    {
                        name: Unknown(
                            scope.refuse(
                                statement,
                                f"sets `{name}` under a condition the lift cannot decide, from a value it computes",
                            )
                        )
                        for s in branch
                        for name in stores(s)
                    }
                )
            outcomes.append(inner.env)
        body, orelse = outcomes
        for name in {n for s in statement.body + statement.orelse for n in stores(s)}:
            unknown = next((env[name] for env in outcomes if isinstance(env.get(name), Unknown)), None)
            either = choice_of(test, body.get(name), orelse.get(name)) if unknown is None else None
            if either is None and unknown is None:
                unknown = Unknown(
                    scope.refuse(
                        statement,
                        f"sets `{name}` under a condition the lift cannot decide "
                        f"(`{ast.unparse(statement.test)}`) to values it cannot "
                        "write as one",
                    )
                )
            scope.env[name] = unknown if unknown is not None else either

    def _from_site(self, scope: Scope, value: ast.expr, name: str) -> Value | None:
        """A value the provider cannot compute (the step calls legacy code, or reads what only the engine has)
        but that is one value per registration, not per warmed case: the registration passes it, a parameter
        whose source the confirm item quotes. None where it depends on the case being warmed, or on a tensor."""
        if scope.function is self.launcher_def or isinstance(value, (ast.Name, ast.Constant)):
            return None
        if any(self._per_case(scope.env.get(read)) for read in loads(value)):
            return None
        return self.parameter(f"{ast.unparse(value)} ({scope.module}:{scope.where(value).line})", name.lstrip("_"))

    def _per_case(self, found: Any) -> bool:
        """Whether a value may differ between the warmed cases, or holds a tensor (never one per registration)."""
        if isinstance(found, Value):
            return bool(names_in(found.code) & self.dynamic)
        if isinstance(found, Sequence):
            return any(map(self._per_case, found.items))
        if isinstance(found, Keywords):
            return any(self._per_case(item) for _, item in found.items)
        return isinstance(found, (Tensor, MaybeTensor, Unknown, PerCase))

    def _inlined(self, scope: Scope, loop: ast.For, code: str) -> str:
        """`code` with the provider's locals written out: vLLM's helper evaluates a domain with the provider's
        parameters only, before any of its assignments."""
        locals_ = self.local_code

        class Inline(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.expr:
                return Inline().visit(parse_expr(locals_[node.id])) if node.id in locals_ else node

        used = names_in(code)
        if used & self.dynamic:
            raise scope.refuse(
                loop, "a loop whose values depend on another loop's value: the provider's domains are independent"
            )
        return ast.unparse(Inline().visit(parse_expr(code)))

    def _promote(self, domain: str) -> None:
        """Each local the domain reads that the provider computes (`max_blocks = cdiv(...)`) becomes a parameter,
        which the registration passes. Only where written out it would repeat itself: vLLM's helper evaluates a
        domain before the provider's assignments, so a local read through others, and through the guard of an
        early return, is written out once per read (Kimi-K3's block count, five times)."""
        for name in sorted(names_in(domain) & self.local_code.keys()):
            code = self.local_code[name]
            if not simplify.computes(parse_expr(code)):
                continue  # a plain read (`config.h`) reads as well written out
            self.parameters[name] = self.local_code.pop(name)
            self.statements = [s for s in self.statements if not s.startswith(f"{name} = ")]

    def _guarded_domain(self, domain: str) -> str:
        """A domain no case of which is evaluated where an earlier case-independent `_when` fails (empty there)."""
        call = parse_expr(domain)
        values = ast.unparse(
            call.args[0].value
            if len(call.args) == 1 and isinstance(call.args[0], ast.Starred)
            else ast.Tuple(call.args)
        )
        guard = self.guard(values)
        if guard is None:
            return domain
        empty = "(0, 0)" if call.func.id == "WarmupIntRange" else "()"
        return f"{call.func.id}(*({values} if {guard} else {empty}))"

    def _unpack(self, scope: Scope, names: list[str], value: ast.expr, statement: ast.stmt) -> None:
        try:
            found = scope.value(value)
        except LiftError as exc:
            scope.env.update({name: Unknown(exc) for name in names})
            return
        if isinstance(found, Value) and not found.fixed:
            found = Sequence(tuple(Value(f"{found.code}[{index}]") for index in range(len(names))))
        if not isinstance(found, Sequence) or len(found.items) != len(names):
            why = scope.refuse(statement, f"unpacks `{ast.unparse(value)}` into {len(names)} names")
            scope.env.update({name: Unknown(why) for name in names})
            return
        scope.env.update(zip(names, found.items))

    def _domain(self, scope: Scope, loop: ast.For) -> None:
        names = [loop.target.id] if isinstance(loop.target, ast.Name) else unpacked_names(loop.target)
        if not names or loop.orelse:
            raise scope.refuse(
                loop, "a loop whose variable is not one name or a tuple of names (or with an else) is not translated"
            )
        iterable = loop.iter
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "range"
            and "range" not in scope.env
        ):
            bounds = [scope.plain(a).code for a in iterable.args]
            domain = f"WarmupIntRange({', '.join(bounds if len(bounds) > 1 else ['0', *bounds])})"
        else:
            try:
                values = scope.value(iterable)
            except LiftError:
                values = self._from_site(scope, iterable, "_".join(names) + "_values")
                if values is None:
                    raise
            if isinstance(values, Sequence):
                items = [scope._as_value(iterable, v) for v in values.items]
                if isinstance(iterable, ast.Set) or any(isinstance(n, ast.Set) for n in ast.walk(iterable)):
                    items = list({i.code: i for i in items}.values())
                domain = f"WarmupChoices({', '.join(i.code for i in items)})"
            elif isinstance(values, Value):
                domain = f"WarmupChoices(*{values.code})"
            else:
                raise scope.refuse(loop, f"a loop over `{ast.unparse(iterable)}`, which the lift cannot read")
        if simplify.repeats(self._inlined(scope, loop, self._guarded_domain(domain))):
            self._promote(domain)
        domain = self._inlined(scope, loop, self._guarded_domain(domain))
        local = self.fresh(names[0] if len(names) == 1 else _case_name(iterable))
        self.statements.append(f"{local} = {domain}")
        if (values := simplify.literal_choices(domain)) is not None:
            self.choices[local] = values
        self.dynamic.add(local)
        if len(names) == 1:
            scope.env[names[0]] = Value(local)
            return
        for index, name in enumerate(names):  # each a named part of the domain's value
            part = self.fresh(name)
            self.statements.append(f"{part} = {local}[{index}]")
            self.dynamic.add(part)
            scope.env[name] = Value(part)


def _case_name(iterable: ast.expr) -> str:
    """The name of one tuple a loop unpacks: the singular of what the function it loops over returns
    (`get_attn_res_triton_warmup_profiles(...)` -> `profile`), else `case`."""
    function = iterable.func if isinstance(iterable, ast.Call) else None
    name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")
    last = name.rsplit("_", 1)[-1]
    return last[:-1] if len(last) > 2 and last.endswith("s") and not last.endswith("ss") else "case"


def unpacked_names(target: ast.expr) -> list[str]:
    """`a, b = ...`'s names (empty for any other target)."""
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]
    return []


def _module_bindings(tree: ast.Module | None, name: str) -> list[ast.stmt]:
    """The module-level statements that bind `name` by assignment (a constant has exactly one)."""
    found = []
    for statement in getattr(tree, "body", []):
        targets = (
            statement.targets
            if isinstance(statement, ast.Assign)
            else [statement.target]
            if isinstance(statement, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found.append(statement)
    return found


def _frozen(node: ast.expr) -> ast.expr:
    """`frozenset({...})` / `tuple(...)` of a literal as the literal (for ast.literal_eval)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "tuple", "set")
        and len(node.args) == 1
    ):
        return node.args[0]
    return node


def _binds(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) for s in body for n in ast.walk(s))


def _holds(scope: Scope, body: list[ast.stmt], is_target) -> bool:
    return any(is_target(scope, s) is not None for stmt in body for s in ast.walk(stmt) if isinstance(s, ast.stmt))


# The methods of a list or dict that change it.
_CHANGES_IN_PLACE = frozenset(
    ("append", "extend", "insert", "pop", "popitem", "remove", "clear", "sort", "reverse", "update", "setdefault")
)


def _changed_in_place(scope: Scope, statement: ast.stmt) -> ast.AST | None:
    """Where `statement` changes a list or dict of the scope in place (`opts["a"] = 1`, `lengths.append(64)`, `del
    opts["a"]`), or None: the lift reads each as it was built."""
    return next(
        (n for n in ast.walk(statement) if isinstance(scope.env.get(_changed_name(n)), (Sequence, Keywords))), None
    )


def _carried(scope: Scope, body: list[ast.stmt]) -> tuple[str, ast.stmt] | None:
    """The first statement of a loop's body that may see a value an earlier pass set (`if length == 1: g = True`
    then `g` read, `g` bound before the loop): a name bound before the loop that the body sets again, unless the
    first statement naming it sets it whole, from anything else."""
    for name in sorted({name for statement in body for name in stores(statement)} & scope.env.keys()):
        first = next(s for s in body if name in loads(s) or name in stores(s))
        plain = isinstance(first, ast.Assign) and [ast.unparse(t) for t in first.targets] == [name]
        if not plain or name in loads(first.value):
            return name, first
    return None


def _changed_name(node: ast.AST) -> str | None:
    """The name whose value `node` changes in place: a store or `del` by key, index or attribute, or a call of a
    list's or dict's changing method."""
    target = None
    if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
        target = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CHANGES_IN_PLACE:
        target = node.func.value
    return target.id if isinstance(target, ast.Name) else None


def _is_side_effect_free(scope: Scope, call: ast.Call) -> bool:
    """A call statement that compiles nothing: logging, a tensor's in-place initialisation."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "logger":
        return func.attr in LOGGING
    if isinstance(func, ast.Attribute) and func.attr in SAME_TENSOR and isinstance(func.value, ast.Name):
        return isinstance(scope.env.get(func.value.id), Tensor)
    return False
