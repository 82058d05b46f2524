"""A launcher that launches two Triton kernels, lifted together: vLLM 0.33.0's ROCm MTP decode of Qwen's GDN layer.

`fused_gdn_decode_post_conv_mtp_triton` launches the delta-rule update and then the gated RMSNorm epilogue, and
one legacy step warms both through one call. Each kernel gets its own dispatcher and provider, from its own
survey draft; the step goes only when both move in one run (one alone would delete the other's warmup). The
keys are checked against the release's own step: Triton's JIT hook records what it asks for, and what the
migrated providers expand to through the tree's own `_DecoratedTritonJitKernel`.
"""

import ast
import dataclasses
import itertools
import json
import re
import shutil
import textwrap
import types

import pytest
import torch
from tree_forks import (
    GDN_LAYER,
    changed_files,
    copy_033,
    draft_fields,
    edit,
    repeated,
    replace_file,
    ruff_findings,
)
from typer.testing import CliRunner

from zerojit.codemods.runner import MigrationError, migrate
from zerojit.codemods.spec import load_specs
from zerojit.contract.backends import triton as triton_backend
from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.engine_trees.warmup import TreeWarmup
from zerojit.migrate.families import equivalence_adapter, key_equivalence
from zerojit.migrate.triton_lifts.equivalence import (
    GdnTritonConfig,
    GdnTritonEngine,
    compile_only_triton,
)
from zerojit.migrate.triton_lifts.meta_memory import MetaAllocations
from zerojit.migrate.triton_lifts.specs import QWEN_GDN_SEARCH_AT_BIND

pytestmark = pytest.mark.release_tree

runner = CliRunner()
MTP_MODULE = "vllm.third_party.flash_linear_attention.ops.fused_gdn_decode_post_conv_mtp"
MTP = "vllm/third_party/flash_linear_attention/ops/fused_gdn_decode_post_conv_mtp.py"
QWEN_WARMUP_MODULE = "vllm.model_executor.warmup.qwen_triton_warmup"
QWEN_WARMUP = "vllm/model_executor/warmup/qwen_triton_warmup.py"
KERNELS = ("_gdn_mtp_update_kernel", "_gdn_mtp_gated_rmsnorm_kernel")

# What a maintainer answers for the drafts' confirm items: the layer registers once its KV cache is bound (the
# update reads the SSM state's block stride), under the layer's own spec-decode switch, in the layer's names.
_SITE = dict(
    construction_module="vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn",
    construction_class=["QwenGatedDeltaNetAttention"],
    construction_method="bind_kv_cache",
    import_style="module",
    intended_differences=[
        [
            "gdn_config.fused_spec_decode",
            "the layer's own enable_fused_gdn_spec_decode, checked where it "
            "registers (the legacy config read it from the first layer)",
        ],
        ["spec_config is not None", "the layer's speculative_config, checked where it registers"],
        [
            "model_type not in _QWEN_MODEL_TYPES",
            "every model that builds a QwenGatedDeltaNetAttention "
            "layer with the fused MTP decode launches these kernels",
        ],
        *map(list, QWEN_GDN_SEARCH_AT_BIND),  # the release's search filters, as the built-in specs list them
    ],
)
_CONV_DIM = (
    "2 * (self.num_k_heads // self.tp_size) * self.head_k_dim\n"
    "        + (self.num_v_heads // self.tp_size) * self.head_v_dim"
)
ANSWERS = {
    "_gdn_mtp_update_kernel": f"""if self.enable_fused_gdn_spec_decode and self.speculative_config is not None:
    ssm_state = self.kv_cache[1]
    gdn_mtp_update_dispatch.register_warmup(
        num_compute_units=current_platform.num_compute_units(ssm_state.device.index),
        hv=self.num_v_heads // self.tp_size,
        num_spec_tokens=self.num_spec,
        v=self.head_v_dim,
        state_dtype=ssm_state.dtype,
        state_stride_token=ssm_state.stride(0),
        k=self.head_k_dim,
        max_num_reqs=self.vllm_config.scheduler_config.max_num_seqs,
        x_dtype=self.model_config.dtype,
        conv_dim={_CONV_DIM},
        a_log=self.A_log,
        dt_bias=self.dt_bias,
    )""",
    "_gdn_mtp_gated_rmsnorm_kernel": f"""if self.enable_fused_gdn_spec_decode and self.speculative_config is not None:
    gdn_mtp_gated_rmsnorm_dispatch.register_warmup(
        num_compute_units=current_platform.num_compute_units(self.kv_cache[1].device.index),
        hv=self.num_v_heads // self.tp_size,
        num_spec_tokens=self.num_spec,
        norm_weight_dtype=self.norm.weight.dtype,
        v=self.head_v_dim,
        max_num_reqs=self.vllm_config.scheduler_config.max_num_seqs,
        x_dtype=self.model_config.dtype,
        conv_dim={_CONV_DIM},
        norm_activation=self.norm.activation,
    )""",
}


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    """The survey's two drafts, loaded, and a spec file holding both with their confirm items answered."""
    folder = tmp_path_factory.mktemp("mtp-drafts")
    assert (
        runner.invoke(app, ["survey", "--repo", str(vllm_tree("0.33.0")), "--draft-specs", str(folder)]).exit_code == 0
    )
    drafts = {name: load_specs(folder / f"{name.strip('_')}.toml")[0] for name in KERNELS}
    text = ""
    for name, draft in drafts.items():
        fields = draft_fields(draft, "dispatcher")
        entry = {**fields, **_SITE, "registration": ANSWERS[name], "confirm": []}
        text += "[[migration]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in entry.items())
    path = folder / "answered.toml"
    path.write_text(text)
    return drafts, path


