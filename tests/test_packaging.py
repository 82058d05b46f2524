"""zerojit as a distribution: one import package, clean packaging, families as plug-ins.

The wheel is built for real (setuptools, no network) and read as a zip; the toy family
is installed for real with pip into a folder of its own, so `zerojit` sees it only through
its `zerojit.families` entry point.
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import zerojit

from zerojit.migrate.rocm_nvfp4.example import EXAMPLE_TREE

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {
    "contract": "zerojit/contract",
    "migrate": "zerojit/migrate",
    "codemods": "zerojit/codemods",
    "zerojit": "zerojit",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        cwd=out,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    return next(out.glob("zerojit-*.whl")), build.stdout + build.stderr


def test_wheel_holds_one_top_level_package_with_every_source_file(wheel):
    path, _ = wheel
    names = zipfile.ZipFile(path).namelist()
    assert {name.split("/")[0] for name in names} == {"zerojit", path.name.split("-py3")[0] + ".dist-info"}
    expected = {
        f"{FOLDERS[p.parts[0]]}/{'/'.join(p.parts[1:])}"
        for folder in FOLDERS
        for p in (q.relative_to(ROOT) for q in (ROOT / folder).rglob("*.py"))
        if "__pycache__" not in p.parts
    }
    assert expected <= set(names), sorted(expected - set(names))[:5]
    assert "zerojit/migrate/rocm_nvfp4/example_tree/README.md" in names
    entry_points = zipfile.ZipFile(path).read(f"{path.name.split('-py3')[0]}.dist-info/entry_points.txt").decode()
    for line in (
        "zerojit = zerojit.migrate.cli:main",
        "zerojit = zerojit.migrate.pytest_plugin",
        "zerojit_monitors = zerojit.contract.vllm_adapter:register_plugin",
        "rocm-nvfp4 = zerojit.migrate.rocm_nvfp4:FAMILY",
    ):
        assert line in entry_points


def test_building_the_wheel_prints_no_packaging_warnings(wheel):
    _, log = wheel
    noisy = [
        line
        for line in log.splitlines()
        if ("warning" in line.lower() or "deprecat" in line.lower()) and "byte-compiling is disabled" not in line
    ]
    assert noisy == []


def _python(code: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Run code (with `args` as sys.argv[1:]) in a fresh interpreter from outside the repo (so the checkout is
    not on sys.path)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd="/", env={**os.environ, **env}
    )


def test_only_the_zerojit_namespace_is_importable():
    assert _python("import zerojit.contract, zerojit.migrate.cli, zerojit.codemods.runner").returncode == 0
    for generic in ("contract", "migrate", "codemods"):
        done = _python(f"import {generic}")
        assert done.returncode == 1 and f"No module named '{generic}'" in done.stderr


def test_the_contract_imports_without_the_cli_stack():
    """An engine process imports zerojit.contract (the vLLM plugin does): no rich, typer, matplotlib, hypothesis."""
    done = _python(
        "import sys, zerojit.contract, zerojit.contract.vllm_adapter, zerojit.contract.cache\n"
        "print([m for m in ('rich', 'typer', 'matplotlib', 'hypothesis') if m in sys.modules])"
    )
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_the_cli_starts_without_the_codemods_rewriting_machinery():
    """`zerojit warmup` starts its compile workers as soon as the CLI has loaded, so the CLI loads what only a
    migration needs (the transforms, the pyflakes gate, the ruff style) with the command that needs it."""
    done = _python(
        "import sys, zerojit.migrate.cli\n"
        "print([m for m in ('pyflakes', 'libcst.codemod', 'zerojit.codemods.runner',"
        " 'zerojit.migrate.engine_trees.equivalence') if m in sys.modules])"
    )
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_a_migration_that_checks_no_keys_never_imports_torch(tmp_path):
    """torch takes seconds to import and only the key check (--verify-keys, --pr-body) runs the tree's code: a
    migration that writes (and so one that only plans) never imports it."""
    repo = shutil.copytree(EXAMPLE_TREE, tmp_path / "repo")
    done = _python(
        "import sys\nfrom zerojit.migrate.cli import app\n"
        "try:\n    app(['migrate', 'rocm-nvfp4', '--repo', sys.argv[1], '--write'], prog_name='zerojit')\n"
        "except SystemExit as end:\n    print(end.code, 'torch' in sys.modules)",
        str(repo),
    )
    assert done.stdout.split() == ["0", "False"], done.stderr
    assert "register_warmup" in (repo / "vllm/model_executor/models/minimax_m3.py").read_text()


def test_a_plugin_family_is_found_only_through_its_entry_point(toy_family_site):
    names = {f["family"] for f in json.loads(zerojit("families", "--json").stdout)}
    assert "toy-poly" not in names and {"rocm-nvfp4", "fa4-mla-prefill", "inkling-rel-attention"} <= names
    listed = json.loads(zerojit("families", "--json", site=toy_family_site).stdout)
    toy = next(f for f in listed if f["family"] == "toy-poly")
    assert toy["presets"][0]["name"] == "toy-poly-small" and toy["backend"] == "python"


def test_a_plugin_family_plans_warms_and_verifies(toy_family_site, tmp_path):
    plan = json.loads(zerojit("plan", "-p", "toy-poly-small", "--json", site=toy_family_site).stdout)
    # Term counts 1..16 bucket to the degrees 1, 2, 4, 8, 16, times two dtypes (brute force below).
    degrees = {1 << (terms - 1).bit_length() for terms in range(1, 17)}
    assert plan["total_keys"] == len(degrees) * 2 == 10
    cache = tmp_path / "cache"
    warm = zerojit("warmup", "-p", "toy-poly-small", "--cache-dir", str(cache), "--json", site=toy_family_site)
    assert warm.returncode == 0, warm.stderr
    assert json.loads(warm.stdout)["compiled"] == 10 and len(list(cache.glob("*.marshal"))) == 10
    verify = zerojit(
        "verify", "-p", "toy-poly-small", "--cache-dir", str(cache), "--launches", "50", "--json", site=toy_family_site
    )
    assert verify.returncode == 0, verify.stderr
    coverage = json.loads(verify.stdout)
    assert coverage["cache_growth"] == 0 and coverage["launches"] == 50


def test_a_broken_plugin_is_skipped_with_one_warning(tmp_path):
    """A plug-in whose module fails to import must not take `zerojit` down for the other families."""
    dist = tmp_path / "broken_family-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-family\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[zerojit.families]\nbroken = no_such_module:FAMILY\n")
    done = zerojit("families", "--json", site=tmp_path)
    assert done.returncode == 0
    assert {f["family"] for f in json.loads(done.stdout)} >= {"rocm-nvfp4"}
    assert done.stderr.strip().splitlines() == [
        "warning: family plug-in 'broken' (no_such_module:FAMILY) failed to load: ModuleNotFoundError: No module "
        "named 'no_such_module'"
    ]
