"""Blocks: what holds no statement, and blocks put back together after statements left them."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

# What holds no statement (nor a class or an import inside one): a pass over statements need not look inside.
NO_STATEMENTS = (
    cst.SimpleStatementLine,
    cst.SimpleStatementSuite,
    cst.BaseExpression,
    cst.Parameters,
    cst.Decorator,
    cst.Arg,
    cst.Annotation,
)


class Rebuilder:
    """Puts a block back together after statements were removed from it: gaps and comments as a reviewer would.

    A comment directly above a removed statement goes with it when nothing follows in its
    block, a blank line separates it from what follows, or what follows has a comment of its
    own; otherwise it stays, introducing the next statement (unless the remover says the removed statements own
    their comments). Section comments (above a blank line) stay. The next statement takes the wider of the two
    gaps (none at the start of a block).
    """

    def __init__(self, moved: bool = False, owns_comments: bool = False):
        """`moved`: the removed statements live on elsewhere with their comments (a lift's dispatcher copies them),
        so only their gap stays. `owns_comments`: a comment directly above a removed statement is about it, or
        about the removed code it was computed for (a local nothing reads any more), and goes with it."""
        self.removed: dict[int, Sequence[cst.EmptyLine]] = {}
        self.moved, self.owns_comments = moved, owns_comments

    def note(self, original: cst.CSTNode) -> None:
        self.removed[id(original)] = getattr(original, "leading_lines", ())

    def rebuild(self, original_body: Sequence[cst.CSTNode], updated_body: Sequence[cst.CSTNode]) -> list:
        kept = iter(updated_body)
        result: list = []
        pending: list[Sequence[cst.EmptyLine]] = []
        for statement in original_body:
            if id(statement) in self.removed:
                pending.append(self.removed[id(statement)])
                continue
            node = next(kept)
            if pending and hasattr(node, "leading_lines"):
                node = node.with_changes(
                    leading_lines=_merge_leading(
                        pending, node.leading_lines, not result, self.moved, self.owns_comments
                    )
                )
            pending = []
            result.append(node)
        return result


class RebuildsBlocks:
    """For a transformer that removes statements and notes each in `self.rebuilder`: every block is rebuilt."""

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self.rebuilder.rebuild(original.body, updated.body))

    leave_IndentedBlock = leave_Module


def empty(block: cst.BaseSuite) -> bool:
    return not block.body


def with_pass(node):
    """A block that must stay (a def, a handler) keeps a `pass` when emptied."""
    if isinstance(node.body, cst.IndentedBlock) and not node.body.body:
        return node.with_changes(body=node.body.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])]))
    if isinstance(node.body, cst.SimpleStatementSuite) and not node.body.body:
        return node.with_changes(body=node.body.with_changes(body=[cst.Pass()]))
    return node


def _merge_leading(
    removed: list[Sequence[cst.EmptyLine]],
    own: Sequence[cst.EmptyLine],
    block_start: bool,
    moved: bool,
    owns_comments: bool,
) -> list[cst.EmptyLine]:
    """Leading lines of the statement after removed ones: section comments stay (unless the statements `moved`
    with their comments), the gap is the wider one."""

    def split(lines):
        blank = 0
        while blank < len(lines) and lines[blank].comment is None:
            blank += 1
        last_blank = max((i for i, line in enumerate(lines) if line.comment is None), default=-1)
        return (
            list(lines[:blank]),
            [line for line in lines[blank : last_blank + 1] if line.comment],
            list(lines[last_blank + 1 :]),
        )

    own_gap, _, _ = split(own)
    follows_directly = not own  # a next statement with a comment of its own is introduced by that comment
    gap, kept = split(removed[0])[0], []
    for index, lines in enumerate([] if moved else removed):
        _, section, direct = split(lines)
        kept += section
        if index == len(removed) - 1 and follows_directly and not owns_comments:
            kept += direct  # it introduced the code after the call: it stays with that code
    if block_start:
        gap = []
    elif len(own_gap) >= len(gap):
        gap = own_gap
    return [*gap, *kept, *own[len(own_gap) :]]