@pytest.fixture(scope="module")
def migrated(answered, tmp_path_factory):
    drafts, path = answered
    repo = copy_033(tmp_path_factory.mktemp("mtp-lifted") / "tree")
    families = [draft.family for draft in drafts.values()]
    result = runner.invoke(app, ["migrate", *families, "--repo", str(repo), "--spec", str(path), "--write"])
    assert result.exit_code == 0, result.output
    return repo, families, path


def test_each_kernels_draft_names_its_own_dispatcher_and_the_kernel_it_must_move_with(answered):
    drafts, _ = answered
    update, norm = (drafts[name] for name in KERNELS)
    assert update.lift.launcher == norm.lift.launcher == "fused_gdn_decode_post_conv_mtp_triton"
    assert (
        update.legacy.warming()
        == norm.legacy.warming()
        == (QWEN_WARMUP_MODULE, "_warm_fused_gdn_decode_post_conv_mtp_kernel")
    )
    assert update.kernel_name != norm.kernel_name and update.provider_name != norm.provider_name
    for draft, other in ((update, norm), (norm, update)):
        assert any(other.kernel.name in item and "same run" in item for item in draft.confirm)
    # Each provider takes only what its own kernel's inputs read of the step's (the update no norm facts).
    assert "norm_weight_dtype" not in update.registration.code and "state_stride_token" not in norm.registration.code


def test_one_kernel_of_the_launcher_alone_is_refused_the_step_would_lose_the_others_warmup(answered, tmp_path):
    drafts, path = answered
    repo = copy_033(tmp_path / "tree")
    update = drafts["_gdn_mtp_update_kernel"].family
    result = runner.invoke(app, ["migrate", update, "--repo", str(repo), "--spec", str(path), "--write"])
    assert result.exit_code != 0 and "also launches _gdn_mtp_gated_rmsnorm_kernel" in result.output
    assert (repo / MTP).read_bytes() == (vllm_tree("0.33.0") / MTP).read_bytes()
    with pytest.raises(MigrationError) as caught:
        migrate(repo, [spec for spec in load_specs(path) if spec.family == update])
    (refusal,) = caught.value.refusals  # typed: a lift refusal of this family, at the other kernel's launch
    launch = next(n for n, line in enumerate((repo / MTP).read_text().splitlines(), 1) if "_rmsnorm_kernel[" in line)
    assert (refusal.code, refusal.family, refusal.place.path, refusal.place.line) == ("lift", update, MTP, launch)


def test_both_kernels_lifted_together_change_only_their_files_lint_clean_and_again_is_a_no_op(migrated):
    repo, families, path = migrated
    original = vllm_tree("0.33.0")
    changed = {
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*.py")
        if p.read_bytes() != (original / p.relative_to(repo)).read_bytes()
    }
    assert changed == {MTP, QWEN_WARMUP, GDN_LAYER}
    for rel in changed:
        compile((repo / rel).read_text(encoding="utf-8"), rel, "exec", dont_inherit=True)
        assert [f for f in ruff_findings(repo / rel) if f not in ruff_findings(original / rel)] == [], rel
    text = (repo / MTP).read_text()
    assert "_gdn_mtp_update_kernel[" not in text and "_gdn_mtp_gated_rmsnorm_kernel[" not in text
    assert "_warm_fused_gdn_decode_post_conv_mtp_kernel" not in (repo / QWEN_WARMUP).read_text()
    again = runner.invoke(app, ["migrate", *families, "--repo", str(repo), "--spec", str(path), "--write"])
    assert again.exit_code == 0 and "0 changed" in again.output, again.output


