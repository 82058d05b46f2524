"""zerojit's lifts of vLLM 0.33.0's plain Triton kernels, applied for real to the release's tree.

Each lift must leave every changed file compiling and lint-clean, every other file byte-identical, be a
no-op the second time, and warm in Triton's own keys what the legacy step did: the release's standalone
step against the lifted tree's registrations run through the tree's own registry, both recorded by
Triton's JIT hook (migrate/triton_lifts/equivalence.py). The launcher's own launches must ask Triton for
the same specializations before and after (the dispatcher is the launch, not a copy of it).
"""

import ast
import dataclasses
import itertools
import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch
from tree_forks import GDN_LAYER, changed_files, copy_033, draft_fields, edit, replace_file
from typer.testing import CliRunner

from zerojit.codemods.lift import LiftError, plan_lift
from zerojit.codemods.repo import RepoModules
from zerojit.codemods.runner import MigrationError, migrate, write
from zerojit.codemods.spec import SpecError, load_specs
from zerojit.contract.backends import triton as triton_backend
from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.equivalence import config_diff
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import equivalence_adapter, key_equivalence, migration_specs
from zerojit.migrate.triton_lifts.equivalence import (
    FusedPostConvEquivalence,
    GdnTritonConfig,
    compile_only_triton,
)
from zerojit.migrate.triton_lifts.meta_memory import MetaAllocations
from zerojit.migrate.triton_lifts.specs import BATCH_MEMCPY, FUSED_POST_CONV, QWEN_GDN_SEARCH
from zerojit.migrate.triton_lifts.specs import CAUSAL_CONV1D as CAUSAL_CONV1D_SPEC
from zerojit.migrate.triton_lifts.specs import SPECS as LIFT_SPECS

pytestmark = pytest.mark.release_tree

runner = CliRunner()
QWEN_WARMUP = "vllm/model_executor/warmup/qwen_triton_warmup.py"
POST_CONV = "vllm/third_party/flash_linear_attention/ops/fused_gdn_prefill_post_conv.py"
SIGMOID = "vllm/third_party/flash_linear_attention/ops/fused_sigmoid_gating.py"
MAMBA_UTILS = "vllm/v1/worker/mamba_utils.py"
CAUSAL_CONV1D = "vllm/model_executor/layers/mamba/ops/causal_conv1d.py"
ATTN_RES = "vllm/models/kimi_k3/nvidia/ops/attn_res.py"
ATTN_RES_MODULE = "vllm.models.kimi_k3.nvidia.ops.attn_res"
MAMBA_LAYERS = {
    "vllm/model_executor/layers/mamba/mamba_mixer.py",
    "vllm/model_executor/layers/mamba/mamba_mixer2.py",
    "vllm/model_executor/layers/mamba/linear/base.py",
    "vllm/model_executor/layers/mamba/gdn/base.py",
    "vllm/model_executor/layers/mamba/short_conv.py",
    "vllm/model_executor/models/bailing_moe_v3.py",
    "vllm/models/qwen4_exp/amd/ple_layer.py",
    "vllm/models/qwen4_exp/nvidia/ple_layer.py",
}
LIFTS = {
    "fla-fused-post-conv": {POST_CONV, QWEN_WARMUP, GDN_LAYER},
    "fla-sigmoid-gating": {SIGMOID, QWEN_WARMUP, GDN_LAYER},
    "mamba-causal-conv1d": {CAUSAL_CONV1D, QWEN_WARMUP, GDN_LAYER},
    # The standalone module warmed only this kernel: it goes, and so does its call in the orchestrator.
    "mamba-batch-memcpy": {MAMBA_UTILS, *MAMBA_LAYERS, "vllm/model_executor/warmup/kernel_warmup.py"},
    "kimi-k3-attn-res": {
        ATTN_RES,
        "vllm/model_executor/warmup/kimi_k3_triton_warmup.py",
        "vllm/models/kimi_k3/nvidia/model.py",
    },
    "kimi-k3-recurrent-kda": {
        "vllm/models/kimi_k3/nvidia/ops/third_party/kda/fused_recurrent.py",
        "vllm/model_executor/warmup/kimi_k3_triton_warmup.py",
        "vllm/models/kimi_k3/nvidia/kda.py",
    },
}
DELETED = {"mamba-batch-memcpy": {"vllm/model_executor/warmup/mamba_triton_warmup.py"}}


@pytest.fixture(scope="module")
def lifted_033(tmp_path_factory):
    """vLLM 0.33.0 with every built-in lift written in one run (hard-linked: writes replace)."""
    repo = copy_033(tmp_path_factory.mktemp("vllm-0.33.0-lifted") / "tree")
    body = repo.parent / "pr.md"
    result = runner.invoke(app, ["migrate", *LIFTS, "--repo", str(repo), "--write", "--pr-body", str(body)])
    assert result.exit_code == 0, result.output
    return repo


@pytest.mark.parametrize("family", list(LIFTS))
def test_each_lift_alone_then_again_is_a_no_op(tmp_path, family):
    repo = copy_033(tmp_path / "tree")
    assert runner.invoke(app, ["migrate", family, "--repo", str(repo), "--check"]).exit_code == 1
    first = runner.invoke(app, ["migrate", family, "--repo", str(repo), "--write"])
    assert first.exit_code == 0, first.output
    changed, deleted, _ = changed_files(repo, vllm_tree("0.33.0"))
    assert changed == LIFTS[family] - DELETED.get(family, set()) and deleted == DELETED.get(family, set())
    snapshot = {rel: (repo / rel).read_bytes() for rel in changed}
    again = runner.invoke(app, ["migrate", family, "--repo", str(repo), "--write"])
    assert again.exit_code == 0 and "0 changed" in again.output
    assert {rel: (repo / rel).read_bytes() for rel in changed} == snapshot


# Keys one serving config of each lift's legacy step asks Triton for, counted from the step itself: the post-conv
# step launches lengths 1, 2 and 16, one in each of Triton's integer classes (== 1, not a multiple of 16, a multiple
# of 16, which become part of the key), so three variants; the memcpy and the decode update steps launch once. The
# attention residual of a 27-layer model in blocks of 12 has ceil(27 / 12) = 3 blocks: its profiles are 2 and 3
# blocks read, a write of block 2, and all 3 read without the output norm, each a different constexpr set. The
# recurrent KDA step with 8 heads tries 1, 48 // 8 + 1 = 7 and 96 // 8 + 1 = 13 sequences: 8, 56 and 104
# head-sequences, one in each of the launcher's tile buckets (<= 48, <= 96, <= 192), so three variants. The causal
# conv1d step launches one token of one sequence.
LEGACY_VARIANTS = {
    "fla-fused-post-conv": 3,
    "fla-sigmoid-gating": 1,
    "mamba-causal-conv1d": 1,
    "mamba-batch-memcpy": 1,
    "kimi-k3-attn-res": 4,
    "kimi-k3-recurrent-kda": 3,
}


@pytest.mark.parametrize("family", list(LIFTS))
def test_each_lift_warms_in_tritons_own_keys_what_the_legacy_step_did(lifted_033, family):
    report = key_equivalence(family, "full", legacy_tree=vllm_tree("0.33.0"), migrated_tree=lifted_033)
    assert report.configs > 0 and report.mismatches == [], report.to_dict()["details"][:2]
    # The only differences: JIT warmup off, where the registry (unlike the standalone step) does not run; and a
    # Kimi-K3 model without KDA layers, which the legacy warmup could not find and the model's registration warms.
    jit_off = [d for d in report.diffs if not d.config.enable_jit_warmup]
    assert all(d.migrated == 0 for d in jit_off)
    assert all(not d.config.kda_layers and d.legacy == 0 and d.migrated for d in report.diffs if d not in jit_off)
    adapter = type(equivalence_adapter(family))(legacy_tree=vllm_tree("0.33.0"), migrated_tree=lifted_033)
    legacy = adapter.legacy_keys(adapter.example)
    assert len(legacy) == LEGACY_VARIANTS[family] and adapter.migrated_keys(adapter.example) == legacy


def _launch_keys(tree, config, call, module=FUSED_POST_CONV.kernel.module):
    """Triton's keys for what `call(module)` launches, with the lifted kernel's module loaded from `tree`."""

    compile_only_triton()

    def run():
        with triton_backend.jit_keys_recorded() as recorded, MetaAllocations():
            call(tree.sources.module(module))
        return recorded

    return tree.within(config, run)


def _registration(text: str, dispatcher: str) -> tuple[int, int]:
    """Where the lift's `<dispatcher>.register_warmup(...)` statement is in a layer's source (start, end)."""
    start = text.index(f"        {dispatcher}.register_warmup(\n")
    return start, text.index("        )\n", start) + len("        )\n")


def _planted(lifted: Path, where: Path, change) -> Path:
    """The lifted tree with its GDN layer's source changed by `change(text)` (hard-linked: the change replaces)."""
    fork = where / "tree"
    shutil.copytree(lifted, fork, copy_function=os.link)
    replace_file(fork / GDN_LAYER, change((fork / GDN_LAYER).read_text()))
    return fork


def test_keys_check_runs_the_constructor_a_registration_in_one_arm_of_a_branch_is_a_mismatch(lifted_033, tmp_path):
    """A fork that builds the norm in one arm of an `if` and a plain norm in the other, with the registration in
    the first arm only: layers built the other way launch the kernel unregistered. The stand-in layer has every
    attribute, so only running the constructor's paths finds it."""

    def branched(text: str) -> str:
        start = text.index("        self.norm = RMSNormGated(\n")
        _, end = _registration(text, "fused_post_conv_prep_dispatch")
        arm = "".join("    " + line if line.strip() else line for line in text[start:end].splitlines(True))
        plain = "            self.norm = RMSNormGated(self.head_v_dim, eps=self.layer_norm_epsilon)\n"
        test = '        if getattr(config, "fork_gated_output_norm", True):\n'
        return text[:start] + test + arm + "        else:\n" + plain + text[end:]

    fork = _planted(lifted_033, tmp_path, branched)
    report = key_equivalence("fla-fused-post-conv", "smoke", legacy_tree=vllm_tree("0.33.0"), migrated_tree=fork)
    broken = [d.broken for d in report.mismatches]
    assert broken and all(
        "QwenGatedDeltaNetAttention.__init__ finishes without registering where line " in why
        and why.endswith(": getattr(config, 'fork_gated_output_norm', True) is false (other paths register)")
        for why in broken
    ), broken[0]
    unbroken = [
        c
        for c in equivalence_adapter("fla-fused-post-conv").grids["smoke"]()
        if c not in {d.config for d in report.diffs}
    ]
    assert all(c.shape.gdn_layers == 0 for c in unbroken)  # every model that builds the layer
    correct = key_equivalence("fla-fused-post-conv", "smoke", legacy_tree=vllm_tree("0.33.0"), migrated_tree=lifted_033)
    assert correct.ok


