"""Whether a name is bound at a line of a method, from Python's own symbol tables.

The registration's block reads names (the kernel, the gate's imports and locals); each must be
bound where the block goes: a parameter, a local assigned above it, a name of the module or an
enclosing function, or a builtin. CPython's `symtable` answers which of these a name is, and
`ast` where a local is assigned, both at C speed: libcst's ScopeProvider gives the same answer
(tests/test_bindings.py checks it on real files) at many times the cost of the edit itself.
"""

from __future__ import annotations

import ast
import builtins
import symtable
from collections.abc import Iterator

from ..syntax import module_names

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_FUNCTIONS, ast.Lambda, ast.ClassDef)


class MethodBindings:
    """The names a method of class `cls` sees. `function_code`: the method alone as a module (its lines are the
    ones `bound` is asked about); `module_code`: the file that holds the class."""

    def __init__(self, function_code: str, module_code: str, cls: str):
        table = symtable.symtable(function_code, "<method>", "exec")
        self.method = next(t for t in table.get_children() if t.get_type() == "function")
        self.definition = next(n for n in ast.parse(function_code).body if isinstance(n, _FUNCTIONS))
        module = symtable.symtable(module_code, "<module>", "exec")
        self.outside = module_names(module) | _enclosing_names(module, cls)

    def bound(self, name: str, before: float) -> bool:
        """Bound on the method's line `before`: a parameter, a local first assigned at or above it, or a name of
        the module, an enclosing function or builtins."""
        try:
            symbol = self.method.lookup(name)
        except KeyError:  # the method never mentions it
            symbol = None
        if symbol is not None and symbol.is_parameter():
            return True
        if symbol is not None and symbol.is_local():
            return any(line <= before for line in _assignment_lines(self.definition, name))
        return name in self.outside or hasattr(builtins, name)  # read from outside the method (or declared global)


def _enclosing_names(table: symtable.SymbolTable, cls: str, around: tuple[symtable.SymbolTable, ...] = ()) -> set[str]:
    """The names the functions around a class named `cls` bind (its methods see them), where one is nested."""
    names: set[str] = set()
    for child in table.get_children():
        if child.get_type() == "class" and child.get_name() == cls:
            names |= {s.get_name() for t in around for s in t.get_symbols() if s.is_local() or s.is_parameter()}
        inner = (*around, child) if child.get_type() == "function" else around
        names |= _enclosing_names(child, cls, inner)
    return names


def _assignment_lines(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> Iterator[int]:
    """The lines where `function`'s own scope binds `name` (not its nested functions', classes' or
    comprehensions' scopes; a walrus inside a comprehension binds in the function)."""
    pending: list[ast.AST] = [*function.body]
    while pending:
        node = pending.pop()
        if isinstance(node, _SCOPES):
            if getattr(node, "name", None) == name:
                yield min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if not isinstance(node, ast.Lambda):
                pending += node.decorator_list
            continue
        if isinstance(node, ast.comprehension):
            pending += [node.iter, *node.ifs]  # its target is the comprehension's own
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            yield node.lineno
        elif isinstance(node, ast.AnnAssign) and node.value is None:
            continue  # an annotation alone binds nothing
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names):
                yield node.lineno
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name == name:
            yield node.lineno
        elif isinstance(node, ast.MatchMapping) and node.rest == name:
            yield node.lineno
        pending += ast.iter_child_nodes(node)
