"""After the migrated tree's registry warmup, the lifted kernels' own launches compile nothing.

Random launches through vLLM's launchers, drawn as the engine calls them (migrate/triton_lifts/launches.py),
ask Triton for their keys while its JIT hook records them on the CPU; every in-range launch must ask for a
key the registry warmed. bench/h200_lifted_check.sh makes the same launches on an H200 with the real driver.
"""

import shutil

import pytest
from tree_forks import copy_033
from typer.testing import CliRunner

from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.engine_trees.sources import EngineSources
from zerojit.migrate.fla_layer_norm.engine_kernel import triton_stub
from zerojit.migrate.triton_lifts.launches import SERVING, attn_res_calls, launch_coverage

pytestmark = pytest.mark.release_tree

POST_CONV = "vllm/third_party/flash_linear_attention/ops/fused_gdn_prefill_post_conv.py"
MTP = "vllm/third_party/flash_linear_attention/ops/fused_gdn_decode_post_conv_mtp.py"
ATTN_RES = "vllm.models.kimi_k3.nvidia.ops.attn_res"


@pytest.fixture(scope="module")
def lifted(tmp_path_factory):
    repo = copy_033(tmp_path_factory.mktemp("lifted") / "tree")
    result = CliRunner().invoke(app, ["migrate", *SERVING, "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    return repo


def test_in_range_launches_of_every_lifted_kernel_ask_only_for_warmed_keys(lifted):
    lines = list(launch_coverage(lifted, launches=40, seed=1))
    assert [line["family"] for line in lines] == [f for f, served in SERVING.items() for _ in served.configs]
    for line in lines:
        # Beyond the legacy step's key classes: a Kimi-K3 forward's attn_res calls, and at Qwen3-Next TP8 (32 V
        # heads, 4 a rank: 8-byte rows of `a` and `b`) a mixed batch's prefill slices after an odd decode count.
        beyond = line["family"] == "kimi-k3-attn-res" or (
            line["family"] == "fla-fused-post-conv" and "qwen3-next" in line["config"] and "tp_size=8" in line["config"]
        )
        ranges = {"in range", "beyond"} if beyond else {"in range"}
        assert line.keys() - {"family", "config", "warmed_keys"} == ranges, line
        assert sum(line[r]["launches"] for r in ranges) == 40 and line["warmed_keys"] > 0, line
        assert line["in range"]["compiles"] == 0, line
        # Neither the legacy step nor the lift (which keeps its keys) warms those: the check sees them cold.
        assert not beyond or line["beyond"]["compiles"] > 0, line


@pytest.mark.parametrize("layers, block_size", [(61, 6), (27, 12), (8, 4)])
def test_each_profile_the_legacy_step_warms_is_a_call_of_the_kimi_forward(layers, block_size):
    """The forward's calls are read off the model's code by hand; the legacy step's profiles, written by vLLM for
    the same model, must be among them (the release's own function, run from its tree)."""
    sources = EngineSources(vllm_tree("0.33.0"), "vllm", (ATTN_RES,), {"vllm.triton_utils": triton_stub()})
    with sources.installed():
        profiles = sources.module(ATTN_RES).get_attn_res_triton_warmup_profiles
    max_blocks = -(-layers // block_size)
    assert set(profiles(max_blocks)) <= set(attn_res_calls(layers, block_size, max_blocks))


def test_a_provider_that_drops_a_key_class_leaves_in_range_launches_cold(lifted, tmp_path):
    """A lifted provider that forgets the length-2 class (the legacy step warmed 1, 2 and 16 tokens): an aligned
    launch of a length that is neither 1 nor a multiple of 16 compiles, once per serving configuration."""
    narrowed = shutil.copytree(lifted, tmp_path / "tree")
    module = narrowed / POST_CONV
    source = module.read_text()
    assert source.count("WarmupChoices(1, 2, 16)") == 1
    module.write_text(source.replace("WarmupChoices(1, 2, 16)", "WarmupChoices(1, 16)"))
    lines = list(launch_coverage(narrowed, launches=40, seed=1, families=["fla-fused-post-conv"]))
    assert [line["in range"]["compiles"] for line in lines] == [1, 1, 1]


def test_an_mtp_provider_that_drops_the_whole_value_tile_leaves_large_decode_steps_cold(lifted, tmp_path):
    """The legacy step warmed three request counts, one per value tile (32, 64, V) against the compute units; a
    provider without the largest leaves the steps whose requests times value heads pass 4x the compute units cold:
    both kernels take the tile as a constexpr."""
    narrowed = shutil.copytree(lifted, tmp_path / "tree")
    module = narrowed / MTP
    source = module.read_text()
    largest = "4 * num_compute_units // hv + 1"
    assert source.count(largest) == 2  # one provider a kernel
    module.write_text(source.replace(largest, "1"))
    lines = list(launch_coverage(narrowed, launches=40, seed=1, families=["fla-gdn-mtp-update", "fla-gdn-mtp-rmsnorm"]))
    assert len(lines) == 4 and all(line["in range"]["compiles"] == 1 for line in lines), lines
