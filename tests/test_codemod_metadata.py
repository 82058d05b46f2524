"""The transforms' shared metadata gives libcst's own answers, on real vLLM 0.33.0 files.

The outline's scopes are the whole file's (against libcst's ScopeProvider on the whole file,
for every name read or bound outside the outlined functions' own scopes); an import removal
found unused are those libcst's gatherer finds; the imports a removed helper used
are those libcst finds with the whole file's scopes.
"""

import dataclasses
import itertools
import re
from collections import Counter

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import GatherUnusedImportsVisitor, RemoveImportsVisitor
from libcst.helpers import get_absolute_module_from_package_for_import
from libcst.metadata import ScopeProvider

from zerojit.codemods.repo import module_name
from zerojit.codemods.transforms.imports import import_statements, place_new_imports, unused_asked
from zerojit.codemods.transforms.metadata import ResolvedScopes, outline_scopes
from zerojit.migrate.engine_trees.releases import vllm_tree

pytestmark = pytest.mark.release_tree


def functions(module: cst.Module) -> list[cst.FunctionDef]:
    found = []

    class Functions(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            found.append(node)

    module.visit(Functions())
    return found


def names_outside(module: cst.Module, skipped: list[cst.FunctionDef]) -> list[cst.Name]:
    """Every Name node of the file but those in the scopes of `skipped`: their bodies and parameters."""
    inside = {id(node) for function in skipped for part in (function.body, function.params) for node in _subtree(part)}
    found = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if id(node) not in inside:
                found.append(node)

    module.visit(Names())
    return found


def _subtree(node: cst.CSTNode) -> list[cst.CSTNode]:
    nodes = [node]
    for child in node.children:
        nodes += _subtree(child)
    return nodes


def answers(scope, node: cst.Name):
    """What a transform may ask a scope about a name: bound?, its bindings, what it refers to."""
    if scope is None:
        return None
    return (
        type(scope).__name__,
        getattr(scope, "name", None),
        node.value in scope,
        sorted((type(a).__name__, a.name, type(getattr(a, "node", None)).__name__) for a in scope[node.value]),
        sorted((q.name, q.source.name) for q in scope.get_qualified_names_for(node)),
    )


def sample():
    tree = vllm_tree("0.33.0")
    paths = sorted(tree.rglob("*.py"))[::100] + [
        tree / "vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py",
        tree / "vllm/model_executor/layers/fused_moe/router/gate_linear.py",
    ]
    return [p for p in paths if not re.search(r"\b(global|nonlocal)\b", p.read_text(encoding="utf-8"))]


def test_the_outline_resolves_every_name_outside_the_outlined_functions_as_the_whole_file_does():
    for path in sample():
        source = path.read_text(encoding="utf-8")
        module = cst.parse_module(source)
        every = functions(module)
        kept = {id(f) for f in every[::2]}  # every other function kept whole, the rest outlined
        outline = outline_scopes(module, source, keep=lambda f: id(f) in kept)
        full = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
        for name in names_outside(module, [f for f in every if id(f) not in kept]):
            assert answers(outline.get(name), name) == answers(full.get(name), name), (path, name.value)


def test_a_file_that_declares_a_name_global_or_nonlocal_gets_no_outline():
    for source in (
        "x = 1\ndef f():\n    global x\n    x = 2\n",
        "def f():\n    y = 1\n    def g():\n        nonlocal y\n",
    ):
        assert outline_scopes(cst.parse_module(source), source, keep=lambda f: False) is None


def contexts(path, module):
    """A full-scope context for the file, as the transforms' context is made (module and package names)."""
    repo = vllm_tree("0.33.0")
    name, package = module_name(repo, path)
    return CodemodContext(
        filename=str(path),
        full_module_name=name,
        full_package_name=package,
        wrapper=cst.MetadataWrapper(module, unsafe_skip_copy=True),
    )


def requests(module: cst.Module, package: str):
    """Every import of the file as RemoveImportsVisitor is asked to remove it: (module, name, alias)."""
    found = []
    for statement in import_statements(module):
        for alias in statement.names:
            if isinstance(statement, cst.Import):
                found.append((alias.evaluated_name, None, alias.evaluated_alias))
            else:
                source = get_absolute_module_from_package_for_import(package, statement)
                found.append((source, alias.evaluated_name, alias.evaluated_alias))
    return found


def test_the_imports_found_unused_are_those_libcsts_gatherer_finds():
    """Each file with one of its top-level functions removed (what a removal leaves), every import asked about:
    what unused_asked finds, where it decides, is what libcst's GatherUnusedImportsVisitor finds."""
    decided = 0
    for path in sample()[:10]:
        for module in [cst.parse_module(path.read_text(encoding="utf-8")), *without_each_function(path)][:4]:
            context = contexts(path, module)
            unused = unused_asked(context.wrapper, module.code, requests(module, context.full_package_name))
            if unused is None:
                continue
            decided += 1
            context.wrapper.resolve_many(GatherUnusedImportsVisitor.get_inherited_dependencies())
            gatherer = GatherUnusedImportsVisitor(context)
            context.wrapper.visit(gatherer)
            # libcst's gatherer skips `from . import x` (the package's own RemoveImports adds it): compared without.
            expected = {alias for alias, statement in gatherer.unused_imports}
            assert {
                alias
                for alias, statement in unused.items()
                if isinstance(statement, cst.Import) or statement.module is not None
            } == expected, path
    assert decided >= 10


def test_a_name_read_only_past_the_first_function_that_mentions_it_is_in_use():
    # `h` imports the name again, so Python's symbol table leaves it to the outlines (imports._settled).
    source = (
        "import os\nfrom a import b\n\n\ndef f():\n    b = 1\n    return b\n\n\ndef g():\n    return b\n\n\n"
        "def h():\n    from c import b\n\n    return b\n"
    )
    module = cst.parse_module(source)
    context = CodemodContext(full_module_name="m", full_package_name="", wrapper=cst.MetadataWrapper(module))
    unused = unused_asked(context.wrapper, source, requests(context.wrapper.module, ""))
    assert sorted(alias.evaluated_name for alias in unused) == ["os"]


def without_each_function(path):
    source = path.read_text(encoding="utf-8")
    module = cst.parse_module(source)
    return [
        module.with_changes(body=[s for s in module.body if s is not statement])
        for statement in module.body
        if isinstance(statement, cst.FunctionDef)
    ]


def test_the_imports_a_removed_helper_used_are_found_on_its_outline_as_on_the_file():
    for path in sample()[:12]:
        source = path.read_text(encoding="utf-8")
        module = cst.parse_module(source)
        helpers = [s for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))]
        for helper in helpers:
            inside = {id(f) for f in functions(helper)}
            outline = outline_scopes(module, source, keep=lambda f: id(f) in inside)
            full, outlined = contexts(path, module), contexts(path, module)
            outlined = dataclasses.replace(outlined, wrapper=ResolvedScopes(outline))
            for context in (full, outlined):
                RemoveImportsVisitor.remove_unused_import_by_node(context, helper)
            assert Counter(RemoveImportsVisitor._get_imports_from_context(outlined)) == Counter(
                RemoveImportsVisitor._get_imports_from_context(full)
            ), (path, helper.name.value)


