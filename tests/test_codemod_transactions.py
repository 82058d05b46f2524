"""`zerojit migrate --write` is all-or-nothing, survives kills, waits for other runs and keeps files as they are.

Every run here is the real CLI in its own process (kills and locks are about processes).
"""

import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import tokenize
from pathlib import Path

import pytest

from zerojit.codemods import transaction
from zerojit.codemods.files import UnreadableSource, read_source
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.rocm_nvfp4.example import EXAMPLE_TREE

FAMILIES = ["fa4-mla-prefill", "inkling-rel-attention"]
TEMP_SUFFIX = ".zerojit-new"


# `python -m zerojit` with codemods.transaction.STEP_DELAY set first (argv[1], taken off before the CLI reads argv).
SPACED_OUT = (
    "import sys; from zerojit.codemods import transaction; transaction.STEP_DELAY = float(sys.argv.pop(1)); "
    "from zerojit.migrate.cli import main; main()"
)


# `python -m zerojit` whose write steps wait until the file argv[1] exists (taken off before the CLI reads argv).
HELD = (
    "import sys, time, pathlib; from zerojit.codemods import transaction; go = pathlib.Path(sys.argv.pop(1)); "
    "transaction._pause = lambda: [time.sleep(0.01) for _ in iter(go.exists, True)]; "
    "from zerojit.migrate.cli import main; main()"
)


