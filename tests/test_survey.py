"""`zerojit survey`: the legacy warmups of a real vLLM 0.33.0 tree, and of a small engine built here."""

import ast
import json
import re

import pytest
from tree_forks import TOY_CONTRACT, copy_033, copy_release, write_tree
from typer.testing import CliRunner

from zerojit.codemods.errors import MigrationError
from zerojit.codemods.runner import migrate, write
from zerojit.codemods.spec import load_specs
from zerojit.codemods.survey import KernelFinding, WarmupFinding
from zerojit.codemods.survey_specs import match_specs
from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import migration_specs

pytestmark = pytest.mark.release_tree

runner = CliRunner()
# The standalone warmups vLLM 0.33.0's kernel_warmup still calls (DESIGN.md §6, read off the release).
LEGACY_033 = {
    "qwen_triton_warmup",
    "qwen_vl_triton_warmup",
    "mamba_triton_warmup",
    "kimi_k3_triton_warmup",
    "watermark_sample_warmup",
    "qwen4_exp_qsa_triton_warmup",
    "cutedsl_warmup",
    "rocm_segmented_attn_autotune_warmup",
    "flashinfer_sparse_mla_decode_autotune_warmup",
    "deepseek_v4_sparse_mla_attention_warmup",
    "autotune_hisparse_flashinfer_attention",
    "step5_dsa_warmup",
    "deep_gemm_warmup",
    "b12x_warmup",
    "minimax_m3_msa_warmup",
    "replayssm_autotune_warmup",
    "mixed_batch_attention_warmup",
}


