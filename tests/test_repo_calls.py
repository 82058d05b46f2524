"""What a call names, read off a small engine tree: module aliases followed, locals and package attributes not
mistaken for modules; which texts may look a module up by a literal name."""

import ast

from tree_forks import write_tree

from zerojit.codemods import syntax
from zerojit.codemods.repo import BY_NAME_WORDS, RepoModules


def calls(modules: RepoModules, module: str, function: str) -> dict[str, tuple[str, str | None] | None]:
    """Each call of `module.function`, by its code, with what callee makes of it."""
    found = modules.definition(module, function)
    return {
        ast.unparse(c.func): modules.callee(module, found, c.func) for c in ast.walk(found) if isinstance(c, ast.Call)
    }


def test_calls_through_a_module_alias_reach_the_function_and_nothing_else_is_taken_for_a_module(tmp_path):
    repo = write_tree(
        tmp_path,
        {
            "eng/__init__.py": "",
            "eng/ops/__init__.py": "ops: object = object()\n",
            "eng/ops/launch.py": "def go(x):\n    return x\n",
            "eng/ops/ops.py": "def go(x):\n    return x\n",
            "eng/step.py": """
                from eng import ops as package
                from eng.ops import launch as launcher
                from eng.ops import ops as attribute


                def step(launch, x):
                    from eng.ops import launch as inner
                    inner.go(x)
                    launcher.go(x)
                    launch.go(x)  # a parameter, not the submodule
                    package.ops.go(x)  # the package's own `ops` attribute, not eng.ops.ops
                    attribute.go(x)  # the same attribute, imported by name
                """,
        },
    )
    modules = RepoModules(repo, "eng")
    assert calls(modules, "eng.step", "step") == {
        "inner.go": ("eng.ops.launch", "go"),
        "launcher.go": ("eng.ops.launch", "go"),
        "launch.go": None,
        "package.ops.go": None,
        "attribute.go": None,
    }
    assert modules.reaches("eng.step", "step", ("eng.ops.launch", "go")) == 1


STATEMENT_FORMS = """
import os
if os.name:
    from json import loads
    class Kept:
        attribute = [lambda: 0 for _ in range(2)]
        def method(self):
            while True:
                try:
                    import re
                except ValueError as err:
                    raise
                else:
                    break
                finally:
                    del err
            while self:
                break
            else:
                async def walk(rows):
                    async for row in rows:
                        del row
            for item in range(3):
                try:
                    continue
                except* OSError:
                    pass
            else:
                async def later():
                    async with open(os.name) as fh:
                        return [x async for x in fh]
            match item:
                case [first, *rest] if first:
                    from math import floor as fl
                case _:
                    with open(os.name) as fh, open(os.sep):
                        global LATE
elif os.sep:
    Alias = list[int]
"""


def test_statements_are_every_statement_handler_and_case_in_the_order_ast_walk_finds_them():
    tree = ast.parse(STATEMENT_FORMS)
    expected = [n for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case))]
    assert syntax.statements(tree) == expected
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    assert syntax.statements(function) == [n for n in expected if n in set(ast.walk(function)) and n is not function]


LOOKUPS = {  # each way a function binds a module it looks up by a literal name
    "import importlib\n": "m = importlib.import_module('eng.ops')",
    "import importlib as il\n": "m = il.import_module('eng.ops')",
    "from importlib import import_module as im\n": "m = im('eng.ops')",
    "": "m = __import__('eng.ops', fromlist=['go'])",
    "import builtins\n": "m = builtins.__import__('eng.ops', fromlist=['go'])",
    "import sys\n": "m = sys.modules['eng.ops']",
    "import sys as s\n": "m = s.modules.get('eng.ops')",
    "from sys import modules as loaded\n": "m = loaded.get('eng.ops')",
}


def test_code_that_looks_a_module_up_by_a_literal_name_is_told_by_its_text(tmp_path):
    """The text check that spares a file the walk for such lookups passes every form the walk finds."""
    files = {"eng/__init__.py": "", "eng/ops.py": "def go():\n    pass\n"}
    files |= {
        f"eng/by_{i}.py": f"{imports}\n\ndef f():\n    {line}\n" for i, (imports, line) in enumerate(LOOKUPS.items())
    }
    modules = RepoModules(write_tree(tmp_path, files), "eng")
    for i in range(len(LOOKUPS)):
        module = f"eng.by_{i}"
        assert modules.modules_by_string(module, modules.definition(module, "f")) == {"m": "eng.ops"}
        assert any(word in files[f"eng/by_{i}.py"] for word in BY_NAME_WORDS)
    assert not any(word in files["eng/ops.py"] for word in BY_NAME_WORDS)
