"""What zerojit knows about vLLM lives in one module, `codemods/engines.py`: no other codemods module names a vLLM
module or attribute in its code (prose in docstrings and comments may mention the engine it was built against)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from zerojit.codemods.engines import VLLM
from zerojit.migrate.engine_trees.releases import vllm_tree

CODEMODS = Path(__file__).resolve().parents[1] / "codemods"
KNOWLEDGE = CODEMODS / "engines.py"


def _engine_words() -> set[str]:
    """The record's own names that only vLLM uses: the parts of its dotted modules and its identifiers that hold
    an underscore (a bare `warmup`, `config` or `model` is every engine's word)."""
    words = set()
    for field in dataclasses.fields(VLLM):
        value = getattr(VLLM, field.name)
        for item in value if isinstance(value, tuple | frozenset) else (value,):
            for word in item if isinstance(item, tuple) else (item,):  # `bound_later` holds (attribute, method)
                words.update(part for part in word.split(".") if "_" in part)
    return words


def engine_names(source: str, words: set[str]) -> list[str]:
    """`line: text` for each name of code (identifier, attribute, argument, or string that is not a docstring)
    that names the engine: one of `words`, the package itself, or any `vllm.`/`vllm_` name. Prose in a message
    ("vLLM's helper") names no module or attribute."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    package = VLLM.package
    pattern = re.compile(rf"\b(?:{package}[._]\w*|" + "|".join(map(re.escape, sorted(words))) + r")\b", re.IGNORECASE)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, (ast.arg, ast.keyword)):
            text = node.arg or ""
        elif isinstance(node, ast.alias):
            text = f"{node.name} {node.asname or ''}"
        elif isinstance(node, ast.ImportFrom):
            text = node.module or ""
        else:
            continue
        if pattern.search(text) or package in text.lower().split():
            found.append(f"{node.lineno}: {text}")
    return found


def test_only_the_engine_record_names_vllm():
    words = _engine_words()
    assert {"model_runner", "triton_utils", "jit_warmup_registry", "kernel_warmup"} <= words
    offenders = {
        path.relative_to(CODEMODS).as_posix(): names
        for path in sorted(CODEMODS.rglob("*.py"))
        if path != KNOWLEDGE and (names := engine_names(path.read_text(encoding="utf-8"), words))
    }
    assert offenders == {}


def test_a_planted_vllm_name_is_found():
    words = _engine_words()
    clean = (CODEMODS / "survey.py").read_text(encoding="utf-8")
    assert engine_names(clean, words) == []
    for planted in (
        'ORCHESTRATOR = "vllm.model_executor.warmup.kernel_warmup"\n',
        "def f(runner):\n    return runner.model_runner\n",
        "from vllm.triton_utils import triton\n",
        "def f(vllm_config):\n    pass\n",
        "import vllm\n",
    ):
        assert engine_names(clean + planted, words), planted


@pytest.mark.release_tree
def test_the_exclusive_device_checks_compare_one_platform_enum_each_in_vllm():
    """`exclusive_checks` lets a gate drop `not is_rocm()` beside `is_cuda()`: true only while each check is
    `self._enum == PlatformEnum.<its own member>` in the engine's Platform (read from 0.33.0's source)."""
    source = (vllm_tree("0.33.0") / "vllm/platforms/interface.py").read_text(encoding="utf-8")
    methods = {
        node.name: ast.unparse(node.body[-1])
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef)
    }
    compared = {}
    for check in VLLM.exclusive_checks:
        method = check.rpartition(".")[2].removesuffix("()")
        returned = re.fullmatch(r"return self\._enum == PlatformEnum\.(\w+)", methods[method])
        assert returned, (check, methods[method])
        compared[check] = returned[1]
    assert len(set(compared.values())) == len(compared) >= 2, compared
