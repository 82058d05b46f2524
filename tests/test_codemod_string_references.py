"""The FA4 kernel looked up by name on a module the code imports by a string (issue 23, point 8).

The FA4 migration of vLLM 0.29.0 gives the kernel singleton a private name. Code that reads it
by a literal attribute name off a module it imports by a literal string
(`getattr(importlib.import_module("...flash_attn"), "FA4_MLA_PREFILL_KERNEL")`, or a local
assigned from that import) must be renamed with it; where the module's name is computed at
run time the migration cannot know it and refuses. The gate alone reports a leftover lookup.
"""

import ast
import os
import re
import shutil
import sys
import types
from pathlib import Path

import pytest
from tree_forks import add
from typer.testing import CliRunner

from zerojit.codemods import gate
from zerojit.codemods.planner import Planner
from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import migration_specs

pytestmark = pytest.mark.release_tree

FAMILIES = ["fa4-mla-prefill", "inkling-rel-attention"]
FLASH = "vllm/v1/attention/backends/mla/prefill/flash_attn.py"
FLASH_MODULE = "vllm.v1.attention.backends.mla.prefill.flash_attn"
OLD = "FA4_MLA_PREFILL_KERNEL"
PROBE = "vllm/tools/kernel_lookup.py"

# Each function reads the FA4 singleton another way; the last one looks the name up on a module that
# is no exporter of it (it must stay as it is).
LOOKUPS = f'''\
import importlib
import importlib as il
import sys
import sys as _sys
from importlib import import_module

try:
    _FLASH = import_module("{FLASH_MODULE}")
except ImportError:
    _FLASH = None


def direct():
    return getattr(importlib.import_module("{FLASH_MODULE}"), "{OLD}")


def through_a_local():
    mod = importlib.import_module("{FLASH_MODULE}")
    return getattr(mod, "{OLD}", None)


def probed():
    mod = il.import_module("{FLASH_MODULE}")
    return hasattr(mod, "{OLD}")


def attribute():
    mod = import_module("{FLASH_MODULE}")
    return mod.{OLD}


def relative():
    return getattr(import_module(".flash_attn", package="vllm.v1.attention.backends.mla.prefill"), "{OLD}")


def dunder_import():
    mod = __import__("{FLASH_MODULE}", fromlist=["{OLD}"])
    return mod.{OLD}


def module_global():
    return _FLASH.{OLD}


def sys_modules():
    return sys.modules["{FLASH_MODULE}"].{OLD}


def sys_modules_get():
    mod = sys.modules.get("{FLASH_MODULE}")
    return getattr(mod, "{OLD}")


def sys_modules_local():
    mod = _sys.modules["{FLASH_MODULE}"]
    return mod.{OLD}


def own_module():
    return getattr(sys.modules[__name__], "{OLD}", None)


def not_an_exporter():
    return getattr(importlib.import_module("vllm.platforms"), "{OLD}", None)
'''
READS_THE_KERNEL = (
    "direct",
    "through_a_local",
    "attribute",
    "relative",
    "dunder_import",
    "module_global",
    "sys_modules",
    "sys_modules_get",
    "sys_modules_local",
)


@pytest.fixture
def repo(tmp_path):
    """A copy of vLLM 0.29.0 made of hard links (fast); every write here and in the tool replaces files."""
    root = tmp_path / "repo"
    shutil.copytree(vllm_tree("0.29.0"), root, copy_function=os.link)
    return root


def run(repo: Path):
    return CliRunner().invoke(app, ["migrate", *FAMILIES, "--repo", str(repo), "--write"])