def zerojit(*args: str, delay: float = 0.0, held_until: Path | None = None, **popen) -> subprocess.Popen:
    """`zerojit migrate ARGS` in its own process; `delay`: seconds between two of its write steps;
    `held_until`: its write steps wait until this file exists."""
    if held_until:
        cli = ["-c", HELD, str(held_until)]
    else:
        cli = ["-c", SPACED_OUT, str(delay)] if delay else ["-m", "zerojit"]
    return subprocess.Popen(
        [sys.executable, *cli, "migrate", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def finish(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def copy_029(where: Path) -> Path:
    """vLLM 0.29.0 as hard links: fast, and safe because every write here replaces files."""
    shutil.copytree(vllm_tree("0.29.0"), where, copy_function=os.link)
    return where


def snapshot(repo: Path) -> dict[str, str]:
    return {
        p.relative_to(repo).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The tree one clean run produces, and the original."""
    repo = copy_029(tmp_path_factory.mktemp("clean") / "repo")
    original = snapshot(repo)
    code, _, err = finish(zerojit(*FAMILIES, "--repo", str(repo), "--write"))
    assert code == 0, err
    return original, snapshot(repo)


@pytest.mark.release_tree
def test_a_kill_at_any_moment_leaves_original_or_migrated_files_and_the_next_run_finishes(tmp_path, clean):
    original, migrated = clean
    rng = random.Random(20261130)
    for attempt in range(20):
        repo = copy_029(tmp_path / f"kill{attempt}")
        journal = transaction.state_dir(repo) / transaction.JOURNAL
        run = zerojit(*FAMILIES, "--repo", str(repo), "--write", delay=0.02)
        while not journal.exists() and run.poll() is None:
            time.sleep(0.002)  # the write phase begins with the journal
        time.sleep(rng.uniform(0.0, 0.3))  # 12 steps of 0.02 s: anywhere in the write phase, or just after it
        run.send_signal(signal.SIGKILL)
        run.wait()
        after = {rel: digest for rel, digest in snapshot(repo).items() if not rel.endswith(TEMP_SUFFIX)}
        for rel in set(original) | set(migrated):
            assert after.get(rel) in (original.get(rel), migrated.get(rel)), (attempt, rel)
        code, _, err = finish(zerojit(*FAMILIES, "--repo", str(repo), "--write"))
        assert code == 0, err
        assert snapshot(repo) == migrated, attempt  # exactly the clean run's tree: no temp file, nothing half done
        assert not journal.exists()
        shutil.rmtree(repo)


@pytest.mark.release_tree
def test_a_dry_run_reports_an_interrupted_write_and_recover_rolls_it_back(tmp_path, clean):
    original, _ = clean
    repo = copy_029(tmp_path / "repo")
    journal = transaction.state_dir(repo) / transaction.JOURNAL
    run = zerojit(*FAMILIES, "--repo", str(repo), "--write", delay=0.05)
    while not journal.exists():
        time.sleep(0.002)
    time.sleep(0.4)  # past staging, into the replacements
    run.send_signal(signal.SIGKILL)
    run.wait()
    code, _, err = finish(zerojit(*FAMILIES, "--repo", str(repo), "--check"))
    assert code == 2 and "interrupted --write left a journal" in err and "Traceback" not in err
    code, _, err = finish(zerojit("--recover", "--repo", str(repo)))
    assert code == 0 and "rolled back" in err
    assert snapshot(repo) == original


def test_an_unwritable_file_mid_write_rolls_everything_back(tmp_path):
    repo = copy_029(tmp_path / "repo")
    legacy = repo / "vllm/model_executor/warmup/fa4_cutedsl_warmup.py"  # deleted last, after every replacement
    data = legacy.read_bytes()
    legacy.unlink()  # break the hard link: chattr below must mark this copy's inode, never the cache's
    legacy.write_bytes(data)
    before = snapshot(repo)
    if subprocess.run(["chattr", "+i", str(legacy)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        code, _, err = finish(zerojit(*FAMILIES, "--repo", str(repo), "--write"))
    finally:
        subprocess.run(["chattr", "-i", str(legacy)], check=True)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "rolled back" in err
    assert snapshot(repo) == before


@pytest.mark.release_tree
@pytest.mark.parametrize("split", [False, True], ids=["same families", "different families"])
def test_concurrent_runs_wait_for_each_other(tmp_path, clean, split):
    _, migrated = clean
    repo = copy_029(tmp_path / "repo")
    runs = [[*FAMILIES]] * 2 if not split else [[FAMILIES[0]], [FAMILIES[1]]]
    go = tmp_path / "go"
    first = zerojit(*runs[0], "--repo", str(repo), "--write", held_until=go)  # holds the lock until `go` exists
    while not (transaction.state_dir(repo) / transaction.JOURNAL).exists():
        time.sleep(0.002)
    second = zerojit(*runs[1], "--repo", str(repo), "--write")
    said = next(
        (line for line in iter(second.stderr.readline, "") if "waiting for another zerojit migrate" in line), ""
    )
    go.touch()  # the second run said it waits (or ended without waiting): let the first finish
    (code1, _, err1), (code2, _, err2) = finish(first), finish(second)
    assert code1 == 0 and code2 == 0, (err1, err2)
    assert said, err2
    assert snapshot(repo) == migrated


def small_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_TREE, repo)
    return repo


MODEL = "vllm/model_executor/models/minimax_m3.py"
ORCHESTRATOR = "vllm/model_executor/warmup/kernel_warmup.py"
LAUNCHERS = "vllm/v1/attention/ops/rocm_nvfp4_kv.py"


def migrate_small(repo: Path, *args: str) -> tuple[int, str, str]:
    return finish(zerojit("rocm-nvfp4", "--repo", str(repo), *args))


def test_crlf_stays_crlf_and_the_diff_shows_only_changed_lines(tmp_path):
    lf = small_repo(tmp_path / "lf")
    repo = small_repo(tmp_path)
    model = repo / MODEL
    model.write_bytes(model.read_bytes().replace(b"\n", b"\r\n"))
    code, diff, _ = migrate_small(repo)
    assert code == 0

    def changed(text):
        section = text.split(f"+++ b/{MODEL}")[1].split("--- a/")[0]
        return [line.rstrip("\r") for line in section.splitlines() if line.startswith(("+", "-"))]

    assert changed(diff) == changed(migrate_small(lf)[1])  # the same lines as the LF file's own migration
    assert migrate_small(repo, "--write")[0] == 0
    data = model.read_bytes()
    assert b"register_warmup" in data and data.count(b"\n") == data.count(b"\r\n")


@pytest.mark.parametrize("mode", [0o444, 0o750])
def test_mode_is_kept(tmp_path, mode):
    repo = small_repo(tmp_path)
    (repo / MODEL).chmod(mode)
    assert migrate_small(repo, "--write")[0] == 0
    assert (repo / MODEL).stat().st_mode & 0o7777 == mode and b"register_warmup" in (repo / MODEL).read_bytes()


def test_bom_and_coding_cookie_are_kept(tmp_path):
    repo = small_repo(tmp_path)
    orchestrator, launchers = repo / ORCHESTRATOR, repo / LAUNCHERS
    orchestrator.write_bytes(b"\xef\xbb\xbf" + orchestrator.read_bytes())
    launchers.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + launchers.read_bytes())
    assert migrate_small(repo, "--write")[0] == 0
    assert (
        orchestrator.read_bytes().startswith(b"\xef\xbb\xbf")
        and b"rocm_nvfp4_kv_warmup" not in orchestrator.read_bytes()
    )
    assert launchers.read_bytes().startswith(b"# -*- coding: latin-1 -*-\n# caf\xe9\n")
    assert b"_ROCM_NVFP4_KV_LAUNCHERS = NVFP4KVLaunchers()" in launchers.read_bytes()


@pytest.mark.parametrize(
    "data",
    [
        b"x = 1\n",
        b"x = 1",  # no newline at all
        b"",
        b"\xef\xbb\xbfx = 1\n",
        b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
        b"#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\nx = '\xe9'\n",
        b"x = 1\ny = 2\n# coding: latin-1\nz = '\xe9'\n",  # a third line declares nothing: not UTF-8
        b"x = '\xff'\n",
        b"\xef\xbb\xbf# coding: latin-1\nx = 1\n",  # a BOM and another encoding: tokenize refuses
        "# caf\u00e9\nx = '\u00e9'\n".encode(),
    ],
)
def test_a_source_is_read_in_the_encoding_tokenize_finds(tmp_path, data):
    """read_source's fast path (no BOM, no cookie in the first two lines: UTF-8) against tokenize itself."""
    path = tmp_path / "m.py"
    path.write_bytes(data)
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        expected = (data.decode(encoding), encoding)
    except (SyntaxError, UnicodeDecodeError):
        expected = None
    try:
        found = read_source(path)
        got = (found.text, found.encoding)
    except UnreadableSource:
        got = None
    assert got == expected


def test_fifo_dangling_symlink_and_undecodable_files_are_skipped_with_a_note(tmp_path):
    repo = small_repo(tmp_path)
    os.mkfifo(repo / "vllm/fifo.py")
    (repo / "vllm/dangling.py").symlink_to(tmp_path / "missing.py")
    (repo / "vllm/latin.py").write_bytes(b"x = '\xff'\n")  # not UTF-8, and no coding line
    code, _, err = finish(zerojit("rocm-nvfp4", "--repo", str(repo), "--write"))  # a FIFO read would hang here
    assert code == 0, err
    assert "skipped vllm/fifo.py: a FIFO, not a regular file" in err
    assert "skipped vllm/dangling.py: a dangling symlink" in err
    assert "skipped vllm/latin.py: not readable as Python source" in err


def test_an_unreadable_file_the_migration_needs_is_refused(tmp_path):
    repo = small_repo(tmp_path)
    (repo / MODEL).write_bytes((repo / MODEL).read_bytes() + b"# \xff\n")
    code, _, err = migrate_small(repo, "--write")
    assert code == 2 and "construction_module 'vllm.model_executor.models.minimax_m3' cannot be read" in err


LEGACY = "vllm/model_executor/warmup/rocm_nvfp4_kv_warmup.py"


@pytest.mark.parametrize("git", [False, True], ids=["walked", "git checkout"])
def test_a_legacy_module_that_is_a_fifo_is_named_so_not_missing(tmp_path, git):
    repo = small_repo(tmp_path)
    (repo / LEGACY).unlink()
    os.mkfifo(repo / LEGACY)
    if git:  # git lists no FIFO: the run never discovers it, and still says what stands there
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    code, _, err = migrate_small(repo, "--write")  # reading it would hang
    assert code == 2 and "legacy_module 'vllm.model_executor.warmup.rocm_nvfp4_kv_warmup' cannot be read" in err
    assert "a FIFO, not a regular file" in err and "not found" not in err


def test_a_package_folder_that_is_a_symlink_out_of_the_repo_is_named_so(tmp_path):
    repo = small_repo(tmp_path)
    outside = tmp_path / "outside_models"
    shutil.move(repo / "vllm/model_executor/models", outside)
    (repo / "vllm/model_executor/models").symlink_to(outside, target_is_directory=True)
    code, _, err = migrate_small(repo, "--write")
    assert code == 2 and "vllm/model_executor/models is a symlink out of the repo" in err, err
    assert (outside / "minimax_m3.py").read_bytes() == (EXAMPLE_TREE / MODEL).read_bytes()  # nothing written there


def test_gitignored_copies_are_untouched_and_paths_restrict_the_run(tmp_path):
    repo = small_repo(tmp_path)
    shutil.copytree(repo / "vllm", repo / "env312/lib/site-packages/vllm")
    (repo / ".gitignore").write_text("env312/\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    copy = snapshot(repo / "env312")
    assert migrate_small(repo, "--write")[0] == 0
    assert snapshot(repo / "env312") == copy
    assert not (transaction.state_dir(repo) / transaction.JOURNAL).exists()
    assert transaction.state_dir(repo) == repo / ".git" / "zerojit"  # nothing of zerojit's in the tree itself

    other = small_repo(tmp_path / "other")
    (other / "tools").mkdir()
    (other / "tools/rewarm.py").write_text(
        "from vllm.model_executor.warmup.rocm_nvfp4_kv_warmup import "
        "rocm_nvfp4_kv_warmup\n\nrocm_nvfp4_kv_warmup(None)\n"
    )
    code, _, err = migrate_small(other, "--check")
    assert code == 2 and "tools/rewarm.py:1: imports from vllm.model_executor.warmup.rocm_nvfp4_kv_warmup" in err
    code, out, err = finish(zerojit("rocm-nvfp4", "--repo", str(other), "--check", str(other / "vllm")))
    assert code == 1 and "would change: vllm/model_executor/warmup/kernel_warmup.py" in out


def test_repo_inside_a_package_names_the_checkout_root(tmp_path):
    repo = small_repo(tmp_path)
    code, _, err = migrate_small(repo / "vllm" / "model_executor")
    assert code == 2 and f"the checkout root (the folder holding it) is {repo}" in err
    assert len(err.strip().splitlines()) == 1


def hostile_journal(repo: Path, victim: Path, recorded: Path | None = None) -> Path:
    """A journal as an interrupted write leaves it, but naming `victim` with a backup of other bytes."""
    folder = transaction.state_dir(repo)
    (folder / "backup").mkdir(parents=True)
    (folder / "backup" / "0").write_bytes(b"overwritten\n")
    before = hashlib.sha256(b"overwritten\n").hexdigest()
    entry = {
        "index": 0,
        "path": str(victim),
        "temp": str(victim.with_name(f".{victim.name}.1.zerojit-new")),
        "before": before,
        "after": None,
        "mode": 0o644,
    }
    journal = folder / transaction.JOURNAL
    journal.write_text(json.dumps({"repo": str((recorded or repo).resolve()), "files": [entry]}))
    return journal


@pytest.mark.parametrize("case", ["outside the repo", "another repo", "a backup of other bytes"])
def test_a_hostile_journal_is_refused_and_touches_nothing(tmp_path, case):
    repo = small_repo(tmp_path)
    victim = tmp_path / "victim.txt" if case == "outside the repo" else repo / MODEL
    if case == "outside the repo":
        victim.write_text("keep me\n")
    journal = hostile_journal(repo, victim, tmp_path / "elsewhere" if case == "another repo" else None)
    if case == "a backup of other bytes":
        (transaction.state_dir(repo) / "backup" / "0").write_bytes(b"not what the journal records\n")
    kept = victim.read_bytes()
    for args in (("--recover",), ("--write",)):
        code, _, err = migrate_small(repo, *args)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "was not written for this repo" in err, err
        assert "Traceback" not in err and victim.read_bytes() == kept and journal.exists()


def test_a_read_only_repo_is_refused_before_anything_is_staged_and_can_still_be_checked(tmp_path):
    repo = small_repo(tmp_path)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    before = snapshot(repo)
    if subprocess.run(["chattr", "-R", "+i", str(repo)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        results = [migrate_small(repo, *args) for args in (("--write",), ("--check",), ("--recover",), ())]
    finally:
        subprocess.run(["chattr", "-R", "-i", str(repo)], check=True)
    (write, check, recover, dry) = results
    assert write[0] == 2 and "cannot be written" in write[2] and len(write[2].strip().splitlines()) == 1, write[2]
    assert check[0] == 1 and "would change" in check[1] and "Traceback" not in check[2]
    assert recover[0] == 2 and "cannot be written" in recover[2]
    assert dry[0] == 0 and "+++ b/" in dry[1]
    assert snapshot(repo) == before


def test_a_journal_naming_a_folder_or_odd_state_files_are_refused_not_stuck(tmp_path):
    repo = small_repo(tmp_path)
    journal = hostile_journal(repo, repo / "vllm" / "model_executor")  # a folder inside the repo
    code, _, err = migrate_small(repo, "--recover")
    assert code == 2 and "not a regular file" in err and "remove it" in err and "internal error" not in err
    journal.unlink()
    shutil.rmtree(transaction.state_dir(repo) / "backup")
    lock = transaction.state_dir(repo) / "lock"
    lock.unlink(missing_ok=True)
    os.mkfifo(lock)  # opening it would block forever
    code, _, err = migrate_small(repo, "--write")
    assert code == 2 and "holds" in err and "remove it" in err
