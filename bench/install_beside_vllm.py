"""Does zerojit install into a vLLM environment? `pip install --dry-run vllm==X zerojit[extra]`, resolved for real.

Needs the network (PyPI metadata; pip reads PEP 658 metadata files, so little is downloaded)
and a Python 3.12 interpreter (vLLM's wheels are cp312 / abi3 for >= 3.12 here). Prints what
pip would install for the packages the two projects share, and exits 1 if it cannot resolve.

    python bench/install_beside_vllm.py [--vllm 0.33.0] [--extra cuda13] [--python python3.12]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = (
    "vllm",
    "zerojit",
    "torch",
    "triton",
    "nvidia-cutlass-dsl",
    "nvidia-cutlass-dsl-libs-cu13",
    "nvidia-cutlass-dsl-libs-cu12",
    "flash-attn-4",
    "quack-kernels",
    "apache-tvm-ffi",
)


def _python312() -> str:
    pyenv = sorted(Path.home().glob(".pyenv/versions/3.12.*/bin/python"))
    return str(pyenv[-1]) if pyenv else shutil.which("python3.12") or "python3.12"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm", default="0.33.0")
    parser.add_argument("--extra", default="cuda13", help="zerojit extra to install beside vLLM (cuda13 or cuda)")
    parser.add_argument("--python", default=_python312(), help="a Python 3.12 interpreter")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zerojit-beside-vllm-") as tmp:
        venv = Path(tmp, "venv")
        subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
        report = Path(tmp, "report.json")
        command = [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--report",
            str(report),
            "--ignore-installed",
            f"vllm=={args.vllm}",
            f"{ROOT}[{args.extra}]",
        ]
        print("$", " ".join(command), flush=True)
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout[-4000:], done.stderr[-4000:], sep="\n")
            print(f"RESULT: vllm=={args.vllm} and zerojit[{args.extra}] do NOT resolve together")
            return 1
        chosen = {
            item["metadata"]["name"].lower(): item["metadata"]["version"]
            for item in json.loads(report.read_text())["install"]
        }
    for name in SHARED:
        if name in chosen:
            print(f"  {name:32s} {chosen[name]}")
    print(f"RESULT: vllm=={args.vllm} and zerojit[{args.extra}] resolve together ({len(chosen)} distributions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
