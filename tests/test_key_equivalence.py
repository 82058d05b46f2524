"""Key equivalence: every family's migrated keys against its pre-migration code, over grids and samples.

The legacy side of FA4 MLA prefill and Inkling is vLLM 0.29.0's own warmup, run from its tree;
ROCm's is the legacy sweep, run. With --migrated-tree, the migrated side is a tree after a
migration (upstream's 0.30.0, or 0.29.0 as zerojit's codemods left it).
"""

import json
import shutil

import pytest
from typer.testing import CliRunner

from zerojit.contract import Range
from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.equivalence import sample_configs
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.fa4_mla_prefill.equivalence import MLAConfig
from zerojit.migrate.fa4_mla_prefill.kernel import MLADims
from zerojit.migrate.fa4_mla_prefill.model import FA4_MLA_PREFILL
from zerojit.migrate.families import get_family
from zerojit.migrate.families import key_equivalence as run_equivalence
from zerojit.migrate.rocm_nvfp4.kernel import SparseDecode

pytestmark = pytest.mark.release_tree

runner = CliRunner()
FAMILIES = ("fa4-mla-prefill", "inkling-rel-attention", "rocm-nvfp4", "fla-layer-norm", "flydsl-turboquant-decode")
TREE_FAMILIES = ("fa4-mla-prefill", "inkling-rel-attention")
DEEPSEEK = MLADims(128, 64, 128)