@pytest.fixture(scope="module")
def survey033():
    result = runner.invoke(app, ["survey", "--repo", str(vllm_tree("0.33.0")), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_legacy_warmup_of_033_is_listed_with_kernels_and_a_verdict(survey033):
    assert survey033["format"] == "zerojit-survey/4"
    warmups = {w["function"]: w for w in survey033["warmups"]}
    assert LEGACY_033 <= set(warmups) and survey033["counts"]["warmups"] >= 17
    for warmup in survey033["warmups"]:
        assert warmup["verdict"] in ("spec", "lift", "manual") and warmup["reasons"]
        assert all(
            k["module"] and k["kind"] and k["verdict"] in ("spec", "lift", "manual") and k["reasons"]
            for k in warmup["kernels"]
        )
    # Reached through the orchestrator's own autotune helper, not called by kernel_warmup directly.
    assert (
        warmups["replayssm_autotune_warmup"]["via"]
        == warmups["autotune_hisparse_flashinfer_attention"]["via"]
        == "flashinfer_autotune"
    )
    assert all(warmups[name]["verdict"] == "manual" for name in LEGACY_033 if "autotune" in name)


def test_kimi_k3s_warmup_lists_only_the_kernels_its_calls_can_reach(survey033):
    kimi = next(w for w in survey033["warmups"] if w["function"] == "kimi_k3_triton_warmup")
    # Read off the tree: the warmup's recurrent call leaves fuse_gate at its default, which becomes True and
    # skips the gate kernel's launcher; its ROCm call passes backend="gluon", which returns into AITER before
    # the Triton path that gathers initial states.
    tree = vllm_tree("0.33.0")
    warmup = (tree / "vllm/model_executor/warmup/kimi_k3_triton_warmup.py").read_text()
    recurrent = (tree / "vllm/models/kimi_k3/nvidia/ops/third_party/kda/fused_recurrent.py").read_text()
    prefill = (tree / "vllm/models/kimi_k3/amd/ops/kda_prefill.py").read_text()
    assert "fuse_gate" not in warmup and 'backend="gluon"' in warmup
    assert (
        "fuse_gate: bool | None = None" in recurrent and "if fuse_gate is None:\n        fuse_gate = True" in recurrent
    )
    assert re.search(r"    else:\n        gate, beta = _fused_kda_gate_beta\(", recurrent)
    assert prefill.index('if backend == "gluon":\n        return') < prefill.index("gather_initial_states(\n")
    assert [k["name"] for k in kimi["kernels"]] == ["_attn_res_kernel", "fused_recurrent_kda_fwd_kernel"]
    assert not any("_kda_gate_beta" in r or "gather_initial" in r for r in kimi["reasons"])


# zerojit's built-in migrations of 0.33.0 legacy warmups (migrate/engine_specs.py, migrate/triton_lifts, fla_layer_norm).
BUILT_INS_033 = {
    "fla-layer-norm",
    "fla-fused-post-conv",
    "fla-sigmoid-gating",
    "fla-gdn-mtp-update",
    "fla-gdn-mtp-rmsnorm",
    "mamba-causal-conv1d",
    "mamba-batch-memcpy",
    "kimi-k3-attn-res",
    "kimi-k3-recurrent-kda",
    "ll-bf16-router-gemm",
    "gemm-rs-ar",
    "bf16x3-router-gemm",
}


def test_the_warmups_the_survey_says_are_moved_whole_are_those_a_run_of_every_built_in_removes(survey033, tmp_path):
    """The survey names the built-in migrations that move each kernel; the prediction is checked against the run:
    every built-in written in one run on a copy of the release, the warmups its orchestrator still reaches are
    the release's less those the survey said are moved whole (on 0.33.0 each of those calls goes). A CuTe DSL unit a new owner compiles (gemm-rs-ar, bf16x3) counts
    as moved by that owner's migration, though the spec names the owner, not the unit."""
    warmups = {w["function"]: w for w in survey033["warmups"]}
    assert {family for w in warmups.values() for family in w["specs"]} == BUILT_INS_033
    assert warmups["_warmup_gemm_rs_ar"]["kernels"][0]["specs"] == ["gemm-rs-ar"]
    assert {k["name"] for k in warmups["warmup_bf16x3_router_gemm"]["kernels"] if k["specs"]} == {
        "Sm100BF16x3RouterGemm",
        "_splitk_reduce_kernel",
    }
    # Both Kimi-K3 kernels move, but its ROCm step runs AITER's: the call stays.
    assert all(k["specs"] for k in warmups["kimi_k3_triton_warmup"]["kernels"])
    assert not warmups["kimi_k3_triton_warmup"]["all_moved"] and warmups["kimi_k3_triton_warmup"]["stays"]
    repo = copy_033(tmp_path / "vllm")
    write(migrate(repo, [migration_specs()[family] for family in sorted(BUILT_INS_033)], jobs=2))
    result = runner.invoke(app, ["survey", "--repo", str(repo), "--json"])
    assert result.exit_code == 0, result.output
    left = {w["function"] for w in json.loads(result.stdout)["warmups"]}
    gone = {name for name, w in warmups.items() if w["all_moved"]}
    assert left == set(warmups) - gone and len(gone) == survey033["counts"]["moved_by_specs"]["warmups"] == 5


CONTRACT = ("vllm/model_executor/warmup/jit_warmup.py", "vllm/model_executor/warmup/jit_warmup_triton_helper.py")


# The ll_bf16 registration names the one-token kernel object 0.30.0 adds: on 0.29.0 the safety gate refuses it.
NO_C1_PDL = "imports ll_bf16_gemm_c1_pdl_kernel from vllm.model_executor.kernels.linear.cute_dsl.ll_bf16, which neither"


def moved_whole_and_gone(repo, refused=None):
    """The warmups the survey of `repo` says the built-ins move whole, and those left after a run of every built-in
    it names: the two must agree. `refused`: a family the survey names that the tree's run refuses (matched by name,
    a spec checks the tree when it runs), with what the refusal says; its warmups stay."""
    before = json.loads(runner.invoke(app, ["survey", "--repo", str(repo), "--json"]).stdout)["warmups"]
    families = sorted({family for w in before for family in w["specs"]})
    if refused:
        family, why = refused
        with pytest.raises(MigrationError, match=why):
            migrate(repo, [migration_specs()[family]])
        families.remove(family)
    gone = {w["function"] for w in before if w["all_moved"] and set(w["specs"]) <= set(families)}
    write(migrate(repo, [migration_specs()[family] for family in families], jobs=2))
    result = runner.invoke(app, ["survey", "--repo", str(repo), "--json"])
    assert result.exit_code == 0, result.output
    assert {w["function"] for w in json.loads(result.stdout)["warmups"]} == {w["function"] for w in before} - gone
    return gone, families


def test_on_0290_no_lift_is_named_its_contract_has_no_triton_dispatcher(tmp_path):
    """0.29.0's contract has no `triton_kernel_dispatcher_with_warmup` (0.30.0 adds it): the survey names no lift
    spec there, calls its plain Triton kernels manual and why, and a run of what it names removes what it said."""
    text = (vllm_tree("0.29.0") / CONTRACT[1]).read_text()
    assert "triton_kernel_dispatcher_with_warmup" not in text and "DispatchSpec" not in text
    gone, families = moved_whole_and_gone(copy_release("0.29.0", tmp_path / "vllm"), ("ll-bf16-router-gemm", NO_C1_PDL))
    assert gone == {"fa4_cutedsl_warmup"}
    assert not {f for f in families if migration_specs()[f].lift}
    survey = json.loads(runner.invoke(app, ["survey", "--repo", str(vllm_tree("0.29.0")), "--json"]).stdout)
    (qwen,) = (w for w in survey["warmups"] if w["function"] == "qwen_triton_warmup")
    for kernel in qwen["kernels"]:
        assert (
            kernel["verdict"] == "manual" and "has no DispatchSpec or triton_kernel_dispatcher" in kernel["reasons"][0]
        )


def test_on_0290_with_the_dispatcher_the_qwen_entry_goes_whole(tmp_path):
    """0.29.0's Qwen entry searches the model type with a `for` loop and defaults the device to
    `torch.device("cuda")`. Given 0.30.0's contract modules, its three steps lift, nothing of it is left to run, and
    it goes as the survey says (with every other warmup the built-ins move whole), and no other."""
    repo = copy_release("0.29.0", tmp_path / "vllm")
    for relative in CONTRACT:
        (repo / relative).unlink()  # never write through the hard link into the cached tree
        (repo / relative).write_text((vllm_tree("0.30.0") / relative).read_text())
    gone, _ = moved_whole_and_gone(repo, ("ll-bf16-router-gemm", NO_C1_PDL))
    assert "qwen_triton_warmup" in gone and "kimi_k3_triton_warmup" in gone


def test_cutedsl_warmups_providers_list_the_cute_dsl_kernels_they_compile(survey033):
    cutedsl = next(w for w in survey033["warmups"] if w["function"] == "cutedsl_warmup")
    tree = vllm_tree("0.33.0")
    ops = "vllm/models/kimi_k3/nvidia/ops"
    # Read off the tree: each kernel object each vLLM provider passes to cute.compile, in the provider's own text.
    built = {
        "vllm/model_executor/kernels/linear/cute_dsl/skinny_gemm.py": ["kernel = CuteSkinnyGemm("],
        "vllm/models/qwen4_exp/nvidia/ops/cute_dsl/hc_down_silu.py": ["gemm = HcDownSiluMma(", "gemm = HcDownSiluFma("],
        f"{ops}/cute_dsl/kda_skinny_gemm.py": ["cute.compile(\n            _KdaSkinnyNGemm(", "_KdaSkinnyKGemm("],
        f"{ops}/cute_dsl/latent_moe_tail/fused_add_multicast_gemm.py": ["gemm = FusedAddMulticastGemm("],
        f"{ops}/cute_dsl/latent_moe_tail/fused_add_multicast_skinny_gemm.py": ["FusedAddMulticastSkinnyGemm("],
    }
    for path, texts in built.items():
        assert all(text in (tree / path).read_text() for text in texts), path
    assert {k["name"] for k in cutedsl["kernels"]} == {
        "CuteSkinnyGemm",
        "HcDownSiluMma",
        "HcDownSiluFma",
        "_KdaSkinnyNGemm",
        "_KdaSkinnyKGemm",
        "FusedAddMulticastGemm",
        "FusedAddMulticastSkinnyGemm",
    }
    assert {k["kind"] for k in cutedsl["kernels"]} == {"cute.compile"} and cutedsl["verdict"] == "manual"
    # The b12x backend and the Kimi-K3 vision FA4 probe register providers too; they compile other libraries'.
    assert not any(
        k["module"].startswith(("vllm.v1.attention", "vllm.models.kimi_k3.nvidia.ops.vision"))
        for k in cutedsl["kernels"]
    )


def test_the_cute_dsl_kernels_of_the_gemm_rs_ar_and_bf16x3_router_warmups(survey033):
    warmups = {w["function"]: w for w in survey033["warmups"]}
    tree = vllm_tree("0.33.0")
    orchestrator = (tree / "vllm/model_executor/warmup/kernel_warmup.py").read_text()
    rs_ar = (tree / "vllm/model_executor/kernels/linear/cute_dsl/gemm_rs_ar.py").read_text()
    router = (tree / "vllm/model_executor/layers/fused_moe/router/bf16x3_router_gemm_cutedsl.py").read_text()
    # Read off the tree: the orchestrator looks the RS/AR module up by name and calls its warmup, which compiles
    # through Sm100GemmRsAr.compile, whose cute.compile takes an Sm100GemmRsAr; the router's compiles its own.
    assert 'sys.modules.get("vllm.model_executor.kernels.linear.cute_dsl.gemm_rs_ar")' in orchestrator
    assert "Sm100GemmRsAr.compile(" in rs_ar and "kernel = Sm100GemmRsAr(" in rs_ar
    assert "kernel = Sm100BF16x3RouterGemm(BN)\n        return cute.compile(" in router
    assert [k["name"] for k in warmups["_warmup_gemm_rs_ar"]["kernels"]] == ["Sm100GemmRsAr"]
    assert "Sm100BF16x3RouterGemm" in [k["name"] for k in warmups["warmup_bf16x3_router_gemm"]["kernels"]]


def test_the_watermark_warmup_kernel_and_where_it_is_selected(survey033):
    watermark = next(w for w in survey033["warmups"] if w["function"] == "watermark_sample_warmup")
    (kernel,) = watermark["kernels"]
    # Read off the tree independently: the kernel is a @triton.jit def in the sampler's watermark module.
    source = (vllm_tree("0.33.0") / "vllm/v1/worker/gpu/sample/watermark.py").read_text()
    assert re.search(r"^@triton\.jit(\(.*\))?\ndef _philox_gumbel_kernel\(", source, re.M)
    assert (kernel["name"], kernel["module"], kernel["kind"]) == (
        "_philox_gumbel_kernel",
        "vllm.v1.worker.gpu.sample.watermark",
        "triton.jit",
    )
    assert not kernel["on_contract"] and "vllm.v1.watermarking.gumbel:GumbelWatermarker" in kernel["constructed_in"]
    assert watermark["gate"] == "(enable_jit_warmup)"
    # A plain Triton kernel off the contract: the lift moves it, through the launcher the warmup calls (read off the
    # tree: of the functions with `_philox_gumbel_kernel[...](` in their body, the one the warmup calls). The step
    # passes its sampling state as `**(state if use_skip_mask else {})`: each entry the launcher's default where the
    # mask is off.
    warmup = (vllm_tree("0.33.0") / "vllm/model_executor/warmup/watermark_sample_warmup.py").read_text()
    launchers = [
        f.name
        for f in ast.parse(source).body
        if isinstance(f, ast.FunctionDef) and "_philox_gumbel_kernel[" in ast.get_source_segment(source, f)
    ]
    called = [name for name in launchers if re.search(rf"\b{name}\(", warmup)]
    assert watermark["verdict"] == kernel["verdict"] == "lift"
    assert [kernel["launcher"]] == [f"vllm.v1.worker.gpu.sample.watermark:{name}" for name in called]
    assert kernel["step"] == "vllm.model_executor.warmup.watermark_sample_warmup:watermark_sample_warmup"


def test_draft_specs_load_and_migrate_refuses_them_until_confirmed(tmp_path):
    drafts = tmp_path / "drafts"
    result = runner.invoke(app, ["survey", "--repo", str(vllm_tree("0.33.0")), "--draft-specs", str(drafts)])
    assert result.exit_code == 0, result.output
    files = sorted(drafts.glob("*.toml"))
    assert files
    for path in files:
        (spec,) = load_specs(path)
        assert spec.confirm
        refused = runner.invoke(app, ["migrate", "--repo", str(vllm_tree("0.33.0")), "--spec", str(path)])
        assert refused.exit_code == 2 and "confirm list" in refused.output and "Traceback" not in refused.output


ENGINE = {  # a small engine: a helper of the orchestrator calls two warmups; kernels live elsewhere
    "eng/__init__.py": "",
    "eng/warmup/__init__.py": "",
    "eng/warmup/kernel_warmup.py": """
        from eng.warmup.norm_warmup import norm_warmup
        from eng.warmup import tune_warmup as tune


        def _autotune_all(worker):
            norm_warmup(worker)
            tune.gemm_warmup(worker)


        def kernel_warmup(worker):
            if worker.jit:
                _autotune_all(worker)
        """,
    "eng/warmup/norm_warmup.py": """
        from eng.ops.norm import rms_norm


        def norm_warmup(worker):
            rms_norm(worker.x)
        """,
    "eng/warmup/tune_warmup.py": """
        from eng.ops.gemm import GEMM_KERNEL


        def gemm_warmup(worker):
            GEMM_KERNEL.warmup(worker.config)
        """,
    "eng/ops/__init__.py": "",
    "eng/ops/norm.py": """
        import triton


        @triton.jit
        def _rms_norm_kernel(x):
            pass


        def rms_norm(x):
            _rms_norm_kernel[(1,)](x)
        """,
    "eng/ops/gemm.py": """
        class VllmJitKernel:
            def register_warmup(self):
                pass


        class Gemm(VllmJitKernel):
            pass


        GEMM_KERNEL = Gemm()
        """,
    "eng/layers.py": """
        from eng.ops.gemm import GEMM_KERNEL
        from eng.ops.norm import rms_norm


        class Norm:
            def forward(self, x):
                return rms_norm(x)


        class Linear:
            def __init__(self):
                GEMM_KERNEL.register_warmup()
        """,
}


def test_a_small_engine_helpers_wrappers_and_contract_kernels(tmp_path):
    write_tree(tmp_path, {**ENGINE, **TOY_CONTRACT})
    result = runner.invoke(
        app, ["survey", "--repo", str(tmp_path), "--orchestrator", "eng.warmup.kernel_warmup", "--json"]
    )
    assert result.exit_code == 0, result.output
    warmups = {w["function"]: w for w in json.loads(result.stdout)["warmups"]}
    assert set(warmups) == {"norm_warmup", "gemm_warmup"}
    assert {w["via"] for w in warmups.values()} == {"_autotune_all"} and warmups["norm_warmup"][
        "gate"
    ] == "(worker.jit)"
    (norm,) = warmups["norm_warmup"]["kernels"]
    assert (norm["name"], norm["kind"], norm["launched_by"], norm["constructed_in"]) == (
        "_rms_norm_kernel",
        "triton.jit",
        ["eng.ops.norm:rms_norm"],
        ["eng.layers:Norm"],
    )
    (gemm,) = warmups["gemm_warmup"]["kernels"]
    assert gemm["on_contract"] and gemm["registers_at"] == ["eng.layers:13"]  # (the text starts with a blank line)
    assert not norm["on_contract"]  # a JITFunction has no register_warmup
    assert warmups["gemm_warmup"]["verdict"] == "spec"
    # The plain Triton kernel: its launcher's launch becomes a dispatcher, the warmup's call its provider.
    assert warmups["norm_warmup"]["verdict"] == norm["verdict"] == "lift"
    assert (norm["launcher"], norm["step"], norm["parameters"]) == (
        "eng.ops.norm:rms_norm",
        "eng.warmup.norm_warmup:norm_warmup",
        ["x"],
    )


def test_a_small_engine_whose_contract_has_no_triton_dispatcher_lifts_nothing(tmp_path):
    helper = "vllm/model_executor/warmup/jit_warmup_triton_helper.py"
    write_tree(tmp_path, {**ENGINE, **TOY_CONTRACT, helper: "class TritonWarmupTensor:\n    pass\n"})
    result = runner.invoke(
        app, ["survey", "--repo", str(tmp_path), "--orchestrator", "eng.warmup.kernel_warmup", "--json"]
    )
    (norm,) = next(w for w in json.loads(result.stdout)["warmups"] if w["function"] == "norm_warmup")["kernels"]
    assert norm["verdict"] == "manual"
    assert "jit_warmup_triton_helper has no DispatchSpec or triton_kernel_dispatcher_with_warmup" in norm["reasons"][0]


def test_a_tree_without_the_orchestrator_is_one_line(tmp_path):
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm/__init__.py").write_text("")
    result = runner.invoke(app, ["survey", "--repo", str(tmp_path)])
    assert result.exit_code == 2 and "no orchestrator module" in result.output and "Traceback" not in result.output


def tree_033_with(tmp_path, relative: str, replace):
    """vLLM 0.33.0 as hard links, with one file replaced by what `replace(path)` leaves there."""
    import os
    import shutil

    repo = tmp_path / "vllm-0.33.0"
    shutil.copytree(vllm_tree("0.33.0"), repo, copy_function=os.link)
    target = repo / relative
    target.unlink()  # never write through the hard link into the cached tree
    replace(target)
    return repo


def survey_json(repo) -> dict:
    result = runner.invoke(app, ["survey", "--repo", str(repo), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


QWEN = "vllm/model_executor/warmup/qwen_triton_warmup.py"


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda path: path.write_text("def qwen_triton_warmup(:\n"), r"qwen_triton_warmup\.py:1: does not parse"),
        (lambda path: path.write_bytes(b"x = 1\x00\n"), r"qwen_triton_warmup\.py: .*null bytes"),
        (lambda path: __import__("os").mkfifo(path), r"qwen_triton_warmup\.py: a FIFO, not a regular file"),
    ],
    ids=["syntax error", "null byte", "fifo"],
)
def test_a_legacy_module_that_cannot_be_read_is_listed_with_why_never_dropped(tmp_path, survey033, damage, why):
    report = survey_json(tree_033_with(tmp_path, QWEN, damage))
    assert report["counts"]["warmups"] == survey033["counts"]["warmups"]
    (qwen,) = [w for w in report["warmups"] if w["function"] == "qwen_triton_warmup"]
    assert qwen["verdict"] == "manual" and re.search(r"its module cannot be read: .*" + why, qwen["reasons"][0])


def test_an_orchestrator_that_does_not_parse_is_named_as_such(tmp_path):
    repo = tree_033_with(
        tmp_path,
        "vllm/model_executor/warmup/kernel_warmup.py",
        lambda path: path.write_text("def kernel_warmup(worker:\n"),
    )
    result = runner.invoke(app, ["survey", "--repo", str(repo)])
    assert result.exit_code == 2 and "kernel_warmup.py:1: does not parse" in result.output
    assert "cannot be read" in result.output and "has no orchestrator module" not in result.output


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda path: path.write_text("pass\n"), r"defines no b12x_warmup\(\)"),
        (lambda path: path.write_text("x = " + " + ".join(["1"] * 50000) + "\n"), r"too deeply nested|does not parse"),
    ],
    ids=["no such function", "nested past the parser"],
)
def test_a_warmup_whose_module_lacks_it_or_defeats_the_parser_is_listed(tmp_path, survey033, damage, why):
    report = survey_json(tree_033_with(tmp_path, "vllm/model_executor/warmup/b12x_warmup.py", damage))
    assert report["counts"]["warmups"] == survey033["counts"]["warmups"]
    (b12x,) = [w for w in report["warmups"] if w["function"] == "b12x_warmup"]
    assert b12x["verdict"] == "manual" and re.search(why, b12x["reasons"][0])


