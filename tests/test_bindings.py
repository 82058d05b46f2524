"""MethodBindings (symtable + ast) against libcst's ScopeProvider, the oracle it replaces, on real vLLM files and
on every binding form Python has."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import libcst.matchers as m
import pytest
from libcst.metadata import PositionProvider, ScopeProvider

from zerojit.codemods.transforms.bindings import MethodBindings
from zerojit.migrate.engine_trees.releases import vllm_tree

RELEASE_FILES = (
    "vllm/model_executor/layers/mamba/mamba_mixer2.py",
    "vllm/model_executor/layers/mamba/gdn/base.py",
    "vllm/models/kimi_k3/nvidia/model.py",
    "vllm/third_party/flash_linear_attention/ops/layernorm_guard.py",
    "vllm/v1/worker/gpu_model_runner.py",
)

FORMS = """
import os
from typing import Any as Anything
LATE = 1
def setter():
    global SET_IN_FUNCTION
    SET_IN_FUNCTION = 1
class Outer:
    at_class = 1
    def __init__(self, a, *args, b=1, **kwargs):
        x = a
        early = [late for late in args]
        import json
        import os.path as osp
        from math import floor as fl
        for i, (j, k) in enumerate(args):
            pass
        with open(a) as fh, open(b) as (g):
            pass
        try:
            pass
        except ValueError as err:
            pass
        squares = [n * n for n in args if n]
        typed: int = 3
        def helper(q=x):
            inner = q
            return inner
        class Local:
            member = 1
        late = early
        y += 1
        del x
        global LATE
        LATE = 2
        print(n, at_class, SET_IN_FUNCTION, os, Anything, fl, osp, unknown, len, Outer)
def factory(captured):
    enclosed = captured
    class Nested:
        def __init__(self):
            self.value = enclosed + captured
    return Nested
"""


def _oracle(module: cst.Module, cls: cst.ClassDef, method: cst.FunctionDef):
    """The answer of libcst's ScopeProvider on the whole file, read the way the registration transform read it."""
    scopes = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    lines = cst.MetadataWrapper(cst.Module(body=[method]), unsafe_skip_copy=True).resolve(PositionProvider)
    scope = scopes[method.body.body[0]]

    def bound(name: str, before: float) -> bool:
        if name not in scope:
            return False
        for assignment in scope[name]:
            node = getattr(assignment, "node", None)
            if assignment.scope is not scope or node is None:
                return True
            position = lines.get(node)
            if position is None or position.start.line <= before:
                return True
        return False

    return bound


def _methods(module: cst.Module):
    """(class, method) for every method of every class, nested classes included."""
    found = []

    class Methods(cst.CSTVisitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            found.extend((node, m) for m in node.body.body if isinstance(m, cst.FunctionDef))

    module.visit(Methods())
    return found


def _names(code: str) -> set[str]:
    return {node.value for node in m.findall(cst.parse_module(code), m.Name())}


def _compare(code: str) -> int:
    module = cst.parse_module(code)
    names = _names(code) | {"len", "print", "never_bound_anywhere"}
    compared = 0
    for cls, method in _methods(module):
        if method.name.value != "__init__":
            continue  # constructors: where registrations go
        # Names the method annotates alone (`x: T`): libcst's scopes count that as binding, Python does not.
        annotated = {
            n.target.value
            for n in m.findall(method, m.AnnAssign())
            if n.value is None and isinstance(n.target, cst.Name)
        }
        oracle = _oracle(module, cls, method)
        ours = MethodBindings(cst.Module(body=[method]).code, code, cls.name.value)
        alone = cst.Module(body=[method]).code
        first, length = ast.parse(alone).body[0].body[0].lineno, len(alone.splitlines())
        # Lines from the body's first statement on: a registration never goes above it.
        for before in range(first, length + 2, max(1, length // 12)):
            for name in sorted(names - annotated):
                assert ours.bound(name, before) == oracle(name, before), (
                    cls.name.value,
                    method.name.value,
                    name,
                    before,
                )
                compared += 1
    return compared


def test_every_binding_form_agrees_with_libcsts_scopes():
    code = textwrap.dedent(FORMS)
    assert _compare(code) > 500  # every name of the file, on every other line of each method


# Binding forms libcst's scopes do not model (a walrus inside a comprehension binds in the method, a match capture
# binds, an annotation alone does not): Python itself is the oracle. Each: the method's body, the name, the line of
# the body where it is first bound (None: never).
PYTHON_ONLY = (
    ("squares = [n for n in args if (last := n)]", "last", 2),
    ("match args:\n    case [first, *others]:\n        pass", "others", 3),
    ("match args:\n    case {'k': v, **rest}:\n        pass", "rest", 3),
    ("match args:\n    case str() as text:\n        pass", "text", 3),
    ("annotated: int", "annotated", None),
)


@pytest.mark.parametrize(("body", "name", "line"), PYTHON_ONLY)
def test_binding_forms_libcst_does_not_model_follow_python(body, name, line):
    method = f"def __init__(self, args):\n{textwrap.indent(body, '    ')}\n    self.seen = locals()\n"
    namespace: dict = {}
    exec("class C:\n" + textwrap.indent(method, "    "), namespace)
    samples = ([1], {"k": 1, "j": 2}, "text")
    assert any(name in namespace["C"](sample).seen for sample in samples) == (line is not None)
    names = MethodBindings(method, "class C:\n" + textwrap.indent(method, "    "), "C")
    last = len(method.splitlines())
    assert [b for b in range(2, last + 1) if names.bound(name, b)][:1] == ([line] if line else [])


@pytest.mark.release_tree
@pytest.mark.parametrize("path", RELEASE_FILES)
def test_real_constructors_agree_with_libcsts_scopes(path):
    code = (vllm_tree("0.33.0") / path).read_text()
    assert _compare(code) > 0
