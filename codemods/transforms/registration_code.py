"""The registration's code as the planner adapts it to a site before insert_registration writes it: a name read
under the site's alias, the search's filters joined into its own `if`, keywords added to its calls."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m

from .constructor import nodes


class _RenameReads(cst.CSTTransformer):
    """Every name `old` read as `new`; attribute names and keyword names are not names and stay."""

    def __init__(self, old: str, new: str):
        super().__init__()
        self.old, self.new = old, new

    def leave_Name(self, original, updated):
        return updated.with_changes(value=self.new) if updated.value == self.old else updated

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)


def renamed_in(code: str, old: str, new: str) -> str:
    """`code` with every read of the name `old` as `new` (attributes and keywords of that name stay)."""
    return cst.parse_module(code).visit(_RenameReads(old, new)).code


def joined_into_registration_if(code: str, conditions: Sequence[str]) -> str | None:
    """`code` with `conditions` added, in order, at the end of the innermost `if` around all its `register_warmup`
    calls, each on a line of its own where the test puts its conditions on lines of their own (None: no `if`
    holds them all)."""
    module = cst.parse_module(code)
    calls = code.count("register_warmup(")
    holders = [n for n in nodes(module, cst.If) if module.code_for_node(n.body).count("register_warmup(") == calls]
    if not holders:
        return None
    target = holders[-1]  # pre-order: each holder of them all is inside the ones before it
    test = target.test
    joiner = test.operator if isinstance(test, cst.BooleanOperation) else cst.And()
    joined = test.with_changes(lpar=[], rpar=[])
    for condition in conditions:
        operator = cst.And(whitespace_before=joiner.whitespace_before, whitespace_after=joiner.whitespace_after)
        joined = cst.BooleanOperation(joined, operator, cst.parse_expression(condition))
    replaced = target.with_changes(test=joined.with_changes(lpar=test.lpar, rpar=test.rpar))
    return module.deep_replace(target, replaced).code


def with_keywords(code: str, keywords: dict[str, str]) -> str:
    """`code` with `name=value` passed last to each of its `register_warmup` calls, laid out as its arguments are."""

    class Pass(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
            if not m.matches(updated.func, m.Attribute(attr=m.Name("register_warmup"))):
                return updated
            args = list(updated.args)
            for name, value in keywords.items():
                between = args[-2].comma if len(args) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                added = cst.Arg(
                    cst.parse_expression(value),
                    keyword=cst.Name(name),
                    equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                    comma=args[-1].comma if args else cst.MaybeSentinel.DEFAULT,
                    whitespace_after_arg=args[-1].whitespace_after_arg if args else cst.SimpleWhitespace(""),
                )
                last = (
                    args[-1].with_changes(comma=between, whitespace_after_arg=cst.SimpleWhitespace(""))
                    if args
                    else None
                )
                args = [*args[:-1], last, added] if args else [added]
            return updated.with_changes(args=args)

    return cst.parse_module(code).visit(Pass()).code


def without_keywords(code: str, names: set[str]) -> str:
    """`code` with the keywords `names` no longer passed to its `register_warmup` calls (the last argument kept
    keeps the removed last one's comma and layout)."""

    class Pass(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
            if not m.matches(updated.func, m.Attribute(attr=m.Name("register_warmup"))):
                return updated
            kept = [arg for arg in updated.args if arg.keyword is None or arg.keyword.value not in names]
            if kept and kept[-1] is not updated.args[-1]:
                last = updated.args[-1]
                kept[-1] = kept[-1].with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
            return updated.with_changes(args=kept)

    return cst.parse_module(code).visit(Pass()).code
