"""Registry capture, de-dup, missed and empty registrations; executor isolation and report."""

import json
import os
import subprocess
import sys
import warnings

import pytest
from zerojit_toy_family.kernel import MAX_DEGREE, PolyKernel, PolyKey

from zerojit.contract import (
    MissedRegistrationWarning,
    ServingLimits,
    WarmupRegistry,
    execute,
    missed_registrations,
    verify_zero_jit,
)

LIMITS = ServingLimits(max_num_seqs=8, max_num_batched_tokens=512, max_model_len=4096)


def build_model(kernel, max_terms=16):
    """Stands for model construction: the layer that selects the kernel registers it."""
    kernel.register_warmup(max_terms=max_terms, dtypes=("bf16", "fp32"))


def test_capture_window_collects_and_plans_registrations():
    kernel = PolyKernel()
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        build_model(kernel)
    plan = registry.plan()
    # max_terms=16: term counts 1,2,4,8,16 bucket to degrees 1,2,4,8,16, x 2 dtypes.
    assert plan.total_keys == 10
    summary = plan.to_dict()
    assert summary["kernels"] == [
        {"kernel": "toy_poly", "family": "toy", "backend": "python", "keys": 10, "empty": False}
    ]
    assert summary["missed_registrations"] == []
    json.dumps(plan.to_dict(include_keys=True))  # serializable, keys included


def test_decorator_form_and_identity_or_equality_dedup():
    kernel = PolyKernel()
    registry = WarmupRegistry(LIMITS)

    @registry.captures
    def construct():
        for _ in range(3):  # three layers share one kernel singleton
            build_model(kernel)
        build_model(kernel, max_terms=32)  # different params: a second registration

    construct()
    assert len(registry.registrations) == 2
    assert registry.duplicates == 2
    plan = registry.plan()
    # Keys shared by both registrations are compiled once: degrees 1..32 x 2 dtypes.
    assert plan.total_keys == 12


def test_missed_registration_is_warned_and_listed():
    kernel = PolyKernel()
    with pytest.warns(MissedRegistrationWarning, match="outside any capture window") as record:
        assert kernel.register_warmup(max_terms=4) is False
    assert record[0].filename == __file__  # the warning points at the registering line
    missed = missed_registrations()
    assert [(m.kernel, m.family) for m in missed] == [("toy_poly", "toy")]
    assert __file__ in missed[0].site
    registry = WarmupRegistry(LIMITS)
    assert registry.plan().to_dict()["missed_registrations"][0]["kernel"] == "toy_poly"


