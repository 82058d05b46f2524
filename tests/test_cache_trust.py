"""A cache folder is data from elsewhere (a bake is shipped): nothing in it can make zerojit touch a file outside
it, load what its manifest does not vouch for, or stop with a traceback.

The toy kernel (tests/toy_family) compiles real code objects into the cache, so each test runs
the warmup's own steps as two processes would: check the cache, compile, record.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from zerojit_toy_family import backend as toy_backend
from zerojit_toy_family.kernel import PolyKernel

from zerojit.contract import ServingLimits, WarmupRegistry, execute, storage
from zerojit.contract.cache import (
    HISTORY_FILE,
    LOCK_FILE,
    MANIFEST_FILE,
    CacheDirError,
    CacheWarning,
    check_artifacts,
    file_digest,
    open_cache_dir,
    read_fingerprint,
    record_results,
    warming,
)

pytestmark = pytest.mark.compiles

LIMITS = ServingLimits(max_num_seqs=8, max_num_batched_tokens=512, max_model_len=4096)


def plan_for(kernel: PolyKernel):
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        kernel.register_warmup(max_terms=8, dtypes=("bf16",))
    return registry.plan()


def warm(folder: Path, loads: tuple[str, ...] = toy_backend.LOADS):
    """One warmup as a fresh process runs it: a new kernel object on the cache, checked, compiled, recorded.
    `loads`: what the backend says its compiles load (a family's backend may say nothing)."""
    cache = open_cache_dir(folder)
    plan = plan_for(PolyKernel(cache_dir=cache.path))
    problems, uncovered = check_artifacts(cache, plan, loads=loads)
    report = execute(plan)
    record_results(cache, report, {"Python": "3.x"})
    return problems, uncovered, report


def manifest(folder: Path) -> dict:
    return json.loads((folder / MANIFEST_FILE).read_text())


def test_manifest_paths_outside_the_cache_are_refused_and_nothing_outside_is_touched(tmp_path):
    cache = tmp_path / "cache"
    warm(cache)
    victim, absolute = tmp_path / "victim.txt", tmp_path / "elsewhere" / "victim.txt"
    absolute.parent.mkdir()
    victim.write_text("keep me")
    absolute.write_text("keep me too")
    data = manifest(cache)
    first, second = list(data["keys"])[:2]
    data["keys"][first]["artifacts"]["../victim.txt"] = "0" * 64
    data["keys"][second]["artifacts"][str(absolute)] = "0" * 64
    data["keys"][list(data["keys"])[2]]["artifacts"]["a\u0000b"] = "0" * 64  # a name the system refuses
    data["keys"][list(data["keys"])[3]]["artifacts"]["x" * 5000] = "0" * 64
    (cache / MANIFEST_FILE).write_text(json.dumps(data))

    problems, _, report = warm(cache)

    assert victim.read_text() == "keep me" and absolute.read_text() == "keep me too"
    refused = sorted(p.artifact for p in problems if "outside the cache folder" in p.why)
    assert refused == sorted(["../victim.txt", str(absolute), "a\u0000b", "x" * 5000])
    assert report.count("compiled") == 4 and report.count("failed") == 0  # the refused keys recompiled
    assert all(
        not Path(relative).is_absolute() and ".." not in relative
        for entry in manifest(cache)["keys"].values()
        for relative in entry["artifacts"]
    )


def test_an_artifact_entry_naming_a_folder_is_refused_not_a_traceback(tmp_path):
    cache = tmp_path / "cache"
    warm(cache)
    data = manifest(cache)
    key = next(iter(data["keys"]))
    (cache / "a-folder").mkdir(mode=0o700)
    data["keys"][key]["artifacts"]["a-folder"] = "0" * 64
    (cache / MANIFEST_FILE).write_text(json.dumps(data))
    problems, _, report = warm(cache)
    assert [p.why for p in problems] == ["is not a regular file: the manifest's entry for this key is refused"]
    assert (cache / "a-folder").is_dir() and report.count("compiled") == 1


@pytest.mark.parametrize("corruption", ["not json", "fingerprint is a list", "missing"])
def test_a_manifest_that_vouches_for_nothing_never_blesses_what_the_cache_holds(tmp_path, corruption):
    cache = tmp_path / "cache"
    warm(cache)
    artifacts = sorted(cache.glob("*.marshal"))
    first, second = artifacts[0].read_bytes(), artifacts[1].read_bytes()
    artifacts[0].write_bytes(second)  # swapped: each file would load as the other key's variant
    artifacts[1].write_bytes(first)
    if corruption == "not json":
        (cache / MANIFEST_FILE).write_text("{ truncated")
    elif corruption == "fingerprint is a list":
        data = manifest(cache)
        data["fingerprint"] = ["Python", "3.x"]
        (cache / MANIFEST_FILE).write_text(json.dumps(data))
    else:
        (cache / MANIFEST_FILE).unlink()

    problems, uncovered, report = warm(cache)

    assert len(problems) == 1 and "none of the cache's" in str(problems[0]) and uncovered == len(report.results)
    assert report.count("compiled") == len(report.results)  # nothing was loaded from the untrusted files
    assert read_fingerprint(open_cache_dir(cache)) == {"Python": "3.x"}
    again, uncovered_again, _ = warm(cache)
    assert again == [] and uncovered_again == 0


def test_check_only_keeps_an_untrusted_cache_as_it_is(tmp_path):
    cache = tmp_path / "cache"
    warm(cache)
    (cache / MANIFEST_FILE).write_text("{ truncated")
    before = sorted(p.name for p in cache.iterdir())
    problems, _ = check_artifacts(open_cache_dir(cache), plan_for(PolyKernel(cache_dir=cache)), remove=False)
    assert problems and sorted(p.name for p in cache.iterdir()) == before


@pytest.mark.parametrize("name", [MANIFEST_FILE, LOCK_FILE, HISTORY_FILE])
def test_a_folder_where_zerojit_keeps_a_file_is_one_line(tmp_path, name):
    (tmp_path / name).mkdir()
    with pytest.raises(CacheDirError, match=f"{name} is not a regular file"):
        open_cache_dir(tmp_path)


def test_every_folder_under_the_cache_is_held_to_the_top_folders_trust_rule(tmp_path):
    cache = tmp_path / "cache"
    (cache / "variant" / "deeper").mkdir(parents=True)
    cache.chmod(0o700)
    (cache / "variant" / "deeper").chmod(0o777)
    with pytest.raises(CacheDirError, match="deeper is writable by other users"):
        open_cache_dir(cache)
    (cache / "variant" / "deeper").chmod(0o755)
    assert open_cache_dir(cache).path == cache


def test_a_bake_root_stands_for_its_backend_folder_and_is_never_compiled_beside(tmp_path):
    warm(tmp_path / "bake" / "python")
    assert open_cache_dir(tmp_path / "bake", "python").path == tmp_path / "bake" / "python"
    assert open_cache_dir(tmp_path / "bake" / "python", "python").path == tmp_path / "bake" / "python"
    with pytest.raises(CacheDirError, match="is a bake root holding python, with no triton folder"):
        open_cache_dir(tmp_path / "bake", "triton")
    assert open_cache_dir(tmp_path / "fresh", "triton").path == tmp_path / "fresh"


def test_a_cache_dir_a_peer_creates_between_the_check_and_the_mkdir_is_opened(tmp_path, monkeypatch):
    """Two ranks opening one new cache: the one whose mkdir comes second finds the folder there and uses it."""
    cache = tmp_path / "cache"
    mkdir = Path.mkdir

    def peer_first(self, *args, **kwargs):
        if self == cache and not self.exists():
            mkdir(self, mode=0o700)  # the peer's mkdir lands first
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", peer_first)
    assert open_cache_dir(cache).path == cache


def test_a_full_disk_while_recording_is_one_line_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    cache = open_cache_dir(tmp_path / "cache")
    plan = plan_for(PolyKernel(cache_dir=cache.path))
    report = execute(plan)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(storage.os, "replace", full)
    with pytest.raises(CacheDirError, match="cannot record the warmup in cache dir .*No space left on device"):
        record_results(cache, report)
    assert not [p for p in cache.path.iterdir() if p.name.startswith((f".{HISTORY_FILE}", f".{MANIFEST_FILE}"))]


def test_a_cache_holds_its_own_files_only(tmp_path):
    """A symlink inside the cache would load (or recompile into) what lies outside; a FIFO would hang the reader;
    a file others can write could be swapped."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for make, why in (
        (lambda c: (c / "variant").symlink_to(elsewhere), "holds a symlink"),
        (lambda c: (c / "k.marshal").symlink_to(elsewhere / "evil"), "holds a symlink"),
        (lambda c: os.mkfifo(c / "__grp__k.json"), "not a regular file or folder"),
        (lambda c: ((c / "k.marshal").write_bytes(b""), (c / "k.marshal").chmod(0o666)), "writable by other users"),
    ):
        cache = tmp_path / f"cache-{why[:4]}-{len(list(tmp_path.iterdir()))}"
        cache.mkdir(mode=0o700)
        make(cache)
        with pytest.raises(CacheDirError, match=why):
            open_cache_dir(cache)


def test_a_folder_zerojit_never_used_is_refused_not_emptied(tmp_path):
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True, mode=0o700)
    folder.chmod(0o700)
    (folder / "notes.txt").write_text("precious")
    (folder / "sub" / "main.py").write_text("code")
    with pytest.raises(CacheDirError, match="is not a zerojit cache"):
        warm(folder)
    assert (folder / "notes.txt").read_text() == "precious" and (folder / "sub" / "main.py").exists()


def test_a_backend_folder_given_as_the_cache_root_is_refused(tmp_path):
    warm(tmp_path / "bake" / "python")
    with pytest.raises(CacheDirError, match="which is itself a python cache"):
        open_cache_dir(tmp_path / "bake" / "python" / "python", "python")


@pytest.fixture(scope="module")
def triton_bake(tmp_path_factory):
    """qwen3-next-h200 baked for real (Triton, 6 variants), then copied away and the original deleted."""
    from conftest import zerojit

    root = tmp_path_factory.mktemp("triton-bake")
    done = zerojit("bake", "--preset", "qwen3-next-h200", "--out", str(root / "bake"))
    assert done.returncode == 0, done.stderr[-2000:]
    shutil.copytree(root / "bake", root / "copy")
    shutil.rmtree(root / "bake")
    return root / "copy"


def warmup_json(*args: str) -> dict:
    from conftest import zerojit

    done = zerojit("warmup", "--preset", "qwen3-next-h200", "--json", *args)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_moved_read_only_triton_bake_loads_every_variant_and_reads_no_other_folder(triton_bake, tmp_path):
    readonly = tmp_path / "mounted"
    shutil.copytree(triton_bake, readonly)
    if subprocess.run(["chattr", "-R", "+i", str(readonly)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        report = warmup_json("--cache-dir", str(readonly), "--require-baked")
    finally:
        subprocess.run(["chattr", "-R", "-i", str(readonly)], check=True)
    assert (report["compiled"], report["cached"], report["failed"]) == (0, 6, 0)
    groups = list(readonly.rglob("__grp__*.json"))
    children = [path for group in groups for path in json.loads(group.read_text())["child_paths"].values()]
    assert len(groups) == 6 and children and not any(Path(path).is_absolute() for path in children)


def test_a_swapped_triton_group_file_is_recompiled_and_reported(triton_bake, tmp_path):
    cache = tmp_path / "swapped"
    shutil.copytree(triton_bake, cache)
    first, second = sorted((cache / "triton").rglob("__grp__*.json"))[:2]
    one, other = first.read_bytes(), second.read_bytes()
    first.write_bytes(other)
    second.write_bytes(one)
    report = warmup_json("--cache-dir", str(cache))
    swapped = {str(path.relative_to(cache / "triton")) for path in (first, second)}
    assert report["compiled"] == 2 and report["cached"] == 4
    assert {
        line.split("cached artifact ")[1].split(" does not match")[0] for line in report["recompiled_artifacts"]
    } == swapped


def test_a_triton_group_file_resolves_only_its_own_variants_files(tmp_path, monkeypatch):
    """Without the manifest (a key it does not cover), the cache manager itself refuses a group file that was
    written for another variant, names an absolute path, or climbs out of its folder."""
    import triton

    from zerojit.contract.backends.triton_cache import RelocatableCacheManager

    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    mine, other = RelocatableCacheManager("MINE"), RelocatableCacheManager("OTHER")
    for manager in (mine, other):
        cubin = manager.put(b"\x7fELF", "k.cubin")
        manager.put_group("k.json", {"k.cubin": cubin, "k.json": manager.put("{}", "k.json", binary=False)})
    assert mine.get_group("k.json") == {
        "k.cubin": str(tmp_path / "MINE" / "k.cubin"),
        "k.json": str(tmp_path / "MINE" / "k.json"),
    }
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "MINE", moved / "MINE")
    monkeypatch.setattr(triton.knobs.cache, "dir", str(moved))
    assert RelocatableCacheManager("MINE").get_group("k.json")["k.cubin"] == str(moved / "MINE" / "k.cubin")
    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    shutil.copy(tmp_path / "OTHER" / "__grp__k.json", tmp_path / "MINE" / "__grp__k.json")
    assert mine.get_group("k.json") is None
    for children in ({"k.cubin": str(tmp_path / "OTHER" / "k.cubin")}, {"k.cubin": "../OTHER/k.cubin"}):
        (tmp_path / "MINE" / "__grp__k.json").write_text(json.dumps({"variant": "MINE", "child_paths": children}))
        assert mine.get_group("k.json") is None


def plant_unvouched_variant(cache: Path) -> tuple[str, str, str]:
    """Drop a key from the manifest and put another key's variant under its file name (what a killed run or a
    hostile hand leaves); (the key, its file, the file copied)."""
    data = manifest(cache)
    victim = next(iter(data["keys"]))
    (victim_file,) = data["keys"].pop(victim)["artifacts"]
    other_file = next(relative for entry in data["keys"].values() for relative in entry["artifacts"])
    (cache / victim_file).write_bytes((cache / other_file).read_bytes())
    (cache / MANIFEST_FILE).write_text(json.dumps(data))
    return victim, victim_file, other_file


def test_a_file_no_manifest_entry_vouches_for_is_never_blessed_where_the_backend_names_no_loads(tmp_path):
    """A family's backend that declares no LOADS: nothing is removed before the warmup, which may then load the
    file someone put under a key's name; it is not recorded as valid, it goes, and the next warmup recompiles."""
    cache = tmp_path / "cache"
    warm(cache, loads=())
    victim, victim_file, other_file = plant_unvouched_variant(cache)
    with pytest.warns(CacheWarning, match="no manifest entry vouched for"):
        _, uncovered, report = warm(cache, loads=())
    assert uncovered == 1 and victim not in manifest(cache)["keys"] and not (cache / victim_file).exists()
    _, uncovered, report = warm(cache, loads=())
    assert uncovered == 1 and report.count("compiled") == 1 and victim in manifest(cache)["keys"]