# The reading of 0.33.0 by hand (issue 39): the eight warmups that compile only vLLM's kernels, and the
# owner of the work each other one does that no compile key can take.
MIGRATABLE_033 = {
    "qwen_triton_warmup",
    "qwen_vl_triton_warmup",
    "mamba_triton_warmup",
    "watermark_sample_warmup",
    "qwen4_exp_qsa_triton_warmup",
    "warmup_bf16x3_router_gemm",
    "_warmup_ll_bf16_router_gemm",
    "_warmup_gemm_rs_ar",
}
STAYS_033 = {
    "kimi_k3_triton_warmup": {"AITER"},  # the ROCm path: chunk_kda_prefill(backend="gluon") returns into AITER
    "cutedsl_warmup": {"b12x", "FlashAttention"},  # the b12x backend's and the vision FA4 probe's providers
    "step5_dsa_warmup": {"dummy run", "FlashInfer"},
    "replayssm_autotune_warmup": {"dummy run"},
    "rocm_segmented_attn_autotune_warmup": {"on-device tuning"},
    "flashinfer_sparse_mla_decode_autotune_warmup": {"FlashInfer", "dummy run"},
    "deepseek_v4_sparse_mla_attention_warmup": {"FlashInfer", "dummy run"},
    "deep_gemm_warmup": {"DeepGEMM"},
    "b12x_warmup": {"b12x"},
    "minimax_m3_msa_warmup": {"dummy run"},
    "warmup_flashinfer_pcie_ipc_allreduce": {"FlashInfer", "IPC"},
    "mixed_batch_attention_warmup": {"dummy run"},
    "autotune_hisparse_flashinfer_attention": {"FlashInfer"},
}
PARTLY_033 = {
    "kimi_k3_triton_warmup",
    "cutedsl_warmup",
    "step5_dsa_warmup",
    "replayssm_autotune_warmup",
    "autotune_hisparse_flashinfer_attention",
}


