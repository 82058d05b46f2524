"""insert_registration: the kernel's registration goes into the constructor that selects it, under its gate."""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap

import libcst as cst
import libcst.matchers as m
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.helpers import get_full_name_for_node

from ..syntax import holds_anchor, holds_call_like, imported_in
from .base import AnchorError, Command, Operation, code_of, operation
from .bindings import MethodBindings
from .blocks import NO_STATEMENTS
from .constructor import (
    StatementLines,
    assigned_names,
    base_calls,
    calls_parent,
    changed_attributes,
    first_line,
    holders,
    is_self,
    locals_read,
    nodes,
    outside_branches,
    quiet_between,
    statements_in,
    top_level,
    walks_kept,
)
from .registration_code import renamed_in
from .shared_facts import clobbered, one_if, same_gate, share_facts


@operation("insert_registration")
@dataclasses.dataclass(frozen=True)
class InsertRegistration(Operation):
    """Insert `if <gate>: <registration>` into `cls.<method>` (`__init__` unless the spec names another), after
    `insert_after` (at any depth) or at the end. `override`: the method's source when the class only inherits
    it (a def that runs the parent's); it is added to the class with the registration at its end.

    kernel_module / kernel_name: where the registration's kernel comes from; imported at
    module level, or inside the inserted block when `lazy`, unless this module binds it.
    Every name the gate and registration read must be bound where the block goes.
    """

    cls: str
    gate: str
    registration: str
    insert_after: str
    kernel_module: str
    kernel_name: str
    lazy: bool
    gate_imports: tuple[str, ...] = ()
    names: frozenset[str] = frozenset()
    call: str = ""  # the registration's register_warmup call: found in __init__, the site is migrated already
    inner_gate: str = ""  # checked inside the block, after `inner_imports` (names imported only in functions)
    inner_imports: tuple[str, ...] = ()
    method: str = "__init__"
    override: str = ""
    register_on_return: bool = True  # a return above the insertion point gets the block too (else: skips it)

    outlines = adds_only = True

    def keeps(self, function: ast.FunctionDef | ast.AsyncFunctionDef, holders: tuple[ast.ClassDef, ...], code) -> bool:
        """What the edit reads: the class's method and the methods of the class it (or the override it adds) names:
        those it calls set what the registration may read, and a helper method may hold the registration already;
        and a function the class is defined in (the method sees the names it binds)."""
        if self.cls in code(function) and any(
            isinstance(n, ast.ClassDef) and n.name == self.cls for n in ast.walk(function)
        ):
            return True
        if not holders or holders[-1].name != self.cls:
            return False
        helper = _helper_name(self.kernel_name)
        if function.name in (self.method, helper) or function.name.startswith(f"{helper}_"):
            return True
        named = re.compile(rf"\b{re.escape(function.name)}\b")
        methods = [m for m in holders[-1].body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)]
        return any(named.search(code(m)) for m in methods if m.name == self.method) or bool(named.search(self.override))

    def command(self, context: CodemodContext) -> Command:
        return _Insert(context, self)