def keys_diff(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["keys", "diff", *args, "--json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("family", FAMILIES)
def test_full_grid_has_no_unexplained_difference_at_every_tp_size(family):
    report = run_equivalence(family, "full")
    assert report.configs > 300 and report.ok, report.mismatches[:3]
    assert {config.tp_size for config in get_family(family).equivalence_adapter().grids["full"]()} == {1, 2, 4, 8}


@pytest.mark.parametrize("family", TREE_FAMILIES)
def test_the_legacy_side_is_vllm_029_itself(family):
    code, report = keys_diff("--family", family, "--grid", "smoke")
    assert code == 0 and report["mismatches"] == 0
    assert report["legacy_source"].startswith("standalone warmup of vllm 0.29.0 at ")


def test_configs_compared_in_worker_processes_give_the_same_report():
    """Each worker loads vLLM 0.29.0's tree itself; the report (diffs in config order, coverage) is the one a single
    process makes, the ROCm grid's intended differences (spread over both workers) included."""
    runs = [keys_diff("--family", "inkling-rel-attention", "--grid", "smoke", "--jobs", jobs) for jobs in ("1", "3")]
    assert runs[0] == runs[1] and runs[0][1]["configs"] == 28
    broken = [
        keys_diff("--family", "rocm-nvfp4", "--grid", "smoke", "--samples", "20", "--jobs", jobs) for jobs in ("1", "2")
    ]
    assert broken[0] == broken[1] and broken[0][1]["intended_differences"] > 1


@pytest.mark.parametrize("family", FAMILIES)
def test_hypothesis_samples_through_the_plugin_fixture_cover_every_tp_size(key_equivalence, family):
    report = key_equivalence(family, grid=None, samples=120, seed=11)
    assert report.ok and report.configs == 120  # the fixture fails the test on a mismatch; this is the count drawn
    drawn = sample_configs(get_family(family).equivalence_adapter(), 120, 11)
    assert {config.tp_size for config in drawn} == {1, 2, 4, 8}


def test_fa4_intended_differences_are_the_named_ones_with_their_key_counts():
    fa4 = run_equivalence("fa4-mla-prefill", "full")
    by_config = {d.config: d for d in fa4.diffs}
    # sm90, FA4 forced: vLLM keeps 4 of its 6 probes at num_splits=0 (the two Sk=8192 ones are filtered on
    # sm90) x causal x LSE = 16 keys; zerojit runs unsplit: Sk < 4096 leaves (1,128) and (129,512), plus
    # (257,512) = 3 probes x 4 = 12.
    sm90 = by_config[MLAConfig("sm90", DEEPSEEK, forced_fa_version=4)]
    assert (sm90.legacy, sm90.migrated) == (16, 12)
    assert sm90.intended.startswith("sm90 unsplit") and "Sq = 257" in sm90.intended
    # sm100, DeepSeek dims: the backend runs FA4, vLLM's expansion re-decides without V and warms nothing.
    defect = by_config[MLAConfig("sm100", DEEPSEEK)]
    assert defect.legacy == 0 and defect.migrated > 0 and defect.intended.startswith("legacy warmed nothing")
    pooling = by_config[MLAConfig("sm90", DEEPSEEK, forced_fa_version=4, is_pooling=True)]
    assert pooling.legacy == 0 and pooling.intended.startswith("pooling")
    assert all(d.config.arch not in ("gfx942", "gfx950") for d in fa4.diffs)  # no FlashAttention on ROCm


def test_a_broken_fa4_key_space_fails_against_vllm(monkeypatch):
    original = FA4_MLA_PREFILL.key_space
    monkeypatch.setattr(
        FA4_MLA_PREFILL,
        "key_space",
        lambda limits, **params: original(limits, **params).where(lambda point: point["causal"]),
    )  # the non-causal (context chunk) keys are dropped
    code, report = keys_diff("--family", "fa4-mla-prefill")
    assert code == 1 and report["configs"] > 300 and report["mismatches"] > 0
    mismatches = [d for d in report["details"] if d["intended"] is None]
    warmed = [d for d in mismatches if d["legacy_keys"]]  # (a pooling model's legacy side warms nothing)
    assert warmed and all(any('"causal":false' in key for key in d["only_legacy"]) for d in warmed)
    assert not any('"causal":false' in key for d in mismatches for key in d["only_migrated"])


def test_a_broken_rocm_sweep_fails_with_a_readable_diff(monkeypatch):
    monkeypatch.setattr(
        SparseDecode, "key_space", lambda self, limits: Range("num_reqs", 1, 1) * Range("query_len", 1, 1)
    )
    result = runner.invoke(app, ["keys", "diff", "--family", "rocm-nvfp4", "--grid", "full"], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    rows = [line for line in result.output.splitlines() if "MISMATCH" in line]
    assert rows and all("SparseDecodeKey" in line for line in rows)
    code, report = keys_diff("-f", "rocm-nvfp4")
    assert code == 1 and report["mismatches"] > 0
    assert all(d["only_legacy"] and d["intended"] is None for d in report["details"] if d["intended"] is None)


@pytest.mark.parametrize("family", TREE_FAMILIES)
def test_upstreams_migration_029_to_030_keeps_the_keys(family):
    code, report = keys_diff(
        "--family",
        family,
        "--grid",
        "full" if family == "fa4-mla-prefill" else "smoke",
        "--legacy-tree",
        str(vllm_tree("0.29.0")),
        "--migrated-tree",
        str(vllm_tree("0.30.0")),
    )
    assert code == 0 and report["mismatches"] == 0
    assert report["migrated_source"].startswith("what vllm 0.30.0 at ")


@pytest.mark.parametrize("family", TREE_FAMILIES)
def test_zerojits_own_migration_of_029_keeps_the_keys(migrated_029, family):
    repo, _ = migrated_029
    code, report = keys_diff(
        "--family",
        family,
        "--grid",
        "full" if family == "fa4-mla-prefill" else "smoke",
        "--legacy-tree",
        str(vllm_tree("0.29.0")),
        "--migrated-tree",
        str(repo),
    )
    assert code == 0 and report["mismatches"] == 0 and report["configs"] >= 28


GATE_EDITS = {  # (family, file, registration as the migration wrote it, as broken)
    "inkling gate broken at TP >= 4": (
        "inkling-rel-attention",
        "vllm/models/inkling/nvidia/attention.py",
        "        if vllm_config.kernel_config.enable_jit_warmup:\n",
        "        if vllm_config.kernel_config.enable_jit_warmup and get_tensor_model_parallel_world_size() < 4:\n",
    ),
    "fa4 registration dropped": (
        "fa4-mla-prefill",
        "vllm/v1/attention/backends/mla/prefill/flash_attn.py",
        "            _FA4_MLA_PREFILL_KERNEL.register_warmup()\n",
        "            pass\n",
    ),
    "orchestrator gate inverted": (
        "fa4-mla-prefill",
        "vllm/model_executor/warmup/kernel_warmup.py",
        "    enable_jit_warmup = worker.vllm_config.kernel_config.enable_jit_warmup\n",
        "    enable_jit_warmup = not worker.vllm_config.kernel_config.enable_jit_warmup\n",
    ),
}


@pytest.mark.parametrize("edit", list(GATE_EDITS))
def test_a_broken_gate_in_the_migrated_tree_names_the_configs_it_changes(tmp_path, edit):
    family, path, good, broken = GATE_EDITS[edit]
    tree = tmp_path / "vllm-0.30.0-broken"
    shutil.copytree(vllm_tree("0.30.0"), tree)
    source = (tree / path).read_text()
    assert source.count(good) == 1
    (tree / path).write_text(source.replace(good, broken))
    code, report = keys_diff(
        "--family", family, "--grid", "smoke", "--legacy-tree", str(vllm_tree("0.29.0")), "--migrated-tree", str(tree)
    )
    mismatches = [d for d in report["details"] if d["intended"] is None]
    assert code == 1 and mismatches
    # Each loses keys: every mismatch names what legacy warmed and the tree no longer does.
    assert all(d["only_legacy"] and not d["only_migrated"] and d["config"]["enable_jit_warmup"] for d in mismatches)
    if edit.startswith("inkling"):
        assert {d["config"]["tp_size"] for d in mismatches} == {4, 8}


def test_trees_are_refused_for_a_family_without_engine_code_and_bad_trees_are_one_line(tmp_path):
    result = runner.invoke(app, ["keys", "diff", "-f", "rocm-nvfp4", "--migrated-tree", str(tmp_path)])
    assert result.exit_code == 2 and "no engine-tree legacy side" in result.output
    result = runner.invoke(app, ["keys", "diff", "-f", "inkling-rel-attention", "--legacy-tree", str(tmp_path)])
    assert result.exit_code == 2 and "holds no vllm/ package" in result.output and "Traceback" not in result.output


def test_unknown_family_and_grid_are_refused():
    assert runner.invoke(app, ["keys", "diff", "-f", "nope"]).exit_code == 2
    result = runner.invoke(app, ["keys", "diff", "-f", "rocm-nvfp4", "--grid", "huge"])
    assert result.exit_code == 2 and "no grid 'huge'" in result.output


def test_plugin_marker_and_fixture_in_an_engine_suite(pytester):
    pytester.makepyfile(
        test_engine="""
        import pytest

        @pytest.mark.key_equivalence("rocm-nvfp4", grid="smoke")
        def test_marker():
            pass

        def test_fixture(key_equivalence):
            key_equivalence("inkling-rel-attention", grid="smoke", samples=5)
    """
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_migrate_verify_keys_refuses_a_migration_that_loses_keys(tmp_path):
    repo = tmp_path / "vllm"
    shutil.copytree(vllm_tree("0.29.0"), repo)
    spec = tmp_path / "broken.toml"  # Inkling's spec, its gate broken at TP >= 4
    spec.write_text("""[[migration]]
family = "inkling-rel-attention"
legacy_module = "vllm.model_executor.warmup.fa4_cutedsl_warmup"
legacy_function = "fa4_cutedsl_warmup"
legacy_step = "_warm_inkling_fa4_rel_attention"
orchestrator_module = "vllm.model_executor.warmup.kernel_warmup"
singleton_module = "vllm.models.inkling.nvidia.ops.fa4_rel_attention"
singleton = "INKLING_FA4_REL_ATTENTION_KERNEL"
private_singleton = "_INKLING_FA4_REL_ATTENTION_KERNEL"
construction_module = "vllm.models.inkling.nvidia.attention"
construction_class = "InklingAttention"
registration = "_INKLING_FA4_REL_ATTENTION_KERNEL.register_warmup()"
gate = "vllm_config.kernel_config.enable_jit_warmup and get_tensor_model_parallel_world_size() < 4"
""")
    gated = runner.invoke(app, ["migrate", "--repo", str(repo), "--spec", str(spec), "--write", "--verify-keys"])
    assert gated.exit_code == 2 and "get_tensor_model_parallel_world_size() < 4" in gated.output  # not the tree's
    # A spec that claims the condition as intended passes the gate check; the keys still show what it loses.
    spec.write_text(
        spec.read_text() + 'intended_differences = [["get_tensor_model_parallel_world_size() < 4", '
        '"claimed"], ["not isinstance(hf_config, (InklingMMConfig, InklingModelConfig))", "the layer"]]\n'
    )
    result = runner.invoke(app, ["migrate", "--repo", str(repo), "--spec", str(spec), "--write", "--verify-keys"])
    assert result.exit_code == 1 and "unexplained mismatches" in result.output and "nothing written" in result.output
    assert (repo / "vllm/model_executor/warmup/fa4_cutedsl_warmup.py").exists()  # nothing written
    good = runner.invoke(app, ["migrate", "inkling-rel-attention", "--repo", str(repo), "--write", "--verify-keys"])
    assert good.exit_code == 0, good.output
    assert "keys: inkling-rel-attention: 28 configs, no unexplained difference" in good.output


def test_offline_the_legacy_tree_flag_stands_in_for_the_fetch_and_without_it_one_line_says_so(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "ZEROJIT_CACHE": str(tmp_path / "empty-cache"), "PIP_NO_INDEX": "1"}

    def run(*args):
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "zerojit",
                "keys",
                "diff",
                "-f",  # noqa: E731
                "inkling-rel-attention",
                "--grid",
                "smoke",
                *args,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    given = run("--legacy-tree", str(vllm_tree("0.29.0")), "--json")
    assert given.returncode == 0, given.stderr[-1000:]
    assert json.loads(given.stdout)["mismatches"] == 0 and not (tmp_path / "empty-cache" / "wheels").exists()
    missing = run()
    assert missing.returncode == 2 and "pass --legacy-tree PATH" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_report_says_what_it_covered_even_with_no_difference():
    configs = get_family("rocm-nvfp4").equivalence_adapter().grids["smoke"]()
    code, report = keys_diff("--family", "rocm-nvfp4", "--grid", "smoke", "--samples", "3", "--seed", "5")
    assert report["inputs"] == {"grid": "smoke", "samples": 3, "seed": 5}
    assert report["configs"] == len(configs) + 3
    for field in ("arch", "tp_size", "kv_cache_dtype", "scheduler"):
        assert sum(report["coverage"][field].values()) == report["configs"], field
    on_grid = {arch: sum(1 for config in configs if config.arch == arch) for arch in {c.arch for c in configs}}
    assert all(report["coverage"]["arch"][arch] >= count for arch, count in on_grid.items())
    assert "dtype" not in report["coverage"]  # ROCm's configs have a KV-cache dtype, no model dtype
