"""Key equivalence: every family's migrated keys against its legacy warmup, over grids and hypothesis samples."""

import json

import pytest
from typer.testing import CliRunner

from zerojit.contract import Range
from zerojit.migrate.cli import app
from zerojit.migrate.families import key_equivalence as run_equivalence
from zerojit.migrate.fa4_mla_prefill.model import FA4_MLA_PREFILL
from zerojit.migrate.rocm_nvfp4.kernel import SparseDecode

runner = CliRunner()
FAMILIES = ("fa4-mla-prefill", "inkling-rel-attention", "rocm-nvfp4")


@pytest.mark.parametrize("family", FAMILIES)
def test_full_grid_has_no_unexplained_difference(family):
    report = run_equivalence(family, "full")
    assert report.configs > 300 and report.ok, report.mismatches[:3]


@pytest.mark.parametrize("family", FAMILIES)
def test_hypothesis_samples_through_the_plugin_fixture(key_equivalence, family):
    report = key_equivalence(family, grid=None, samples=250, seed=11)
    assert report.configs == 250


def test_the_intended_differences_are_named():
    fa4 = run_equivalence("fa4-mla-prefill", "full")
    reasons = {d.intended.split(":")[0] for d in fa4.diffs}
    assert reasons == {"upstream defect", "legacy skipped pooling models; the migrated backend registers wherever "
                                          "it runs FA4"}
    defect = [d.config for d in fa4.diffs if d.intended.startswith("upstream defect")]
    assert all(c.arch in ("sm100", "sm103", "sm110") and c.dims.qk_head_dim == 192 and c.dims.v_head_dim == 128
               for c in defect) and defect
    rocm = run_equivalence("rocm-nvfp4", "full")
    published = [d for d in rocm.diffs if d.config.scheduler == (16, 16384, 8704) and d.config.arch == "gfx950"
                 and d.config.kv_cache_dtype == "nvfp4" and d.config.is_minimax and d.config.enable_jit_warmup]
    assert published and all(d.only_migrated == ['IndexPrefillKey:{"index_head_dim":128,"large":true}']
                             for d in published)


def test_a_broken_rocm_sweep_fails_with_a_readable_diff(monkeypatch):
    monkeypatch.setattr(SparseDecode, "key_space", lambda self, limits: Range("num_reqs", 1, 1)
                        * Range("query_len", 1, 1))
    result = runner.invoke(app, ["keys", "diff", "--family", "rocm-nvfp4", "--grid", "full"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "MISMATCH" in result.output and "SparseDecodeKey" in result.output
    report = json.loads(runner.invoke(app, ["keys", "diff", "-f", "rocm-nvfp4", "--json"]).stdout)
    assert report["mismatches"] > 0
    assert all(d["only_legacy"] and d["intended"] is None for d in report["details"] if d["intended"] is None)


def test_a_broken_fa4_sweep_fails(monkeypatch):
    original = FA4_MLA_PREFILL.key_space
    monkeypatch.setattr(FA4_MLA_PREFILL, "key_space", lambda limits, **params: original(limits, **params).where(
        lambda point: point["causal"]))  # the non-causal (context chunk) keys are dropped
    report = run_equivalence("fa4-mla-prefill", "smoke")
    assert not report.ok
    assert all('"causal":false' in key for d in report.mismatches for key in d.only_legacy)


def test_unknown_family_and_grid_are_refused():
    assert runner.invoke(app, ["keys", "diff", "-f", "nope"]).exit_code == 2
    result = runner.invoke(app, ["keys", "diff", "-f", "rocm-nvfp4", "--grid", "huge"])
    assert result.exit_code == 2 and "no grid 'huge'" in result.output


def test_plugin_marker_and_fixture_in_an_engine_suite(pytester):
    pytester.makepyfile(test_engine='''
        import pytest

        @pytest.mark.key_equivalence("rocm-nvfp4", grid="smoke")
        def test_marker():
            pass

        def test_fixture(key_equivalence):
            key_equivalence("inkling-rel-attention", grid="smoke", samples=5)
    ''')
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
