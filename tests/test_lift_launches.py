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
from zerojit.migrate.triton_lifts.launches import SERVING, launch_coverage

pytestmark = pytest.mark.release_tree

POST_CONV = "vllm/third_party/flash_linear_attention/ops/fused_gdn_prefill_post_conv.py"


@pytest.fixture(scope="module")
def lifted(tmp_path_factory):
    repo = copy_033(tmp_path_factory.mktemp("lifted") / "tree")
    result = CliRunner().invoke(app, ["migrate", *SERVING, "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    return repo


def test_in_range_launches_of_every_lifted_kernel_ask_only_for_warmed_keys(lifted):
    lines = list(launch_coverage(lifted, launches=40, seed=1))
    assert [line["family"] for line in lines] == [f for f, (_, configs) in SERVING.items() for _ in configs]
    for line in lines:
        assert line["warmed_keys"] > 0, line
        assert line["in range"]["launches"] >= 36, line
        assert line["in range"]["compiles"] == 0, line
    # Launches past the legacy step's profiles (prefill-sized batches, one valid block) find keys nobody warmed:
    # the check sees a cold key when there is one.
    beyond = [line["beyond"] for line in lines if "beyond" in line]
    assert beyond and all(b["compiles"] > 0 for b in beyond)


def test_a_provider_that_drops_a_key_class_leaves_in_range_launches_cold(lifted, tmp_path):
    """A lifted provider that forgets the length-2 class (the legacy step warmed 1, 2 and 16 tokens): a length
    that is neither 1 nor a multiple of 16 compiles, once per serving configuration."""
    narrowed = shutil.copytree(lifted, tmp_path / "tree")
    module = narrowed / POST_CONV
    source = module.read_text()
    assert source.count("WarmupChoices(1, 2, 16)") == 1
    module.write_text(source.replace("WarmupChoices(1, 2, 16)", "WarmupChoices(1, 16)"))
    lines = list(launch_coverage(narrowed, launches=40, seed=1, families=["fla-fused-post-conv"]))
    assert [line["in range"]["compiles"] for line in lines] == [1, 1]