def test_each_warmup_of_033_is_classified_with_what_stays_and_who_owns_it(survey033):
    warmups = {w["function"]: w for w in survey033["warmups"]}
    assert set(warmups) == MIGRATABLE_033 | set(STAYS_033)
    assert survey033["counts"]["classifications"] == {
        "migratable": len(MIGRATABLE_033),
        "partly": len(PARTLY_033),
        "not compile keys": len(STAYS_033) - len(PARTLY_033),
        "unseen": 0,
    }
    for name, warmup in warmups.items():
        expected = "migratable" if name in MIGRATABLE_033 else "partly" if name in PARTLY_033 else "not compile keys"
        assert warmup["classification"] == expected, name
        assert {work["owner"] for work in warmup["stays"]} == STAYS_033.get(name, set()), name
        tuned = name == "rocm_segmented_attn_autotune_warmup"
        assert all(k["classification"] == ("not compile keys" if tuned else "migratable") for k in warmup["kernels"])
        assert all(
            (k["moves_by"] is None) == (tuned or k["verdict"] == "manual")
            for k in warmup["kernels"]
            if k["kind"] != "cute.compile"
        )
    # Every CuTe DSL kernel moves as a contract owner adopted where it is built.
    assert {k["moves_by"] for w in warmups.values() for k in w["kernels"] if k["kind"] == "cute.compile"} == {
        "CuTe DSL owner"
    }
    # The reading names no vLLM kernel in the HiSparse autotune; read off the tree, its decode forward
    # launches one under the HiSparse index group the autotune asserts (a nope-MLA layer's empty-query guard).
    tree = vllm_tree("0.33.0")
    backend = (tree / "vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py").read_text()
    assert "assert isinstance(self.index_group, HiSparseMLAIndexGroup)" in backend
    assert "topk_lens = prepare_sparse_mla_safe_lengths(topk_indices, seq_lens)" in backend
    hisparse = warmups["autotune_hisparse_flashinfer_attention"]
    assert [k["name"] for k in hisparse["kernels"]] == ["sparse_mla_prepare_safe_lengths_kernel"]


