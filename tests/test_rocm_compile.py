"""Real FlyDSL compiles for gfx950 (compile-only, no GPU): warmup, disk cache, zero-JIT proof, mutants."""

import json
import os
import subprocess
import sys

import pytest
import torch

from zerojit.contract import Range, WarmupRegistry, execute, verify_zero_jit
from zerojit.contract.backends import flydsl as flydsl_backend
from zerojit.migrate.families import get_preset
from zerojit.migrate.rocm_nvfp4 import legacy
from zerojit.migrate.rocm_nvfp4.kernel import THRESHOLDS, IndexPrefill
from zerojit.migrate.rocm_nvfp4.launches import step_launches
from zerojit.migrate.rocm_nvfp4.model import LAUNCHER_TYPES, nvfp4_kv_launchers

pytestmark = pytest.mark.compiles

PRESET = "minimax-m3-nvfp4-mi355x-tp4"
FAMILY, PUBLISHED = get_preset(PRESET)
MI355X = PUBLISHED.limits
LAUNCHERS = nvfp4_kv_launchers()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("flydsl-cache")
    flydsl_backend.configure(arch="gfx950", cache_dir=path)
    return path


def fresh_process_state():
    """A new server process: no variants in memory (the disk cache stays)."""
    for launcher in LAUNCHERS:
        launcher.forget_variants()


def warm():
    registry = WarmupRegistry(MI355X)
    with registry.capture():
        FAMILY.construct(PUBLISHED)
    return execute(registry.plan())


def test_cold_then_cached_warmup_with_non_empty_code_objects(cache_dir):
    fresh_process_state()
    cold = warm().to_dict()
    assert (cold["compiled"], cold["cached"], cold["failed"]) == (20, 0, 0)
    assert os.environ["FLYDSL_GPU_ARCH"] == "gfx950"
    for launcher in LAUNCHERS:
        for fn in launcher.jit_functions():
            for artifact in fn._mem_cache.values():
                assert 'chip = "gfx950"' in artifact._ir_text
                sizes = flydsl_backend.kernel_code_bytes(artifact)
                assert sizes and min(sizes.values()) >= flydsl_backend.MIN_KERNEL_BYTES
    fresh_process_state()
    cached = warm().to_dict()
    assert (cached["compiled"], cached["cached"], cached["failed"]) == (0, 20, 0)
    assert sum(k["variants"] for k in cached["kernels"]) == 20


def test_empty_kernel_trap_is_refused(cache_dir):
    """FlyDSL lowers fx.tanh to nothing on gfx950 yet reports success; the backend must refuse it."""
    import flydsl.compiler as flyc
    import flydsl.expr as fx

    from zerojit.migrate.rocm_nvfp4.flydsl_kernels import BLOCK, dynamic

    @flyc.kernel
    def tanh_kernel(X: fx.Tensor, OUT: fx.Tensor):
        block, lane = fx.block_idx.x, fx.thread_idx.x
        register = fx.MemRefType.get(fx.T.f32, fx.LayoutType.get(1, 1), fx.AddressSpace.Register)
        copy = fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32)
        tile = fx.slice(fx.logical_divide(X, fx.make_layout(BLOCK, 1)), (None, block))
        src = fx.slice(fx.logical_divide(tile, fx.make_layout(1, 1)), (None, lane))
        staged = fx.memref_alloca(register, fx.make_layout(1, 1))
        fx.copy_atom_call(copy, src, staged)
        fx.memref_store_vec(fx.tanh(fx.memref_load_vec(staged)), staged)
        fx.copy_atom_call(copy, staged, src)

    @flyc.jit
    def tanh_launch(X: fx.Tensor, OUT: fx.Tensor, n: fx.Int32, stream: fx.Stream = fx.Stream(None)):
        tanh_kernel(X, OUT).launch(grid=(1, 1, 1), block=[BLOCK, 1, 1], stream=stream)

    buffer = torch.zeros(BLOCK)
    with pytest.raises(flydsl_backend.EmptyKernelError, match="empty"):
        flydsl_backend.compiled_during(tanh_launch, dynamic(buffer), dynamic(buffer.clone()), BLOCK)
    # FlyDSL persisted the empty variant; the next call is a cache hit and must be refused too.
    compiles = flydsl_backend.compiles_in_this_thread()
    with pytest.raises(flydsl_backend.EmptyKernelError, match="empty"):
        flydsl_backend.compiled_during(tanh_launch, dynamic(buffer), dynamic(buffer.clone()), BLOCK)
    assert flydsl_backend.compiles_in_this_thread() == compiles


