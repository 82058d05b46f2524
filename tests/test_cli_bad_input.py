"""Bad input to the runtime commands: one `error:` line and exit 2, before anything compiles; caches vetted.

Each case runs the real CLI in a fresh process (tracebacks and rich markup would show
there). Warmups use the toy family (installed as a plug-in) unless a real backend matters.
"""

import json
import multiprocessing
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import zerojit

from zerojit.contract.cache import HISTORY_FILE, MANIFEST_FILE, CacheDir, file_digest, read_history, read_manifest

TOY = "toy-poly-small"
TOY_KEYS = 10


def assert_one_error_line(done: subprocess.CompletedProcess, *fragments: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def warm_toy(site: Path, cache: Path, *flags: str, disk_full_after: int | None = None) -> subprocess.CompletedProcess:
    return zerojit(
        "warmup", "-p", TOY, "--cache-dir", str(cache), "--json", *flags, site=site, disk_full_after=disk_full_after
    )


def test_cache_dir_that_is_a_file_or_under_one(toy_family_site, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    assert_one_error_line(warm_toy(toy_family_site, afile), f"cache dir {afile} is a file, not a folder")
    assert_one_error_line(warm_toy(toy_family_site, afile / "sub"), f"is under {afile}, which is a file")


def test_cache_dir_that_other_users_can_write_is_refused(toy_family_site, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert_one_error_line(warm_toy(toy_family_site, shared), "writable by other users", "chmod go-w")
    assert list(shared.iterdir()) == []  # refused before anything compiled


@pytest.fixture
def make_read_only():
    """Make folders and files unwritable even for root (the immutable flag), as a read-only mount would."""
    frozen: list[Path] = []

    def freeze(*paths: Path) -> None:
        for path in paths:
            if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
                pytest.skip("chattr +i is not available here")
            frozen.append(path)

    yield freeze
    for path in reversed(frozen):
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_read_only_cache_serves_a_warmup_that_compiles_nothing(toy_family_site, tmp_path, make_read_only):
    cache = tmp_path / "baked"
    assert warm_toy(toy_family_site, cache).returncode == 0
    before = {path.name: path.read_bytes() for path in cache.iterdir()}
    make_read_only(*cache.iterdir(), cache)
    again = warm_toy(toy_family_site, cache)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["cached"] == TOY_KEYS and json.loads(again.stdout)["compiled"] == 0
    assert {path.name: path.read_bytes() for path in cache.iterdir()} == before


def test_read_only_cache_that_would_need_writing_is_refused_before_compiling(toy_family_site, tmp_path, make_read_only):
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o700)
    make_read_only(empty)
    assert_one_error_line(
        warm_toy(toy_family_site, empty),
        "is read-only and would need writing",
        f"{TOY_KEYS} planned keys are not in its manifest",
    )
    partial = tmp_path / "partial"
    assert warm_toy(toy_family_site, partial).returncode == 0
    victim = sorted(partial.glob("*.marshal"))[0]
    victim.unlink()
    make_read_only(*partial.iterdir(), partial)
    assert_one_error_line(warm_toy(toy_family_site, partial), f"cached artifact {victim.name} is missing")


def test_timeline_that_cannot_be_written_is_refused_before_compiling(toy_family_site, tmp_path):
    cache = tmp_path / "cache"
    missing = tmp_path / "no" / "such" / "t.png"
    assert_one_error_line(warm_toy(toy_family_site, cache, "--timeline", str(missing)), "does not exist")
    assert_one_error_line(warm_toy(toy_family_site, cache, "--timeline", str(tmp_path)), "is a folder, not a file")
    assert not list(cache.glob("*.marshal"))


@pytest.mark.parametrize("content", ["", "{", "[]", '{"a": "slow"}', '{"a": true}'])
def test_unreadable_timing_history_is_ignored_with_a_warning_and_rebuilt(toy_family_site, tmp_path, content):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / HISTORY_FILE).write_text(content)
    done = warm_toy(toy_family_site, cache)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("warning:")] == [line for line in lines if "timing" in line]
    assert len([line for line in lines if "ignoring timing history" in line]) == 1 and "Traceback" not in done.stderr
    history = json.loads((cache / HISTORY_FILE).read_text())
    assert len(history) == TOY_KEYS and all(isinstance(seconds, float) for seconds in history.values())


def test_user_text_is_never_read_as_markup():
    done = zerojit("plan", "-p", "[red]x[/red] [bold")
    assert_one_error_line(done, "unknown preset '[red]x[/red] [bold'")