def test_the_kernels_reached_through_engine_objects_of_033(survey033):
    warmups = {w["function"]: w for w in survey033["warmups"]}
    tree = vllm_tree("0.33.0")
    # Read off the tree: the vision tower's position embedding launches its kernel through a function the method
    # picks, attention.apply_rotary_emb is an ApplyRotaryEmb CustomOp whose CUDA forward reaches the
    # flash-attention copy's Triton rotary kernel, and an MRotaryEmbedding's CUDA forward launches the M-RoPE one.
    qwen3_vl = (tree / "vllm/model_executor/models/qwen3_vl.py").read_text()
    assert "triton_pos_embed_interpolate if HAS_TRITON" in qwen3_vl and "_bilinear_pos_embed_kernel[(" in qwen3_vl
    assert "self.apply_rotary_emb = ApplyRotaryEmb(" in (tree / "vllm/model_executor/models/qwen2_5_vl.py").read_text()
    assert "rotary_kernel[grid](" in (tree / "vllm/vllm_flash_attn/ops/triton/rotary.py").read_text()
    qwen_vl = {k["name"]: k for k in warmups["qwen_vl_triton_warmup"]["kernels"]}
    assert set(qwen_vl) == {"_bilinear_pos_embed_kernel", "rotary_kernel", "_triton_mrope_forward"}
    # Its launcher sits in the module's `if HAS_TRITON:` block beside the kernel, and is its wrapper all the same.
    assert re.search(r"^if HAS_TRITON:\n(.*\n)*?    def triton_pos_embed_interpolate\(", qwen3_vl, re.M)
    assert qwen_vl["_bilinear_pos_embed_kernel"]["launched_by"] == [
        "vllm.model_executor.models.qwen3_vl:triton_pos_embed_interpolate"
    ]
    # Step5: impl.adapter is the Step5FlashInferSparse the impl's constructor builds; its scoring warmup reaches
    # the prefill indexer's metadata kernel and, through the logits function it stores, the SM90 scores kernel.
    step5 = (tree / "vllm/models/step5/nvidia/flashinfer_sparse.py").read_text()
    assert "self._logits = paged_mqa_logits_sm90" in step5 and "def warmup_prefill_scoring(" in step5
    assert {k["name"] for k in warmups["step5_dsa_warmup"]["kernels"]} == {
        "_prepare_prefill_indexer",
        "_paged_scores_sm90",
    }