class _Insert(Command):
    SKIPS = NO_STATEMENTS  # it edits a class's __init__ (nested or not) and the blocks in it

    def __init__(self, context: CodemodContext, op: InsertRegistration):
        super().__init__(context, op)
        self.found_class = False
        self.init: cst.FunctionDef | None = None
        self.init_in_class: cst.FunctionDef | None = None  # the method as the class defines it (None: inherited)
        self.anchor: cst.BaseStatement | None = None  # the block goes after it (None: at the end of __init__)
        self.done = False  # already migrated
        self.needs_import = False
        self.block: cst.BaseStatement | None = None  # the last statement inserted
        self.imported = {alias for line in (*op.gate_imports, *op.inner_imports) for alias in _imported_names(line)}
        self.registration = op.registration
        self.alias: str | None = None  # a top-level `from <kernel module> import <kernel> as <alias>`
        self.exits: list[cst.SimpleStatementLine] = []  # returns above the insertion point: it goes before each
        self.once = False  # it goes only before the one statement in `exits` (all it reads is set there)
        # Where the block starts from when no statement matches insert_after (it then goes after what it reads).
        self.guessed = ""
        # Where it goes before a return and again further down: a method of the class holds the block once,
        # and each place calls it (`helper`: its name; `helper_body`: the block; `helper_args`: the locals it reads).
        self.helper: str | None = None
        self.helper_body: list[cst.BaseStatement] = []
        self.helper_args: list[str] = []
        self._set_by: dict[tuple[int, str], set[str]] = {}  # (class node's id, method) -> the `self.x` it sets

    def line(self, node: cst.CSTNode) -> int:
        """A statement of the override the class gets is not in the file: it is said at the class."""
        position = self.position(node)
        return self.position(self.class_node).start.line if position is None else position.start.line

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if node.name.value != self.op.cls:
            return
        self.found_class = True
        self.class_node = node
        for member in node.body.body:
            if isinstance(member, cst.FunctionDef) and member.name.value == self.op.method:
                self.init = self.init_in_class = member
                self._plan(member)
        if self.init is None and self.op.override:
            self.init = cst.parse_statement(self.op.override)
            self._plan(self.init)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        """A class that only inherits the method gets the override, with the registration at its end; the helper
        method that holds the block goes right after the method that calls it."""
        if original.name.value == self.op.cls and self.helper_body and not self.done and not self.refusals:
            members = list(updated.body.body)
            at = next(
                i for i, m in enumerate(members) if isinstance(m, cst.FunctionDef) and m.name.value == self.op.method
            )
            members.insert(at + 1, self._helper_method())
            return updated.with_changes(body=updated.body.with_changes(body=members))
        if (
            original.name.value != self.op.cls
            or not self.op.override
            or self.done
            or self.refusals
            or any(isinstance(m, cst.FunctionDef) and m.name.value == self.op.method for m in original.body.body)
        ):
            return updated
        override = self.init.with_changes(
            body=self.init.body.with_changes(body=[*self.init.body.body, *self._block()]),
            leading_lines=[cst.EmptyLine(indent=False)],
        )
        self.count += 1
        return updated.with_changes(body=updated.body.with_changes(body=[*updated.body.body, override]))

    def _plan(self, init: cst.FunctionDef) -> None:
        statements = statements_in(init.body)
        helper = _helper_name(self.op.kernel_name)
        written = [init] + [
            m
            for m in self.class_node.body.body
            if isinstance(m, cst.FunctionDef) and (m.name.value == helper or m.name.value.startswith(f"{helper}_"))
        ]
        kernels = {self.op.kernel_name, self.alias} - {None}
        code = "\n".join(textwrap.dedent(code_of(m.with_changes(decorators=[], leading_lines=[]))) for m in written)
        if holds_call_like(ast.parse(code), self.op.call or self.op.registration, kernels):
            self.done = True  # migrated already (the call's arguments may read facts the method binds once)
            return
        if self.op.insert_after:
            matches = [s for s in statements if holds_anchor(first_line(s), self.op.insert_after)]
            if not matches:  # the fork rewrote or moved it: after what the registration reads, found below
                bases = base_calls(init, self.op.method)
                self.guessed = "the base initializer" if bases else "the constructor's start"
                self.anchor = (bases or init.body.body)[-1 if bases else 0]
            elif not self.op.register_on_return:  # it mirrors that recording: in its branch, as the recording is
                self.anchor = matches[0]
            else:
                self.anchor = outside_branches(init, matches[0], self._reads() | self.op.names)
            if matches and self.anchor is not matches[0]:
                self.warn(
                    matches[0],
                    f"insert_after {self.op.insert_after!r} is inside a branch or loop of "
                    f"{self.op.cls}.{self.op.method}: the registration goes after that statement, where every "
                    "construction reaches it once",
                )
        synthetic = self.op.override and init is not self.init_in_class
        arguments = {p.name.value for p in init.params.params + init.params.posonly_params + init.params.kwonly_params}
        # The method as a file of its own: its lines are the file's less a constant, so they order its
        # statements as the file does, without a pass over the file.
        lines = StatementLines(init)
        names = MethodBindings(lines.code, self.context.versions.code(self.context.wrapper.module), self.op.cls)
        self._after_what_it_reads(init, statements, lines)
        returns = [
            s
            for s in statements
            if isinstance(s, cst.SimpleStatementLine) and any(isinstance(small, cst.Return) for small in s.body)
        ]
        returns = self._past_unbound_returns(init, returns, lines)
        before = lines.end(self.anchor) if self.anchor else float("inf")
        self.exits = [s for s in returns if lines.start(s) < before] if self.op.register_on_return else []
        self._check_exits(init, statements, lines)
        if self.exits and not self.once and not synthetic:
            taken = {m.name.value for m in self.class_node.body.body if isinstance(m, cst.FunctionDef)}
            self.helper = next(n for i in range(1, 100) if (n := helper if i == 1 else f"{helper}_{i}") not in taken)
        before = min([before, *(lines.start(s) - 1 for s in self.exits)])
        self.needs_import = not names.bound(self.op.kernel_name, before)
        if self.needs_import and self.alias:
            self.needs_import = False  # the module imports the kernel under another name: use that one
            self.registration = renamed_in(self.registration, self.op.kernel_name, self.alias)
        for name in sorted(self.op.names - self.imported - {self.op.kernel_name}):
            if synthetic and name in arguments:
                continue  # a parameter of the override the class gets
            if not names.bound(name, before):
                self.refuse(
                    init,
                    f"{name} is not bound where the registration goes ({self.op.cls}.{self.op.method}); "
                    "add it to gate_imports or move insert_after",
                )

    def _past_unbound_returns(self, init: cst.FunctionDef, returns: list[cst.BaseStatement], lines) -> list:
        """The returns left once those of a later construction method (`bind_kv_cache`) above the base's call every
        path runs go: such a path binds nothing the registration reads, which goes after that call (at the end, as
        without them). Refused where a branch above calls the base too. A constructor registers on every path."""
        method = self.op.method
        if method == "__init__":
            return returns
        calls = base_calls(init, method)
        parent = next((s for s in calls if isinstance(s, cst.SimpleStatementLine)), None)  # every path runs it
        unbound = [s for s in returns if parent is not None and lines.start(s) < lines.start(parent)]
        if not unbound:
            return returns
        if any(lines.start(s) < lines.start(parent) for s in calls):
            self.refuse(
                calls[0],
                f"{self.op.cls}.{method} calls the base's {method} here, in a branch that may return, and again below "
                "for every path: no one place follows the binding on every path; migrate this method by hand",
            )
            return returns
        if self.anchor is not None and lines.end(self.anchor) < lines.end(parent):
            self.anchor = parent
        self.warn(
            unbound[0],
            f"{self.op.cls}.{method} returns here before the base's {method} runs: that path binds nothing the "
            "registration reads, and registers nothing",
        )
        return [s for s in returns if s not in unbound]

    def _after_what_it_reads(self, init: cst.FunctionDef, statements: list[cst.BaseStatement], lines) -> None:
        """Move the insertion point past the statement that first sets each `self.x` and each local of the method
        the registration and gate read, where the method sets it only below the anchor (so the registration never
        reads it before it exists)."""
        if self.anchor is None:
            return
        reads, assigned, _ = self._assignments(statements, lines)
        reads |= self.op.names
        anchor_end = lines.end(self.anchor)
        first = {name: min(assigned[name], key=lines.start) for name in reads if name in assigned}
        set_late = {name: s for name, s in first.items() if lines.start(s) > anchor_end}
        # The layer's attributes it reads that the method changes below the anchor (`self.norm.weight.data =
        # ...`, or a method of the class it calls): the legacy step read the built layer, so the registration
        # goes after the last change.
        changed = {}
        for statement in statements:
            if lines.start(statement) > anchor_end:
                for name in (changed_attributes(statement) | self._set_by_methods(statement)) & reads:
                    changed[name] = statement
        late = set_late | changed
        if self.guessed:
            self._say_where(late, lines)
            if not late and self.guessed != "the base initializer":
                self.anchor = None  # nothing it reads is set here: the end of the constructor, as with no anchor
        if not late:
            return
        self.anchor = outside_branches(init, max(late.values(), key=lines.start), reads)
        if any(isinstance(s, (cst.For, cst.While)) for s in holders(init, self.anchor)):
            self.refuse(
                self.anchor,
                f"the registration reads {', '.join(sorted(late))}, which {self.op.cls}.{self.op.method} first sets "
                "inside a loop, below insert_after: it would register once per iteration; move insert_after or "
                "migrate this constructor by hand",
            )
            return
        if self.guessed:
            return
        said = [f"sets only below insert_after {self.op.insert_after!r}"] if set_late else []
        said += [f"changes below insert_after {self.op.insert_after!r}"] if set(changed) - set(set_late) else []
        self.warn(
            self.anchor,
            f"the registration reads {', '.join(sorted(late))}, which {self.op.cls}.{self.op.method} "
            f"{' and '.join(said)}: it goes after this statement instead",
        )

    def _reads(self) -> set[str]:
        """The `self.x` the registration and its gates (outside the block and inside it) read."""
        code = "\n".join([self.op.registration, self.op.gate or "", self.op.inner_gate or ""])
        tree = cst.parse_module(code)
        looked_up = {  # getattr(self, "x", ...) and hasattr(self, "x")
            arguments[1].value.evaluated_value
            for call in nodes(tree, cst.Call)
            if m.matches(call.func, m.Name("getattr") | m.Name("hasattr"))
            and len(arguments := call.args) >= 2
            and is_self(arguments[0].value)
            and isinstance(arguments[1].value, cst.SimpleString)
        }
        return {f"self.{n.attr.value}" for n in nodes(tree, cst.Attribute) if is_self(n.value)} | {
            f"self.{name}" for name in looked_up
        }

    def _assignments(self, statements: list[cst.BaseStatement], lines):
        """The `self.x` the registration and gate read; the statements of the method that assign each `self.x` and
        each local name (by that name); the lines that call a base `__init__`."""
        reads = self._reads()
        assigned: dict[str, list[cst.BaseStatement]] = {}
        base_init = []
        for statement in (s for s in statements if isinstance(s, cst.SimpleStatementLine)):
            if any(calls_parent(node, self.op.method) for node in nodes(statement, cst.Call)):
                base_init.append(lines.start(statement))
            for name in assigned_names(statement) | self._set_by_methods(statement):
                assigned.setdefault(name, []).append(statement)
        return reads, assigned, base_init

    def _set_by_methods(self, statement: cst.BaseStatement) -> set[str]:
        """The `self.x` that methods of the class the statement calls on `self` assign (`self._build_norm()`)."""
        called = {
            call.func.attr.value
            for call in nodes(statement, cst.Call)
            if isinstance(call.func, cst.Attribute) and is_self(call.func.value)
        }
        return set().union(*(self._set_by_method(name) for name in called))

    def _set_by_method(self, name: str) -> set[str]:
        """The `self.x` the class's methods of that name change (`changed_attributes`: `self.norm.activation = ...`
        changes `self.norm`), each read once: every statement of a constructor asks."""
        key = (id(self.class_node), name)
        if key not in self._set_by:
            methods = [m for m in self.class_node.body.body if isinstance(m, cst.FunctionDef) and m.name.value == name]
            lines = [line for method in methods for line in nodes(method, cst.SimpleStatementLine)]
            self._set_by[key] = set().union(*map(changed_attributes, lines))
        return self._set_by[key]

    def _say_where(self, late: dict, lines) -> None:
        """The warning for a block placed without its anchor: where it goes, and why there."""
        missing = f"{self.op.cls}.{self.op.method} has no statement starting with {self.op.insert_after!r}"
        if late:
            last = max(late.values(), key=lines.start)
            self.warn(
                last,
                f"{missing}: the registration goes after this statement, the last that sets {', '.join(sorted(late))}",
            )
        elif self.guessed == "the base initializer":
            self.warn(self.anchor, f"{missing}: the registration goes after the base initializer")
        else:
            self.warn(self.anchor, f"{missing}: the registration goes at the end of {self.op.method}")

    def _check_exits(self, init: cst.FunctionDef, statements: list[cst.BaseStatement], lines) -> None:
        """Every path of the constructor must reach the registration. Where everything it reads is set before the
        statement holding the first `return` above the insertion point, it goes before that statement, once; else
        also before each such `return`, which is refused where what it reads is not yet set there."""
        if not self.exits:
            return
        reads, statements_assigning, base_init = self._assignments(statements, lines)
        reads |= self.op.names
        assigned = {a: [lines.start(s) for s in found] for a, found in statements_assigning.items()}

        def late_at(line: int) -> list[str]:
            late = sorted(a for a in reads if a in assigned and min(assigned[a]) >= line)
            attributes = {a for a in reads if a.startswith("self.")}
            if not late and base_init and min(base_init) >= line and attributes - set(assigned):
                late = sorted(attributes - set(assigned))  # set by the base initializer, which has not run yet
            return late

        first = min(self.exits, key=lines.start)
        holder = top_level(init, first)
        if not late_at(lines.start(holder)) and quiet_between(init, holder, self.anchor, reads):
            self.exits, self.anchor, self.once = [holder], None, True
            return
        for exit_ in self.exits:
            late = late_at(lines.start(exit_))
            if late:
                self.refuse(
                    exit_,
                    f"{self.op.cls}.{self.op.method} returns here, before the registration, and the "
                    f"registration reads {', '.join(late)}, not set yet at this return: "
                    "every path must register, so move insert_after above this return or migrate "
                    "this constructor by hand",
                )

    def leave_IndentedBlock(self, original, updated):
        if self.done or self.refusals or self.init is None:
            return updated
        exits = {id(statement) for statement in self.exits}
        at_end = self.anchor is None and original is self.init.body and not self.once
        if not at_end and not any(s is self.anchor or id(s) in exits for s in original.body):
            return updated
        body, block = [], []
        for before, after in zip(original.body, updated.body):
            if id(before) in exits:  # a return that would skip the registration: it runs first
                body += self._block(before_return=True)
            if body and body[-1] is self.block and (not after.leading_lines or after.leading_lines[0].comment):
                after = after.with_changes(leading_lines=[cst.EmptyLine(indent=False), *after.leading_lines])
            body.append(after)
            if before is self.anchor:
                body += (block := self._block())
        if at_end and not (original.body and id(original.body[-1]) in exits):
            body += (block := self._block())
        if block and not self.exits and not self.helper:  # one block: what it binds is shared with those above
            holder = None if original is self.init.body else top_level(self.init, self.anchor)
            body, block = share_facts(body, block, self.init, self._changes, holder)
            self.block = block[-1]
            # What runs after the block: the rest of its body, then what follows the statement that holds it.
            top = list(self.init.body.body)
            after = list(original.body[original.body.index(self.anchor) + 1 :]) if self.anchor in original.body else []
            after += top[top.index(holder) + 1 :] if holder is not None else []
            for name, statement in clobbered(block, after):
                self.refuse(
                    statement,
                    f"the registration binds `{name}`, which {self.op.cls}.{self.op.method} reads here, after it: "
                    "the method would read the registration's value; rename it in the registration's code",
                )
        self.count += 1
        return updated.with_changes(body=self._joined(body))

    def _joined(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """The gated block joined with an `if` right before or after it on the same test (another kernel's
        registration under the same gate), as one would write both: one `if`, both registrations inside. Where the
        block comes second, a local it binds as the first already did is bound once (registrations of kernels
        launched together read the same facts)."""
        index = next((i for i, statement in enumerate(body) if statement is self.block), None)
        if index is None or not isinstance(self.block, cst.If):
            return body
        for first, second in ((index - 1, index), (index, index + 1)):
            if first >= 0 and second < len(body) and same_gate(body[first], body[second]):
                return [
                    *body[:first],
                    one_if(body[first], body[second], body[second] is self.block),
                    *body[second + 1 :],
                ]
        return body

    def _block(self, before_return: bool = False) -> list[cst.BaseStatement]:
        """What goes at one place: the block, or a call of the helper method that holds it (right above a
        `return`, else after a blank line)."""
        if not self.helper:
            return self._statements()
        if not self.helper_body:
            self.helper_body = self._statements()
            self.helper_args = locals_read(cst.Module(body=self.helper_body).code, self.init)
        call = cst.parse_statement(f"self.{self.helper}({', '.join(self.helper_args)})\n")
        if before_return:
            return [call]
        self.block = call.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        return [self.block]

    def _helper_method(self) -> cst.FunctionDef:
        """`def <helper>(self, <locals>) -> None:` holding the block."""
        body = [self.helper_body[0].with_changes(leading_lines=[]), *self.helper_body[1:]]
        method = cst.parse_statement(
            f"def {self.helper}({', '.join(['self', *self.helper_args])}) -> None:\n    pass\n"
        )
        return method.with_changes(
            body=method.body.with_changes(body=body), leading_lines=[cst.EmptyLine(indent=False)]
        )

    def _statements(self) -> list[cst.BaseStatement]:
        # Blank lines of the registration stay blank inside the block (no indentation on them).
        body = [
            statement.with_changes(
                leading_lines=[line.with_changes(indent=line.comment is not None) for line in statement.leading_lines]
            )
            for statement in cst.parse_module(self.registration.strip() + "\n").body
        ]
        lazy = [cst.parse_statement(line + "\n") for line in self.op.inner_imports]
        # The registration may import the kernel itself, where it uses it (inside its own `if`).
        needs_import = self.needs_import and self.op.kernel_name not in imported_in(self.registration)
        if needs_import and self.op.lazy:
            if not self._import_beside(lazy) and not self._import_beside(body):
                lazy.insert(0, cst.parse_statement(f"from {self.op.kernel_module} import {self.op.kernel_name}\n"))
        elif needs_import:
            AddImportsVisitor.add_needed_import(self.context, self.op.kernel_module, self.op.kernel_name)
        if self.op.inner_gate:
            body = [
                cst.If(
                    test=cst.parse_expression(self.op.inner_gate),
                    body=cst.IndentedBlock(body=body),
                    leading_lines=[cst.EmptyLine(indent=False)] if lazy else [],
                )
            ]
        if lazy and not _imports(body[0]) and not (body[0].leading_lines and not body[0].leading_lines[0].comment):
            # A blank line after the imports, as ruff's formatter writes it (the formatter has nothing left to do).
            body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine(indent=False), *body[0].leading_lines])
        body = lazy + body
        for line in self.op.gate_imports:  # `from m import n [as a]`, or `import m [as a]` (a module the gate reads)
            statement = cst.parse_statement(line + "\n").body[0]
            home = get_full_name_for_node(statement.module) if isinstance(statement, cst.ImportFrom) else None
            for alias in statement.names:
                name, asname = get_full_name_for_node(alias.name), alias.asname and alias.asname.name.value
                AddImportsVisitor.add_needed_import(self.context, *((home, name) if home else (name, None)), asname)
        if self.op.gate.strip():
            self.block = cst.If(
                test=cst.parse_expression(self.op.gate),
                body=cst.IndentedBlock(body=body),
                leading_lines=[cst.EmptyLine(indent=False)],
            )
            return [self.block]
        # No gate: the statements themselves, the first after a blank line.
        body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine(indent=False), *body[0].leading_lines])
        self.block = body[-1]
        return body

    def _changes(self, statement: cst.BaseStatement) -> set[str]:
        """The `self.x` a statement changes at any depth, itself or through a method of the class it calls."""
        inner = statements_in(statement)
        return set().union(*(changed_attributes(s) for s in inner)) | self._set_by_methods(statement)

    def _import_beside(self, statements: list[cst.BaseStatement]) -> bool:
        """Add the kernel's name to a `from <kernel module> import a, b` among the statements (in name order), as
        isort would combine them (a name imported `as` another stays apart); False when there is none."""
        for index, statement in enumerate(statements):
            found = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
            if not (
                isinstance(found, cst.ImportFrom)
                and not found.relative
                and not isinstance(found.names, cst.ImportStar)
                and not any(alias.asname for alias in found.names)
                and get_full_name_for_node(found.module) == self.op.kernel_module
            ):
                continue
            if any(get_full_name_for_node(alias.name) == self.op.kernel_name for alias in found.names):
                return True  # the block imports it already
            names = [alias.with_changes(comma=cst.MaybeSentinel.DEFAULT) for alias in found.names]
            names.append(cst.ImportAlias(cst.Name(self.op.kernel_name)))
            names.sort(key=lambda alias: get_full_name_for_node(alias.name))
            if found.lpar:  # parenthesized: the trailing comma kept
                names[-1] = names[-1].with_changes(comma=cst.Comma())
            statements[index] = statement.with_changes(body=[found.with_changes(names=names)])
            return True
        return False

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        for line in tree.body:  # a top-level `from <kernel module> import <kernel> as <alias>`
            for statement in line.body if isinstance(line, cst.SimpleStatementLine) else ():
                if (
                    isinstance(statement, cst.ImportFrom)
                    and not isinstance(statement.names, cst.ImportStar)
                    and self.import_source(statement) == self.op.kernel_module
                ):
                    self.alias = next(
                        (
                            a.asname.name.value
                            for a in statement.names
                            if a.asname is not None and get_full_name_for_node(a.name) == self.op.kernel_name
                        ),
                        self.alias,
                    )
        with walks_kept():
            module = super().transform_module_impl(tree)
        if not self.found_class:
            raise AnchorError(f"class {self.op.cls} not found")
        if self.init is None:
            raise AnchorError(f"class {self.op.cls} has no {self.op.method}")
        if self.anchor is not None and not (self.done or self.refusals or self.count):
            self.refuse(
                self.anchor,
                f"insert_after {self.op.insert_after!r} matches a statement that is not in an indented block",
            )
        return module


def _helper_name(kernel: str) -> str:
    """The name of the method that holds a registration written at several places: `_register_<kernel>_warmup`."""
    base = kernel.strip("_").lower()
    for suffix in ("_kernel", "_dispatch"):
        base = base.removesuffix(suffix)
    return f"_register_{base}_warmup"


def _imported_names(line: str) -> set[str]:
    statement = cst.parse_statement(line + "\n").body[0]
    return {
        alias.asname.name.value if alias.asname else get_full_name_for_node(alias.name) for alias in statement.names
    }


def _imports(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Import | cst.ImportFrom)
