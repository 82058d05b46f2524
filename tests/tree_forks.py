"""Forks of vLLM releases for the migration tests: a copied release with one ordinary change a fork would make.

Trees are hard-linked copies of the cached release, so every change replaces its file (never a write
through, which would change the cache).
"""

import ast
import difflib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

from zerojit.migrate.engine_trees.releases import vllm_tree

LL_BF16 = "vllm/model_executor/kernels/linear/cute_dsl/ll_bf16.py"
ORCHESTRATOR = "vllm/model_executor/warmup/kernel_warmup.py"
GDN_LAYER = "vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py"
GATE_LINEAR = "vllm/model_executor/layers/fused_moe/router/gate_linear.py"

# 0.33.0's LLBf16Gemm.dispatch, and the same decision written in the subset VllmJitKernel's initializer traces
# (one name per assignment, one CompileKey(...) return, no dict literals): the change a kernel author makes before the class
# can adopt the contract. The fork's keys are checked against the release's own dispatch below.
RELEASE_DISPATCH = """        tuned_bs, tuned_splitk = _arch_tuned_configs()
        if M <= _DEFAULT_DOTPROD_MAX_M or K < 2048:
            bs = tuned_bs.get((K, N), {}).get(M, _DEFAULT_DOTPROD_BS)
            return self.CompileKey(
                backend="dotprod", M=M, K=K, bs=bs, output_dtype=output_dtype
            )

        split_k, num_stages = tuned_splitk.get((K, N), {}).get(
            M, _DEFAULT_SPLITK_CONFIG
        )
        return self.CompileKey(
            backend="splitk",
            split_k=split_k,
            num_stages=num_stages,
            output_dtype=output_dtype,
        )
"""
TRACEABLE_DISPATCH = """        tuned = _arch_tuned_configs()
        dotprod = M <= _DEFAULT_DOTPROD_MAX_M or K < 2048
        splitk = tuned[1].get((K, N), dict()).get(M, _DEFAULT_SPLITK_CONFIG)
        return self.CompileKey(
            backend="dotprod" if dotprod else "splitk",
            M=M if dotprod else 0,
            K=K if dotprod else 0,
            bs=tuned[0].get((K, N), dict()).get(M, _DEFAULT_DOTPROD_BS) if dotprod else 0,
            split_k=0 if dotprod else splitk[0],
            num_stages=0 if dotprod else splitk[1],
            output_dtype=output_dtype,
        )
"""


# What a lifted Triton kernel imports from vLLM's contract (0.30.0 on), as a small engine tree holds it: the names.
TOY_CONTRACT = {
    "vllm/model_executor/warmup/jit_warmup.py": """
        class WarmupChoices:
            pass


        class WarmupIntRange:
            pass


        def _when(condition, value):
            return value
        """,
    "vllm/model_executor/warmup/jit_warmup_triton_helper.py": """
        from typing import Any as DispatchSpec  # imported, as a re-export would be


        class TritonWarmupTensor:
            pass


        def triton_kernel_dispatcher_with_warmup(kernel, warmup_inputs):
            return lambda dispatch: dispatch
        """,
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """A small engine tree: each file's text, dedented, under `root`."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def copy_release(version: str, where: Path) -> Path:
    shutil.copytree(vllm_tree(version), where, copy_function=os.link)
    return where


def copy_033(where: Path) -> Path:
    return copy_release("0.33.0", where)


def changed_files(repo: Path, original: Path) -> tuple[set[str], set[str], set[str]]:
    """The `.py` files a run changed, deleted and added, relative to the tree root."""

    def files(root: Path) -> set[str]:
        return {p.relative_to(root).as_posix() for p in root.rglob("*.py")}

    changed = {
        rel for rel in files(repo) & files(original) if (repo / rel).read_bytes() != (original / rel).read_bytes()
    }
    return changed, files(original) - files(repo), files(repo) - files(original)


# What a survey draft says that its answered spec keeps as it is (the rest a maintainer answers).
DRAFT_FIELDS = (
    "family",
    "legacy_module",
    "legacy_function",
    "legacy_step",
    "orchestrator_module",
    "singleton_module",
    "singleton",
    "launcher",
)


def draft_fields(draft, *extra: str) -> dict:
    """The fields of a drafted spec that its answered spec keeps, by name."""
    return {field: draft.fields()[field] for field in (*DRAFT_FIELDS, *extra)}


def replace_file(path: Path, text: str) -> None:
    """A new file, never a write through."""
    if path.exists():
        path.unlink()
    path.write_text(text)


def add(repo: Path, rel: str, text: str) -> None:
    """Write a file of a tree copied with hard links: a new file, or one that replaces the link (the release
    cache the copy links to stays as it is)."""
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, text)


def ruff_findings(path: Path) -> list[tuple[str, str]]:
    """ruff's findings (code, message) with vLLM's rule selection, positions left out (lines move)."""
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--select",
            "E,F,W,I,UP,B",
            "--line-length",
            "88",
            "--output-format",
            "json",
            str(path),
        ],
        capture_output=True,
        text=True,
    )
    return sorted((f["code"], f["message"]) for f in json.loads(found.stdout))


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    """Replace the one occurrence of `old` in the file."""
    text = (repo / rel).read_text()
    assert text.count(old) == 1, (rel, old)
    replace_file(repo / rel, text.replace(old, new))


def make_dispatch_traceable(repo: Path) -> None:
    edit(repo, LL_BF16, RELEASE_DISPATCH, TRACEABLE_DISPATCH)


# 0.29.0's dispatch (no output dtype yet), and its traceable form.
RELEASE_029_DISPATCH = """        tuned_bs, tuned_splitk = _arch_tuned_configs()
        if M <= _DEFAULT_DOTPROD_MAX_M or K < 2048:
            bs = tuned_bs.get((K, N), {}).get(M, _DEFAULT_DOTPROD_BS)
            return self.CompileKey(backend="dotprod", M=M, K=K, bs=bs)

        split_k, num_stages = tuned_splitk.get((K, N), {}).get(
            M, _DEFAULT_SPLITK_CONFIG
        )
        return self.CompileKey(backend="splitk", split_k=split_k, num_stages=num_stages)
"""
TRACEABLE_029_DISPATCH = (
    "\n".join(line for line in TRACEABLE_DISPATCH.splitlines() if "output_dtype" not in line) + "\n"
)


def make_029_dispatch_traceable(repo: Path) -> None:
    edit(repo, LL_BF16, RELEASE_029_DISPATCH, TRACEABLE_029_DISPATCH)


def repeated(code: str, size: int = 8) -> dict[str, tuple[str, int]]:
    """What a reviewer would name: ast.dump of each expression of `size` AST nodes or more that one function of
    `code` writes more than once -> (the function's name, how many times)."""
    found = {}
    for function in ast.walk(ast.parse(code)):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            counts = Counter(
                ast.dump(n)
                for n in ast.walk(function)
                if isinstance(n, ast.expr) and sum(1 for _ in ast.walk(n)) >= size
            )
            found |= {dump: (function.name, count) for dump, count in counts.items() if count > 1}
    return found


def diff_size(before: str, after: str) -> tuple[int, int]:
    """(lines added, lines removed) of a change, as a unified diff counts them."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm=""))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    return added, sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
