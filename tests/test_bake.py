"""Bake once, serve everywhere: a bake made in one install layout serves another with zero compiles.

"Another layout" is this machine with zerojit installed from its wheel into a folder of its
own and the DSLs (cutlass, FA4, quack, FlyDSL) imported through another path: module reprs
and file paths differ, so any compile key that held an install path would miss.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.compiles

ROOT = Path(__file__).resolve().parent.parent
PRESETS = {"deepseek-v3-h200": "cutedsl", "inkling-h200": "cutedsl", "minimax-m3-nvfp4-mi355x-tp4": "flydsl"}


def run(*args, layout=None, check=True):
    """Python with `args`; in another layout, that folder goes first on sys.path (ahead of what CuTe DSL's .pth adds)."""
    if layout is not None:
        if args[0] == "-m":
            args = (
                "-c",
                f"import runpy, sys; sys.argv = {['zerojit', *args[2:]]!r}; "
                f"runpy.run_module({args[1]!r}, run_name='__main__', alter_sys=True)",
            )
        args = ("-c", f"import sys; sys.path.insert(0, {str(layout)!r}); exec({args[1]!r})")
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd="/", timeout=1800)
    assert not check or done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def other_layout(tmp_path_factory):
    """The other layout's folder: zerojit from its wheel, the DSL packages through symlinks."""
    site = tmp_path_factory.mktemp("other-layout")
    wheels = tmp_path_factory.mktemp("wheel")
    run("-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(ROOT))
    run("-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site), *map(str, wheels.glob("*.whl")))
    located = (
        run(
            "-c",
            "import cutlass, quack, flydsl, flash_attn.cute, tvm_ffi, os; print(os.pathsep.join(["
            "os.path.dirname(cutlass.__file__), os.path.dirname(quack.__file__), "
            "os.path.dirname(flydsl.__file__), os.path.dirname(os.path.dirname(flash_attn.cute.__file__)),"
            " os.path.dirname(tvm_ffi.__file__)]))",
        )
        .stdout.split()[0]
        .split(os.pathsep)
    )
    for package in located:
        (site / Path(package).name).symlink_to(package)
    libs = Path(located[2]).with_name("flydsl.libs")  # FlyDSL's bundled libraries, found next to the package
    if libs.is_dir():
        (site / libs.name).symlink_to(libs)
    return site


def test_the_other_layout_really_differs(other_layout):
    probe = "import cutlass, zerojit.contract; print(cutlass.__file__); print(zerojit.contract.__file__)"
    here = run("-c", probe).stdout.split()
    there = run("-c", probe, layout=other_layout).stdout.split()
    assert here[0] != there[0] and here[1] != there[1]


def test_a_bake_serves_another_layout_with_zero_compiles(tmp_path, other_layout):
    bake = tmp_path / "bake"
    args = [arg for preset in PRESETS for arg in ("--preset", preset)]
    baked = json.loads(run("-m", "zerojit", "bake", *args, "--out", str(bake), "--jobs", "2", "--json").stdout)
    # The two sm90 CuTe DSL presets share one process (one DSL import, one set of workers); FlyDSL has its own.
    assert [(row["preset"], row["cache"], row["process"]) for row in baked["presets"]] == [
        (preset, str(bake / backend), 0 if backend == "cutedsl" else 1) for preset, backend in PRESETS.items()
    ]
    assert baked["failed"] == 0 and all(row["compiled"] > 0 for row in baked["presets"])
    shipped = tmp_path / "shipped"
    shutil.copytree(bake, shipped)  # what a serving host receives
    for preset, backend in PRESETS.items():
        manifest = json.loads((shipped / backend / "zerojit-manifest.json").read_text())
        assert manifest["fingerprint"]["Python"] == f"{sys.version_info.major}.{sys.version_info.minor}"
        done = run(
            "-m",
            "zerojit",
            "warmup",
            "--preset",
            preset,
            "--cache-dir",
            str(shipped / backend),
            "--require-baked",
            "--json",
            layout=other_layout,
        )
        report = json.loads(done.stdout)
        assert report["compiled"] == 0 and report["failed"] == 0 and report["cached"] == report["total_keys"], preset


def test_a_mismatched_bake_is_named_in_one_line_and_refused_when_required(tmp_path):
    bake = tmp_path / "bake"
    run("-m", "zerojit", "bake", "--preset", "minimax-m3-nvfp4-mi355x-tp4", "--out", str(bake))
    manifest_path = bake / "flydsl" / "zerojit-manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["fingerprint"]["flydsl"] = "0.4.9"
    manifest_path.write_text(json.dumps(manifest))
    warmup = ["-m", "zerojit", "warmup", "--preset", "minimax-m3-nvfp4-mi355x-tp4", "--cache-dir", str(bake / "flydsl")]
    told = run(*warmup, "--json")
    assert [line for line in told.stderr.splitlines() if line.startswith("warning:")] == [
        f"warning: the cache at {bake / 'flydsl'} does not apply here (baked for flydsl 0.4.9, this is 0.5.0): "
        "what it holds will recompile"
    ]
    manifest_path.write_text(json.dumps(manifest))  # the warmup above recorded nothing new: it compiled nothing
    refused = run(*warmup, "--require-baked", check=False)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        f"error: --require-baked: the cache at {bake / 'flydsl'} does not apply here: baked for flydsl 0.4.9, "
        "this is 0.5.0"
    ]
    empty = tmp_path / "empty"
    refused = run(*warmup[:-1], str(empty), "--require-baked", check=False)
    assert refused.returncode == 2 and "does not hold this preset: 20 planned keys are not in it" in refused.stderr


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_stopped_bake_leaves_no_process_behind(tmp_path, stop):
    """`zerojit bake` runs each target in a process of its own, with its forkserver and time-sliced workers: stop
    the command and all of them end within seconds, none left stopped or still writing --out."""
    from test_workers import _holding

    token = f"ZEROJIT_BAKE_PROBE_{os.getpid()}_{stop}"
    bake = subprocess.Popen(
        [sys.executable, "-m", "zerojit", "bake", "-p", "deepseek-v3-h200", "--out", str(tmp_path / "bake"), "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, token: "1"},
    )
    deadline = time.monotonic() + 120
    while len(_holding(token)) < 4 and time.monotonic() < deadline:  # the command, the bake, its server, a worker
        time.sleep(0.2)
    assert len(_holding(token)) >= 4, _holding(token)
    bake.send_signal(stop)
    bake.wait()
    deadline = time.monotonic() + 5
    while _holding(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    behind = _holding(token)
    for pid, _ in behind:
        os.kill(pid, signal.SIGKILL)
    assert behind == []
