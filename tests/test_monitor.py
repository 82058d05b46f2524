"""JIT monitors catch real post-warmup compiles in FlyDSL, CuTe DSL and Triton."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from test_fa4_compile import probe

from zerojit.contract.backends import flydsl as flydsl_backend
from zerojit.contract.monitor import JitAfterWarmupError, JitAfterWarmupWarning, JitMonitor
from zerojit.migrate.rocm_nvfp4.kernel import SparseDecode


@pytest.fixture(scope="module")
def flydsl(tmp_path_factory):
    flydsl_backend.configure("gfx950", tmp_path_factory.mktemp("flydsl-monitor-cache"))


def test_flydsl_post_warmup_compile_is_caught_in_both_modes(flydsl):
    launcher = SparseDecode()
    launcher.forget_variants()
    launcher.launch(num_reqs=1, query_len=1)  # warmup: 8 splits
    with JitMonitor("error").armed() as monitor:
        launcher.launch(num_reqs=3, query_len=1)  # same variant: silent
        assert monitor.events == []
        with pytest.raises(JitAfterWarmupError, match="flydsl compiled sparse_decode after warmup"):
            launcher.launch(num_reqs=20, query_len=1)  # 4 splits: never warmed
    with warnings.catch_warnings(record=True) as caught, JitMonitor("warn").armed() as monitor:
        warnings.simplefilter("always")
        launcher.launch(num_reqs=100, query_len=1)  # 2 splits: compiles, reported, allowed
    assert [e.kernel for e in monitor.events] == ["sparse_decode"]
    assert any(issubclass(w.category, JitAfterWarmupWarning) for w in caught)
    launcher.launch(num_reqs=300, query_len=1)  # no monitor armed: compiles quietly


def test_bad_mode_is_refused():
    with pytest.raises(ValueError, match="must be one of warn, error"):
        JitMonitor("log")


@pytest.mark.compiles
def test_cutedsl_post_warmup_compile_is_caught(tmp_path):
    facts = probe("monitor", tmp_path)
    assert facts["events_after_warmed_call"] == 0
    assert "cutedsl compiled FlashAttentionForwardSm90 after warmup" in facts["error"]


def test_triton_post_warmup_compile_is_caught():
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("triton_monitor_probe.py"))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    facts = json.loads(result.stdout.strip().splitlines()[-1])
    assert facts["cubin_bytes"] > 0
    assert len(facts["warn_events"]) == 1 and "triton compiled scale after warmup" in facts["warn_events"][0]
    assert "'BLOCK': 128" in facts["warn_events"][0] and facts["warnings"]
    assert "triton compiled scale after warmup" in facts["error"] and "'BLOCK': 256" in facts["error"]
    assert facts["jit_cache_hook_installed"]