def test_a_file_no_manifest_entry_vouches_for_is_removed_before_anything_loads_it(tmp_path):
    """A planned key the manifest does not list, whose file is there (another key's variant under its name, as a
    killed run or a hostile hand leaves it): removed before the warmup could load it, so the key compiles in this
    run and is recorded, and nothing was ever loaded from it."""
    cache = tmp_path / "cache"
    warm(cache)
    victim, victim_file, other_file = plant_unvouched_variant(cache)
    (cache / "launcher.so").write_bytes(b"\x7fELF")  # a kind of file no compile loads (Triton's launcher): stays
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # nothing unvouched was loaded, so nothing to warn of
        problems, uncovered, report = warm(cache)
    assert uncovered == 1 and report.count("compiled") == 1 and report.count("cached") == len(report.results) - 1
    assert any(victim_file in problem.artifact and problem.kernel is None for problem in problems)
    recorded = manifest(cache)["keys"][victim]["artifacts"]
    assert recorded == {victim_file: file_digest(cache / victim_file)} != {victim_file: file_digest(cache / other_file)}
    assert warm(cache)[1] == 0 and (cache / "launcher.so").read_bytes() == b"\x7fELF"


@pytest.mark.parametrize(
    "presets", [("qwen3-next-h200", "qwen3-next-h200"), ("qwen3-next-h200", "qwen3-next-b200")], ids=["same", "two"]
)
def test_two_warmups_of_one_empty_cache_at_once_leave_it_complete_for_both(tmp_path, presets):
    """Two TP ranks of one host (or two presets) warming one cache at the same moment: the second waits for the
    first (the cache is held from its check to its record), and the cache then serves each with zero compiles."""
    from conftest import zerojit

    cache = tmp_path / "cache"
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "zerojit", "warmup", "--preset", preset, "--cache-dir", str(cache), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for preset in presets
    ]
    done = [(run.wait(), *run.communicate()) for run in runs]
    assert [code for code, _, _ in done] == [0, 0], [err[-2000:] for _, _, err in done]
    assert not any(b"vouched" in err for _, _, err in done)  # nothing was loaded that it then had to remove
    if presets[0] == presets[1]:  # one compiled, the other loaded what it compiled
        assert sorted(json.loads(out)["compiled"] for _, out, _ in done)[0] == 0
    for preset in presets:
        served = zerojit("warmup", "--preset", preset, "--cache-dir", str(cache), "--require-baked", "--json")
        assert served.returncode == 0 and json.loads(served.stdout)["compiled"] == 0, served.stderr[-2000:]


def test_a_warmup_waits_for_the_one_holding_the_cache_and_never_removes_its_files(tmp_path, toy_family_site):
    """A peer in flight (its compile written, not yet recorded) is waited for, never judged unvouched."""
    cache_dir = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(toy_family_site)}
    command = [sys.executable, "-m", "zerojit", "warmup", "-p", "toy-poly-small", "--cache-dir", str(cache_dir)]
    assert subprocess.run(command, capture_output=True, env=env).returncode == 0
    in_flight = cache_dir / "peer-in-flight.marshal"
    with warming(open_cache_dir(cache_dir)):
        in_flight.write_bytes(b"the peer's compile")
        waiting = subprocess.Popen([*command, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        line = waiting.stderr.readline()
        assert b"waiting for another warmup of this cache" in line, line
        assert in_flight.read_bytes() == b"the peer's compile" and waiting.poll() is None
    assert waiting.wait(timeout=120) == 0
    assert json.loads(waiting.stdout.read())["compiled"] == 0
