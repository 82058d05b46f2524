"""What a legacy warmup does besides compiling the engine's kernels: the work that stays when they move.

Read off what can run of the warmup (codemods.walk: its body, the engine functions and objects' methods it
reaches, with the arguments their calls fix). Each piece of work is named by who owns it:
- another kernel library (`LIBRARIES`), called directly, through an object it built, or through the engine's
  module named after it (vLLM's `utils/flashinfer.py`, `_aiter_ops.py`, `vllm_flash_attn`), unless the call
  reaches a kernel of the engine (a vendored copy's Triton kernel); a check that it is installed, in a condition
  or by a predicate's name (`has_deep_gemm()`), is not work;
- a dummy run: the model runner's own step (`Engine.model_steps`), which warms whatever the model launches;
- tuning on the device: launch times measured in a loop (`Event(enable_timing=True)`, `elapsed_time`,
  `do_bench`), so the kernels the warmup launches run the configurations measurement picks, not ones a key
  names (a launch timed once, to log it, picks nothing);
- IPC: buffers shared between processes set up (a name read with `ipc` among its words, a flag aside).
A warmup is migratable when all it does is compile keys of the engine's kernels, partly when it also does work
that stays, not compile keys when it does only such work, and unseen when the survey finds neither.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Iterable

from . import objects
from .compile_units import target
from .engines import Engine
from .repo import RepoModules
from .walk import Step

# The kernel libraries whose JIT an engine calls, by import name (a module of the engine named after one wraps it).
LIBRARIES = {
    "flashinfer": "FlashInfer",
    "deep_gemm": "DeepGEMM",
    "aiter": "AITER",
    "b12x": "b12x",
    "flash_attn": "FlashAttention",
}
TIMING = ("elapsed_time", "do_bench")
DUMMY_RUN, TUNING, IPC = "dummy run", "on-device tuning", "IPC"
CLASSIFICATIONS = ("migratable", "partly", "not compile keys", "unseen")
CHECK = re.compile(r"(^|_)(has|is|can|use|supports?|supported|available|enabled)(_|$)")  # a predicate's name
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


@dataclasses.dataclass(frozen=True)
class Work:
    owner: str  # a library's name (LIBRARIES), DUMMY_RUN, TUNING, IPC, or "module:Class" of a provider
    what: str  # the evidence, as source
    where: str  # "module:line"


def work(
    modules: RepoModules, engine: Engine, walk: Iterable[Step], reaches_kernel: Callable[[tuple[str, str]], bool]
) -> list[Work]:
    """The work of `walk` that is not a compile key, the first evidence of each owner. `reaches_kernel((module,
    name))`, name a function, a class or "Class.method": a call of the engine's module of a library that reaches a
    kernel of the engine (a Triton kernel of a vendored copy) is that kernel's, not the library's."""
    found: dict[str, Work] = {}
    for step in walk:
        module, function, nodes = step.module, step.function, step.nodes
        tests = {id(n) for test in _tests(ast.walk(function)) for n in ast.walk(test)}
        looped = {id(n) for loop in ast.walk(function) if isinstance(loop, _LOOPS) for n in ast.walk(loop)}
        for node in nodes:
            if id(node) in tests:
                continue
            for owner in _owners(modules, engine, step, node, reaches_kernel):
                if owner == TUNING and id(node) not in looped:
                    continue  # timed once (`warmup took 3 ms`): a measurement picks nothing
                found.setdefault(owner, Work(owner, ast.unparse(node)[:120], f"{module}:{node.lineno}"))
    return list(found.values())


def classification(compile_keys: int, stays: list[Work]) -> str:
    if compile_keys:
        return "partly" if stays else "migratable"
    return "not compile keys" if stays else "unseen"


def stays_reason(stays: list[Work]) -> str:
    """Why a warmup stays whatever its kernels do: the work no compile key takes, by owner."""
    return "keeps work no compile key can take: " + "; ".join(f"{w.owner} ({w.where})" for w in stays)


def moves_by(verdict: str, kind: str) -> str | None:
    """How a kernel that is a compile key moves onto the contract: by its verdict, or a CuTe DSL kernel class adopted
    as a contract owner (its compile keys and compile) where it is built."""
    if verdict in ("spec", "lift"):
        return verdict
    return "CuTe DSL owner" if kind == "cute.compile" else None


def library(modules: RepoModules, module: str) -> str | None:
    """The kernel library `module` is, or the engine's module wrapping it (named after it), if any."""
    parts = module.split(".")
    if parts[0] in LIBRARIES or not modules.ours(module):
        return LIBRARIES.get(parts[0])
    words = [word for part in parts[1:] for word in [*part.strip("_").split("_"), "."]]
    for name, shown in LIBRARIES.items():
        wanted = name.split("_")
        if any(words[i : i + len(wanted)] == wanted for i in range(len(words))):
            return shown
    return None


def _owners(modules: RepoModules, engine: Engine, step: Step, node: ast.AST, reaches_kernel) -> Iterable[str]:
    module, function = step.module, step.function
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr in engine.model_steps:
        yield DUMMY_RUN
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    flag = name.isupper() or CHECK.search(name.lower())  # `envs.USE_IPC`, `use_ipc`: a setting, not the set-up
    if isinstance(getattr(node, "ctx", None), ast.Load) and not flag and "ipc" in map(str.lower, _WORDS.findall(name)):
        yield IPC
    if not isinstance(node, ast.Call):
        return
    callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    timed = any(k.arg == "enable_timing" and getattr(k.value, "value", None) is True for k in node.keywords)
    if timed or callee in TIMING:
        yield TUNING
    if CHECK.search(callee.lower()):  # `has_flashinfer()`, `is_deep_gemm_supported()`: asks, does no work
        return
    base = node.func
    while isinstance(base, ast.Attribute):
        base = base.value
    called = target(modules, module, function, node.func) or target(modules, module, function, base)
    if called is None and isinstance(node.func, ast.Attribute):  # a method of an object: its class's module
        called = objects.class_of(modules, module, function, step.owner, node.func.value)
    if called is None or called[0] == module:  # the module's own helpers are walked, not taken for its library
        return
    if not modules.ours(called[0]):
        shown = library(modules, called[0])
    else:
        definition = modules.definition(*called)
        asked = called  # what the call runs: a class's method (`rocm_aiter_ops.kda_chunk_prefill`), not all of it
        if isinstance(definition, ast.ClassDef) and isinstance(node.func, ast.Attribute):
            asked = (called[0], f"{called[1]}.{node.func.attr}")
        shown = library(modules, called[0]) if definition is not None and not reaches_kernel(asked) else None
    if shown:
        yield shown


def _tests(nodes: Iterable[ast.AST]) -> Iterable[ast.expr]:
    """The conditions among `nodes`: what a check reads (`if not has_flashinfer(): return`) is not work."""
    for node in nodes:
        if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
            yield node.test
        elif isinstance(node, ast.comprehension):
            yield from node.ifs
