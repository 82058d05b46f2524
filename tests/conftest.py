import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from zerojit.contract import clear_missed_registrations
from zerojit.contract.storage import cache_root

# pytest-xdist's workers inherit COLUMNS=80 and LINES=24, which rich's consoles (made when the CLI is imported) fix
# their width to; a plain process reads COLUMNS when each command runs, as a test's CliRunner env sets it.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

# The toy kernel family's source, importable by the tests (and by the worker processes they
# spawn); `zerojit families` only sees it once it is installed (tests/test_packaging.py).
TOY_FAMILY_SOURCE = Path(__file__).with_name("toy_family")
sys.path.insert(0, str(TOY_FAMILY_SOURCE))


@pytest.fixture(autouse=True)
def fresh_missed_ledger():
    """Missed registrations are process-wide; each test starts from an empty ledger."""
    clear_missed_registrations()
    yield
    clear_missed_registrations()


pytest_plugins = ["pytester"]


def _release_files(root: Path) -> dict[Path, tuple[int, int]]:
    return {path: (path.stat().st_mtime_ns, path.stat().st_size) for path in root.glob("vllm-*/vllm/**/*.py")}


@pytest.fixture(scope="session", autouse=True)
def release_trees_untouched():
    """Tests copy release trees with hard links (tree_forks); a write through a link changes the shared cache under
    every later test and every other run on the machine. The cached trees end the session as they began (those
    extracted during the session are not covered: they have no earlier state to compare with)."""
    root = cache_root() / "trees"
    before = _release_files(root)
    yield
    after = _release_files(root)
    changed = sorted(str(path) for path in before.keys() & after.keys() if before[path] != after[path])
    assert not changed, f"a test wrote through a hard link into the release cache ({len(changed)}): {changed[:3]}"


@pytest.fixture(scope="session")
def toy_family_site(tmp_path_factory):
    """The toy family installed with pip into a folder of its own (its dist-info carries the entry point)."""
    site = tmp_path_factory.mktemp("toy-site")
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(TOY_FAMILY_SOURCE),
        ],
        capture_output=True,
        text=True,
        cwd=site,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    return site


def zerojit(
    *args: str, site: Path | None = None, cwd: Path | str = "/", disk_full_after: int | None = None
) -> subprocess.CompletedProcess:
    """The real CLI in a fresh process, from outside the repo; `site`: an extra install folder (plug-ins). Under
    `make mutants` ($ZEROJIT_SOURCE: the mutated worktree's import folder) the CLI imports that code too.
    `disk_full_after`: no file the process writes may grow past this many bytes (RLIMIT_FSIZE), as on a full
    disk: the write fails (EFBIG)."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    path = [str(site) if site is not None else "", os.environ.get("ZEROJIT_SOURCE", "")]
    if any(path):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, path))

    def full_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of the process being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (disk_full_after, disk_full_after))

    return subprocess.run(
        [sys.executable, "-m", "zerojit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        preexec_fn=full_disk if disk_full_after is not None else None,
    )


@pytest.fixture(scope="session")
def migrated_029(tmp_path_factory):
    """vLLM 0.29.0 with zerojit's FA4 MLA prefill and Inkling migrations written, and the run's report."""
    from typer.testing import CliRunner

    from zerojit.migrate.cli import app
    from zerojit.migrate.engine_trees.releases import vllm_tree

    repo = tmp_path_factory.mktemp("vllm-0.29.0-migrated")
    shutil.copytree(vllm_tree("0.29.0"), repo, dirs_exist_ok=True)
    result = CliRunner().invoke(
        app,
        [
            "migrate",
            "fa4-mla-prefill",
            "inkling-rel-attention",
            "--repo",
            str(repo),
            "--write",
            "-j",
            "2",
            "--report",
            str(repo / "report.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    return repo, json.loads((repo / "report.json").read_text())