def test_a_statement_only_the_two_launches_read_goes_from_the_launcher_into_both_dispatchers(answered, tmp_path):
    """What the launcher keeps is decided over both launches: a fork's `num_warps = 4`, read by each launch and
    nothing else, leaves the launcher (kept, it would be an unused local) for each dispatcher: the one whose return
    reads it whole computes it there (`num_warps=4`), the other (`num_warps // 2`) copies the statement."""
    drafts, path = answered
    repo = copy_033(tmp_path / "tree")
    edit(repo, MTP, "    sum_sq = torch.empty(\n", "    num_warps = 4\n    sum_sq = torch.empty(\n")
    edit(repo, MTP, "        num_warps=4,\n", "        num_warps=num_warps,\n")
    edit(repo, MTP, "        num_warps=2,\n", "        num_warps=num_warps // 2,\n")
    forked = (repo / MTP).read_text()
    result = runner.invoke(
        app, ["migrate", *(d.family for d in drafts.values()), "--repo", str(repo), "--spec", str(path), "--write"]
    )
    assert result.exit_code == 0, result.output
    text = (repo / MTP).read_text()
    launcher = text[text.index("def fused_gdn_decode_post_conv_mtp_triton(") :]
    assert "num_warps = 4" not in launcher and text.count("    num_warps = 4\n") == 1
    assert text.count("        num_warps=4,\n") == 1 and text.count("        num_warps=num_warps // 2,\n") == 1
    (repo.parent / "forked.py").write_text(forked)
    assert [f for f in ruff_findings(repo / MTP) if f not in ruff_findings(repo.parent / "forked.py")] == []


def _step_inputs():
    """Serving facts the step reads (Qwen3.5 GDN shapes per TP rank, MI300X/MI355X compute units, padded SSM
    state pages; 4 value heads put `a`, the second half of the packed b|a rows, off 16 bytes), in combinations
    that select each of the wrapper's V tiles and let the request limit cut some."""
    for hv, spec, cus, max_reqs, dtype, padding, activation in itertools.product(
        (4, 8, 32), (1, 3), (256, 304), (8, 1024), (torch.bfloat16, torch.float16), (0, 7), ("silu", "sigmoid")
    ):
        if (hv + spec + cus + max_reqs + padding) % 3 == 0:  # a third of the product: every value still varies
            yield dict(
                h=hv // 2,
                hv=hv,
                k=128,
                v=128,
                spec=spec,
                cus=cus,
                max_reqs=max_reqs,
                dtype=dtype,
                stride=hv * 128 * 128 + padding,
                activation=activation,
            )


def _keys(tree, run):
    """What `run` asks Triton for, by kernel, with the tree's compute-unit count stubbed (no GPU here)."""
    compile_only_triton()

    def recorded():
        with triton_backend.jit_keys_recorded() as keys, MetaAllocations():
            run(tree)
        return keys

    return tree.within(GdnTritonConfig(), recorded)


def _units(tree, cus):
    for module in ("vllm.utils.platform_utils", MTP_MODULE):
        tree.sources.module(module).num_compute_units = lambda index=0: cus