def test_verify_zero_growth_after_warmup(cache_dir):
    fresh_process_state()
    assert warm().ok
    launches = step_launches(LAUNCHERS, MI355X, per_launcher=40, seed=1)
    two_8k = [
        inputs
        for launcher, inputs in launches
        if launcher.name == IndexPrefill.name and inputs["num_prefill_tokens"] == 16384
    ]
    assert two_8k, "the concurrency-16 step of two 8K prompts is among the launches"
    report = verify_zero_jit(LAUNCHERS, launches)
    assert report.ok and report.cache_growth == 0
    assert all(k.launches >= 40 for k in report.kernels)


def test_legacy_warmup_compiles_then_leaves_large_index_prefill_to_a_request(cache_dir, monkeypatch):
    fresh_process_state()
    monkeypatch.setitem(sys.modules, legacy.MODEL_MODULE, sys)  # this process "serves MiniMax M3"
    assert legacy.rocm_nvfp4_kv_warmup(MI355X, LAUNCHERS) > 0
    report = verify_zero_jit(LAUNCHERS, step_launches(LAUNCHERS, MI355X, per_launcher=40, seed=1))
    grew = {k.name for k in report.kernels if k.grew}
    assert grew == {IndexPrefill.name}
    assert report.cache_growth == 1


MUTANTS = [(cls.name, "no registration") for cls in LAUNCHER_TYPES] + [(IndexPrefill.name, "no large case")]


@pytest.mark.parametrize("launcher_name, mutation", MUTANTS)
def test_verification_kills_every_mutant(cache_dir, tmp_path, monkeypatch, launcher_name, mutation):
    cls = next(c for c in LAUNCHER_TYPES if c.name == launcher_name)
    if mutation == "no registration":
        monkeypatch.setattr(cls, "register_warmup", lambda self, **params: False)
    else:  # the usual warmup's reach: index prefill swept only up to one prompt's worth of tokens
        monkeypatch.setattr(
            cls,
            "key_space",
            lambda self, lim: Range.powers_of_two(
                "num_prefill_tokens", 1, min(lim.max_num_batched_tokens, THRESHOLDS.index_prefill_shared_max_tokens)
            ),
        )
    # An empty disk cache of its own: what the mutant leaves unwarmed must really compile during the
    # launches, so the monitor has events to report (a variant an earlier test persisted would only load).
    monkeypatch.setenv("FLYDSL_RUNTIME_CACHE_DIR", str(tmp_path))
    fresh_process_state()
    assert warm().ok
    report = verify_zero_jit(LAUNCHERS, step_launches(LAUNCHERS, MI355X, per_launcher=40, seed=0))
    assert not report.ok, f"mutant survived: {launcher_name} / {mutation}"
    assert {k.name for k in report.kernels if k.grew} == {launcher_name}
    assert report.compiles and {event.backend for event in report.compiles} == {"flydsl"}
    assert {event.kernel for event in report.compiles} <= set(cls.jit_names)
    assert len(report.compiles) == report.cache_growth


def run_cli(*args, cache_dir):
    return subprocess.run(
        [sys.executable, "-m", "zerojit", *args, "--cache-dir", str(cache_dir)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_cli_verify_json_on_the_published_preset(cache_dir):
    result = run_cli("verify", "--preset", PRESET, "--json", cache_dir=cache_dir)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["cache_growth"] == 0 and report["launches"] >= 6 * 40
    assert {entry["name"] for entry in report["launchers"]} == {cls.name for cls in LAUNCHER_TYPES}
    assert not any(entry["grew"] for entry in report["launchers"])


def test_cli_warmup_json_second_run_compiles_nothing(cache_dir):
    first = json.loads(run_cli("warmup", "--preset", PRESET, "--json", cache_dir=cache_dir).stdout)
    assert first["failed"] == 0 and first["compiled"] + first["cached"] == 20
    second = json.loads(run_cli("warmup", "--preset", PRESET, "--json", cache_dir=cache_dir).stdout)
    assert (second["compiled"], second["cached"]) == (0, 20)