@pytest.mark.parametrize("count", ["99999999999999999999", "0", "-3"])
def test_launch_count_is_bounded(count):
    assert_one_error_line(
        zerojit("verify", "-p", "minimax-m3-nvfp4-mi355x-tp4", "--launches", count),
        "--launches must be between 1 and 100000",
    )


def test_keys_diff_writes_nothing_into_the_current_directory(tmp_path):
    done = zerojit("keys", "diff", "--family", "rocm-nvfp4", "--grid", "none", "--samples", "3", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["configs"] == 3
    assert list(tmp_path.iterdir()) == []


def test_swapped_toy_artifacts_are_recompiled_and_reported(toy_family_site, tmp_path):
    cache = tmp_path / "cache"
    assert warm_toy(toy_family_site, cache).returncode == 0
    first, second = sorted(cache.glob("*.marshal"))[:2]
    a, b = first.read_bytes(), second.read_bytes()
    first.write_bytes(b)
    second.write_bytes(a)
    again = warm_toy(toy_family_site, cache)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["compiled"] == 2 and report["cached"] == TOY_KEYS - 2
    assert sorted(p.split(": cached artifact ")[1].split(" ")[0] for p in report["recompiled_artifacts"]) == sorted(
        [first.name, second.name]
    )
    # The recompiled files are the right ones again: their digests match the manifest.
    manifest = read_manifest(CacheDir(cache, True))
    assert {
        name
        for entry in manifest.values()
        for name, digest in entry["artifacts"].items()
        if digest == file_digest(cache / name)
    } == {p.name for p in cache.glob("*.marshal")}


@pytest.mark.compiles
def test_swapped_flydsl_artifacts_are_recompiled_and_reported(tmp_path, make_read_only):
    """The real backend: two gfx950 code objects of one launcher exchanged on disk; then the cache made read-only."""
    cache = tmp_path / "cache"
    preset = "minimax-m3-nvfp4-mi355x-tp4"
    assert zerojit("warmup", "-p", preset, "--cache-dir", str(cache), "--json").returncode == 0
    folder = max(
        (p for p in cache.iterdir() if p.is_dir() and len(list(p.glob("*.pkl"))) >= 2),
        key=lambda p: len(list(p.glob("*.pkl"))),
    )
    first, second = sorted(folder.glob("*.pkl"))[:2]
    swapped = tmp_path / "swap"
    shutil.move(first, swapped)
    shutil.move(second, first)
    shutil.move(swapped, second)
    again = zerojit("warmup", "-p", preset, "--cache-dir", str(cache), "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert len(report["recompiled_artifacts"]) == 2 and report["compiled"] == 2
    verify = zerojit("verify", "-p", preset, "--cache-dir", str(cache), "--launches", "10", "--json")
    assert verify.returncode == 0 and json.loads(verify.stdout)["cache_growth"] == 0
    make_read_only(cache)  # FlyDSL 0.5 opens an artifact's lock file for writing even to load it
    assert_one_error_line(zerojit("warmup", "-p", preset, "--cache-dir", str(cache)), "FlyDSL takes a write lock")


def _record_many(cache_dir: str, worker: int, rounds: int) -> None:
    """One warmup's worth of record_results calls, each for a key of its own."""
    import dataclasses

    from zerojit.contract.cache import record_results
    from zerojit.contract.keys import CompileKey
    from zerojit.contract.report import KeyResult

    @dataclasses.dataclass(frozen=True)
    class Key(CompileKey):
        worker: int
        index: int

    class Report:
        def __init__(self, results):
            self.results = results

    for index in range(rounds):
        result = KeyResult("k", "f", Key(worker, index), "compiled", 0.5 + index)
        record_results(CacheDir(Path(cache_dir), True), Report([result]))


def test_concurrent_warmups_merge_their_history_and_manifest(tmp_path):
    """Two warmups recording into one cache at once: nothing either recorded is lost."""
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_record_many, args=(str(tmp_path), worker, 25)) for worker in range(2)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    cache = CacheDir(tmp_path, True)
    assert len(read_history(cache)) == 50 and len(read_manifest(cache)) == 50
    assert (tmp_path / MANIFEST_FILE).is_file()


def test_rank_count_is_bounded_before_any_process_starts():
    done = zerojit("warmup", "-p", "minimax-m3-nvfp4-mi355x-tp4", "--ranks", "10000")
    assert_one_error_line(done, "--ranks must be between 1 and 64, not 10000")


@pytest.mark.parametrize("option", [["--require-baked"], ["--timeline", "t.json"]], ids=lambda o: o[0])
def test_options_a_cooperative_warmup_cannot_honour_are_refused_not_dropped(tmp_path, option):
    done = zerojit("warmup", "-p", "minimax-m3-nvfp4-mi355x-tp4", "--ranks", "2", *option, cwd=tmp_path)
    assert_one_error_line(done, f"{option[0]} is not available with --ranks")
    assert list(tmp_path.iterdir()) == []  # refused before any rank started or anything was written


def test_keys_diff_jobs_are_bounded_by_the_cores(tmp_path):
    cores = multiprocessing.cpu_count()
    done = zerojit("keys", "diff", "--family", "rocm-nvfp4", "--grid", "none", "--samples", "2", "-j", "1000", "--json")
    assert done.returncode == 0, done.stderr
    assert f"--jobs 1000: this machine has {cores} cores; using {cores}" in done.stderr


def test_a_kernel_status_without_the_kernel_map_is_refused(tmp_path):
    done = zerojit("survey", "--repo", str(tmp_path), "--status", "registered")
    assert_one_error_line(done, "--status chooses the JIT map's kernels: give --kernels too")


def test_a_report_that_cannot_be_written_is_refused_before_the_tree_is(tmp_path):
    from zerojit.migrate.rocm_nvfp4.example import EXAMPLE_TREE

    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_TREE, repo)
    before = {path: path.read_bytes() for path in repo.rglob("*.py")}
    for args in (("--write",), ()):
        done = zerojit("migrate", "rocm-nvfp4", "--repo", str(repo), "--report", str(tmp_path / "no" / "r.json"), *args)
        assert_one_error_line(done, "--report", "does not exist")
    assert {path: path.read_bytes() for path in repo.rglob("*.py")} == before