def test_an_unused_import_inside_a_later_function_is_found_unused():
    """The first outline keeps only the first function that mentions `foo`: g's own import has no scope there, and
    is decided on the second."""
    source = "def f():\n    import foo\n    foo.x()\n\n\ndef g():\n    import foo\n"
    wrapper = cst.MetadataWrapper(cst.parse_module(source))
    unused = unused_asked(wrapper, source, [("foo", None, None)])
    g = wrapper.module.body[1]
    assert list(unused.values()) == [g.body.body[0].body[0]]


SYMBOL_TABLE_CASES = {
    "read in a function": "from a import x\n\n\ndef f():\n    return x\n",
    "read in a class body": "from a import x\n\n\nclass C:\n    y = x\n",
    "a parameter shadows it": "from a import x\n\n\ndef f(x):\n    return x\n",
    "a nested function reads the outer local": "from a import x\n\n\ndef f():\n    x = 1\n\n    def g():\n        return x\n\n    return g\n",
    "read through `global`": "from a import x\n\n\ndef f():\n    global x\n    return x\n",
    "only in a postponed annotation": "from __future__ import annotations\n\nfrom a import x\n\n\ndef f(y: x) -> None:\n    pass\n",
    "only in a class annotation, postponed": "from __future__ import annotations\n\nfrom a import x\n\n\nclass C:\n    y: x\n",
    "only in `__all__`": "from a import x\n\n__all__ = ['x']\n",
    "only in a comment": "from a import x\n\n# x is kept for callers\n",
    "imported twice": "try:\n    from a import x\nexcept ImportError:\n    from b import x\n\n\ndef f():\n    return x\n",
    "rebound after the import": "from a import x\n\n\ndef x():\n    pass\n\n\ndef f():\n    return x()\n",
    "a dotted import read by its root": "import a.b\n\n\ndef f():\n    return a.c\n",
    "read in a lambda and a comprehension": "from a import x, y\n\nf = lambda: x\nz = [y for _ in range(3)]\n",
    "a local import nothing reads beside a module one": (
        "from a import x\n\n\ndef f():\n    from b import x\n\n\ndef g():\n    return x\n"
    ),
    "nothing reads it": "from a import x\nimport os\n\n\ndef f():\n    return os.sep\n",
}


