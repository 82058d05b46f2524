"""A file's outline for its operations: the text with the body of every function none of them reads replaced by a
marker line, so that libcst parses, walks and prints only what the edit needs; the edited outline with those
bodies put back is the edited file.

An edit confined to a few methods (a registration in a big model file) pays for the whole file's
parse otherwise, which is most of its cost. The outline is made with `ast` (many times faster
than libcst), by whole lines: a marker stands for the lines from a function's first statement
to its last, so everything else (headers, decorators, comments between functions) keeps its
text and its place. Only a `global` or `nonlocal` declaration lets a function's body bind a
name outside it, so a function that may declare one is kept, and the outline binds everywhere
outside the outlined bodies what the file binds (transforms/metadata.py's outline_scopes rests
on the same rule).
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re
from collections.abc import Callable, Sequence

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BINDS_OUTSIDE = re.compile(r"\b(global|nonlocal)\b")
_MARK = "zerojit:outlined"
_MARKER = re.compile(rf"^[ \t]*\.\.\.  # {_MARK}:(\d+)\r?\n?$")

# keeps(function, holders, code): whether an operation reads or edits `function` (holders: the classes around
# it, innermost last; code(node): a node's lines as the file has them).
Keeps = Callable[[ast.FunctionDef | ast.AsyncFunctionDef, tuple[ast.ClassDef, ...], Callable[[ast.AST], str]], bool]


@dataclasses.dataclass(frozen=True)
class Outline:
    text: str
    bodies: tuple[str, ...]  # the lines marker i stands for
    at: tuple[int, ...]  # the outline's line of marker i (1-based, in order)
    shift: tuple[int, ...]  # how many lines the file has more than the outline below marker i

    @classmethod
    def of(cls, source: str, keeps: Sequence[Keeps]) -> Outline | None:
        """The outline that keeps every function one of `keeps` takes; None when there is nothing to leave out (or
        the text holds a marker already, or does not parse)."""
        if _MARK in source or "\r" in source:
            return None  # (a marker line ends in "\n": a file with other line ends is edited whole)
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None  # the transform's own parse says where
        lines = source.splitlines(keepends=True)

        def code(node: ast.AST) -> str:
            return "".join(lines[node.lineno - 1 : node.end_lineno])

        spans: list[tuple[int, int, str]] = []  # (first, last) line of each body left out, and its indentation

        def visit(body: list[ast.stmt], holders: tuple[ast.ClassDef, ...]) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    visit(node.body, (*holders, node))
                elif isinstance(node, _FUNCTIONS) and not any(keep(node, holders, code) for keep in keeps):
                    first = node.body[0]
                    indent = lines[first.lineno - 1][: first.col_offset]
                    # A body that starts on its header's line (`def f(): ...`) is short: it stays.
                    if first.lineno > node.lineno and not indent.strip() and not _BINDS_OUTSIDE.search(code(node)):
                        spans.append((first.lineno, node.end_lineno, indent))

        visit(tree.body, ())
        if not spans:
            return None
        text, bodies, at, shift, line = [], [], [], [], 1
        for index, (first, last, indent) in enumerate(spans):
            text += lines[line - 1 : first - 1]
            at.append(len(text) + 1)
            text.append(f"{indent}...  # {_MARK}:{index}\n")
            bodies.append("".join(lines[first - 1 : last]))
            shift.append((shift[-1] if shift else 0) + last - first)
            line = last + 1
        text += lines[line - 1 :]
        return cls("".join(text), tuple(bodies), tuple(at), tuple(shift))

    def restore(self, code: str) -> str | None:
        """The edited outline's text with each body back in place of its marker; None when the edit moved, copied or
        dropped a marker (the file is then edited whole)."""
        restored, seen = [], []
        for line in code.splitlines(keepends=True):
            marker = _MARKER.match(line) if _MARK in line else None
            if marker:
                seen.append(int(marker.group(1)))
                restored.append(self.bodies[seen[-1]])
            else:
                restored.append(line)
        return "".join(restored) if seen == list(range(len(self.bodies))) else None

    def line(self, line: int) -> int:
        """The file's line for a line of the outline."""
        below = bisect.bisect_left(self.at, line)  # markers above `line`
        return line + (self.shift[below - 1] if below else 0)