def _finding(module: str, function: str, kernels: list[tuple[str, str]], kind="standalone", via=None, step=None):
    found = [KernelFinding(name, home, 1, "triton.jit", False, [], [], [], step=step) for home, name in kernels]
    return WarmupFinding(function, module, kind, via, None, 1, found, "manual", ["-"])


WARMUP = "vllm.model_executor.warmup"
CONV1D = ("vllm.model_executor.layers.mamba.ops.causal_conv1d", "_causal_conv1d_fwd_kernel")
BF16X3 = "vllm.model_executor.layers.fused_moe.router.bf16x3_router_gemm_cutedsl"


@pytest.mark.parametrize(
    "finding",
    [
        # A fork's Mamba warmup with a step of its own that warms the conv kernel: the lift removes Qwen's step only.
        _finding(f"{WARMUP}.mamba_triton_warmup", "mamba_triton_warmup", [CONV1D]),
        # Qwen's warmup, the conv kernel reached through another step than the one the lift translates.
        _finding(
            f"{WARMUP}.qwen_triton_warmup", "qwen_triton_warmup", [CONV1D], step=f"{WARMUP}.qwen_triton_warmup:_x"
        ),
        # A warmup of another module that a fork's bf16x3 orchestrator step also calls: the owner compiles its own.
        _finding(
            "vllm.router_softcap",
            "warmup_router_softcap",
            [("vllm.router_softcap", "_k")],
            via="_warmup_bf16x3_router_gemm",
        ),
        # An inline step of the same name in another orchestrator.
        _finding("eng.warmup.kernel_warmup", "_warmup_gemm_rs_ar", [("eng.gemm", "Gemm")], kind="inline step"),
    ],
    ids=["another warmup", "another step", "another module under the step", "another orchestrator"],
)
def test_a_built_in_counts_only_in_the_warmup_and_step_its_legacy_side_names(finding):
    match_specs([finding], migration_specs().values())
    assert finding.specs == [] and not finding.all_moved


def test_a_built_in_counts_in_its_own_step_and_an_owner_for_the_warmup_of_its_module():
    conv1d = _finding(
        f"{WARMUP}.qwen_triton_warmup",
        "qwen_triton_warmup",
        [CONV1D],
        step=f"{WARMUP}.qwen_triton_warmup:_warm_causal_conv1d_fwd_kernel",
    )
    owned = _finding(
        BF16X3,
        "warmup_bf16x3_router_gemm",
        [(BF16X3, "Sm100BF16x3RouterGemm"), (BF16X3, "_splitk_reduce_kernel")],
        via="_warmup_bf16x3_router_gemm",
    )
    match_specs([conv1d, owned], migration_specs().values())
    assert conv1d.specs == ["mamba-causal-conv1d"] and owned.specs == ["bf16x3-router-gemm"] and owned.all_moved