@pytest.mark.parametrize("source", SYMBOL_TABLE_CASES.values(), ids=SYMBOL_TABLE_CASES.keys())
def test_the_names_the_symbol_table_settles_are_settled_as_libcsts_gatherer_does(source):
    """What Python's symbol table settles (a read of the module's global, a name only import lines hold) and what it
    leaves to libcst's scopes (a postponed annotation, `__all__`, a comment, two bindings) ends as libcst's
    GatherUnusedImportsVisitor finds, import by import."""
    module = cst.parse_module(source)
    context = CodemodContext(full_module_name="m", full_package_name="", wrapper=cst.MetadataWrapper(module))
    unused = unused_asked(context.wrapper, source, requests(module, ""))
    context.wrapper.resolve_many(GatherUnusedImportsVisitor.get_inherited_dependencies())
    gatherer = GatherUnusedImportsVisitor(context)
    context.wrapper.visit(gatherer)
    expected = {alias for alias, _ in gatherer.unused_imports}
    assert (unused is None) == ("__all__" in source)  # a string may name it: then libcst's gatherer decides
    assert unused is None or set(unused) == expected


NEW_IMPORTS = (
    "from vllm.platforms import current_platform\n",
    "from vllm.utils.math_utils import cdiv\n",
    "from vllm.models.k.ops import dispatch\n",
)


@pytest.mark.parametrize("added", list(itertools.permutations(NEW_IMPORTS)), ids=lambda a: "|".join(x[5:20] for x in a))
def test_new_imports_of_a_package_join_its_block_in_module_order_whatever_order_they_were_added_in(added):
    """Each new import goes where isort puts it, in whatever order the transforms added them; placing one where another
    new one stood once took over that one's place and lost it (a crash on a fork's file that lacked three imports)."""
    head = "from torch import nn\n\nfrom vllm.config import VllmConfig\nfrom vllm.models.k import Model\n"
    tail = "\n\nclass A:\n    pass\n"
    placed = place_new_imports(cst.parse_module(head + tail), cst.parse_module(head + "".join(added) + tail)).code
    block = sorted(["from vllm.config import VllmConfig\n", "from vllm.models.k import Model\n", *NEW_IMPORTS])
    assert placed == "from torch import nn\n\n" + "".join(block) + tail
