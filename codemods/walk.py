"""What can run of a legacy warmup: its body, the engine functions it calls or passes on, and the methods of the
engine objects it calls, each read to what can run of it.

A function called with constants is read with them (codemods.reachable: a branch they decide, a block that
always returns); one referenced but not called (a callback) with nothing known. An engine object's class comes
from codemods.objects; calling the object runs what the engine says it runs. The walk goes FOLLOW_DEPTH modules
away from the warmup's (a module's own helpers cost nothing) and stops at kernels: the survey looks for kernels
in it, codemods.classify for the work that is not a compile key.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import NamedTuple

from . import objects
from .compile_units import target
from .reachable import call_arguments, reachable
from .repo import RepoModules

FOLLOW_DEPTH = 4  # modules away from the warmup's that the walk still reads (a CustomOp's base costs one)


class Step(NamedTuple):
    """A function the walk of a warmup reaches."""

    module: str
    owner: tuple[str, str] | None  # the class of `self` where it is a method
    function: ast.FunctionDef
    nodes: list[ast.AST]  # what can run of it


class Walk:
    def __init__(self, modules: RepoModules, is_kernel: Callable[[str, str], bool]):
        """`is_kernel(module, name)`: a definition the walk stops at (the survey's kernels)."""
        self.modules, self.is_kernel = modules, is_kernel
        self._steps: dict[int, list[Step]] = {}

    def steps(self, module: str, function: ast.FunctionDef, owner: tuple[str, str] | None = None) -> list[Step]:
        """The walk from `function` of `module` (a method of `owner`), walked once."""
        if id(function) in self._steps:
            return self._steps[id(function)]
        steps: list[Step] = []
        pending, visited = [(module, owner, function, {}, 0)], set()
        while pending:
            current, cls, node, known, depth = pending.pop(0)
            key = (id(node), cls, tuple(sorted((k, type(v).__name__, repr(v)) for k, v in known.items())))
            if key in visited:
                continue
            visited.add(key)
            step = Step(current, cls, node, reachable(node, known))
            steps.append(step)
            for home, held, followed, arguments in self._followed(step) if depth < FOLLOW_DEPTH else ():
                pending.append((home, held, followed, arguments, depth + (home != current)))
        self._steps[id(function)] = steps
        return steps

    def references(
        self, module: str, function: ast.FunctionDef, nodes: list[ast.AST]
    ) -> Iterator[tuple[ast.AST, tuple[str, str]]]:
        """Each of `nodes` that names an engine definition (through a module looked up by name too), with it."""
        by_string = self.modules.modules_by_string(module, function)
        for ref in nodes:
            target = self.modules.reference(module, ref)
            if isinstance(ref, ast.Attribute) and isinstance(ref.value, ast.Name) and ref.value.id in by_string:
                target = self.modules.resolve(by_string[ref.value.id], ref.attr)
            if target is not None and self.modules.definition(*target) is not function:
                yield ref, target

    def _followed(self, step: Step) -> Iterator[tuple[str, tuple[str, str] | None, ast.FunctionDef, dict]]:
        """(module, class or None, function, the arguments its call fixes) for what `step` runs next."""
        called = {id(n.func): n for n in step.nodes if isinstance(n, ast.Call)}
        for ref, named in self.references(step.module, step.function, step.nodes):
            if self.is_kernel(*named):
                continue
            for definition in self.modules.alternatives(*named):  # each platform's, where an `if` picks one
                if isinstance(definition, ast.FunctionDef):
                    call = called.get(id(ref))
                    yield named[0], None, definition, call_arguments(definition, call) if call else {}
        for call in called.values():
            for home, method, cls in self._methods(step, call.func):
                yield home, cls, method, {}

    def _methods(self, step: Step, func: ast.expr) -> list[tuple[str, ast.FunctionDef, tuple[str, str] | None]]:
        """(module, method, class of `self`) for what calling `func` runs on an engine object: `obj.method(...)`,
        `super().method(...)`, a function the constructor stored (`self._logits(...)`), calling the object
        (`rope(...)`, `SiluAndMul()(...)`)."""
        modules, engine = self.modules, self.modules.engine
        if isinstance(func, ast.Attribute):
            named = target(modules, step.module, step.function, func.value)
            if named and named[1] and self.is_kernel(*named):
                return []  # a kernel object's own methods (`kernel.warmup(...)`): the kernel is what is found
            cls = objects.receiver(modules, step.module, step.function, step.owner, func.value)
            found = objects.called_methods(modules, engine, cls, func.attr) if cls else []
            if isinstance(func.value, ast.Name) and func.value.id == "self" and step.owner:
                stored = objects.stored_functions(modules, step.owner, func.attr)
                found += [(home, modules.definition(home, name), None) for home, name in stored]
            return found
        if isinstance(func, ast.Name | ast.Call):  # `rope(...)`, `SiluAndMul()(...)`
            cls = objects.class_of(modules, step.module, step.function, step.owner, func)
            return objects.object_call(modules, engine, cls) if cls else []
        return []
