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
on the same rule). Lines are what Python counts as lines: a form feed in a comment is not a
line end here, as it is for `str.splitlines`.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re
from collections.abc import Callable, Sequence

from ..syntax import source_lines
from .metadata import binds_outside

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_MARK = "zerojit:outlined"
_MARKER = re.compile(rf"^[ \t]*\.\.\.  # {_MARK}:(\d+)\n?$")

# keeps(function, holders, code): whether an operation reads or edits `function` (holders: the classes around
# it, innermost last; code(node): a node's lines as the file has them).
Keeps = Callable[[ast.FunctionDef | ast.AsyncFunctionDef, tuple[ast.ClassDef, ...], Callable[[ast.AST], str]], bool]


@dataclasses.dataclass(frozen=True)
class Outline:
    text: str
    bodies: tuple[str, ...]  # the lines marker i stands for

    @classmethod
    def of(cls, source: str, keeps: Sequence[Keeps]) -> Outline | None:
        """The outline that keeps every function one of `keeps` takes; None when there is nothing to leave out (or
        the text holds a marker already, has a line end but `\\n` or none at its end, or does not parse)."""
        if _MARK in source or "\r" in source or not source.endswith("\n"):
            return None
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None  # the transform's own parse says where
        file_lines = source_lines(source, keepends=True)

        def code(node: ast.AST) -> str:
            return "".join(file_lines[node.lineno - 1 : node.end_lineno])

        spans: list[tuple[int, int, str]] = []  # (first, last) line of each body left out, and its indentation

        def visit(body: list[ast.stmt], holders: tuple[ast.ClassDef, ...]) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    visit(node.body, (*holders, node))
                elif isinstance(node, _FUNCTIONS) and not any(keep(node, holders, code) for keep in keeps):
                    first = node.body[0]
                    indent = file_lines[first.lineno - 1][: first.col_offset]
                    # A body that starts on its header's line (`def f(): ...`) is short: it stays.
                    if first.lineno > node.lineno and not indent.strip() and not binds_outside(code(node)):
                        spans.append((first.lineno, node.end_lineno, indent))

        visit(tree.body, ())
        if not spans:
            return None
        text, bodies, line = [], [], 1
        for index, (first, last, indent) in enumerate(spans):
            text += file_lines[line - 1 : first - 1]
            bodies.append("".join(file_lines[first - 1 : last]))
            text.append(f"{indent}...  # {_MARK}:{index}\n")
            line = last + 1
        text += file_lines[line - 1 :]
        return cls("".join(text), tuple(bodies))

    def expand(self, code: str) -> tuple[str, Callable[[int], int]] | None:
        """The file's text for an edited outline's `code`, each body back in place of its marker, and the text's line
        for each line of the code (a marker's: its body's last); None when the edit moved, copied or dropped a
        marker (the file is then edited whole)."""
        text, at, shift = [], [], [0]  # shift[i]: how many lines the text has more than the code below marker i
        for number, line in enumerate(source_lines(code, keepends=True), 1):
            marker = _MARKER.match(line) if _MARK in line else None
            if marker is None:
                text.append(line)
            elif int(marker.group(1)) != len(at):
                return None
            else:
                text.append(self.bodies[len(at)])
                at.append(number)
                shift.append(shift[-1] + len(source_lines(text[-1], keepends=True)) - 1)
        if len(at) != len(self.bodies):
            return None
        return "".join(text), lambda line: line + shift[bisect.bisect_right(at, line)]
