"""Real engine source trees from PyPI wheels, downloaded once and cached outside any repo.

`vllm_tree("0.29.0")` is a folder holding that release's `vllm/` package (its `.py`
files only), the same shape as an engine checkout root. Wheels and trees live under
$ZEROJIT_CACHE (default ~/.cache/zerojit); extraction goes to a temporary folder that is
renamed into place, so an interrupted run never leaves half a tree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from zerojit.contract.storage import cache_root, file_lock


def vllm_tree(version: str) -> Path:
    tree = cache_root() / "trees" / f"vllm-{version}"
    if (tree / "vllm" / "__init__.py").is_file():
        return tree
    wheels = cache_root() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    # One process downloads and unpacks a release at a time (parallel test workers ask for the same one): pip
    # writes the wheel in place, so another process could otherwise read it half-written.
    with file_lock(wheels / f".vllm-{version}.lock"):
        if not (tree / "vllm" / "__init__.py").is_file():
            _unpack(version, wheels, tree)
    return tree


def _unpack(version: str, wheels: Path, tree: Path) -> None:
    wheel = next(wheels.glob(f"vllm-{version}-*.whl"), None)
    if wheel is None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                f"vllm=={version}",
                "-d",
                str(wheels),
            ],
            check=True,
        )
        wheel = next(wheels.glob(f"vllm-{version}-*.whl"))
    tree.parent.mkdir(parents=True, exist_ok=True)
    if tree.exists():  # without vllm/__init__.py: what a run of an older zerojit left half-written
        shutil.rmtree(tree)
    staging = Path(tempfile.mkdtemp(prefix=f".vllm-{version}-", dir=tree.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.startswith("vllm/") and member.endswith(".py"):
                    archive.extract(member, staging)
        staging.rename(tree)
    except zipfile.BadZipFile as exc:
        wheel.unlink()
        raise RuntimeError(f"{wheel} is not a whole wheel (an interrupted download?): removed, run again") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