def example_repo(tmp_path: Path) -> tuple[Path, dict[Path, bytes]]:
    from zerojit.migrate.rocm_nvfp4.example import EXAMPLE_TREE

    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_TREE, repo)
    return repo, {path: path.read_bytes() for path in repo.rglob("*.py")}


def test_one_file_named_by_two_outputs_is_refused_before_anything_is_written(tmp_path):
    repo, before = example_repo(tmp_path)
    same = str(tmp_path / "out.md")
    done = zerojit("migrate", "rocm-nvfp4", "--repo", str(repo), "--report", same, "--pr-body", same, "--write")
    assert_one_error_line(done, f"--pr-body {same} is the --report file too")
    assert {path: path.read_bytes() for path in repo.rglob("*.py")} == before and not Path(same).exists()


def test_an_output_named_by_a_dangling_link_is_refused_before_anything_runs(tmp_path):
    repo, before = example_repo(tmp_path)
    (link := tmp_path / "report.json").symlink_to(tmp_path / "elsewhere.json")
    done = zerojit("migrate", "rocm-nvfp4", "--repo", str(repo), "--report", str(link), "--write")
    assert_one_error_line(done, f"--report {link} exists; zerojit never writes over a file")
    assert {path: path.read_bytes() for path in repo.rglob("*.py")} == before and not link.exists()


def test_an_output_that_appears_while_the_migration_runs_is_left_as_it_is(tmp_path):
    repo, _ = example_repo(tmp_path)
    body = tmp_path / "body.md"
    # The formatter runs in the middle of the migration: it creates the PR body's file, as another program might.
    formatter = f"sh -c 'echo theirs > {body}; cat'"
    done = zerojit("migrate", "rocm-nvfp4", "--repo", str(repo), "--pr-body", str(body), "--format", formatter)
    assert done.returncode == 2 and f"error: --pr-body {body} appeared while the command ran" in done.stderr
    assert body.read_text() == "theirs\n" and {p.name for p in tmp_path.iterdir()} == {"repo", "body.md"}


def test_a_full_disk_for_an_output_leaves_the_tree_and_the_folder_as_they_were(tmp_path):
    repo, before = example_repo(tmp_path)
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    args = ("migrate", "rocm-nvfp4", "--repo", str(repo), "--write", "--report", str(outputs / "report.json"))
    done = zerojit(*args, disk_full_after=200)  # the report is longer: it cannot be written
    assert_one_error_line(done, f"--report {outputs / 'report.json'}", "it was not written")
    assert {path: path.read_bytes() for path in repo.rglob("*.py")} == before  # the tree was not touched
    assert list(outputs.iterdir()) == []  # no half-written body, no temporary file


