"""Real FlashAttention-4 compiles for sm_90a and sm_100a on this CPU machine (compile-only, fake CUDA tensors)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.compiles


def probe(check, cache_dir):
    """Run one check of fa4_compile_probe.py in a child process (CuTe DSL and FlyDSL cannot share one)."""
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("fa4_compile_probe.py")), check, str(cache_dir)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_one_mla_prefill_variant_compiles_once(tmp_path):
    facts = probe("mla", tmp_path)
    assert facts["first"] == "compiled" and facts["after_first"] == facts["before"] + 1
    assert facts["variants"] == 1
    assert facts["second"] == "cached" and facts["after_second"] == facts["before"] + 1


def test_one_inkling_variant_compiles_once_and_is_booked_to_inkling(tmp_path):
    facts = probe("inkling", tmp_path)
    key = facts["key"]
    assert (key["max_seqlen_q"], key["num_splits"], key["num_warps_bucket"]) == (4, 1, None)
    assert facts["first"] == "compiled" and facts["after_first"] == facts["before"] + 1
    assert facts["variants"] == 1 and facts["mla_variants"] == 0  # shared FA4 cache, separate books
    assert facts["after_launches"] == facts["after_first"]


def test_sm100a_the_257_row_probe_is_one_more_variant_then_none(tmp_path):
    """Why the Sq = 257 probes exist: on sm_100a, 257 query rows exceed one M block (q_stage 2 x 128)."""
    facts = probe("mla_sm100", tmp_path)
    assert facts["one_block"] == "compiled" and facts["after_one_block"] == facts["before"] + 1
    assert facts["multi_block"] == "compiled" and facts["after_multi_block"] == facts["before"] + 2
    assert facts["again"] == "cached" and facts["after_again"] == facts["before"] + 2


def test_sm100a_one_inkling_variant_compiles_once(tmp_path):
    facts = probe("inkling_sm100", tmp_path)
    assert facts["first"] == "compiled" and facts["after_first"] == facts["before"] + 1
    assert facts["second"] == "cached" and facts["after_second"] == facts["before"] + 1


def test_reconfiguring_or_mixing_backends_is_refused(tmp_path):
    facts = probe("reconfigure", tmp_path)
    assert "already targets sm_90a" in facts["refused"]
    assert "own process" in facts["flydsl_refused"]


def zerojit(*args):
    result = subprocess.run(
        [sys.executable, "-m", "zerojit", *args, "--json"], capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.mark.parametrize("preset, keys", [("deepseek-v3-h200", 12), ("inkling-h200", 28)])
def test_preset_warmup_compiles_each_variant_once_then_loads_from_disk(tmp_path, preset, keys):
    """Serially, FA4's own in-memory cache makes every distinct variant compile once: that count is the truth
    the parallel warmup (variants resolved up front, one worker compile each) and `plan --variants` must meet."""
    serial = zerojit("warmup", "--preset", preset, "--jobs", "1", "--cache-dir", str(tmp_path / "serial"))
    parallel = zerojit("warmup", "--preset", preset, "--jobs", "2", "--cache-dir", str(tmp_path / "parallel"))
    planned = zerojit("plan", "--preset", preset, "--variants", "--cache-dir", str(tmp_path / "parallel"))
    assert serial["failed"] == parallel["failed"] == 0 and serial["compiled"] + serial["cached"] == keys
    assert 1 <= serial["compiled"] < keys  # several serving keys share a variant
    assert parallel["compiled"] == serial["compiled"] == planned["total_variants"]
    warm = zerojit("warmup", "--preset", preset, "--cache-dir", str(tmp_path / "parallel"))
    assert (warm["compiled"], warm["cached"]) == (0, keys)
    assert warm["kernels"][0]["variants"] == parallel["kernels"][0]["variants"] == serial["compiled"]
    verify = zerojit("verify", "--preset", preset, "--launches", "20", "--cache-dir", str(tmp_path / "parallel"))
    assert verify["cache_growth"] == 0
