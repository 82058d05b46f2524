"""lift_kernel: a plain Triton kernel's launch becomes a dispatcher the contract can warm (codemods.lift plans it).

In the launcher's module (the kernel's, unless the spec names another `kernel_module`), before the
launcher: the provider, then the dispatcher (its body the launcher's statements that compute the
launch, copied with their comments, and the launch as its `return`); one pair per kernel the
migration lifts from that launcher. In the launcher, each
`kernel[grid](...)` statement becomes its dispatcher's call, and the copied statements nothing else
in the launcher reads go.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections import Counter

import libcst as cst
import libcst.matchers as cst_matchers
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import PositionProvider

from .. import lift
from .base import Command, Operation, operation
from .blocks import Rebuilder


@operation("lift_kernel")
@dataclasses.dataclass(frozen=True)
class LiftKernel(Operation):
    """Write each plan's provider and dispatcher before `launcher`, and make the launcher call the dispatchers
    (one plan per kernel of the launcher the migration lifts, in launch order)."""

    launcher: str
    lifted: tuple[lift.LiftPlan, ...]
    removes_statements = outlines = True

    def keeps(self, function: ast.FunctionDef | ast.AsyncFunctionDef, holders: tuple[ast.ClassDef, ...], code) -> bool:
        """Only the launcher: what it writes is the module's (the definitions, imports) and the launcher's body."""
        return not holders and function.name == self.launcher

    def command(self, context: CodemodContext) -> Command:
        return _Lift(context, self)


class _Unread(cst.CSTTransformer):
    """`a, b = x, y` where nothing reads `b` any more: `a = x` where the plan drops `b` with its value (a starred
    value spread by index: `*k.shape` as `k.shape[0]`, ...), else `a, _ = x, y`."""

    def __init__(self, unread: dict[str, bool]):
        super().__init__()
        self.unread = unread  # name -> dropped

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        if len(updated.targets) != 1 or not isinstance(updated.targets[0].target, cst.Tuple):
            return updated  # the plan names only a single `a, b = ...` target
        elements = updated.targets[0].target.elements
        if not all(isinstance(e.value, cst.Name) for e in elements):
            return updated
        names = [e.value.value for e in elements]
        if not set(names) & set(self.unread):
            return updated
        values = _spread(updated.value, len(names)) or [None] * len(names)
        kept = [
            (cst.Name("_") if name in self.unread else element.value, value)
            for element, value, name in zip(elements, values, names)
            if not self.unread.get(name)
        ]
        if len(kept) == len(names):  # nothing dropped: the unread names are written `_`
            target = updated.targets[0].target.with_changes(
                elements=[e.with_changes(value=t) for e, (t, _) in zip(elements, kept)]
            )
            return updated.with_changes(targets=[updated.targets[0].with_changes(target=target)])
        targets, values = (
            (kept[0][0], kept[0][1]) if len(kept) == 1 else (_tuple(t for t, _ in kept), _tuple(v for _, v in kept))
        )
        return updated.with_changes(targets=[updated.targets[0].with_changes(target=targets)], value=values)


def _tuple(items) -> cst.Tuple:
    return cst.Tuple([cst.Element(item) for item in items], lpar=[], rpar=[])


def _spread(value: cst.BaseExpression, count: int) -> list[cst.BaseExpression] | None:
    """The value of each of `count` targets, a starred element or a value unpacked whole indexed (`k.shape[1]`);
    None when they do not match (then the plan drops nothing: lift.dispatcher.spread_values decides alike)."""
    if not isinstance(value, cst.Tuple):
        value = cst.Tuple([cst.StarredElement(value)])  # `x.shape` unpacked whole (the plan spreads only a shape)
    spread = count - len(value.elements) + 1
    values: list[cst.BaseExpression] = []
    for element in value.elements:
        if isinstance(element, cst.StarredElement):
            index = [cst.SubscriptElement(cst.Index(cst.Integer(str(i)))) for i in range(spread)]
            values += [cst.Subscript(element.value, [i]) for i in index]
        else:
            values.append(element.value)
    return values if len(values) == count else None


class _Lift(Command):
    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        op: LiftKernel = self.op
        body: list[cst.CSTNode] = []
        for before, after in zip(original.body, updated.body):
            if isinstance(before, cst.FunctionDef) and before.name.value == op.launcher:
                launcher, copied = self._launcher(before, after)
                body += [*(d for plan in op.lifted for d in self._definitions(plan, copied[plan])), launcher]
            else:
                body.append(after)
        for module, name in dict.fromkeys(n for plan in op.lifted for n in plan.helper_names):
            AddImportsVisitor.add_needed_import(self.context, module, name)
        return updated.with_changes(body=body)

    def _launcher(
        self, before: cst.FunctionDef, after: cst.FunctionDef
    ) -> tuple[cst.FunctionDef, dict[lift.LiftPlan, list[cst.BaseStatement]]]:
        """The launcher calling the dispatchers, and the statements each dispatcher copies (the plans agree on
        what the launcher keeps: each decided it over every launch the migration moves)."""
        plans: tuple[lift.LiftPlan, ...] = self.op.lifted
        copied = {plan: [] for plan in plans}
        # The launcher as a file of its own: its lines are the file's less a constant, found without a pass over the
        # file (positions start at `def`, as the plan's lines do).
        lines = cst.MetadataWrapper(cst.Module(body=[before]), unsafe_skip_copy=True).resolve(PositionProvider)
        offset = plans[0].launcher_line - lines[before].start.line
        place = lambda node: range(lines[node].start.line + offset, lines[node].end.line + offset + 1)  # noqa: E731
        body = self._body(before.body.body, after.body.body, place, copied)
        return after.with_changes(body=after.body.with_changes(body=body)), copied

    @functools.cached_property
    def _edited_lines(self) -> set[int]:
        """The launcher's lines the plans change or copy: a `with` that holds one is read through
        (lift.dispatcher.flat_body reads through every `with` that holds a launch, lifted or not)."""
        plans: tuple[lift.LiftPlan, ...] = self.op.lifted
        edited = {line for plan in plans for line in (plan.launch_line, *plan.copied_lines, *plan.removed_lines)}
        return edited | {line for plan in plans for line, _, _ in plan.unread}

    def _body(self, originals, updated, place, copied: dict) -> list[cst.BaseStatement]:
        """One block of the launcher as the dispatchers leave it: each launch their call, each copied statement
        nothing else reads gone; a `with` that holds one of those is such a block too."""
        plans: tuple[lift.LiftPlan, ...] = self.op.lifted
        launches = {plan.launch_line: plan for plan in plans}
        statements = []
        rebuilder = Rebuilder(moved=True)  # what goes is in the dispatcher, comments and all: its gap stays
        for original, statement in zip(originals, updated):
            line = place(original)[0]
            for plan in plans:
                if line in plan.copied_lines:
                    copied[plan].append(statement)
            if line in launches:
                call = cst.parse_statement(launches[line].dispatch_call + "\n")
                statements.append(call.with_changes(leading_lines=statement.leading_lines))
                self.count += 1
            elif line in plans[0].removed_lines:
                rebuilder.note(original)
            elif isinstance(original, cst.With) and any(at in place(original) for at in self._edited_lines):
                inner = self._body(original.body.body, statement.body.body, place, copied)
                statements.append(statement.with_changes(body=statement.body.with_changes(body=inner)))
            else:
                unread = {name: dropped for at, name, dropped in plans[0].unread if at == line}
                statements.append(statement.visit(_Unread(unread)) if unread else statement)
        return rebuilder.rebuild(originals, statements)

    def _definitions(self, plan: lift.LiftPlan, copied: list[cst.BaseStatement]) -> list[cst.FunctionDef]:
        spacing = [cst.EmptyLine(), cst.EmptyLine()]
        provider = cst.parse_statement(plan.provider).with_changes(leading_lines=spacing)
        dispatcher = cst.parse_statement(plan.dispatcher + "    pass\n")  # the body is the copied statements
        returned = cst.parse_statement(plan.returned + "\n")
        dispatcher = dispatcher.with_changes(
            leading_lines=spacing, body=dispatcher.body.with_changes(body=_read_in_place([*copied, returned]))
        )
        return [provider, dispatcher]


def _read_in_place(body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """The dispatcher's body with each local that only its `return` reads, once, computed there instead (the grid,
    a launch option: `return (batch,), dict(BLOCK_SIZE=1024)`, as upstream's dispatchers write it). Only a value
    that changes nothing moves, past statements that change nothing either (`_pure`): the launch reads the same.
    A local stays where a comment sits on its line, where the return reads it inside an operator (precedence), a
    lambda or a comprehension (evaluated elsewhere), or where a later statement rebinds it or what it reads."""
    while (found := _single_use(body)) is not None:
        index, name, value = found
        gap, rest = body[index].leading_lines, [*body[:index], *body[index + 1 :]]
        rest[-1] = rest[-1].visit(_InPlace(name, value))
        following = rest[index]  # the return at least
        kept = [line for line in following.leading_lines if line.comment] if index == 0 else None
        rest[index] = following.with_changes(leading_lines=kept if kept is not None else following.leading_lines or gap)
        body = rest
    return body


# Calls that read and change nothing, by the called name's last part: a tensor's layout, Triton's block arithmetic.
_READS_ONLY = {"stride", "size", "dim", "numel", "element_size", "cdiv", "next_power_of_2", "min", "max", "len"}
_EVALUATED_ELSEWHERE = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_FORBIDDEN = (
    cst_matchers.Lambda()
    | cst_matchers.ListComp()
    | cst_matchers.SetComp()
    | cst_matchers.DictComp()
    | cst_matchers.GeneratorExp()
    | cst_matchers.NamedExpr()
    | cst_matchers.Yield()
    | cst_matchers.Await()
)


def _pure(node: cst.CSTNode) -> bool:
    """An expression that changes nothing: no call but those of `_READS_ONLY`, no walrus, lambda, comprehension,
    yield or await."""
    if cst_matchers.findall(node, _FORBIDDEN):
        return False
    return all(_called_name(call.func) in _READS_ONLY for call in cst_matchers.findall(node, cst_matchers.Call()))


def _called_name(func: cst.BaseExpression) -> str | None:
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


def _names_only_target(target: cst.BaseExpression) -> bool:
    elements = [e.value for e in target.elements] if isinstance(target, cst.Tuple | cst.List) else [target]
    return all(isinstance(element, cst.Name) for element in elements)


def _pure_statement(statement: cst.CSTNode) -> bool:
    """Assignments of pure values to names, possibly under `if`s with pure tests."""
    match statement:
        case cst.SimpleStatementLine(body=parts):
            return all(
                isinstance(part, cst.Assign)
                and all(_names_only_target(target.target) for target in part.targets)
                and _pure(part.value)
                for part in parts
            )
        case cst.If(test=test, body=body, orelse=orelse):
            return _pure(test) and all(map(_pure_statement, body.body)) and (orelse is None or _pure_statement(orelse))
        case cst.Else(body=body):
            return all(map(_pure_statement, body.body))
    return False


def _single_use(body: list[cst.BaseStatement]) -> tuple[int, str, cst.BaseExpression] | None:
    """(index, name, value) of the first `name = value` line, no comment on it, that only the return reads, once,
    as a whole argument, tuple element or the returned value."""
    returned = body[-1]
    for index, statement in enumerate(body[:-1]):
        match statement:
            case cst.SimpleStatementLine(
                body=[cst.Assign(targets=[cst.AssignTarget(target=cst.Name(value=name))], value=value)],
                trailing_whitespace=cst.TrailingWhitespace(comment=None),
            ) if not any(line.comment for line in statement.leading_lines):
                pass
            case _:
                continue
        between = body[index + 1 : -1]
        placed = _InPlace(name, value)
        returned.visit(placed)
        if (
            _pure(value)
            and all(map(_pure_statement, between))
            and placed.count == 1
            and _reads(returned)[name] == 1
            and not any(_reads(s)[name] for s in between)
            and not (_reads(value).keys() | {name}) & _bound(between)
        ):
            return index, name, value
    return None


class _InPlace(cst.CSTTransformer):
    """`name` read as a whole argument, tuple element or returned value, replaced by `value` (parenthesized where
    it is a bare tuple); `count`: how many it replaced."""

    def __init__(self, name: str, value: cst.BaseExpression):
        super().__init__()
        self.name, self.count = name, 0
        bare = isinstance(value, cst.Tuple) and not value.lpar
        self.value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if bare else value

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not isinstance(node, _EVALUATED_ELSEWHERE)

    def _placed(self, node):
        if isinstance(node.value, cst.Name) and node.value.value == self.name:
            self.count += 1
            return node.with_changes(value=self.value)
        return node

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return self._placed(updated)

    def leave_Element(self, original: cst.Element, updated: cst.Element) -> cst.Element:
        return self._placed(updated)

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        return self._placed(updated)


class _Reads(cst.CSTVisitor):
    """How many times each name is read (an attribute's name and a keyword are not names read)."""

    def __init__(self):
        super().__init__()
        self.names: Counter[str] = Counter()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names[node.value] += 1


def _reads(node: cst.CSTNode) -> Counter[str]:
    reads = _Reads()
    node.visit(reads)
    return reads.names


_BINDS = (
    cst_matchers.AssignTarget()
    | cst_matchers.AugAssign()
    | cst_matchers.AnnAssign()
    | cst_matchers.For()
    | cst_matchers.NamedExpr()
)


def _bound(statements: list[cst.BaseStatement]) -> set[str]:
    """The names the statements assign (plain names, unpacked ones included)."""
    targets = [n for statement in statements for n in cst_matchers.findall(statement, _BINDS)]
    return {name for target in targets for name in _reads(target.target)}