def test_a_timeline_in_the_cache_folder_is_refused_before_anything_compiles(toy_family_site, tmp_path):
    cache = tmp_path / "cache"
    assert warm_toy(toy_family_site, cache).returncode == 0
    manifest = (cache / MANIFEST_FILE).read_bytes()
    for inside in (cache / MANIFEST_FILE, cache / "timeline.json"):
        assert_one_error_line(warm_toy(toy_family_site, cache, "--timeline", str(inside)), "--timeline", "cache")
    assert (cache / MANIFEST_FILE).read_bytes() == manifest and not (cache / "timeline.json").exists()


def test_a_drawing_on_a_full_disk_is_one_line_and_no_file(toy_family_site, tmp_path):
    pytest.importorskip("matplotlib")
    cache, drawing = tmp_path / "cache", tmp_path / "timeline.png"
    done = warm_toy(toy_family_site, cache, "--timeline", str(drawing), disk_full_after=1_000_000)
    assert done.returncode == 0, done.stderr
    assert drawing.read_bytes().startswith(b"\x89PNG") and drawing.stat().st_size > 10_000
    again = tmp_path / "again.png"
    # Room for the cache's own files, not for the drawing.
    done = warm_toy(toy_family_site, cache, "--timeline", str(again), disk_full_after=10_000)
    last = done.stderr.strip().splitlines()[-1]  # after the warmup's progress line
    assert done.returncode == 2 and last == f"error: --timeline {again}: File too large; it was not written"
    assert "Traceback" not in done.stderr
    assert not again.exists() and not list(tmp_path.glob(".again.png.*"))


def test_json_on_a_full_standard_output_is_one_line(tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "zerojit", "families", "--json"], stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--json" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.release_tree
def test_draft_specs_never_overwrite_and_never_crash(tmp_path, make_read_only):
    from zerojit.migrate.engine_trees.releases import vllm_tree

    survey = ("survey", "--repo", str(vllm_tree("0.33.0")), "--draft-specs")
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    assert_one_error_line(zerojit(*survey, str(afile)), "is a file, not a folder")
    drafts = tmp_path / "drafts"
    assert zerojit(*survey, str(drafts)).returncode == 0
    first = sorted(drafts.glob("*.toml"))
    assert first
    first[0].write_text("edited by hand\n")
    assert_one_error_line(zerojit(*survey, str(drafts)), "already holds", first[0].name)
    assert first[0].read_text() == "edited by hand\n"
    frozen = tmp_path / "frozen"
    frozen.mkdir()
    make_read_only(frozen)
    assert_one_error_line(zerojit(*survey, str(frozen)), "is not writable")


def test_a_timeline_of_a_format_the_plot_cannot_write_is_refused_before_compiling(toy_family_site, tmp_path):
    cache = tmp_path / "cache"
    assert_one_error_line(
        warm_toy(toy_family_site, cache, "--timeline", str(tmp_path / "t.csv")), "name a .png, .svg, .pdf, .json file"
    )
    assert_one_error_line(warm_toy(toy_family_site, cache, "--timeline", "/dev/full"), "not a regular file")
    assert not list(cache.glob("*.marshal"))


def test_a_bake_whose_folder_cannot_hold_it_is_refused_in_one_line(toy_family_site, tmp_path):
    """The error comes from the process that bakes (a user error there is one line here too)."""
    afile = tmp_path / "afile"
    afile.write_text("")
    done = zerojit("bake", "-p", TOY, "--out", str(afile), site=toy_family_site)
    assert_one_error_line(done, f"is under {afile}, which is a file, not a folder")


def test_a_json_timeline_holds_every_key_of_the_report(toy_family_site, tmp_path):
    """`--timeline FILE.json`: the phases and each key's start, wall and CPU seconds, as the report counted them."""
    done = warm_toy(toy_family_site, tmp_path / "cache", "--timeline", str(tmp_path / "t.json"))
    assert done.returncode == 0, done.stderr[-2000:]
    report, timeline = json.loads(done.stdout), json.loads((tmp_path / "t.json").read_text())
    assert timeline["format"] == "zerojit-timeline/1" and timeline["phases"] == report["phases"]
    assert len(timeline["keys"]) == TOY_KEYS == report["compiled"]
    starts = [key["start_s"] for key in timeline["keys"]]
    assert starts[0] == 0 and starts == sorted(starts)
    assert all(0 <= key["cpu_s"] <= key["seconds"] + 0.01 for key in timeline["keys"])
    assert set(report["phases"]) == {"plan", "configure", "in_process"}  # the toy backend compiles serially