def test_keys_check_runs_the_constructor_a_registration_above_what_it_reads_is_a_mismatch(lifted_033, tmp_path):
    """A fork whose constructor sets A_log/dt_bias after the norm, the registration left above them: building the
    layer raises AttributeError. The CLI's keys diff (what --verify-keys runs) names the line and the attribute."""

    def above(text: str) -> str:
        start, end = _registration(text, "fused_post_conv_prep_dispatch")
        block, text = text[start:end], text[:start] + text[end:]
        parameters = text.index("        self.dt_bias = nn.Parameter(\n")
        return text[:parameters] + block + text[parameters:]

    fork = _planted(lifted_033, tmp_path, above)
    line = 1 + (fork / GDN_LAYER).read_text().index("fused_post_conv_prep_dispatch.register_warmup(")
    line = (fork / GDN_LAYER).read_text()[:line].count("\n") + 1
    result = runner.invoke(
        app,
        [
            "keys", "diff", "-f", "fla-fused-post-conv", "--grid", "smoke", "--json",
            "--legacy-tree", str(vllm_tree("0.33.0")), "--migrated-tree", str(fork),
        ],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    details = [d for d in json.loads(result.output)["details"] if d["intended"] is None]
    assert details and all(d["broken"] and not d["migrated_keys"] for d in details)
    assert f"registers on line {line} " in details[0]["broken"]
    assert "self.A_log is read before" in details[0]["broken"] and "AttributeError" in details[0]["broken"]


def test_a_model_type_the_legacy_list_lacks_is_an_intended_difference_read_from_that_tree(lifted_033, tmp_path):
    """0.30.0's `_QWEN_MODEL_TYPES` had no qwen4_exp, whose models build the GDN layer: its legacy warmup skipped
    them, and their layers register once migrated. The rule reads the list from the legacy tree: with 0.33.0's
    list the same model warms the same keys on both sides, with the list less qwen4_exp the difference is stated."""
    config = GdnTritonConfig(model="qwen4-exp-v72", tp_size=2)
    adapter = FusedPostConvEquivalence(legacy_tree=vllm_tree("0.33.0"), migrated_tree=lifted_033)
    assert config_diff(adapter, config) is None
    legacy = copy_033(tmp_path / "legacy")
    replace_file(legacy / QWEN_WARMUP, (legacy / QWEN_WARMUP).read_text().replace('        "qwen4_exp",\n', "", 1))
    diff = config_diff(FusedPostConvEquivalence(legacy_tree=legacy, migrated_tree=lifted_033), config)
    assert diff is not None and diff.legacy == 0 and diff.migrated > 0
    assert "skips model type 'qwen4_exp'" in diff.intended


def test_a_constant_the_legacy_module_binds_again_is_not_read_off_its_first_assignment(tmp_path):
    """`TreeWarmup.constant` reads a module-level literal bound once; one the module changes later (`|=`, another
    assignment) is not known from its source, and no difference is explained by it."""
    legacy = copy_033(tmp_path / "legacy")
    module = "vllm.model_executor.warmup.qwen_triton_warmup"
    listed = FusedPostConvEquivalence(legacy_tree=legacy).legacy.constant(module, "_QWEN_MODEL_TYPES")
    assert isinstance(listed, frozenset) and {"qwen3_next", "qwen4_exp"} <= listed
    text = (legacy / QWEN_WARMUP).read_text()
    anchor = "\n# Covers L=1 constexpr"
    replace_file(legacy / QWEN_WARMUP, text.replace(anchor, '\n_QWEN_MODEL_TYPES |= {"qwen5"}\n' + anchor, 1))
    assert FusedPostConvEquivalence(legacy_tree=legacy).legacy.constant(module, "_QWEN_MODEL_TYPES") is None


def test_the_launcher_launches_what_it_did_before_the_lift(lifted_033):
    """The dispatcher is the launch: the launcher's own calls, at lengths the warmup never sampled too, ask Triton
    for exactly the specializations they did before."""
    adapter = FusedPostConvEquivalence(legacy_tree=vllm_tree("0.33.0"), migrated_tree=lifted_033)
    config = GdnTritonConfig(tp_size=2)
    heads, kv_heads, dim = 8, 16, 128

    def launches(module):
        for length in (1, 7, 64, 4097):
            conv = torch.empty(length, 2 * heads * dim + kv_heads * dim, dtype=torch.bfloat16, device="cuda")
            gates = torch.empty(length, kv_heads, dtype=torch.bfloat16, device="cuda")
            for l2norm in (True, False):
                module.fused_post_conv_prep(
                    conv,
                    gates,
                    gates,
                    torch.empty(kv_heads, device="cuda"),
                    torch.empty(kv_heads, device="cuda"),
                    heads,
                    dim,
                    dim,
                    apply_l2norm=l2norm,
                    output_g_exp=not l2norm,
                )

    before = _launch_keys(adapter.legacy, config, launches)
    after = _launch_keys(adapter.migrated, config, launches)
    assert len(before) == 8 and after == before


def test_a_launcher_that_computes_its_grid_with_its_own_function_passes_it_to_the_dispatcher(lifted_033):
    """`causal_conv1d_fn` launches with `grid`, a function of its own that fills the batch buffers from the
    sequence lengths as Triton calls it: the launcher keeps it and hands it to the dispatcher, the provider (whose
    warmup launches nothing) passes None. Batches of other lengths and counts than the step's one token launch
    what they did before."""
    text = (lifted_033 / CAUSAL_CONV1D).read_text()
    launcher = text[text.index("def causal_conv1d_fn(") :]
    assert "def grid(META):" in launcher and "        grid=grid,\n" in launcher
    provider = text[text.index("def _causal_conv1d_fn_warmup_inputs(") : text.index("def causal_conv1d_fn_dispatch(")]
    assert "        grid=None,\n" in provider
    # The step's config annotates its conv state `torch.Tensor`: the launcher's `conv_states is not None` holds.
    assert "conv_state.stride(0)," in provider and "is not None" not in provider
    adapter = equivalence_adapter("mamba-causal-conv1d")
    adapter = type(adapter)(legacy_tree=vllm_tree("0.33.0"), migrated_tree=lifted_033)
    dim, width = 2 * 8 * 128 + 16 * 128, 4

    def launches(module):
        for lengths in ((1,), (5, 3), (64, 1, 17)):
            for dtype in (torch.bfloat16, torch.float16):
                starts = [0, *itertools.accumulate(lengths)]
                module.causal_conv1d_fn(
                    torch.empty(starts[-1], dim, dtype=dtype, device="cuda").t(),  # channel-last (dim, tokens)
                    torch.empty(dim, width, dtype=dtype, device="cuda"),
                    None,
                    torch.empty(8, dim, width - 1, dtype=dtype, device="cuda"),
                    torch.tensor(starts, dtype=torch.int32, device="cuda"),
                    cache_indices=torch.tensor(range(len(lengths)), dtype=torch.int32, device="cuda"),
                    has_initial_state=torch.tensor([True] * len(lengths), dtype=torch.bool, device="cuda"),
                )

    config = GdnTritonConfig(tp_size=2)
    before = _launch_keys(adapter.legacy, config, launches, CAUSAL_CONV1D_SPEC.kernel.module)
    after = _launch_keys(adapter.migrated, config, launches, CAUSAL_CONV1D_SPEC.kernel.module)
    assert len(before) == 6 and after == before


def test_a_grid_the_launcher_assigns_as_a_lambda_is_handed_to_the_dispatcher_too(tmp_path):
    """A fork writes conv1d's grid function as `grid = lambda META: ...`: the same local function, kept by the
    launcher and passed on, None in the provider."""
    repo = copy_033(tmp_path / "tree")
    grid = (
        "    def grid(META):\n        return (\n            num_program(META, args),\n"
        '            triton.cdiv(dim, META["BLOCK_N"]),\n        )\n'
    )
    edit(
        repo,
        CAUSAL_CONV1D,
        grid,
        '    grid = lambda META: (num_program(META, args), triton.cdiv(dim, META["BLOCK_N"]))\n',
    )
    text = next(c.after for c in migrate(repo, [CAUSAL_CONV1D_SPEC]).changes if c.path == repo / CAUSAL_CONV1D)
    launcher = text[text.index("def causal_conv1d_fn(") :]
    assert "    grid = lambda META:" in launcher and "        grid=grid,\n" in launcher
    assert "        grid=None,\n" in text[: text.index("def causal_conv1d_fn_dispatch(")]


def test_a_launch_inside_a_device_context_is_lifted_where_it_stands(lifted_033, tmp_path):
    """A fork launches conv1d inside `with torch.cuda.device(x.device):`, as vLLM's rotary and selective-scan
    launchers do: the dispatcher's call takes the launch's place inside the `with`, the dispatcher and provider are
    the release's, and the keys check, which runs the fork's launcher on meta tensors, finds the legacy keys."""
    legacy = copy_033(tmp_path / "legacy")
    text = (legacy / CAUSAL_CONV1D).read_text()
    start = text.index("    _causal_conv1d_fwd_kernel[grid](\n")
    end = text.index("\n    )\n", start) + len("\n    )\n")
    launch = "    with torch.cuda.device(x.device):\n" + textwrap.indent(text[start:end], "    ")
    replace_file(legacy / CAUSAL_CONV1D, text[:start] + launch + text[end:])
    repo = tmp_path / "tree"
    shutil.copytree(legacy, repo)
    result = runner.invoke(app, ["migrate", "mamba-causal-conv1d", "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    lifted, released = (tree.read_text() for tree in (repo / CAUSAL_CONV1D, lifted_033 / CAUSAL_CONV1D))
    assert "    with torch.cuda.device(x.device):\n        causal_conv1d_fn_dispatch(\n" in lifted

    def new_functions(code: str) -> str:
        return code[code.index("def _causal_conv1d_fn_warmup_inputs(") : code.index("def causal_conv1d_fn(")]

    assert new_functions(lifted) == new_functions(released)
    assert key_equivalence("mamba-causal-conv1d", "smoke", legacy_tree=legacy, migrated_tree=repo).ok


def test_statements_only_the_launch_reads_leave_a_with_that_holds_no_lifted_launch(tmp_path):
    """A `with` whose body computes the output strides and calls `hooks[0](x)` (a subscript call the lift reads
    through like a launch), the launch below it: the strides move into the dispatcher, the `with` keeps the call."""
    repo = copy_033(tmp_path / "tree")
    text = (repo / CAUSAL_CONV1D).read_text()
    start = text.index("    if out.dim() == 2:\n        stride_o_dim")
    end = text.index("    stride_cache_indices = ", start)
    held = (
        "    with torch.cuda.device(x.device):\n" + textwrap.indent(text[start:end], "    ") + "        hooks[0](x)\n"
    )
    replace_file(repo / CAUSAL_CONV1D, text[:start] + "    hooks = [print]\n" + held + text[end:])
    result = runner.invoke(app, ["migrate", "mamba-causal-conv1d", "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    lifted = (repo / CAUSAL_CONV1D).read_text()
    assert "    with torch.cuda.device(x.device):\n        hooks[0](x)\n" in lifted
    dispatcher = lifted[lifted.index("def causal_conv1d_fn_dispatch(") : lifted.index("def causal_conv1d_fn(")]
    assert "        stride_o_dim = out.stride(0)\n" in dispatcher and lifted.count("stride_o_dim = out.stride(0)") == 1


def test_with_every_qwen_step_migrated_in_one_run_the_qwen_warmup_goes_with_its_call(tmp_path):
    """Every `_warm_*` step `qwen_triton_warmup` calls (read off the release) has a built-in migration; run
    together, what is left of the function is its guards, its config search, a log line and a device
    synchronization: the module goes, and the orchestrator neither imports nor calls it."""
    release = vllm_tree("0.33.0")
    entry = next(
        n
        for n in ast.parse((release / QWEN_WARMUP).read_text()).body
        if isinstance(n, ast.FunctionDef) and n.name == "qwen_triton_warmup"
    )
    steps = {
        c.func.id for c in ast.walk(entry) if isinstance(c, ast.Call) and getattr(c.func, "id", "").startswith("_warm_")
    }
    qwen = [s for s in migration_specs().values() if s.legacy.function == "qwen_triton_warmup"]
    assert {s.legacy.step for s in qwen} == steps and len(steps) == 5
    repo = copy_033(tmp_path / "tree")
    result = runner.invoke(app, ["migrate", *(s.family for s in qwen), "--repo", str(repo), "--write", "-j", "2"])
    assert result.exit_code == 0, result.output
    _, deleted, _ = changed_files(repo, release)
    assert deleted == {QWEN_WARMUP}
    orchestrator = (repo / "vllm/model_executor/warmup/kernel_warmup.py").read_text()
    assert (
        "qwen_triton_warmup" not in orchestrator
        and "qwen_triton_warmup" in (release / "vllm/model_executor/warmup/kernel_warmup.py").read_text()
    )


@pytest.mark.parametrize(
    "where, added",
    [
        ("logger = init_logger(__name__)\n", "import os\n\nos.environ.setdefault('TRITON_CACHE_AUTOTUNING', '1')\n"),
        (
            "    max_num_tokens = max(1, int(runner.max_num_tokens))\n",
            "    hooked = _hook_layers(runner.compilation_config.static_forward_context)\n",
        ),
    ],
    ids=["its import sets the environment", "a helper it calls for a value acts"],
)
def test_a_qwen_warmup_that_still_acts_once_its_steps_go_stays_and_says_where(tmp_path, where, added):
    """A fork's Qwen warmup that does something of its own besides the steps (at import, or through a helper
    whose value it keeps) keeps its module and its call when every step migrates, and the run says which line."""
    helper = "def _hook_layers(context):\n    for layer in context.values():\n        layer.hooked = True\n    return True\n\n\n"
    repo = copy_033(tmp_path / "tree")
    edit(repo, QWEN_WARMUP, where, where + added)
    edit(
        repo,
        QWEN_WARMUP,
        "@torch.inference_mode()\ndef qwen_triton_warmup(",
        helper + "@torch.inference_mode()\ndef qwen_triton_warmup(",
    )
    line = next(
        i for i, text in enumerate((repo / QWEN_WARMUP).read_text().splitlines(), 1) if text == added.splitlines()[-1]
    )
    qwen = [s.family for s in migration_specs().values() if s.legacy.function == "qwen_triton_warmup"]
    result = runner.invoke(app, ["migrate", *qwen, "--repo", str(repo), "--write", "-j", "2"])
    assert result.exit_code == 0, result.output
    assert (repo / QWEN_WARMUP).exists()
    assert (
        "qwen_triton_warmup(worker.model_runner" in (repo / "vllm/model_executor/warmup/kernel_warmup.py").read_text()
    )
    said = " ".join(result.output.split())
    assert f"{QWEN_WARMUP}:{line}: vllm.model_executor.warmup.qwen_triton_warmup stays" in said


@pytest.mark.parametrize(
    "manager, synchronized, stays",
    [("torch.cuda.device(device)", True, False), ("open(runner.trace, 'w')", False, False)]
    + [("open(runner.trace, 'w')", True, True)],
    ids=["a device scope goes", "an emptied block goes with its header", "a block left acting stays"],
)
def test_a_qwen_warmup_whose_steps_run_in_a_with_block(tmp_path, manager, synchronized, stays):
    """A fork's entry runs its steps inside `with ...:`. The module goes where nothing is left that acts: a device
    scope around what does nothing, or a block the removal empties (its header goes with it). One whose block still
    acts stays, and the run names the block's line (a line that is still there)."""
    repo = copy_033(tmp_path / "tree")
    text = (repo / QWEN_WARMUP).read_text()
    start = text.index("    max_num_tokens = max(1, int(runner.max_num_tokens))\n")
    block = textwrap.indent(text[start:], "    ")
    if not synchronized:
        block = block.replace("        _synchronize_device(device)\n", "")
    replace_file(repo / QWEN_WARMUP, f"{text[:start]}    with {manager}:\n{block}")
    line = text[:start].count("\n") + 1
    qwen = [s.family for s in migration_specs().values() if s.legacy.function == "qwen_triton_warmup"]
    result = runner.invoke(app, ["migrate", *qwen, "--repo", str(repo), "--write", "-j", "2"])
    assert result.exit_code == 0, result.output
    assert (repo / QWEN_WARMUP).exists() is stays
    said = " ".join(result.output.split())
    assert (f"{QWEN_WARMUP}:{line}: vllm.model_executor.warmup.qwen_triton_warmup stays" in said) is stays
    if stays:  # the line named is still there
        assert f"\n    with {manager}:\n" in (repo / QWEN_WARMUP).read_text()


def test_a_value_two_provider_inputs_share_is_named_plainly(lifted_033):
    """A shared value takes the first input's name (`a = ...`, then `b=a`, as upstream's providers read); a number
    is added only where a parameter or another local holds the name already."""
    for path in (SIGMOID, ATTN_RES):
        tree = ast.parse((lifted_033 / path).read_text())
        for provider in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.endswith("_warmup_inputs")):
            taken = {a.arg for a in provider.args.kwonlyargs}
            for statement in (s for s in provider.body if isinstance(s, ast.Assign)):
                name = statement.targets[0].id
                base, _, number = name.rpartition("_")
                assert not (number.isdigit() and base not in taken), (path, name)
                taken.add(name)


def test_a_provider_whose_step_returned_early_expands_to_no_case_not_to_an_error(lifted_033):
    """vLLM's helper evaluates a provider's domains and case-independent locals before any `_when`: the lifted
    attention residual reads the block size the step returned early without, so for a model that has none it
    must give no case (the registry warms nothing), where the unguarded arithmetic would raise at engine init."""
    adapter = type(equivalence_adapter("kimi-k3-attn-res"))(migrated_tree=lifted_033)
    compile_only_triton()

    def keys(config):
        module = adapter.migrated.sources.module(ATTN_RES_MODULE)
        text = adapter.engine.vllm_config(config).model_config
        block, layers = config.attn_res_block_size, text.hf_text_config.num_hidden_layers
        max_blocks = -(-layers // block) if block is not None else 0  # KimiLinearModel's num_attn_res_blocks
        return module.attn_res_dispatch.get_warmup_keys(model_config=text, max_blocks=max_blocks)

    assert (
        adapter.migrated.within(
            dataclasses.replace(adapter.example, attn_res_block_size=None),
            lambda: keys(dataclasses.replace(adapter.example, attn_res_block_size=None)),
        )
        == []
    )
    assert (
        len(adapter.migrated.within(adapter.example, lambda: keys(adapter.example)))
        == LEGACY_VARIANTS["kimi-k3-attn-res"]
    )


def test_a_lift_refuses_an_autotuned_kernel_with_the_reason(tmp_path):
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        POST_CONV,
        "@triton.jit\ndef _fused_post_conv_kernel(",
        "@triton.autotune(configs=[], key=[])\n@triton.jit\ndef _fused_post_conv_kernel(",
    )
    result = runner.invoke(app, ["migrate", "fla-fused-post-conv", "--repo", str(repo)])
    assert result.exit_code == 2
    assert "is autotuned" in result.output and "launches an autotuned kernel for real" in " ".join(
        result.output.split()
    )


def test_a_lift_refuses_a_launch_it_cannot_move_and_a_registration_that_misses_a_provider_input(tmp_path):
    repo = copy_033(tmp_path / "tree")
    edit(repo, POST_CONV, "    _fused_post_conv_kernel[grid](", "    if L:\n     _fused_post_conv_kernel[grid](")
    modules = RepoModules(repo, "vllm")
    with pytest.raises(LiftError, match="no `_fused_post_conv_kernel\\[grid\\]\\(...\\)` statement at its top level"):
        plan_lift(
            modules,
            kernel_module=FUSED_POST_CONV.kernel.module,
            kernel=FUSED_POST_CONV.kernel.name,
            launcher_module=FUSED_POST_CONV.kernel.module,
            launcher=FUSED_POST_CONV.lift.launcher,
            step_module=FUSED_POST_CONV.legacy.module,
            step=FUSED_POST_CONV.legacy.step,
            dispatcher_name=FUSED_POST_CONV.kernel_name,
            provider_name=FUSED_POST_CONV.provider_name,
        )
    spec = tmp_path / "spec.toml"
    spec.write_text(f"""[[migration]]
family = "post-conv-short"
legacy_module = "{FUSED_POST_CONV.legacy.module}"
legacy_function = "qwen_triton_warmup"
legacy_step = "{FUSED_POST_CONV.legacy.step}"
orchestrator_module = "{FUSED_POST_CONV.legacy.orchestrator_module}"
singleton_module = "{FUSED_POST_CONV.kernel.module}"
singleton = "{FUSED_POST_CONV.kernel.name}"
launcher = "{FUSED_POST_CONV.lift.launcher}"
construction_module = "{FUSED_POST_CONV.registration.module}"
construction_class = "QwenGatedDeltaNetAttention"
registration = "fused_post_conv_prep_dispatch.register_warmup(h=self.num_k_heads)"
intended_differences = {json.dumps([["model_type not in _QWEN_MODEL_TYPES", "any layer"], *QWEN_GDN_SEARCH])}
""")
    result = runner.invoke(
        app, ["migrate", "post-conv-short", "--spec", str(spec), "--repo", str(copy_033(tmp_path / "t2"))]
    )
    assert result.exit_code == 2
    assert "must pass the provider _fused_post_conv_prep_warmup_inputs its keyword parameters" in " ".join(
        result.output.split()
    )
    assert "conv_dtype (the step's config.conv_dtype)" in " ".join(result.output.split())


def test_a_step_that_reads_more_of_the_engine_config_gets_it_passed_by_the_registration(tmp_path):
    """The fork's Kimi-K3 step returns early past TP 8 (`worker.parallel_config`): the provider takes the parallel
    config as well, and the registration passes it, in the engine config's name, as the spec passes the model
    config; a warning says so."""
    repo = copy_033(tmp_path / "tree")
    step = "vllm/model_executor/warmup/kimi_k3_triton_warmup.py"
    dtype = "    dtype = worker.model_config.dtype\n"
    edit(repo, step, dtype, "    if worker.parallel_config.tensor_parallel_size > 8:\n        return\n" + dtype)
    result = migrate(repo, [migration_specs()["kimi-k3-attn-res"]])
    texts = {c.path.relative_to(repo).as_posix(): c.after for c in result.changes}
    [provider] = [
        n
        for n in ast.parse(texts[ATTN_RES]).body
        if isinstance(n, ast.FunctionDef) and n.name == "_attn_res_warmup_inputs"
    ]
    [call] = [
        n
        for n in ast.walk(ast.parse(texts["vllm/models/kimi_k3/nvidia/model.py"]))
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "register_warmup"
    ]
    passed = {k.arg: ast.unparse(k.value) for k in call.keywords}
    assert set(passed) == {a.arg for a in provider.args.kwonlyargs}
    assert passed["parallel_config"] == "vllm_config.parallel_config"
    assert any(
        "the registration passes it too (parallel_config=vllm_config.parallel_config)" in w for w in result.warnings
    )
    # The step reads the worker's parallel config, which the key check's stand-in lacks: the tree's defaults.
    checked = runner.invoke(app, ["migrate", "kimi-k3-attn-res", "--repo", str(repo), "--verify-keys"])
    assert checked.exit_code == 0, checked.output
    assert "vllm_config.parallel_config.tensor_parallel_size = 1" in " ".join(checked.output.split())


def test_a_layer_that_only_inherits_bind_kv_cache_gets_an_override_that_runs_the_parent_first(lifted_033):
    text = (lifted_033 / GDN_LAYER).read_text()
    override = text[text.index("    def bind_kv_cache(self, kv_cache: torch.Tensor) -> None:") :]
    lines = override.splitlines()
    assert lines[1] == "        super().bind_kv_cache(kv_cache)"
    assert "fused_sigmoid_gating_delta_rule_update_dispatch.register_warmup(" in override.split("\n\n\n")[0]


PROBE = os.path.join(os.path.dirname(__file__), "lift_compile_probe.py")


def test_the_lifted_tree_compiles_real_sm90_cubins_and_a_second_warmup_loads_them_all(lifted_033, tmp_path):
    """Every lift's registrations, run through the lifted tree's own registry on the compile-only driver, compile
    real cubins with no GPU; a second process warming the same tree from that cache compiles nothing."""
    cache = tmp_path / "triton"
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, PROBE, str(lifted_033), str(cache)], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(2)
    ]
    assert set(runs[0]) == set(LIFTS)
    for family, seen in runs[0].items():
        assert seen["compiled"] == LEGACY_VARIANTS[family] and seen["loaded"] == 0
        assert len(seen["cubin_bytes"]) == seen["compiled"] and min(seen["cubin_bytes"]) > 4096  # machine code
        assert runs[1][family] == {"compiled": 0, "loaded": seen["compiled"], "cubin_bytes": seen["cubin_bytes"]}


def test_the_pr_body_states_each_lifts_intended_differences(lifted_033):
    body = " ".join((lifted_033.parent / "pr.md").read_text().split())
    for family in LIFTS:
        assert family in body
    assert "pooling models run only full prefills" in body
    assert "skipping non-CUDA runners only moved its compile into a request" in body


def test_the_pr_body_gives_a_kernel_registered_at_many_sites_one_gate_section_listing_them(lifted_033):
    body = (lifted_033.parent / "pr.md").read_text()
    gates = body.split("## Gates")[1].split("## Intended differences")[0]
    sections = [s for s in gates.split("### ")[1:] if s.startswith("`mamba-batch-memcpy`")]
    assert len(sections) == 1 and sections[0].startswith(f"`mamba-batch-memcpy` at {len(MAMBA_LAYERS)} sites")
    for layer in MAMBA_LAYERS:
        assert sections[0].count(f"- `{layer}:") == 1, layer
    assert sections[0].count("The legacy call ran when") == 1


def test_the_survey_gives_every_kernel_a_verdict_and_lifts_exactly_the_kernels_the_lift_accepts():
    result = runner.invoke(app, ["survey", "--repo", str(vllm_tree("0.33.0")), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    kernels = {k["name"]: k for w in report["warmups"] for k in w["kernels"]}
    verdicts = {name: k["verdict"] for name, k in kernels.items()}
    # The ROCm MTP decode launcher's two kernels lift together (test_lift_together.py migrates their drafts, and
    # the built-in pair): each draft names its own dispatcher, as each built-in spec does.
    together = {
        "_gdn_mtp_update_kernel": "_gdn_mtp_gated_rmsnorm_kernel",
        "_gdn_mtp_gated_rmsnorm_kernel": "_gdn_mtp_update_kernel",
    }
    # And the watermark sampler's kernel, which no built-in moves yet: its owner is built outside every registration
    # window (test_survey.py checks its launcher and step).
    lifted = {spec.kernel.name for spec in LIFT_SPECS} | {"_philox_gumbel_kernel"}
    assert {name for name, v in verdicts.items() if v == "lift"} == lifted
    assert {name for name, v in verdicts.items() if v == "spec"} == {"_LAYER_NORM_FWD_KERNEL", "ll_bf16_gemm_kernel"}
    counts = report["counts"]["kernels"]
    assert counts == {"total": len(kernels), "spec": 2, "lift": len(lifted), "manual": len(kernels) - 2 - len(lifted)}
    assert counts["spec"] + counts["lift"] >= 8
    for name, other in together.items():
        assert kernels[name]["lifted_with"] == [other] and kernels[name]["dispatcher"] != kernels[other]["dispatcher"]
    for spec in LIFT_SPECS:  # the spec's dispatcher name (a launcher of one kernel: the default)
        assert kernels[spec.kernel.name]["lifted_with"] == (
            [together[spec.kernel.name]] if spec.lift.dispatcher else []
        )
        assert kernels[spec.kernel.name]["dispatcher"] == spec.kernel_name
    for kernel in kernels.values():
        assert kernel["reasons"], kernel["name"]  # why manual, or what to confirm
        if kernel["verdict"] == "lift":
            assert kernel["launcher"] and kernel["step"] and kernel["parameters"] is not None
    # Each lift verdict names the launcher and the legacy step the built-in lift uses.
    for spec in LIFT_SPECS:
        assert kernels[spec.kernel.name]["launcher"] == f"{spec.kernel.module}:{spec.lift.launcher}"
        assert kernels[spec.kernel.name]["step"] == ":".join(spec.legacy.warming())


# A launcher of one kernel each (the MTP pair's drafts, answered and migrated together: test_lift_together.py).
@pytest.mark.parametrize("spec", [s for s in LIFT_SPECS if not s.lift.dispatcher], ids=lambda s: s.family)
def test_a_lift_draft_loads_is_refused_until_answered_then_migrates_as_the_built_in_lift(tmp_path, spec):
    drafts = tmp_path / "drafts"
    assert (
        runner.invoke(app, ["survey", "--repo", str(vllm_tree("0.33.0")), "--draft-specs", str(drafts)]).exit_code == 0
    )
    path = drafts / f"{spec.kernel.name.strip('_')}.toml"
    (draft,) = load_specs(path)
    assert draft.lift.launcher == spec.lift.launcher and draft.kernel.name == spec.kernel.name and draft.confirm
    assert draft.legacy.warming() == spec.legacy.warming()
    repo = copy_033(tmp_path / "tree")
    refused = runner.invoke(app, ["migrate", "--repo", str(repo), "--spec", str(path)])
    assert refused.exit_code == 2 and "confirm list" in refused.output
    # A human answers the confirm items: the site's values in the registration, the site itself; nothing else.
    answers = dict(
        registration=spec.registration.code,
        construction_module=spec.registration.module,
        construction_class=list(spec.registration.classes),
        construction_method=spec.registration.method,
        insert_after=spec.registration.insert_after,
        intended_differences=[list(d) for d in spec.registration.intended_differences],
        import_style=spec.registration.import_style,
        confirm=[],
    )
    fields = draft_fields(draft)
    answered = tmp_path / "answered.toml"
    answered.write_text(
        "[[migration]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in {**fields, **answers}.items() if v != "")
    )
    result = runner.invoke(app, ["migrate", draft.family, "--repo", str(repo), "--spec", str(answered), "--write"])
    assert result.exit_code == 0, result.output
    changed, deleted, _ = changed_files(repo, vllm_tree("0.33.0"))
    assert changed == LIFTS[spec.family] - DELETED.get(spec.family, set()) and deleted == DELETED.get(
        spec.family, set()
    )


MEMCPY_STEP = "vllm/model_executor/warmup/mamba_triton_warmup.py"
POST_CONV_CALL = """            apply_l2norm=True,
            output_g_exp=False,
        )
"""
REFUSED_FORKS = {
    "a launcher statement sets again what the launch takes from the launcher": (
        "fla-sigmoid-gating",
        SIGMOID,
        "    HV = v.shape[2]\n",
        "    HV = v.shape[2]\n    if is_kda:\n        K = a.shape[-1]\n",
        "which this statement (copied into the ",
    ),
    "two statements on one line": (
        "fla-fused-post-conv",
        POST_CONV,
        "    BLOCK_T = 16  # tokens per block\n",
        "    BLOCK_T = 16; out_dtype = torch.float32  # noqa: E702\n",
        "this line holds several statements",
    ),
    "the step warms another kernel too": (
        "fla-fused-post-conv",
        QWEN_WARMUP,
        POST_CONV_CALL,
        POST_CONV_CALL + "    torch.ops.vllm.fork_warmup(config.h)\n",
        "which the migration would delete with the step",
    ),
    "the step calls the launcher twice": (
        "fla-fused-post-conv",
        QWEN_WARMUP,
        POST_CONV_CALL,
        POST_CONV_CALL + "        fused_post_conv_prep(conv_output, a, b, config.a_log, config.dt_bias, config.h, "
        "config.k, config.v, apply_l2norm=False, output_g_exp=True)\n",
        "more than once",
    ),
    "a loop the step leaves with break": (
        "fla-fused-post-conv",
        QWEN_WARMUP,
        "    for length in _FLA_POST_CONV_WARMUP_LENGTHS:\n",
        "    for length in _FLA_POST_CONV_WARMUP_LENGTHS:\n        if length > config.h:\n            break\n",
        "leaves its loop under a condition",
    ),
    "a constant the module binds twice": (
        "fla-fused-post-conv",
        QWEN_WARMUP,
        "_FLA_POST_CONV_WARMUP_LENGTHS = (1, 2, 16)\n",
        "_FLA_POST_CONV_WARMUP_LENGTHS = (1, 2, 16)\n_FLA_POST_CONV_WARMUP_LENGTHS += (64,)\n",
        "binds 2 times",
    ),
    "a name the grid was computed from set again before the launch": (
        "mamba-batch-memcpy",
        MAMBA_UTILS,
        "    BLOCK_SIZE = 1024\n",
        "    BLOCK_SIZE = 1024\n    batch = batch * BLOCK_SIZE  # bytes, for a log line\n",
        "line 662 computes what the launch reads from batch, which this statement sets again before the launch",
    ),
    "a constexpr read off a dtype the launcher casts before the launch": (
        "mamba-batch-memcpy",
        MAMBA_UTILS,
        "    BLOCK_SIZE = 1024\n",
        "    BLOCK_SIZE = 1024 if sizes.dtype == torch.int32 else 2048\n    sizes = sizes.to(torch.int64)\n",
        "computes what the launch reads from sizes, which this statement sets again",
    ),
    "a grid from a function the launcher defines": (
        "mamba-batch-memcpy",
        MAMBA_UTILS,
        "    batch_memcpy_kernel[grid](",
        "    def _grid():\n        return (batch,)\n\n    batch_memcpy_kernel[_grid()](",
        "the launch calls _grid, a function the launcher defines",
    ),
    "a walrus in the launch": (
        "mamba-batch-memcpy",
        MAMBA_UTILS,
        "BLOCK_SIZE=BLOCK_SIZE)\n",
        "BLOCK_SIZE=(block := BLOCK_SIZE))\n",
        "the launch binds a name with `:=`",
    ),
    "a second launch of the kernel in the launcher": (
        "fla-fused-post-conv",
        POST_CONV,
        "    if L == 0:\n",
        "    if L == 1:\n        _fused_post_conv_kernel[(1, 1)](conv_output)\n    if L == 0:\n",
        "launches _fused_post_conv_kernel here too",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED_FORKS))
def test_a_fork_the_lift_would_get_wrong_is_refused_with_the_line(tmp_path, case):
    family, rel, old, new, why = REFUSED_FORKS[case]
    repo = copy_033(tmp_path / "tree")
    edit(repo, rel, old, new)
    before = {p: p.read_bytes() for p in repo.rglob("*.py")}
    result = runner.invoke(app, ["migrate", family, "--repo", str(repo), "--write"])
    assert result.exit_code == 2, result.output
    assert why in " ".join(result.output.split()) and f"{rel}:" in result.output
    assert {p: p.read_bytes() for p in repo.rglob("*.py")} == before


FORK_LAYER = """import torch
from torch import nn

from vllm.model_executor.custom_op import PluggableLayer
from vllm.model_executor.layers.mamba.abstract import MambaBase as Base


class ForkShortConv(Base, PluggableLayer):
    def __init__(self, dim: int, prefix: str = "") -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, 4))


class ForkMixin(Base):  # no constructor of its own: nothing to register into
    pass


class ForkPlainLayer(nn.Module, Base):  # no `super().__init__(` statement: it registers at its end
    def __init__(self, dim: int) -> None:
        nn.Module.__init__(self)
        self.dim = dim


class ForkMixinLayer(ForkMixin, nn.Module):  # a Mamba layer through the mixin: it registers
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
"""


def test_a_forks_own_mamba_layer_registers_the_copy_as_the_engines_do(tmp_path):
    """The legacy step warmed the copy whenever a model held a Mamba-style cache, which every MambaBase layer makes:
    a fork's own layer (its base imported under another name, or a mixin of it) registers it too, after its
    parent's constructor; the spec validates the base it names."""
    repo = copy_033(tmp_path / "tree")
    layer = "vllm/model_executor/layers/mamba/fork_conv.py"
    replace_file(repo / layer, FORK_LAYER)
    assert runner.invoke(app, ["migrate", "mamba-batch-memcpy", "--repo", str(repo), "--write"]).exit_code == 0
    classes = {n.name: n for n in ast.parse((repo / layer).read_text()).body if isinstance(n, ast.ClassDef)}
    init = classes["ForkShortConv"].body[0]
    assert [ast.unparse(s) for s in init.body[1:3]] == [
        "from vllm.v1.worker.mamba_utils import batch_memcpy_dispatch",
        "batch_memcpy_dispatch.register_warmup()",
    ]
    assert "register_warmup" not in ast.unparse(classes["ForkMixin"])
    plain = classes["ForkPlainLayer"].body[0]
    assert ast.unparse(plain.body[-1]) == "batch_memcpy_dispatch.register_warmup()"
    assert [ast.unparse(s) for s in classes["ForkMixinLayer"].body[0].body[1:3]] == [
        "from vllm.v1.worker.mamba_utils import batch_memcpy_dispatch",
        "batch_memcpy_dispatch.register_warmup()",
    ]
    with pytest.raises(SpecError, match="construction_subclasses_of"):
        BATCH_MEMCPY.replaced(construction_subclasses_of="vllm.model_executor.layers.mamba.abstract")


def _migrated_fork(tmp_path, family, rel, old, new):
    """A 0.33.0 fork (`old` -> `new` in `rel`), kept as it was, and a copy that `family` migrated (exit 0)."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, rel, old, new)
    original = tmp_path / "before"
    shutil.copytree(repo, original, copy_function=os.link)
    assert runner.invoke(app, ["migrate", family, "--repo", str(repo), "--write"]).exit_code == 0
    return original, repo


def test_a_cast_after_the_grid_that_keeps_the_shape_it_read_is_lifted(tmp_path):
    """`sizes = sizes.to(torch.int64)` between `grid = (sizes.shape[0],)` and the launch: the dispatcher computes the
    grid from the cast tensor, whose shape is the same, and the launch reads the cast one as before."""
    original, repo = _migrated_fork(
        tmp_path,
        "mamba-batch-memcpy",
        MAMBA_UTILS,
        "    grid = (batch,)\n    BLOCK_SIZE = 1024\n",
        "    grid = (sizes.shape[0],)\n    sizes = sizes.to(torch.int64)\n    BLOCK_SIZE = 1024\n",
    )
    launcher = (repo / MAMBA_UTILS).read_text()
    launcher = launcher[launcher.index("def batch_memcpy(") :].split("\n\n\n")[0]
    assert launcher.index("sizes = sizes.to(torch.int64)") < launcher.index("batch_memcpy_dispatch(")


def test_a_kernel_parameter_the_launch_leaves_to_its_default_keeps_it(tmp_path):
    """The engine's helper fills `<x>_stride` from the input `x` when the launch does not pass it: the dispatcher
    passes the kernel's default instead, so the launch stays what the launcher made it."""
    original, repo = _migrated_fork(
        tmp_path,
        "mamba-batch-memcpy",
        MAMBA_UTILS,
        "def batch_memcpy_kernel(src_ptrs, dst_ptrs, sizes, BLOCK_SIZE: tl.constexpr):",
        "def batch_memcpy_kernel(src_ptrs, dst_ptrs, sizes, BLOCK_SIZE: tl.constexpr, sizes_stride=1):",
    )
    text = (repo / MAMBA_UTILS).read_text()
    returned = text[text.index("def batch_memcpy_dispatch") : text.index("def batch_memcpy(")]
    assert "sizes_stride=1" in returned
    report = key_equivalence("mamba-batch-memcpy", "full", legacy_tree=original, migrated_tree=repo)
    assert report.mismatches == []


def test_a_launch_size_only_a_dropped_tuple_value_read_goes_as_it_does_inside_the_tuple(tmp_path):
    """A fork writes the block sizes on two lines: `BV` fed only `NV`, which the launcher stops reading once the
    launch is the dispatcher's (`NK, NV = ...` keeps `NK`); `BV = ...` goes as the release's `BK, BV = ...` loses
    `BV`, and the dispatcher still computes both."""
    original, repo = _migrated_fork(
        tmp_path,
        "fla-sigmoid-gating",
        SIGMOID,
        "    BK, BV = triton.next_power_of_2(K), min(triton.next_power_of_2(V), 32)\n",
        "    BK = triton.next_power_of_2(K)\n    BV = min(triton.next_power_of_2(V), 32)\n",
    )
    text = (repo / SIGMOID).read_text()
    dispatcher = text[text.index("def fused_sigmoid_gating_delta_rule_update_dispatch(") :]
    launcher = dispatcher[dispatcher.index("def fused_sigmoid_gating_delta_rule_update(") :]
    assert "    BK = triton.next_power_of_2(K)\n    NK = triton.cdiv(K, BK)\n" in launcher and "BV" not in launcher
    assert "BV=BV" in dispatcher[: dispatcher.index("def fused_sigmoid_gating_delta_rule_update(")]
    report = key_equivalence("fla-sigmoid-gating", "full", legacy_tree=original, migrated_tree=repo)
    assert report.configs > 0 and report.mismatches == []


@pytest.mark.parametrize(
    "state, written",
    [
        ("(1, 1, 1, config.state_stride_token)", "                1 if inplace else hv,\n"),
        # The step no longer reads state_stride_token, which the spec's registration passes: it is left out.
        (
            "(1, config.hv, config.v, config.k)",
            "            state_dtype=ssm_state.dtype,\n            a_log=self.A_log,\n",
        ),
    ],
)
def test_a_state_updated_in_place_in_some_cases_only_is_one_tensor_chosen_per_case(tmp_path, state, written):
    """A fork warms the decode step with and without `inplace_final_state`, from a state of the kernel's rank: the
    launcher's `final_state` is the initial state in one case and a new tensor in the other, which the provider writes
    as one tensor whose sizes are chosen per case; the keys are the fork's own step's."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, QWEN_WARMUP, "        (1, config.state_stride_token),\n", f"        {state},\n")
    call = "    fused_sigmoid_gating_delta_rule_update(\n"
    edit(repo, QWEN_WARMUP, call, "    for inplace in (False, True):\n    " + call)
    edit(repo, QWEN_WARMUP, "        inplace_final_state=True,\n", "        inplace_final_state=inplace,\n")
    original = tmp_path / "before"
    shutil.copytree(repo, original, copy_function=os.link)
    result = runner.invoke(app, ["migrate", "fla-sigmoid-gating", "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    assert written in (repo / SIGMOID).read_text() + (repo / GDN_LAYER).read_text()
    report = key_equivalence("fla-sigmoid-gating", "full", legacy_tree=original, migrated_tree=repo)
    assert report.configs > 0 and report.mismatches == []


def test_a_forks_guard_with_an_or_keeps_its_parentheses_beside_the_config_it_reads(tmp_path):
    """A fork warms the decode kernel only without speculative decoding or with fewer than 8 drafts. The guard reads
    the engine config the layer gets through the accessor; written after that binding, its `or` stays in
    parentheses (else a layer with no speculative config would read `None.num_speculative_tokens`)."""
    _, repo = _migrated_fork(
        tmp_path,
        "fla-sigmoid-gating",
        QWEN_WARMUP,
        "    if not runner.is_pooling_model:\n",
        "    spec = runner.speculative_config\n"
        "    if not runner.is_pooling_model and (spec is None or spec.num_speculative_tokens < 8):\n",
    )
    layer = (repo / GDN_LAYER).read_text()
    override = textwrap.dedent(layer[layer.index("    def bind_kv_cache(") :].split("\n\n\n")[0])
    gate = next(n for n in ast.walk(ast.parse(override)) if isinstance(n, ast.If)).test
    drafts = lambda n: types.SimpleNamespace(speculative_config=types.SimpleNamespace(num_speculative_tokens=n))  # noqa: E731
    for current, holds in (
        (None, False),
        (types.SimpleNamespace(speculative_config=None), True),
        (drafts(3), True),
        (drafts(9), False),
    ):
        accessor = {"get_current_vllm_config_or_none": lambda current=current: current}
        assert eval(compile(ast.Expression(gate), "gate", "eval"), accessor) is holds, current


def test_a_step_that_reads_a_property_of_its_config_gets_the_providers_computed_as_the_property_does(tmp_path):
    """A fork's post-conv step reads `qkv_dim = config.conv_dim`, the property of its config dataclass that returns
    `2 * self.h * self.k + self.hv * self.v`. The registration passes h, k, hv and v, not conv_dim (it was refused):
    the provider computes it as the property does, and every file comes out as the release's migration writes it
    (mamba-causal-conv1d, whose registration passes conv_dim itself, still takes it whole)."""
    release = copy_033(tmp_path / "release")
    assert runner.invoke(app, ["migrate", "fla-fused-post-conv", "--repo", str(release), "--write"]).exit_code == 0
    step = "    qkv_dim = 2 * config.h * config.k + config.hv * config.v\n"
    original, repo = _migrated_fork(
        tmp_path, "fla-fused-post-conv", QWEN_WARMUP, step, "    qkv_dim = config.conv_dim\n"
    )
    changed, deleted, added = changed_files(repo, original)
    assert changed - {QWEN_WARMUP} and not deleted and not added
    assert all((repo / rel).read_bytes() == (release / rel).read_bytes() for rel in changed - {QWEN_WARMUP})
    report = key_equivalence("fla-fused-post-conv", "full", legacy_tree=original, migrated_tree=repo)
    assert report.configs > 0 and report.mismatches == []


def test_a_guard_on_what_the_runner_computed_from_the_config_is_written_over_the_config(tmp_path):
    """`runner.is_pooling_model` is, in both of the tree's runners, `model_config.runner_type == "pooling"`, set once
    in the constructor: a fork that warms the causal conv1d kernel only for other models gets the registration gated
    on the config the layer reads through the accessor (it was refused: "which only the worker has")."""
    _, repo = _migrated_fork(
        tmp_path,
        "mamba-causal-conv1d",
        QWEN_WARMUP,
        "    _warm_causal_conv1d_fwd_kernel(device, gdn_config)\n",
        "    if not runner.is_pooling_model:\n        _warm_causal_conv1d_fwd_kernel(device, gdn_config)\n",
    )
    layer = (repo / GDN_LAYER).read_text()
    override = textwrap.dedent(layer[layer.index("    def bind_kv_cache(") :].split("\n\n\n")[0])
    gate = next(n for n in ast.walk(ast.parse(override)) if isinstance(n, ast.If)).test
    for runner_type, holds in (("generate", True), ("pooling", False), ("draft", True)):
        config = types.SimpleNamespace(model_config=types.SimpleNamespace(runner_type=runner_type))
        accessor = {"get_current_vllm_config_or_none": lambda config=config: config}
        assert eval(compile(ast.Expression(gate), "gate", "eval"), accessor) is holds, runner_type


def test_a_loop_bound_the_step_computes_is_written_where_the_helper_can_read_it(tmp_path):
    """vLLM's helper evaluates a domain with the provider's parameters only: a step local in a range bound is
    written out in the domain."""
    original, repo = _migrated_fork(
        tmp_path,
        "fla-fused-post-conv",
        QWEN_WARMUP,
        "    for length in _FLA_POST_CONV_WARMUP_LENGTHS:\n",
        "    max_len = min(16, 2 * config.h)\n    for length in range(1, max_len + 1):\n",
    )
    assert "length = WarmupIntRange(1, min(16, 2 * h) + 1)" in (repo / POST_CONV).read_text()
    report = key_equivalence("fla-fused-post-conv", "smoke", legacy_tree=original, migrated_tree=repo)
    assert report.configs and report.mismatches == []


STEP_IMPORT = (
    "    from vllm.third_party.flash_linear_attention.ops.fused_gdn_prefill_post_conv import (  # noqa: E501\n"
    "        fused_post_conv_prep,\n    )\n"
)
STEP_IMPORTS = {  # how a fork's step may reach the launcher: (its import, the call's callee)
    "module alias": (
        "    from vllm.third_party.flash_linear_attention.ops import fused_gdn_prefill_post_conv as post_conv_ops\n",
        "post_conv_ops.fused_post_conv_prep",
    ),
    "package re-export": (
        "    from vllm.third_party.flash_linear_attention.ops import fused_post_conv_prep\n",
        "fused_post_conv_prep",
    ),
    "package alias": (
        "    from vllm.third_party.flash_linear_attention import ops as fla_ops\n",
        "fla_ops.fused_post_conv_prep",
    ),
}


@pytest.mark.parametrize("reached", list(STEP_IMPORTS))
def test_a_step_that_reaches_the_launcher_another_way_migrates_as_the_release_does(tmp_path, reached):
    """The fork's step imports the launcher through its module under an alias, or through the package that
    re-exports it (`ops/__init__.py`): its lift and registration are the release's."""
    release = copy_033(tmp_path / "release")
    fork = copy_033(tmp_path / "fork")
    warmup = "vllm/model_executor/warmup/qwen_triton_warmup.py"
    imported, callee = STEP_IMPORTS[reached]
    edit(fork, warmup, STEP_IMPORT, imported)
    if callee != "fused_post_conv_prep":
        edit(fork, warmup, "        fused_post_conv_prep(\n", f"        {callee}(\n")
    for repo in (release, fork):
        result = runner.invoke(app, ["migrate", "fla-fused-post-conv", "--repo", str(repo), "--write"])
        assert result.exit_code == 0, result.output
    for rel in LIFTS["fla-fused-post-conv"] - {warmup}:
        assert (fork / rel).read_text() == (release / rel).read_text(), rel
    assert "_warm_fused_post_conv_kernel" not in (fork / warmup).read_text()
    assert imported.strip() not in (fork / warmup).read_text()


def test_a_constructor_that_returns_before_the_block_count_it_registers_is_refused_with_the_line(tmp_path):
    """The registration passes the model's block count; a fork that returns before setting it would not register
    on that path, and cannot register there (the count does not exist yet): refused, nothing written."""
    model = "vllm/models/kimi_k3/nvidia/model.py"
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        model,
        "        self.config = config\n        self.attn_res_block_size: int | None",
        "        self.config = config\n        if getattr(config, 'fork_draft_only', False):\n            return\n"
        "        self.attn_res_block_size: int | None",
    )
    before = (repo / model).read_text()
    result = runner.invoke(app, ["migrate", "kimi-k3-attn-res", "--repo", str(repo), "--write"])
    assert result.exit_code == 2 and (repo / model).read_text() == before
    assert "returns here" in result.output and "self.num_attn_res_blocks" in result.output


def test_a_constructor_that_returns_early_gets_the_registration_once_with_its_gate_said_once(tmp_path):
    """Kimi-K3's model registers at the end of its constructor; a fork returns early once its block count is set.
    The registration goes once, before that return's `if`; its gate reads the constructor's `config` and looks the
    block size up once."""
    model = "vllm/models/kimi_k3/nvidia/model.py"
    counted = "            else 0\n        )\n\n        if get_pp_group().is_last_rank:"
    _, repo = _migrated_fork(
        tmp_path,
        "kimi-k3-attn-res",
        model,
        counted,
        counted.replace("\n\n", "\n        if getattr(config, 'fork_draft_only', False):\n            return\n\n", 1),
    )
    tree = ast.parse((repo / model).read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "KimiLinearModel")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    order = [ast.unparse(s) for s in init.body]
    early = next(i for i, s in enumerate(order) if "fork_draft_only" in s)
    [registered] = [i for i, s in enumerate(order) if "register_warmup" in s]
    assert registered == early - 1
    gate = ast.unparse(init.body[registered].test)
    assert "getattr" not in gate and gate.count("self.attn_res_block_size") == 2 and "config.num_hidden_layers" in gate


def test_the_kimi_gate_reads_the_block_size_the_model_holds_and_one_device_check(tmp_path):
    """The model sets `self.attn_res_block_size` from its config before the registration, so the gate reads it
    (the legacy step's `getattr(..., None)` can only find it there); `is_cuda()` already excludes ROCm. A fork
    whose model sets the attribute again in a method keeps the config lookup, said once."""
    model = "vllm/models/kimi_k3/nvidia/model.py"
    release = copy_033(tmp_path / "release")
    assert runner.invoke(app, ["migrate", "kimi-k3-attn-res", "--repo", str(release), "--write"]).exit_code == 0
    written = "current_platform.is_cuda() and self.attn_res_block_size is not None and cdiv(int(config.num_hidden_layers), self.attn_res_block_size) >= 2"  # noqa: E501
    assert _kimi_gate(release / model) == ast.unparse(ast.parse(written))
    set_once = "        self.use_attn_res = self.attn_res_block_size is not None\n"
    sets_again = {  # the constructor calls what sets the attribute again: a method of the model, a module function
        "method": (
            "self._reblock()",
            "    supports_aux",
            "    def _reblock(self):\n        self.attn_res_block_size = None\n\n",
        ),
        "function": (
            "_reblock(self)",
            "class KimiLinearModel(",
            "def _reblock(model):\n    model.attn_res_block_size = None\n\n\n",
        ),
    }
    for name, (call, before, definition) in sets_again.items():
        fork = copy_033(tmp_path / name)
        edit(fork, model, set_once, f"{set_once}        {call}\n")
        edit(fork, model, before, definition + before)
        assert runner.invoke(app, ["migrate", "kimi-k3-attn-res", "--repo", str(fork), "--write"]).exit_code == 0
        gate = _kimi_gate(fork / model)
        assert (
            "self.attn_res_block_size" not in gate and gate.count("getattr(config, 'attn_res_block_size', None)") == 1
        )


def _kimi_gate(path) -> str:
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "KimiLinearModel")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    return next(ast.unparse(s.test) for s in init.body if "register_warmup" in ast.unparse(s))


def _kernel_apart(repo, *, inside_launcher=False, as_module=False):
    """The post-conv kernel moved to a module of its own (public name, importing what it needs and nothing else:
    no torch, which the provider reads), imported by the launcher's module under the old private name (or by the
    launcher itself; or, `as_module`, the module imported as `pk` and the kernel launched as `pk.post_conv_kernel`);
    the spec that lifts it there, and the kernel module's text."""
    lines = (repo / POST_CONV).read_text().splitlines(keepends=True)
    start = lines.index("@triton.jit\n")
    end = next(i for i, line in enumerate(lines) if line.startswith("def fused_post_conv_prep("))
    header, kernel = "".join(lines[:start]), "".join(lines[start:end])
    kernel_rel = POST_CONV.replace("fused_gdn_prefill_post_conv.py", "post_conv_kernel.py")
    kernel_text = "from vllm.triton_utils import tl, triton\n\n\n" + kernel.replace(
        "def _fused_post_conv_kernel(", "def post_conv_kernel("
    )
    (repo / kernel_rel).write_text(kernel_text)
    alias = "from .post_conv_kernel import post_conv_kernel as _fused_post_conv_kernel\n"
    launcher = "".join(lines[end:])
    if as_module:
        alias = "from . import post_conv_kernel as pk\n"
        assert launcher.count("_fused_post_conv_kernel[") == 1
        launcher = launcher.replace("_fused_post_conv_kernel[", "pk.post_conv_kernel[")
    if inside_launcher:
        signature_end = launcher.index(":\n", launcher.index(") -> ")) + 2
        launcher = launcher[:signature_end] + "    " + alias + launcher[signature_end:]
    (repo / POST_CONV).unlink()  # hard-linked to the cache: replace, never write through
    top = "" if inside_launcher else alias + "\n\n"
    (repo / POST_CONV).write_text(header.replace("import tl, triton", "import triton") + top + launcher)
    module = kernel_rel.removesuffix(".py").replace("/", ".")
    return FUSED_POST_CONV.replaced(singleton="post_conv_kernel", kernel_module=module), kernel_rel, kernel_text


def test_a_kernel_another_module_defines_is_lifted_beside_its_launcher_under_the_name_it_imports(tmp_path):
    """`kernel_module`: the dispatcher goes beside the launcher and names the kernel as that module does; the
    provider's names are checked against the module it is written into."""
    fork = copy_033(tmp_path / "fork")
    spec, kernel_rel, kernel_text = _kernel_apart(fork)
    original = tmp_path / "before"
    shutil.copytree(fork, original, copy_function=os.link)
    write(migrate(fork, [spec]))
    text = (fork / POST_CONV).read_text()
    assert "@triton_kernel_dispatcher_with_warmup(\n    kernel=_fused_post_conv_kernel," in text
    assert "def fused_post_conv_prep_dispatch(" in text and (fork / kernel_rel).read_text() == kernel_text
    # Triton's keys of the fork's kernel, legacy step vs registration, with the kernel's module run from the tree.
    keys = type("ForkKeys", (FusedPostConvEquivalence,), {"spec": spec})(legacy_tree=original, migrated_tree=fork)
    legacy = keys.legacy_keys(keys.example)
    assert len(legacy) == LEGACY_VARIANTS["fla-fused-post-conv"] and keys.migrated_keys(keys.example) == legacy


def test_a_kernel_launched_as_an_attribute_of_its_module_is_lifted_under_that_name(tmp_path):
    """`pk.post_conv_kernel[grid](...)`: the launch is found through the module alias (it was refused as "no
    launch at its top level"), the dispatcher names the kernel as the launch does, and the keys are the step's."""
    fork = copy_033(tmp_path / "fork")
    spec, kernel_rel, kernel_text = _kernel_apart(fork, as_module=True)
    original = tmp_path / "before"
    shutil.copytree(fork, original, copy_function=os.link)
    write(migrate(fork, [spec]))
    text = (fork / POST_CONV).read_text()
    assert "    kernel=pk.post_conv_kernel," in text and "pk.post_conv_kernel[" not in text
    keys = type("ForkKeys", (FusedPostConvEquivalence,), {"spec": spec})(legacy_tree=original, migrated_tree=fork)
    legacy = keys.legacy_keys(keys.example)
    assert len(legacy) == LEGACY_VARIANTS["fla-fused-post-conv"] and keys.migrated_keys(keys.example) == legacy


def test_a_kernel_the_launcher_imports_inside_itself_is_refused_with_the_line(tmp_path):
    """The dispatcher's decorator sits at module level, where a name the launcher imports for itself is unbound."""
    fork = copy_033(tmp_path / "fork")
    spec, _, _ = _kernel_apart(fork, inside_launcher=True)
    with pytest.raises(
        MigrationError,
        match="launches the kernel as `_fused_post_conv_kernel`, which its module binds only inside a function",
    ) as refused:
        migrate(fork, [spec])
    assert "fused_gdn_prefill_post_conv.py:" in str(refused.value)


def test_a_domain_that_reads_what_an_early_return_guarded_is_evaluated_only_where_the_guard_holds(tmp_path):
    """vLLM's helper evaluates a provider's domains before any `_when`: the fork's step returns early without
    key heads and divides by their size after, so the lifted domain divides only where the guard holds (no case
    for k == 0, where the unguarded `256 // k` would raise at engine init)."""
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        QWEN_WARMUP,
        "    for length in _FLA_POST_CONV_WARMUP_LENGTHS:\n",
        "    if not config.k:\n        return\n    for length in range(1, 1 + 256 // config.k):\n",
    )
    reason = "every GDN layer has key heads"
    spec = FUSED_POST_CONV.replaced(
        intended_differences=[*FUSED_POST_CONV.registration.intended_differences, ("not config.k", reason)]
    )
    write(migrate(repo, [spec]))
    adapter = type(equivalence_adapter("fla-fused-post-conv"))(migrated_tree=repo)
    compile_only_triton()

    def keys(k):
        module = adapter.migrated.sources.module(FUSED_POST_CONV.kernel.module)
        heads = torch.empty(32, device="meta")
        inputs = dict(h=16, hv=32, v=128, conv_dtype=torch.bfloat16, a_log=heads, dt_bias=heads)
        return module.fused_post_conv_prep_dispatch.get_warmup_keys(k=k, **inputs)

    assert adapter.migrated.within(adapter.example, lambda: keys(0)) == []
    assert len(adapter.migrated.within(adapter.example, lambda: keys(128))) == 2  # lengths 1 and 2


MEMCPY_LAUNCH = "    batch_memcpy_kernel[grid](src_ptrs, dst_ptrs, sizes, BLOCK_SIZE=BLOCK_SIZE)\n"
MEMCPY_LAUNCHER = "\n\ndef batch_memcpy(src_ptrs, dst_ptrs, sizes):"


ALIASES = {  # a module-level alias of the kernel on every path: the launch through it is the kernel's
    "plain": "_memcpy = batch_memcpy_kernel\n",
    "annotated": "_memcpy: Any = batch_memcpy_kernel\n",
    "both-arms": "if current_platform.is_rocm():\n    _memcpy = batch_memcpy_kernel\nelse:\n    _memcpy = batch_memcpy_kernel\n",
}


@pytest.mark.parametrize("alias", list(ALIASES))
def test_a_kernel_launched_through_a_module_level_alias_is_lifted_as_the_kernel(tmp_path, alias):
    """`_memcpy[grid](...)` with `_memcpy` the kernel on every path: the launch is the kernel's (it was refused as
    "no launch at its top level"), the dispatcher wraps the kernel itself (the JIT map then sees it warmed, and
    an alias bound below the launcher does not matter), the keys are the step's."""
    fork = copy_033(tmp_path / "fork")
    header = "from typing import Any\n\nfrom vllm.platforms import current_platform\n"
    edit(fork, MAMBA_UTILS, MEMCPY_LAUNCHER, f"\n\n{ALIASES[alias]}{MEMCPY_LAUNCHER}")
    edit(fork, MAMBA_UTILS, MEMCPY_LAUNCH, MEMCPY_LAUNCH.replace("batch_memcpy_kernel[", "_memcpy["))
    replace_file(fork / MAMBA_UTILS, header + (fork / MAMBA_UTILS).read_text())
    original = tmp_path / "before"
    shutil.copytree(fork, original, copy_function=os.link)
    write(migrate(fork, [BATCH_MEMCPY]))
    text = (fork / MAMBA_UTILS).read_text()
    assert "    kernel=batch_memcpy_kernel, warmup_inputs=_batch_memcpy_warmup_inputs\n" in text
    assert "_memcpy[" not in text
    if alias == "plain":
        assert key_equivalence("mamba-batch-memcpy", "smoke", legacy_tree=original, migrated_tree=fork).ok


def test_a_launcher_that_also_launches_an_alias_of_another_kernel_is_refused_with_the_line(tmp_path):
    """The step's one call warms both launches; the alias hid the second kernel, and the lift deleted its warmup
    with the step (exit 0)."""
    fork = copy_033(tmp_path / "fork")
    edit(fork, MAMBA_UTILS, MEMCPY_LAUNCHER, f"\n\n_tiled = _memcpy_u64_tiled\n{MEMCPY_LAUNCHER}")
    edit(fork, MAMBA_UTILS, MEMCPY_LAUNCH, MEMCPY_LAUNCH + "    _tiled[grid](src_ptrs, dst_ptrs, sizes)\n")
    line = (fork / MAMBA_UTILS).read_text().splitlines().index("    _tiled[grid](src_ptrs, dst_ptrs, sizes)") + 1
    with pytest.raises(MigrationError, match=f"mamba_utils.py:{line}: batch_memcpy also launches _tiled"):
        migrate(fork, [BATCH_MEMCPY])


@pytest.mark.parametrize(
    "aliases",
    [
        "_memcpy = batch_memcpy_kernel\nif envs.VLLM_BATCH_INVARIANT:\n    _memcpy = _memcpy_u64_tiled\n",
        "_memcpy = batch_memcpy_kernel\n\n\ndef use(kernel):\n    global _memcpy\n    _memcpy = kernel\n",
        "if envs.VLLM_BATCH_INVARIANT:\n    _memcpy = batch_memcpy_kernel\n",
    ],
    ids=["another-kernel-on-a-path", "rebound-by-a-function", "bound-on-one-path"],
)
def test_an_alias_the_module_does_not_bind_to_the_kernel_on_every_path_is_refused_at_the_launch(tmp_path, aliases):
    """Which kernel the launch runs is not known: lifting it would wrap one for good (a function that rebinds the
    alias would stop working). The refusal names the alias at the launch's line."""
    fork = copy_033(tmp_path / "fork")
    edit(fork, MAMBA_UTILS, MEMCPY_LAUNCHER, f"\n\n{aliases}{MEMCPY_LAUNCHER}")
    edit(fork, MAMBA_UTILS, MEMCPY_LAUNCH, MEMCPY_LAUNCH.replace("batch_memcpy_kernel[", "_memcpy["))
    line = (fork / MAMBA_UTILS).read_text().splitlines().index(
        MEMCPY_LAUNCH.replace("batch_memcpy_kernel[", "_memcpy[").rstrip()
    ) + 1
    with pytest.raises(
        MigrationError, match=f"mamba_utils.py:{line}: batch_memcpy launches batch_memcpy_kernel as `_memcpy`"
    ):
        migrate(fork, [BATCH_MEMCPY])


POST_CONV_KEYWORDS = "            apply_l2norm=True,\n            output_g_exp=False,\n"
POST_CONV_QKV = "    qkv_dim = 2 * config.h * config.k + config.hv * config.v\n"
POST_CONV_CONSTANT = "_FLA_POST_CONV_WARMUP_LENGTHS = (1, 2, 16)\n"
POST_CONV_CALL_START = "        fused_post_conv_prep(\n"
POST_CONV_IMPORT = "        fused_post_conv_prep,\n    )\n"
WRAPPER = """

def fused_post_conv_prep_op(conv_output, a, b, A_log, dt_bias, num_k_heads, head_k_dim, head_v_dim, **kwargs):
    return fused_post_conv_prep(conv_output, a, b, A_log, dt_bias, num_k_heads, head_k_dim, head_v_dim, **kwargs)
"""
KEYWORDS_FORKS = {  # a fork's step passing the launcher's keywords through dicts: (edits, the provider's output)
    # What the release passes: every file but the step's comes out as the release's migration writes it.
    "a dict": (
        [(QWEN_WARMUP, POST_CONV_KEYWORDS, '            **{"apply_l2norm": True, "output_g_exp": False},\n')],
        None,
    ),
    "a dict the step names": (
        [
            (QWEN_WARMUP, POST_CONV_KEYWORDS, "            **options,\n"),
            (QWEN_WARMUP, POST_CONV_QKV, POST_CONV_QKV + "    options = dict(apply_l2norm=True, output_g_exp=False)\n"),
        ],
        None,
    ),
    "a dict made of another": (
        [
            (QWEN_WARMUP, POST_CONV_KEYWORDS, "            **options,\n"),
            (
                QWEN_WARMUP,
                POST_CONV_QKV,
                POST_CONV_QKV + '    base = {"apply_l2norm": True}\n    options = {**base, "output_g_exp": False}\n',
            ),
        ],
        None,
    ),
    "dict() of another": (
        [
            (QWEN_WARMUP, POST_CONV_KEYWORDS, "            **options,\n"),
            (
                QWEN_WARMUP,
                POST_CONV_QKV,
                POST_CONV_QKV + "    options = dict(dict(apply_l2norm=True), output_g_exp=False)\n",
            ),
        ],
        None,
    ),
    "a dict of the module": (
        [
            (QWEN_WARMUP, POST_CONV_KEYWORDS, "            **_POST_CONV_OPTIONS,\n"),
            (
                QWEN_WARMUP,
                POST_CONV_CONSTANT,
                POST_CONV_CONSTANT + '_POST_CONV_OPTIONS = {"apply_l2norm": True, "output_g_exp": False}\n',
            ),
        ],
        None,
    ),
    "a keyword passed in some cases, as the launcher's default": (
        [
            (
                QWEN_WARMUP,
                POST_CONV_KEYWORDS,
                '            apply_l2norm=True,\n            **({"output_g_exp": False} if length > 1 else {}),\n',
            )
        ],
        None,
    ),
    "a launcher's wrapper that forwards its keywords": (
        [
            (POST_CONV, "\n\ndef fused_post_conv_prep(\n", WRAPPER + "\n\ndef fused_post_conv_prep(\n"),
            (QWEN_WARMUP, POST_CONV_IMPORT, "        fused_post_conv_prep_op,\n    )\n"),
            (QWEN_WARMUP, POST_CONV_CALL_START, "        fused_post_conv_prep_op(\n"),
        ],
        None,
    ),
    # A keyword passed in some cases only, other than its default, or read off a dict chosen per case.
    "a keyword chosen per case": (
        [
            (
                QWEN_WARMUP,
                POST_CONV_KEYWORDS,
                '            apply_l2norm=True,\n            **({"output_g_exp": True} if length > 1 else {}),\n',
            )
        ],
        "output_g_exp=length > 1",
    ),
    "an entry of a dict chosen per case": (
        [
            (
                QWEN_WARMUP,
                POST_CONV_KEYWORDS,
                "            apply_l2norm=True,\n"
                '            output_g_exp=not ({"g": False} if length > 1 else {"g": True})["g"],\n',
            )
        ],
        "output_g_exp=length > 1",
    ),
}


@pytest.mark.parametrize("case", list(KEYWORDS_FORKS))
def test_a_step_that_passes_the_launchers_keywords_through_a_dict_migrates_with_the_keys_it_warms(tmp_path, case):
    """`**` of a dict the code builds (in the step, of the module, through a wrapper's `**kwargs`) passes its entries;
    one the step passes only in some cases (`**(d if c else {})`) is the launcher's default in the others. The keys
    check runs the fork's own step against the migrated tree's registrations, in Triton's terms."""
    edits, expected = KEYWORDS_FORKS[case]
    release = copy_033(tmp_path / "release")
    assert runner.invoke(app, ["migrate", "fla-fused-post-conv", "--repo", str(release), "--write"]).exit_code == 0
    original = copy_033(tmp_path / "fork")
    for rel, old, new in edits:
        edit(original, rel, old, new)
    repo = tmp_path / "migrated"
    shutil.copytree(original, repo, copy_function=os.link)
    result = runner.invoke(app, ["migrate", "fla-fused-post-conv", "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    changed, _, _ = changed_files(repo, original)
    if expected is None:
        provider = "def _fused_post_conv_prep_warmup_inputs("
        ours, theirs = ((tree / POST_CONV).read_text() for tree in (repo, release))
        assert ours[ours.index(provider) :] == theirs[theirs.index(provider) :]
        assert all(
            (repo / rel).read_bytes() == (release / rel).read_bytes() for rel in changed - {QWEN_WARMUP, POST_CONV}
        )
    else:
        assert expected in (repo / POST_CONV).read_text()
    report = key_equivalence("fla-fused-post-conv", "smoke", legacy_tree=original, migrated_tree=repo)
    assert report.configs > 0 and report.mismatches == []


@pytest.mark.parametrize(
    "keywords, why",
    [
        ('            **{"apply_l2norm": True, "l2norm": False},\n', "passes `l2norm`, which fused_post_conv_prep"),
        ("            apply_l2norm=True,\n            l2norm=False,\n", "passes `l2norm`, which fused_post_conv_prep"),
        (POST_CONV_KEYWORDS + '            **{"output_g_exp": True},\n', "passes `output_g_exp` twice"),
        ('            **{"num_k_heads": 2},\n', "passes `num_k_heads` twice"),  # also by position
        ("            True,\n            False,\n            True,\n", "passes 11 positional arguments"),
        ('            **{"apply_l2norm": True, **extra},\n', "reads `extra`"),
        ("            **{True: 1},\n", "whose keys are not all strings"),
        ("            **config.options,\n", "is no dict of keywords the lift can read"),
        (
            '            apply_l2norm=True,\n            output_g_exp=({"g": True} if length > 1 else {})["g"],\n',
            "is missing in some cases",
        ),
    ],
)
def test_a_dict_of_keywords_or_a_call_python_would_refuse_is_refused_at_the_step(tmp_path, keywords, why):
    repo = copy_033(tmp_path / "tree")
    edit(repo, QWEN_WARMUP, POST_CONV_KEYWORDS, keywords)
    result = runner.invoke(app, ["migrate", "fla-fused-post-conv", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    assert why in " ".join(result.output.split()) and f"{QWEN_WARMUP}:" in result.output


POST_CONV_LOOP = "    for length in _FLA_POST_CONV_WARMUP_LENGTHS:\n"
STALE_VALUES = {  # a list or dict changed after it was built, or a value an earlier pass of the loop set:
    # (family, edits, (the file and the text of the line refused, why))
    "a dict of keywords set by key": (
        "fla-fused-post-conv",
        [
            (QWEN_WARMUP, POST_CONV_KEYWORDS, "            **options,\n"),
            (
                QWEN_WARMUP,
                POST_CONV_LOOP,
                POST_CONV_LOOP + "        options = dict(apply_l2norm=True, output_g_exp=False)\n"
                '        options["output_g_exp"] = length > 1\n',
            ),
        ],
        (QWEN_WARMUP, 'options["output_g_exp"] = length > 1', "changes `options` in place"),
    ),
    "a list of lengths set by index under a condition": (
        "fla-fused-post-conv",
        [
            (
                QWEN_WARMUP,
                POST_CONV_LOOP,
                "    lengths = [1, 2, 16]\n    if config.h > 8:\n        lengths[0] = 64\n    for length in lengths:\n",
            )
        ],
        (QWEN_WARMUP, "lengths[0] = 64", "changes `lengths` in place"),
    ),
    "a grid the launcher appends to": (
        "mamba-batch-memcpy",
        [(MAMBA_UTILS, "    grid = (batch,)\n", "    grid = [batch]\n    grid.append(1)\n")],
        (MAMBA_UTILS, "grid.append(1)", "changes `grid` in place"),
    ),
    "a constant of the module appended to where it is built": (
        "fla-fused-post-conv",
        [
            (
                QWEN_WARMUP,
                POST_CONV_CONSTANT,
                "_FLA_POST_CONV_WARMUP_LENGTHS = [1, 16]\n_FLA_POST_CONV_WARMUP_LENGTHS.append(2)\n",
            )
        ],
        (QWEN_WARMUP, POST_CONV_LOOP.strip(), "which its module binds 2 times"),
    ),
    "a constant of the module set by index where it is built": (
        "fla-fused-post-conv",
        [
            (
                QWEN_WARMUP,
                POST_CONV_CONSTANT,
                "_FLA_POST_CONV_WARMUP_LENGTHS = [1, 16]\n_FLA_POST_CONV_WARMUP_LENGTHS[1] = 2\n",
            )
        ],
        (QWEN_WARMUP, POST_CONV_LOOP.strip(), "which its module binds 2 times"),
    ),
    "a flag an earlier pass of the loop sets": (
        "fla-fused-post-conv",
        [
            (QWEN_WARMUP, POST_CONV_KEYWORDS, "            apply_l2norm=True,\n            output_g_exp=g_exp,\n"),
            (
                QWEN_WARMUP,
                POST_CONV_LOOP,
                "    g_exp = False\n" + POST_CONV_LOOP + "        if length == 1:\n            g_exp = True\n",
            ),
        ],
        (QWEN_WARMUP, "if length == 1:", "`g_exp` may hold here what an earlier pass of the loop set"),
    ),
    "a dict an earlier pass of the loop rebinds": (
        "fla-fused-post-conv",
        [
            (QWEN_WARMUP, POST_CONV_KEYWORDS, "            apply_l2norm=True,\n            **options,\n"),
            (
                QWEN_WARMUP,
                POST_CONV_LOOP,
                "    options = {}\n" + POST_CONV_LOOP + '        options = {"output_g_exp": length == 1, **options}\n',
            ),
        ],
        (QWEN_WARMUP, 'options = {"output_g_exp"', "`options` may hold here what an earlier pass of the loop set"),
    ),
    # In the step itself, a call whose effect the migration would delete with it is refused already.
    "a list of lengths appended to in the step": (
        "fla-fused-post-conv",
        [
            (
                QWEN_WARMUP,
                POST_CONV_LOOP,
                "    lengths = [1, 2, 16]\n    lengths.append(64)\n    for length in lengths:\n",
            )
        ],
        (QWEN_WARMUP, "lengths.append(64)", "also runs `lengths.append(...)`, which the migration would delete"),
    ),
}


@pytest.mark.parametrize("case", list(STALE_VALUES))
def test_a_value_the_lift_would_read_as_first_built_is_refused_at_that_line(tmp_path, case):
    """The lift reads a list or dict as the code built it, and each pass of a loop as a case of its own; where the
    step, the launcher or the module then changes a list or dict, or a pass may read what an earlier one set, the
    run is refused at the statement (each but the last case was planned with exit 0 before)."""
    family, edits, (where, text, why) = STALE_VALUES[case]
    repo = copy_033(tmp_path / "tree")
    for rel, old, new in edits:
        edit(repo, rel, old, new)
    line = next(n for n, code in enumerate((repo / where).read_text().splitlines(), 1) if text in code)
    result = runner.invoke(app, ["migrate", family, "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"{where}:{line}: " in said and why in said


def test_a_step_value_from_a_helper_the_registration_does_not_pass_is_refused_saying_what_to_pass(tmp_path):
    """`g_exp = current_platform.is_rocm()` is one value per registration, which the registration must pass: refused
    with what to pass (an internal error before: the engine-config check parsed the read with its line attached)."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, QWEN_WARMUP, POST_CONV_KEYWORDS, "            apply_l2norm=True,\n            output_g_exp=g_exp,\n")
    edit(repo, QWEN_WARMUP, POST_CONV_LOOP, POST_CONV_LOOP + "        g_exp = current_platform.is_rocm()\n")
    result = runner.invoke(app, ["migrate", "fla-fused-post-conv", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "internal error" not in said and "g_exp (the step's current_platform.is_rocm() (" in said
