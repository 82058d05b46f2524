"""A registration that mirrors a recording (`early_returns = "skip"`): the method records, at `insert_after`, what
the legacy warmup read (`self.dtypes.add(dtype)` in `GemmRsAr.can_run`), and registers right there.

That is only the legacy warmup's key space when the recording is the one way into what it read: one statement of
the method records, and every other statement of the class that changes that attribute only starts it empty. A
second recording, one of another method, or a start with values the legacy warmup read too, is refused at its
line (registering there is a hand's job: the spec names one place).
"""

from __future__ import annotations

import ast

from .. import syntax

EMPTY = {"set", "dict", "list", "frozenset", "tuple"}  # `self.x = set()` starts it empty


def problems(home_text: str, cls: ast.ClassDef, method: ast.FunctionDef, anchor: str) -> list[tuple[int, str]]:
    """(line, why) for each way the registration at `anchor` in `cls.method` would not mirror the recording."""
    lines = syntax.source_lines(home_text)
    matches = [s for s in syntax.statements(method) if isinstance(s, ast.stmt) and _holds(lines, s, anchor)]
    where = f"{cls.name}.{method.name}"
    if not matches:
        return [
            (
                method.lineno,
                f"no statement of {where} starts with {anchor!r} (insert_after): the registration mirrors that "
                "recording of what the legacy warmup read, and without it no place is known",
            )
        ]
    found = [
        (s.lineno, f"{where} records here too ({anchor!r}): the registration goes at one recording; register at each")
        for s in matches[1:]
    ]
    recorded = _changed(matches[0])
    if recorded is None:
        return found
    for member in (m for m in cls.body if isinstance(m, ast.FunctionDef)):
        for statement in syntax.statements(member):
            if not isinstance(statement, ast.stmt) or statement in matches or _changed(statement) != recorded:
                continue
            if not _starts_empty(statement):
                found.append(
                    (
                        statement.lineno,
                        f"{cls.name}.{member.name} changes self.{recorded} here, which the legacy warmup read and the "
                        f"registration at {anchor!r} does not mirror",
                    )
                )
    return found


def _holds(lines: list[str], statement: ast.stmt, anchor: str) -> bool:
    return not isinstance(statement, (ast.FunctionDef, ast.ClassDef)) and syntax.holds_anchor(
        lines[statement.lineno - 1], anchor
    )


def _changed(statement: ast.stmt) -> str | None:
    """The `self.x` a simple statement changes: assigns (`self.x = ...`, `self.x[k] = ...`, `self.x |= ...`) or
    calls a method of (`self.x.add(...)`)."""
    if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            target = target.value if isinstance(target, ast.Subscript) else target
            if _self_attribute(target):
                return target.attr
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        if isinstance(func, ast.Attribute) and _self_attribute(func.value):
            return func.value.attr
    return None


def _self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _starts_empty(statement: ast.stmt) -> bool:
    value = getattr(statement, "value", None)
    if isinstance(statement, ast.AugAssign) or not isinstance(statement, (ast.Assign, ast.AnnAssign)):
        return False
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in EMPTY:
        return not value.args and not value.keywords
    return isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set)) and not getattr(
        value, "elts", getattr(value, "keys", None)
    )
