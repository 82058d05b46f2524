"""Cooperative multi-rank warmup: ranks as processes (torch.distributed, gloo) share one FlyDSL disk cache."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.compiles

PRESET = "minimax-m3-nvfp4-mi355x-tp4"
DISTINCT_KEYS = 20  # the published preset's plan (tests/test_rocm_keys.py derives it)


@pytest.mark.parametrize("ranks", [2, 4])
def test_every_rank_ends_with_every_variant_and_each_key_compiles_once(tmp_path, ranks):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "zerojit",
            "warmup",
            "--preset",
            PRESET,
            "--ranks",
            str(ranks),
            "--cache-dir",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["compiled"] == DISTINCT_KEYS and report["failed"] == 0  # not ranks x keys
    for rank in report["ranks"]:
        assert rank["variants"] == DISTINCT_KEYS
        assert rank["compiled"] + rank["cached"] == DISTINCT_KEYS
        assert rank["compiled"] == DISTINCT_KEYS // ranks  # an even share each


def test_cooperative_execute_needs_torch_distributed():
    from zerojit.contract.cooperative import cooperative_execute

    with pytest.raises(RuntimeError, match="needs torch.distributed initialized"):
        cooperative_execute(plan=None)