def test_a_keys_diff_that_compares_nothing_is_refused():
    done = zerojit("keys", "diff", "--family", "rocm-nvfp4", "--grid", "none")
    assert_one_error_line(done, "nothing to compare")


@pytest.mark.parametrize(
    "name, value",
    [
        ("ZEROJIT_TIME_SLICE", "maybe"),
        ("ZEROJIT_TIME_SLICE", "OFF"),
        ("ZEROJIT_TIME_SLICE", "0"),
        ("ZEROJIT_WORKER_START", "bogus"),
        ("ZEROJIT_WORKER_START", ""),
    ],
)
def test_a_worker_design_the_cli_does_not_know_is_refused(toy_family_site, tmp_path, monkeypatch, name, value):
    """The bench's switches (ZEROJIT_WORKER_START, ZEROJIT_TIME_SLICE) accept their values only, before anything."""
    monkeypatch.setenv(name, value)
    cache = tmp_path / "cache"
    assert_one_error_line(warm_toy(toy_family_site, cache), f"{name}={value}: not one of")
    assert not cache.exists()


def test_a_bake_refuses_a_worker_design_it_does_not_know_before_any_process_starts(
    toy_family_site, tmp_path, monkeypatch
):
    monkeypatch.setenv("ZEROJIT_TIME_SLICE", "false")
    done = zerojit("bake", "-p", TOY, "--out", str(tmp_path / "bake"), site=toy_family_site)
    assert_one_error_line(done, "ZEROJIT_TIME_SLICE=false: not one of on, off")
    assert not (tmp_path / "bake").exists()


@pytest.fixture
def toy_plugin_here(toy_family_site, monkeypatch):
    """The toy family as a plug-in of this process (its entry point found on sys.path), its kernel compiling in
    worker processes and holding no variant yet (a worker is sent the kernel: code objects do not pickle); the
    plug-ins are looked up afresh before and after."""
    from zerojit.contract import Parallelism
    from zerojit.migrate.families import families

    monkeypatch.syspath_prepend(str(toy_family_site))
    families.cache_clear()
    from zerojit_toy_family import TOY_POLY
    from zerojit_toy_family import backend as toy_backend

    monkeypatch.setattr(type(TOY_POLY), "parallelism", Parallelism.PROCESSES)
    monkeypatch.setattr(TOY_POLY, "variants", {})
    # The warmup configures the toy backend for this process: the next test's kernels must not find its cache.
    monkeypatch.setitem(toy_backend.settings, "cache_dir", toy_backend.settings["cache_dir"])
    yield
    families.cache_clear()


@pytest.mark.parametrize(
    "env, design",
    [
        ({}, ("forkserver", True)),
        ({"ZEROJIT_WORKER_START": "spawn"}, ("spawn", True)),
        ({"ZEROJIT_WORKER_START": "forkserver", "ZEROJIT_TIME_SLICE": "off"}, ("forkserver", False)),
        ({"ZEROJIT_TIME_SLICE": "on"}, ("forkserver", True)),
    ],
)
def test_each_worker_design_the_cli_knows_reaches_the_pool(toy_plugin_here, tmp_path, monkeypatch, env, design):
    """`zerojit warmup --jobs 2` starts its compile workers as the environment says (the default: forkserver,
    time-sliced), and the warmup compiles every key in them."""
    from typer.testing import CliRunner

    from zerojit.contract.workers import Workers
    from zerojit.migrate.cli import app

    for name in ("ZEROJIT_WORKER_START", "ZEROJIT_TIME_SLICE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    seen = []
    start_pool = Workers.__init__

    def recording(self, *args, **kwargs):
        seen.append((kwargs["start"], kwargs["time_slice"]))
        start_pool(self, *args, **kwargs)

    monkeypatch.setattr(Workers, "__init__", recording)
    done = CliRunner().invoke(app, ["warmup", "-p", TOY, "--jobs", "2", "--cache-dir", str(tmp_path / "c"), "--json"])
    assert done.exit_code == 0, done.output
    assert seen == [design]
    report = json.loads(done.stdout)
    assert report["compiled"] == TOY_KEYS and "workers" in report["phases"]