def test_the_two_providers_warm_in_tritons_own_keys_what_the_legacy_step_did(answered, migrated):
    drafts, _ = answered
    spec = drafts["_gdn_mtp_update_kernel"]
    legacy = TreeWarmup(vllm_tree("0.33.0"), spec, GdnTritonEngine(), run_compiles=True)
    lifted = TreeWarmup(migrated[0], spec, GdnTritonEngine(), run_compiles=True)
    cases = list(_step_inputs())
    counts = set()
    for case in cases:

        def step(tree, c=case):
            _units(tree, c["cus"])
            warmup = tree.sources.module(QWEN_WARMUP_MODULE)
            config = warmup._QwenGDNWarmupConfig(
                h=c["h"],
                hv=c["hv"],
                k=c["k"],
                v=c["v"],
                conv_kernel_size=4,
                conv_state=None,
                conv_dtype=c["dtype"],
                norm_weight_dtype=torch.float32,
                norm_before_gate=False,
                norm_activation=c["activation"],
                a_log=torch.empty(c["hv"], device="cuda"),
                dt_bias=torch.empty(c["hv"], device="cuda"),
                state_stride_token=c["stride"],
                state_dtype=torch.float32,
                fused_spec_decode=True,
            )
            warmup._warm_fused_gdn_decode_post_conv_mtp_kernel(
                torch.device("cuda"), config, c["dtype"], c["spec"], c["max_reqs"]
            )

        def providers(tree, c=case):
            _units(tree, c["cus"])
            module = tree.sources.module(MTP_MODULE)
            common = dict(
                num_compute_units=c["cus"],
                hv=c["hv"],
                num_spec_tokens=c["spec"],
                v=c["v"],
                max_num_reqs=c["max_reqs"],
                x_dtype=c["dtype"],
                conv_dim=2 * c["h"] * c["k"] + c["hv"] * c["v"],
            )
            update = dict(
                common,
                state_dtype=torch.float32,
                state_stride_token=c["stride"],
                k=c["k"],
                a_log=torch.empty(c["hv"], device="cuda"),
                dt_bias=torch.empty(c["hv"], device="cuda"),
            )
            norm = dict(common, norm_weight_dtype=torch.float32, norm_activation=c["activation"])
            for dispatch, inputs in (
                (module.gdn_mtp_update_dispatch, update),
                (module.gdn_mtp_gated_rmsnorm_dispatch, norm),
            ):
                for key in dispatch.get_warmup_keys(**inputs):
                    dispatch.compile(key)

        before, after = _keys(legacy, step), _keys(lifted, providers)
        assert set(after) == set(before), case
        # Each request count the step tries (the smallest that selects each V tile: 32, 64, V) and the request
        # limit lets through is one variant of each kernel.
        tried = {
            r for r in (1, -(-case["cus"] // case["hv"]), 4 * case["cus"] // case["hv"] + 1) if r <= case["max_reqs"]
        }
        assert sorted(name for name, _ in set(before)) == sorted(KERNELS * len(tried)), case
        counts.add(len(tried))
    assert len(cases) >= 16 and counts == {1, 2, 3}  # the limit cuts none, one or two of them


# The pair built in: the same kernels, registered from the spec's own answer under one `if`.
BUILT_IN = ("fla-gdn-mtp-update", "fla-gdn-mtp-rmsnorm")


@pytest.fixture(scope="module")
def built_in(tmp_path_factory):
    repo = copy_033(tmp_path_factory.mktemp("mtp-built-in") / "tree")
    result = runner.invoke(app, ["migrate", *BUILT_IN, "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    return repo


def test_the_built_in_pair_registers_both_kernels_in_one_if_binding_what_both_read_once(built_in):
    changed, deleted, _ = changed_files(built_in, vllm_tree("0.33.0"))
    assert changed == {MTP, QWEN_WARMUP, GDN_LAYER} and not deleted
    layer = (built_in / GDN_LAYER).read_text()
    override = layer[layer.index("    def bind_kv_cache(") :].split("\n\n\n")[0]
    # ROCm only (CUDA runs vLLM's own op for the fused decode), under the layer's own switch: one `if`, each fact
    # both registrations read bound once inside it.
    assert override.count("        if current_platform.is_rocm() and self.enable_fused_gdn_spec_decode:\n") == 1
    for binding in ("ssm_state = ", "num_compute_units = ", "hv = ", "max_num_reqs = ", "conv_dim = "):
        assert override.count(f"\n            {binding}") == 1, binding
    assert "gdn_mtp_update_dispatch.register_warmup(" in override
    assert "gdn_mtp_gated_rmsnorm_dispatch.register_warmup(" in override
    assert "bind_kv_cache" not in {function for function, _ in repeated(layer).values()}
    for rel in changed:
        assert [f for f in ruff_findings(built_in / rel) if f not in ruff_findings(vllm_tree("0.33.0") / rel)] == []
    again = runner.invoke(app, ["migrate", *BUILT_IN, "--repo", str(built_in), "--write"])
    assert again.exit_code == 0 and "0 changed" in again.output, again.output


def test_one_built_in_kernel_of_the_pair_alone_is_refused(tmp_path):
    repo = copy_033(tmp_path / "tree")
    result = runner.invoke(app, ["migrate", BUILT_IN[1], "--repo", str(repo), "--write"])
    assert result.exit_code != 0 and "also launches _gdn_mtp_update_kernel" in result.output
    assert changed_files(repo, vllm_tree("0.33.0"))[:2] == (set(), set())


# Qwen3.5-MoE at TP4 holds 16 V heads a rank; with 304 compute units the step tries 1, ceil(304 / 16) = 19 and
# 4 * 304 // 16 + 1 = 77 requests (the smallest that select each V tile), all under 256 requests: 3 keys a kernel.
@pytest.mark.parametrize("family", BUILT_IN)
def test_each_built_in_kernel_warms_in_tritons_own_keys_what_the_legacy_step_did(built_in, family):
    report = key_equivalence(family, "full", legacy_tree=vllm_tree("0.33.0"), migrated_tree=built_in)
    assert report.configs > 0 and report.mismatches == [], report.to_dict()["details"][:2]
    assert all(not d.config.enable_jit_warmup and d.migrated == 0 for d in report.diffs)
    adapter = type(equivalence_adapter(family))(legacy_tree=vllm_tree("0.33.0"), migrated_tree=built_in)
    legacy = adapter.legacy_keys(adapter.example)
    assert len(legacy) == 3 and adapter.migrated_keys(adapter.example) == legacy
    on_cuda = dataclasses.replace(adapter.example, rocm=False)  # vLLM's own op runs there: neither side warms
    assert adapter.legacy_keys(on_cuda) == adapter.migrated_keys(on_cuda) == set()


def test_a_fork_that_imports_the_platform_under_another_name_registers_through_that_name(tmp_path):
    """`from vllm.platforms import current_platform as platform`: the gate and the compute units read `platform`,
    the name the layer's module binds, and no second import of the platform is added."""
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        GDN_LAYER,
        "from vllm.platforms import current_platform\n",
        "from vllm.platforms import current_platform as platform\n",
    )
    replace_file(repo / GDN_LAYER, (repo / GDN_LAYER).read_text().replace("current_platform.", "platform."))
    forked = (repo / GDN_LAYER).read_text()
    result = runner.invoke(app, ["migrate", *BUILT_IN, "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    layer = (repo / GDN_LAYER).read_text()
    override = layer[layer.index("    def bind_kv_cache(") :].split("\n\n\n")[0]
    assert "        if platform.is_rocm() and self.enable_fused_gdn_spec_decode:\n" in override
    assert "num_compute_units = platform.num_compute_units(ssm_state.device.index)" in override
    assert "current_platform" not in layer.replace("import current_platform as platform", "")
    (tmp_path / "forked.py").write_text(forked)
    assert [f for f in ruff_findings(repo / GDN_LAYER) if f not in ruff_findings(tmp_path / "forked.py")] == []
    again = runner.invoke(app, ["migrate", *BUILT_IN, "--repo", str(repo), "--write"])
    assert again.exit_code == 0 and "0 changed" in again.output, again.output


def _pair_migrated_in_a_fork(tmp_path, rel: str, old: str, new: str):
    """A 0.33.0 fork (`old` -> `new` in `rel`) the built-in pair migrated (exit 0)."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, rel, old, new)
    result = runner.invoke(app, ["migrate", *BUILT_IN, "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    return repo


def test_a_bind_kv_cache_that_returns_before_binding_registers_after_the_parents_call(tmp_path):
    """A fork's own `bind_kv_cache` returns early for an empty cache, before the parent binds it. The registrations
    read the bound cache, so they go after the parent's call (that path binds nothing and registers nothing, said
    once, at the return's line in the fork though earlier operations moved it), in the order the operations run,
    each fact bound once."""
    repo = copy_033(tmp_path / "tree")
    early = "        if kv_cache.numel() == 0:\n            return\n"
    edit(
        repo,
        GDN_LAYER,
        "class QwenGatedDeltaNetAttention(GatedDeltaNetAttention):\n",
        "class QwenGatedDeltaNetAttention(GatedDeltaNetAttention):\n"
        "    def bind_kv_cache(self, kv_cache: torch.Tensor) -> None:\n"
        f"{early}        super().bind_kv_cache(kv_cache)\n        self._bound = True\n\n",
    )
    forked = (repo / GDN_LAYER).read_text()
    line = forked[: forked.index(early)].count("\n") + 2
    legacy = tmp_path / "legacy"
    shutil.copytree(repo, legacy)
    result = runner.invoke(
        app, ["migrate", "fla-sigmoid-gating", "mamba-causal-conv1d", *BUILT_IN, "--repo", str(repo), "--write"]
    )
    assert result.exit_code == 0, result.output
    said = [w for w in result.output.splitlines() if "returns here before the base's bind_kv_cache runs" in w]
    assert len(said) == 1 and f"{GDN_LAYER}:{line}: " in said[0], said
    layer = (repo / GDN_LAYER).read_text()
    override = layer[layer.index("    def bind_kv_cache(") :].split("\n\n    def ")[0]
    assert override.index(early) < override.index("super().bind_kv_cache(kv_cache)\n        self._bound = True\n")
    parent = override.index("super().bind_kv_cache(")
    registrations = [
        override.index(f"{name}.register_warmup(")
        for name in (
            "fused_sigmoid_gating_delta_rule_update_dispatch",
            "causal_conv1d_fn_dispatch",
            "gdn_mtp_update_dispatch",
            "gdn_mtp_gated_rmsnorm_dispatch",
        )
    ]
    assert parent < min(registrations) and registrations == sorted(registrations)
    assert override.count("ssm_state = ") == 1  # the gating registration's, which the pair then reads
    for binding in ("num_compute_units = ", "hv = ", "max_num_reqs = ", "conv_dim = "):  # at whatever depth
        assert len(re.findall(rf"\n +{binding}", override)) == 1, binding
    (tmp_path / "forked.py").write_text(forked)
    assert [f for f in ruff_findings(repo / GDN_LAYER) if f not in ruff_findings(tmp_path / "forked.py")] == []
    # The keys check runs the fork's bind on every path: the empty-cache one binds nothing, so owes no registration.
    assert key_equivalence("mamba-causal-conv1d", "smoke", legacy_tree=legacy, migrated_tree=repo).ok


def test_a_legacy_guard_that_reads_through_one_the_spec_drops_keeps_it_in_front(tmp_path):
    """A fork's step also asks `spec_config.num_speculative_tokens <= 4`. The spec drops `spec_config is not None`
    (the layer's switch implies a speculative config), but the new guard reads through it: the written gate checks
    it first, so a model served without speculative decoding never reads `None.num_speculative_tokens`. Both
    registrations stay in one `if` of their own inside that gate."""
    repo = _pair_migrated_in_a_fork(
        tmp_path,
        QWEN_WARMUP,
        "        and spec_config is not None\n",
        "        and spec_config is not None\n        and spec_config.num_speculative_tokens <= 4\n",
    )
    layer = (repo / GDN_LAYER).read_text()
    override = layer[layer.index("    def bind_kv_cache(") :].split("\n\n\n")[0]
    gate = next(n for n in ast.walk(ast.parse(textwrap.dedent(override))) if isinstance(n, ast.If)).test
    assert isinstance(gate, ast.BoolOp) and len(gate.values) == 3  # the config bound once, then the two guards
    drafts = lambda n: types.SimpleNamespace(speculative_config=types.SimpleNamespace(num_speculative_tokens=n))  # noqa: E731
    for current, holds in (
        (None, False),
        (types.SimpleNamespace(speculative_config=None), False),  # served without speculative decoding
        (drafts(3), True),
        (drafts(5), False),
    ):
        accessor = {"get_current_vllm_config_or_none": lambda current=current: current}
        assert eval(compile(ast.Expression(gate), "gate", "eval"), accessor) is holds, current
    assert override.count("if current_platform.is_rocm() and self.enable_fused_gdn_spec_decode:") == 1
    assert override.count("ssm_state = ") == 1


def test_a_fork_that_computes_the_programs_apart_migrates_with_the_comment_each_dispatcher_takes(tmp_path):
    """`heads, num_cus = ...` on two lines: each dispatcher computes `heads` under the launcher's comment, whose
    lines the release already writes past 88 columns; copied as they were, they are no new finding."""
    repo = _pair_migrated_in_a_fork(
        tmp_path,
        MTP,
        "    heads, num_cus = num_requests * HV, num_compute_units(out.device.index)\n",
        "    heads = num_requests * HV\n    num_cus = num_compute_units(out.device.index)\n",
    )
    text = (repo / MTP).read_text()
    comment = "    # Tile V only while the GPU needs more programs"
    assert text.count(comment) == 3 and text.count("    heads = num_requests * HV\n") == 3  # launcher, dispatchers