def test_registered_but_empty_kernel_is_flagged():
    kernel = PolyKernel()
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        kernel.register_warmup(max_terms=0)
    # A space that cannot be built is an error at plan time, not an empty kernel.
    with pytest.raises(ValueError, match="stop 0 is below start 1"):
        registry.plan()

    class NothingKernel(PolyKernel):
        name = "toy_nothing"

        def dispatch(self, *, num_terms, dtype):
            return None  # this configuration launches nothing compiled

    empty = NothingKernel()
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        empty.register_warmup(max_terms=8)
    plan = registry.plan()
    assert plan.to_dict()["kernels"][0]["empty"] is True
    assert plan.to_dict()["empty_kernels"] == ["toy_nothing"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_failing_key_never_hides_the_others(jobs):
    kernel = PolyKernel()
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        kernel.register_warmup(max_terms=4 * MAX_DEGREE, dtypes=("bf16", "fp32"))
    report = execute(registry.plan(), jobs=jobs)
    summary = report.to_dict()
    # Degrees 1,2,4,...,256 (9 buckets) x 2 dtypes; 128 and 256 exceed MAX_DEGREE=64.
    assert (summary["compiled"], summary["failed"], summary["cached"]) == (14, 4, 0)
    assert not report.ok
    causes = {(f["kernel"], f["key"]["degree"], f["key"]["dtype"]): f["cause"] for f in summary["failures"]}
    assert set(causes) == {("toy_poly", d, t) for d in (128, 256) for t in ("bf16", "fp32")}
    assert causes[("toy_poly", 256, "fp32")] == "ValueError: degree 256 exceeds MAX_DEGREE=64"
    assert kernel.variant_count() == 14
    # The compiled variants are real: degree 4 evaluates 1 + 2x + 3x^2 + 4x^3 + 5x^4 (Horner, highest first).
    assert kernel.evaluate(PolyKey(4, "bf16"), 2.0, [5, 4, 3, 2, 1]) == 1 + 2 * 2 + 3 * 4 + 4 * 8 + 5 * 16


def test_a_key_whose_variant_cannot_be_resolved_fails_alone_in_workers(tmp_path):
    """Resolving a variant runs backend code that can fail: the key then fails in its worker, named, alone."""
    from zerojit_toy_family.kernel import ProcessPolyKernel, configure_worker

    kernel = ProcessPolyKernel(cache_dir=tmp_path)
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        kernel.register_warmup(max_terms=4 * MAX_DEGREE, dtypes=("bf16", "fp32"))
    report = execute(registry.plan(), jobs=2, process_setup=(configure_worker, ()))
    assert (report.count("compiled"), report.count("failed")) == (14, 4)
    assert {(f.key.degree, f.cause) for f in report.failures} == {
        (d, f"ValueError: degree {d} exceeds MAX_DEGREE=64") for d in (128, 256)
    }


def test_disk_cache_makes_second_warmup_cached(tmp_path):
    def warm():
        kernel = PolyKernel(cache_dir=tmp_path)
        registry = WarmupRegistry(LIMITS)
        with registry.capture():
            build_model(kernel)
        return execute(registry.plan()).to_dict()

    first, second = warm(), warm()
    assert (first["compiled"], first["cached"]) == (10, 0)
    assert (second["compiled"], second["cached"]) == (0, 10)
    assert second["kernels"][0]["variants"] == 10


def test_report_table_names_every_kernel():
    from rich.console import Console

    from zerojit.migrate.cli.tables import warmup_table

    kernel = PolyKernel()
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        build_model(kernel)
    report = execute(registry.plan())
    console = Console(record=True, width=120)
    console.print(warmup_table(report))
    rows = [line for line in console.export_text().splitlines() if "toy_poly" in line]
    assert len(rows) == 1
    cells = [cell.strip() for cell in rows[0].strip("│ ").split("│")]
    assert cells[:5] == ["toy_poly", "10", str(report.count("compiled")), str(report.count("cached")), "0"]
    assert report.count("compiled") + report.count("cached") == 10


def test_verification_sees_growth_only_for_unwarmed_launches():
    kernel = PolyKernel()
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        build_model(kernel, max_terms=16)
    execute(registry.plan())
    inside = [(kernel, {"num_terms": n, "dtype": t}) for n in range(0, 17) for t in ("bf16", "fp32", "fp16")]
    report = verify_zero_jit([kernel], inside)
    assert report.ok and report.launches == 51
    outside = [(kernel, {"num_terms": 17, "dtype": "bf16"})]  # buckets to degree 32: never warmed
    report = verify_zero_jit([kernel], outside)
    assert report.cache_growth == 1
    assert report.to_dict()["launchers"][0]["missed_keys"][0]["key"] == {"degree": 32, "dtype": "bf16"}


def test_no_warning_inside_capture():
    kernel = PolyKernel()
    registry = WarmupRegistry(LIMITS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with registry.capture():
            build_model(kernel)


def test_longest_first_uses_the_timing_history(tmp_path):
    from zerojit.contract.cache import open_cache_dir, read_history, record_results
    from zerojit.contract.executor import longest_first

    kernel = PolyKernel()
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        build_model(kernel)
    cache = open_cache_dir(tmp_path / "cache")
    record_results(cache, execute(registry.plan()))
    history = read_history(cache)
    assert set(history) == {key.digest() for _, key in registry.plan().work()}
    slow_first = {key.digest(): float(key.degree) for _, key in registry.plan().work()}
    ordered = longest_first(list(registry.plan().work()), slow_first)
    assert [key.degree for _, key in ordered][:2] == [16, 16]
    assert [key.degree for _, key in ordered][-2:] == [1, 1]


def test_process_workers_compile_into_the_disk_cache_then_this_process_loads(tmp_path):
    """PROCESSES kernels: spawned workers compile (outcome compiled), this process loads from disk."""
    import os

    from zerojit_toy_family.kernel import ProcessPolyKernel, configure_worker

    kernel = ProcessPolyKernel(cache_dir=tmp_path)
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        build_model(kernel)
    report = execute(registry.plan(), jobs=2, process_setup=(configure_worker, ()))
    assert report.count("compiled") == 10 and kernel.variant_count() == 10
    assert all(not r.worker.startswith(f"pid {os.getpid()} ") for r in report.results)
    assert len(list(tmp_path.glob("*.marshal"))) == 10  # the workers wrote them


def test_workers_started_early_resolve_and_compile_while_this_process_sets_up(tmp_path):
    """With workers started before the warmup (`pool`), they resolve the variants and compile them while
    `meanwhile` (this process's own set-up) runs; the phases say how long each part took."""
    from zerojit_toy_family.kernel import SharedVariantPolyKernel, configure_worker

    from zerojit.contract.executor import start_workers
    from zerojit.contract.timeline import timeline_data

    kernel = SharedVariantPolyKernel(cache_dir=tmp_path)
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        build_model(kernel)  # 10 keys, 5 variants
    set_up = []
    with start_workers(2, (configure_worker, ()), 10) as pool:
        report = execute(
            registry.plan(),
            jobs=2,
            process_setup=(configure_worker, ()),
            pool=pool,
            meanwhile=lambda: set_up.append(os.getpid()),
        )
    assert set_up == [os.getpid()] and report.count("failed") == 0
    assert [p for p in report.phases if p != "workers_start"] == ["configure", "variants", "workers", "load"]
    in_workers = [r for r in report.results if not r.worker.startswith(f"pid {os.getpid()} ")]
    assert len(in_workers) == 5 and {r.outcome for r in in_workers} == {"compiled"}
    data = timeline_data(report)
    assert len(data["keys"]) == 10 and data["phases"] == {k: round(v, 4) for k, v in report.phases.items()}


def test_workers_get_one_key_per_backend_variant_and_this_process_the_rest(tmp_path):
    """Keys sharing a variant go to a worker once: the other keys of that variant run in this process."""
    import os

    from zerojit_toy_family.kernel import SharedVariantPolyKernel, configure_worker

    kernel = SharedVariantPolyKernel(cache_dir=tmp_path)
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        build_model(kernel)  # degrees 1..16 x (bf16, fp32): 10 keys, 5 variants
    report = execute(registry.plan(), jobs=2, process_setup=(configure_worker, ()))
    in_workers = [r for r in report.results if not r.worker.startswith(f"pid {os.getpid()} ")]
    assert len(report.results) == 10 and report.count("failed") == 0
    assert len(in_workers) == len({kernel.variant(key) for _, key in registry.plan().work()}) == 5


_TWO_POOLS = """
import sys
from zerojit.contract.executor import start_workers
from zerojit_toy_family.kernel import configure_recorded

for _ in range(2):  # two pools of one setup, as a bake's presets of one target start them
    pool = start_workers(2, (configure_recorded, (sys.argv[1],)), 2, start=sys.argv[2])
    assert pool.map([(int, ("7",))]) == [7]
    pool.close()
"""


@pytest.mark.parametrize("start", ["forkserver", "spawn"])
def test_workers_fork_from_one_server_that_ran_the_setup_once(tmp_path, start):
    """The DSL import (the setup) runs once, in the forkserver, and every worker of both pools forks from it
    already set up; start="spawn" is the design before it: each worker sets itself up."""
    log = tmp_path / "setups.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # the toy family, as conftest puts it there
    subprocess.run([sys.executable, "-c", _TWO_POOLS, str(log), start], check=True, env=env, timeout=120)
    runs = [tuple(map(int, line.split())) for line in log.read_text().splitlines()]
    own = [pid for pid, first in runs if pid == first]  # processes that ran the setup themselves
    forked = [(pid, first) for pid, first in runs if pid != first]
    if start == "forkserver":
        assert len(own) == 1 and len(forked) == 4 and {first for _, first in forked} == set(own)
        assert len({pid for pid, _ in forked}) == 4  # two pools of two workers, each its own process
    else:
        assert len(own) == 4 and forked == []


def test_timeline_png(tmp_path):
    from zerojit.migrate.cli.plots import plot_timeline

    kernel = PolyKernel()
    registry = WarmupRegistry(LIMITS)
    with registry.capture():
        build_model(kernel)
    report = execute(registry.plan(), jobs=2)
    (path := tmp_path / "timeline.png").write_bytes(plot_timeline(report, ".png"))
    from matplotlib.colors import to_rgb
    from matplotlib.image import imread

    pixels = imread(path)[:, :, :3]  # decoded: one lane of compiled (orange) bars per worker
    orange = (abs(pixels - to_rgb("tab:orange")).max(axis=2) < 0.02).any(axis=1)
    lanes = sum(1 for row in range(1, len(orange)) if orange[row] and not orange[row - 1])
    assert lanes == len({r.worker for r in report.results}) >= 1
    assert report.count("compiled") == len(report.results)