def top_level_names(source: str) -> dict[str, object]:
    """The names a module binds at its top level, each with a stand-in value of its own."""
    names = {}
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names |= {t.id: ("bound", t.id) for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = ("bound", node.name)
    return names


def singleton_name(source: str) -> str:
    """The name the exporter binds its kernel instance to (`NAME = FA4MLAPrefillKernel()`), read off the source."""
    return next(
        t.id
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", "") == "FA4MLAPrefillKernel"
        for t in node.targets
    )


def executed(source: str, exporter_source: str, monkeypatch) -> dict:
    """The functions of `source`, run against a stand-in of the exporter that binds its top-level names."""
    exporter = types.ModuleType(FLASH_MODULE)
    exporter.__dict__.update(top_level_names(exporter_source))
    monkeypatch.setitem(sys.modules, FLASH_MODULE, exporter)
    monkeypatch.setitem(sys.modules, "vllm.platforms", types.ModuleType("vllm.platforms"))
    namespace: dict = {}
    exec(compile(source, PROBE, "exec"), namespace)
    results = {}
    for name in (*READS_THE_KERNEL, "probed", "not_an_exporter"):
        try:
            results[name] = namespace[name]()
        except AttributeError as exc:
            results[name] = exc
    return results


def test_lookups_by_string_are_renamed_and_resolve_on_the_migrated_exporter(repo, monkeypatch):
    add(repo, PROBE, LOOKUPS)
    result = run(repo)
    assert result.exit_code == 0, result.output
    probe, exporter = (repo / PROBE).read_text(), (repo / FLASH).read_text()
    kernel = singleton_name(exporter)
    assert kernel != OLD  # the migration renamed the singleton
    assert [line for line in probe.splitlines() if re.search(rf"\b{OLD}\b", line)] == [
        f'    return getattr(sys.modules[__name__], "{OLD}", None)',  # the probe itself exports no kernel
        f'    return getattr(importlib.import_module("vllm.platforms"), "{OLD}", None)',
    ]
    assert f'fromlist=["{kernel}"]' in probe
    results = executed(probe, exporter, monkeypatch)
    assert {name: results[name] for name in READS_THE_KERNEL} == dict.fromkeys(READS_THE_KERNEL, ("bound", kernel))
    assert results["probed"] is True and results["not_an_exporter"] is None
    # The lookups as they were miss the kernel on the migrated exporter: the run-time failure the rename prevents.
    unrenamed = executed(LOOKUPS, exporter, monkeypatch)
    assert [name for name in READS_THE_KERNEL if unrenamed[name] == ("bound", kernel)] == []
    assert unrenamed["through_a_local"] is None and unrenamed["probed"] is False
    assert run(repo).exit_code == 0 and (repo / PROBE).read_text() == probe  # a second run changes nothing


COMPUTED = f"looks up {OLD} on a module imported by a name computed at run time"


@pytest.mark.parametrize(
    "lookup, line, why",
    [
        (f'def probe(name):\n    return getattr(importlib.import_module(name), "{OLD}")\n', 5, COMPUTED),
        (
            f'def probe(leaf):\n    mod = importlib.import_module(f"vllm.v1.attention.backends.mla.prefill.{{leaf}}")\n'
            f"    return mod.{OLD}\n",
            6,
            COMPUTED,
        ),
        (
            f'def probe(name):\n    mod = __import__(name, fromlist=["{OLD}"])\n    return hasattr(mod, "{OLD}")\n',
            6,
            COMPUTED,
        ),
        (
            f'def probe(fallback):\n    mod = fallback\n    if mod is None:\n        mod = importlib.import_module("{FLASH_MODULE}")\n'
            f"    return mod.{OLD}\n",
            8,
            f"looks up {OLD} on a name that may be {FLASH_MODULE}",
        ),
        (f"def probe(name):\n    import sys\n\n    return sys.modules[name].{OLD}\n", 7, COMPUTED),
    ],
    ids=["variable", "f-string", "dunder-import", "or-another-value", "sys-modules"],
)
def test_a_lookup_whose_module_the_migration_cannot_know_is_refused(repo, lookup, line, why):
    add(repo, PROBE, f"import importlib\n\n\n{lookup}")
    before = {p: p.read_bytes() for p in repo.rglob("*.py")}
    result = run(repo)
    assert result.exit_code == 2, result.output
    assert {p: p.read_bytes() for p in repo.rglob("*.py")} == before  # nothing written
    assert f"{PROBE}:{line}: {why}" in result.output, result.output


def test_the_gate_alone_reports_a_lookup_left_behind(repo):
    planner = Planner(repo, [migration_specs()[f] for f in FAMILIES])
    planner.plan()
    facts = planner.facts()
    leftover = (
        f"import importlib\nfrom importlib import import_module\n\n\n"
        f'def direct():\n    return getattr(importlib.import_module("{FLASH_MODULE}"), "{OLD}")\n\n\n'
        f'def through_a_local():\n    mod = import_module("{FLASH_MODULE}")\n    x = hasattr(mod, "{OLD}")\n'
        f"    return x, mod.{OLD}\n\n\n"
        f'def elsewhere(mod):\n    return getattr(mod, "{OLD}")\n\n\n'
        f'def listed():\n    import sys\n\n    return sys.modules["{FLASH_MODULE}"].{OLD}\n\n\n'
        f'def builtin():\n    import builtins\n\n    return builtins.__import__("{FLASH_MODULE}", fromlist=["x"]).{OLD}\n'
    )
    new = next(r.new for r in facts.renamed if r.old == OLD)
    found, _ = gate.check_references(repo / PROBE, "vllm.tools.kernel_lookup", "vllm.tools", leftover, facts)
    assert sorted(f.line for f in found) == [6, 11, 12, 22, 28]  # not the lookup on a parameter (line 16)
    assert all(f"{OLD!r}" in f.what and FLASH_MODULE in f.what and new in f.what for f in found)
    renamed = leftover.replace(f'"{OLD}"', f'"{new}"').replace(f".{OLD}", f".{new}")
    assert gate.check_references(repo / PROBE, "vllm.tools.kernel_lookup", "vllm.tools", renamed, facts)[0] == []
