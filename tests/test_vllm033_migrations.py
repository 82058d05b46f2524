"""zerojit's built-in migrations of vLLM 0.33.0 legacy warmups, applied for real to the release's tree.

Each must leave every changed file compiling and free of undefined names and redefinitions
(pyflakes F821/F811), every other file byte-identical, and be a no-op the second time. What the
migrated tree warms is checked by running it: the legacy orchestrator/step from 0.33.0 itself
against the migrated tree's own registrations (migrate/engine_trees/warmup.py).
"""

import dataclasses
import os
import re
import shutil

import pytest
import torch
from pyflakes import api as pyflakes_api
from pyflakes import messages
from pyflakes import reporter as pyflakes_reporter
from tree_forks import GATE_LINEAR, LL_BF16, ORCHESTRATOR, edit
from typer.testing import CliRunner

from zerojit.codemods.errors import MigrationError
from zerojit.codemods.runner import migrate, write
from zerojit.codemods.spec import SpecError
from zerojit.migrate.bf16x3_router_gemm.equivalence import Bf16x3RouterGemmEquivalence
from zerojit.migrate.bf16x3_router_gemm.equivalence import RouterConfig as Bf16x3Config
from zerojit.migrate.cli import app
from zerojit.migrate.engine_specs import BF16X3_ROUTER_GEMM, GEMM_RS_AR, LL_BF16_ROUTER_GEMM
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.engine_trees.warmup import TreeWarmup
from zerojit.migrate.families import key_equivalence, migration_specs
from zerojit.migrate.fla_layer_norm.equivalence import GdnConfig, GdnNormEquivalence
from zerojit.migrate.gemm_rs_ar.equivalence import GemmRsArConfig, GemmRsArEquivalence
from zerojit.migrate.ll_bf16_router_gemm.equivalence import RouterConfig, RouterEngine, RouterGemmEquivalence

pytestmark = pytest.mark.release_tree

runner = CliRunner()
FLA = {
    "vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py",
    "vllm/model_executor/warmup/qwen_triton_warmup.py",
}
ROUTER = {
    "vllm/model_executor/layers/fused_moe/router/gate_linear.py",
    "vllm/model_executor/warmup/kernel_warmup.py",
    "vllm/model_executor/kernels/linear/cute_dsl/ll_bf16.py",
}
GEMM_RS_AR_FILE = "vllm/model_executor/kernels/linear/cute_dsl/gemm_rs_ar.py"
GEMM = {GEMM_RS_AR_FILE, "vllm/model_executor/warmup/kernel_warmup.py"}
BF16X3 = {
    "vllm/model_executor/layers/fused_moe/router/bf16x3_router_gemm_cutedsl.py",
    "vllm/model_executor/layers/fused_moe/router/gate_linear.py",
    "vllm/model_executor/warmup/kernel_warmup.py",
}
MIGRATIONS = {"fla-layer-norm": FLA, "ll-bf16-router-gemm": ROUTER, "gemm-rs-ar": GEMM, "bf16x3-router-gemm": BF16X3}


@pytest.fixture(scope="module")
def release_033():
    return vllm_tree("0.33.0")


@pytest.fixture(scope="module")
def migrated_033(tmp_path_factory, release_033):
    """The release with both migrations written (hard-linked: writes replace)."""
    repo = tmp_path_factory.mktemp("vllm-0.33.0-migrated") / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    body = repo.parent / "pr.md"
    result = runner.invoke(
        app, ["migrate", *MIGRATIONS, "--repo", str(repo), "--write", "-j", "2", "--pr-body", str(body)]
    )
    assert result.exit_code == 0, result.output
    return repo


def changed_files(repo, original):
    assert sorted(p.relative_to(repo) for p in repo.rglob("*.py")) == sorted(
        p.relative_to(original) for p in original.rglob("*.py")
    )  # nothing deleted or created
    return {
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*.py")
        if p.read_bytes() != (original / p.relative_to(repo)).read_bytes()
    }


def pyflakes_findings(path):
    found = []

    class Collect(pyflakes_reporter.Reporter):
        def __init__(self):
            super().__init__(None, None)

        def flake(self, message):
            found.append(message)

        def syntaxError(self, *args):  # noqa: N802 - pyflakes' name
            found.append(args)

    pyflakes_api.checkPath(str(path), Collect())
    return found


def test_each_migration_changes_only_its_files_which_compile_and_are_f821_f811_clean(migrated_033, release_033):
    assert changed_files(migrated_033, release_033) == FLA | ROUTER | GEMM | BF16X3  # every other file byte-identical
    for rel in FLA | ROUTER | GEMM | BF16X3:
        path = migrated_033 / rel
        compile(path.read_text(encoding="utf-8"), rel, "exec", dont_inherit=True)
        bad = [
            m
            for m in pyflakes_findings(path)
            if isinstance(m, (messages.UndefinedName, messages.RedefinedWhileUnused, tuple))
        ]
        assert bad == [], bad
        # No local the change left unread either (ruff F841 in vLLM's own lint).
        before = {
            str(m.message_args) for m in pyflakes_findings(release_033 / rel) if isinstance(m, messages.UnusedVariable)
        }
        after = {str(m.message_args) for m in pyflakes_findings(path) if isinstance(m, messages.UnusedVariable)}
        assert after <= before


def test_the_release_dispatch_is_rewritten_into_the_traced_form(migrated_033, release_033):
    """0.33.0's LLBf16Gemm.dispatch (a tuple assignment, two returns, `{}`) is one the tree's VllmJitKernel cannot
    trace: the migration rewrites it, and the tree's own tracer over the rewrite keys as the release's own
    dispatch, run as Python, over the router grid (every tuned shape and others, M past both backends' bounds)."""
    before = TreeWarmup(release_033, LL_BF16_ROUTER_GEMM, RouterEngine())
    after = TreeWarmup(migrated_033, LL_BF16_ROUTER_GEMM, RouterEngine())
    shapes = ((4096, 256), (6144, 256), (7168, 256), (7168, 384), (5120, 1792), (5120, 3584), (1024, 128), (2047, 64))
    grid = [
        {"M": m, "K": k, "N": n, "output_dtype": dtype}
        for m in range(1, 33)
        for k, n in shapes
        for dtype in (torch.float32, torch.bfloat16)
    ]

    def keys(tree, traced):
        kernel = tree.sources.module(LL_BF16_ROUTER_GEMM.kernel.module).ll_bf16_gemm_kernel
        found = [kernel.compile_key(inputs) if traced else kernel.dispatch(**inputs) for inputs in grid]
        return [dataclasses.astuple(key) for key in found]

    for arch in ("sm90", "sm100", "sm120"):  # sm120 has no tuned table
        release = before.within(RouterConfig(arch=arch), lambda: keys(before, traced=False))
        assert after.within(RouterConfig(arch=arch), lambda: keys(after, traced=True)) == release, arch
        assert {key[0] for key in release} == {"dotprod", "splitk"}
    source = (migrated_033 / LL_BF16).read_text()
    dispatch = source[source.index("    def dispatch(") : source.index("    def get_warmup_keys(")]
    assert "return" in dispatch and dispatch.count("return") == 1 and "{}" not in dispatch


def test_a_model_that_changes_the_gates_weight_after_building_it_is_refused_for_the_router_gemm(tmp_path, release_033):
    """The ll_bf16 registration reads the gate's weight (`getattr(self, "weight", None)`: its dtype and shape) in
    the GateLinear constructor; a model that casts the built gate's weight to bf16 changes what it read: refused at
    that line. A weight loader set on the weight (as muse_spark's AMD model does on the release) changes neither."""
    model = "vllm/model_executor/models/glm4_moe.py"
    bias = "        self.gate.e_score_correction_bias = nn.Parameter(\n"
    cast = "        self.gate.weight = nn.Parameter(self.gate.weight.bfloat16(), requires_grad=False)\n"
    result = migrated_fork(tmp_path, release_033, "ll-bf16-router-gemm", model, bias, cast + bias)
    assert result.exit_code == 2, result.output
    assert f"{model}:148: this changes self.gate.weight after GateLinear is built" in " ".join(result.output.split())


def test_a_dispatch_that_cannot_be_rewritten_is_refused_with_both_reasons(tmp_path):
    """A loop in dispatch: neither the tree's tracer nor the rewrite takes it; nothing is written."""
    repo = tmp_path / "tree"
    shutil.copytree(vllm_tree("0.33.0"), repo, copy_function=os.link)
    edit(repo, LL_BF16, "        tuned_bs, tuned_splitk = _arch_tuned_configs()\n", LOOPING)
    before = {p: p.read_bytes() for p in repo.rglob("*.py")}
    result = runner.invoke(app, ["migrate", "ll-bf16-router-gemm", "--repo", str(repo), "--write"])
    assert result.exit_code == 2, result.output
    assert {p: p.read_bytes() for p in repo.rglob("*.py")} == before
    text = " ".join(result.output.split())
    lines = (repo / LL_BF16).read_text().splitlines()
    assert f"{LL_BF16}:{1 + lines.index('    def dispatch(')}:" in text
    assert "require one name: tuned_bs, tuned_splitk = _arch_tuned_configs()" not in text  # the loop comes first
    assert f"rewriting it: {LL_BF16}:{1 + lines.index('        for _ in range(1):')}: `for _ in range(1):`" in text


def test_a_fork_whose_forward_serves_more_tokens_than_the_registration_warms_is_refused_by_the_keys_check(tmp_path):
    """The fork's step warms M = 1..32 and its forward sends up to 32 tokens to ll_bf16, while the built-in registers
    up to LL_BF16_MAX_TOKENS (16). Where M is in the key (K < 2048, the dotprod kernel) the step's keys for M > 16
    are missing: `--verify-keys` (the smoke grid) refuses, naming them; nothing is written."""
    repo = tmp_path / "tree"
    shutil.copytree(vllm_tree("0.33.0"), repo, copy_function=os.link)
    edit(repo, ORCHESTRATOR, "_LL_BF16_WARMUP_M_RANGE = range(1, 17)", "_LL_BF16_WARMUP_M_RANGE = range(1, 33)")
    edit(repo, GATE_LINEAR, "and x.shape[0] <= self.LL_BF16_MAX_TOKENS\n", "and x.shape[0] <= 32\n")
    before = {p: p.read_bytes() for p in repo.rglob("*.py")}
    result = runner.invoke(app, ["migrate", "ll-bf16-router-gemm", "--repo", str(repo), "--write", "--verify-keys"])
    assert result.exit_code == 1, result.output
    assert {p: p.read_bytes() for p in repo.rglob("*.py")} == before
    assert "unexplained" in result.output
    migrated = tmp_path / "migrated"
    shutil.copytree(repo, migrated, copy_function=os.link)
    assert runner.invoke(app, ["migrate", "ll-bf16-router-gemm", "--repo", str(migrated), "--write"]).exit_code == 0
    report = key_equivalence("ll-bf16-router-gemm", "smoke", legacy_tree=repo, migrated_tree=migrated)
    missing = {k for d in report.diffs if not d.intended for k in d.only_legacy}
    dotprod = {k.split(",1024,")[0] for k in missing if ",1024," in k}  # the K < 2048 gate's keys, up to M
    assert {f"ll_bf16_gemm_kernel:dotprod,{m}" for m in range(17, 33)} <= dotprod


LOOPING = "        for _ in range(1):\n            tuned_bs, tuned_splitk = _arch_tuned_configs()\n"


@pytest.mark.parametrize("family", list(MIGRATIONS))
def test_each_migration_alone_then_again_is_a_no_op_and_check_passes(tmp_path, release_033, family):
    repo = tmp_path / "tree"
    original = release_033
    shutil.copytree(original, repo, copy_function=os.link)
    assert runner.invoke(app, ["migrate", family, "--repo", str(repo), "--check"]).exit_code == 1  # pending
    first = runner.invoke(app, ["migrate", family, "--repo", str(repo), "--write"])
    assert first.exit_code == 0, first.output
    assert changed_files(repo, original) == MIGRATIONS[family]
    snapshot = {rel: (repo / rel).read_bytes() for rel in MIGRATIONS[family]}
    again = runner.invoke(app, ["migrate", family, "--repo", str(repo), "--write"])
    assert again.exit_code == 0 and "0 changed" in again.output
    assert {rel: (repo / rel).read_bytes() for rel in MIGRATIONS[family]} == snapshot
    assert runner.invoke(app, ["migrate", family, "--repo", str(repo), "--check"]).exit_code == 0


def test_the_layer_norm_migration_warms_what_the_standalone_step_did(migrated_033):
    adapter = GdnNormEquivalence(legacy_tree=vllm_tree("0.33.0"), migrated_tree=migrated_033)
    jit_on = GdnConfig(model="qwen3.5-moe", tp_size=2)
    legacy, migrated = adapter.legacy_keys(jit_on), adapter.migrated_keys(jit_on)
    assert len(legacy) >= 3 and legacy == migrated
    assert adapter.migrated.standalone_keys(jit_on) == set()  # the step is gone: only the registrations warm it
    jit_off = dataclasses.replace(jit_on, enable_jit_warmup=False)
    assert adapter.legacy_keys(jit_off) == legacy and adapter.migrated_keys(jit_off) == set()


# -- the ll_bf16 router GEMM: vLLM's own orchestrator step against the migrated GateLinear registrations


ROUTER_CONFIGS = RouterGemmEquivalence.grids["full"]()


def test_the_router_gemm_migration_warms_what_the_orchestrator_step_did(migrated_033):
    legacy = TreeWarmup(vllm_tree("0.33.0"), LL_BF16_ROUTER_GEMM, RouterEngine())
    migrated = TreeWarmup(migrated_033, LL_BF16_ROUTER_GEMM, RouterEngine())
    assert migrated.within(
        RouterConfig(),
        lambda: issubclass(
            type(migrated.sources.module(LL_BF16_ROUTER_GEMM.kernel.module).ll_bf16_gemm_kernel),
            migrated.sources.module("vllm.model_executor.warmup.jit_warmup").VllmJitKernel,
        ),
    )  # it adopted the contract
    warmed = 0
    for config in ROUTER_CONFIGS:
        before, after = legacy.standalone_keys(config), migrated.warmed_keys(config)
        assert migrated.standalone_keys(config) == set()  # the orchestrator step is gone
        if config.enable_jit_warmup:
            assert after == before, config
            warmed += bool(after)
        else:  # vLLM ran the step whatever the JIT-warmup switch said; the registry runs only when it is on
            assert after == set()
    assert warmed == 4  # CuTe DSL available and a bf16 gate with K % 8 == 0: 2 archs x 2 gate sets
    sm90 = legacy.standalone_keys(RouterConfig(gates=((4096, 256, "bf16"),)))
    assert len(sm90) > 2 and {key[0] for key in sm90} == {"dotprod", "splitk"}  # M 1..16 reach both backends
    short_k = legacy.standalone_keys(RouterConfig(gates=((1024, 128, "bf16"),)))
    assert sorted(int(key[1]) for key in short_k) == list(range(1, 17))  # K < 2048: one dot-product key per M


def test_each_token_count_is_warmed_on_the_kernel_object_the_engine_routes_it_to(migrated_033, release_033):
    """The tree's own `ll_bf16_gemm`, run for M = 1..16 with each kernel object's call recorded, says which object
    serves each M (one token: `ll_bf16_gemm_c1_pdl_kernel`). The migrated tree warms exactly that pair (object,
    key) for each M; the release's step warmed M = 1 on the plain kernel and never the c1_pdl one."""
    config = RouterConfig(gates=((4096, 256, "bf16"),))
    migrated = TreeWarmup(migrated_033, LL_BF16_ROUTER_GEMM, RouterEngine())
    legacy = TreeWarmup(release_033, LL_BF16_ROUTER_GEMM, RouterEngine())

    def routed():
        module = migrated.sources.module(LL_BF16_ROUTER_GEMM.kernel.module)
        names = {id(value): name for name, value in vars(module).items()}
        cls, served = type(module.ll_bf16_gemm_kernel), []
        own = cls.__dict__.get("__call__")
        cls.__call__ = lambda kernel, *args, **kwargs: served.append(names[id(kernel)])
        try:
            expected = set()
            for m in range(1, 17):
                weight = torch.empty(256, 4096, dtype=torch.bfloat16, device="meta")
                module.ll_bf16_gemm(torch.empty(m, 4096, dtype=torch.bfloat16, device="meta"), weight)
                key = module.ll_bf16_gemm_kernel.dispatch(M=m, K=4096, N=256)
                expected.add((served[-1], RouterEngine().to_key(key)))
            return expected
        finally:
            if own is None:
                del cls.__call__
            else:
                cls.__call__ = own

    expected = migrated.within(config, routed)
    assert {name for name, _ in expected} == {"ll_bf16_gemm_c1_pdl_kernel", "ll_bf16_gemm_kernel"}
    assert migrated.warmed_keys(config, by_kernel=True) == expected
    missed = expected - legacy.standalone_keys(config, by_kernel=True)
    assert {name for name, _ in missed} == {"ll_bf16_gemm_c1_pdl_kernel"} and len(missed) == 1


def test_a_path_that_registers_only_another_kernel_object_of_the_module_registers(migrated_033, tmp_path):
    """A fork of the migrated router registers the one-token kernel object on one path and the plain one on the
    other (a setting of its own decides): each path registers a kernel of the module, so the construction is
    whole, and the warmed keys are the two objects' (the one-token key from the first path)."""
    repo = tmp_path / "tree"
    shutil.copytree(migrated_033, repo, copy_function=os.link)
    single = "                ll_bf16_gemm_c1_pdl_kernel.register_warmup(shapes=shapes, m_values=(1,))\n"
    edit(
        repo,
        GATE_LINEAR,
        single,
        '                if getattr(self, "ll_bf16_one_token_only", False):\n    '
        + single
        + "                    return\n",
    )
    config = RouterConfig(gates=((4096, 256, "bf16"),))
    warmed = TreeWarmup(repo, LL_BF16_ROUTER_GEMM, RouterEngine()).warmed_keys(config, by_kernel=True)
    expected = TreeWarmup(migrated_033, LL_BF16_ROUTER_GEMM, RouterEngine()).warmed_keys(config, by_kernel=True)
    assert warmed == expected


def test_the_adopted_class_passes_the_trees_own_contract_path(migrated_033):
    """vLLM's VllmJitKernel from the migrated tree over the adopted LLBf16Gemm: the base's initializer ran
    (the traced dispatch gives compile_key), its keys come from get_warmup_keys with the registration's
    arguments, and the registry's capture -> warmup() compiles them (recorded, compile-only)."""
    tree = TreeWarmup(migrated_033, LL_BF16_ROUTER_GEMM, RouterEngine())
    source = (migrated_033 / LL_BF16).read_text()
    assert 'class LLBf16Gemm(VllmJitKernel["LLBf16Gemm.CompileKey"]):' in source  # as its sibling LLFp32WGemm
    assert "    def dispatch(  # type: ignore[override]\n" in source

    def contract_path():
        kernel = tree.sources.module(LL_BF16_ROUTER_GEMM.kernel.module).ll_bf16_gemm_kernel
        shapes, m_values = ((4096, 256), (1024, 128)), range(1, 17)
        keys = kernel.get_warmup_keys(shapes=shapes, m_values=m_values)
        for k, n in shapes:
            for m in m_values:
                expected = kernel.dispatch(M=m, K=k, N=n)
                assert kernel.compile_key({"M": m, "K": k, "N": n}) == expected and expected in keys
        return keys

    keys = tree.within(RouterConfig(gates=((4096, 256, "bf16"), (1024, 128, "bf16"))), contract_path)
    warmed = tree.warmed_keys(RouterConfig(gates=((4096, 256, "bf16"), (1024, 128, "bf16"))))
    assert warmed == {RouterEngine().to_key(key) for key in keys} and len(warmed) > 16


def test_the_pr_body_of_the_migrations_states_each_change_of_behaviour(migrated_033, release_033):
    text = " ".join((migrated_033.parent / "pr.md").read_text().split())
    for family in MIGRATIONS:
        assert f"{family}: vllm/model_executor/warmup/kernel_warmup.py:" in text
    # Every legacy step but bf16x3's (called under the switch) ran whatever the JIT-warmup switch said.
    assert text.count("the legacy call ran whatever `enable_jit_warmup`") == 3
    assert "the legacy call ran only when `model_type in _QWEN_MODEL_TYPES`; the registration does not" in text
    gates = text.split("## Gates")[1].split("## Intended differences")[0]
    # The router GEMM's registration is gated by the orchestrator's own capability check, read from the fork.
    assert "`current_platform.has_device_capability(90)`" in gates
    orchestrator = (release_033 / "vllm/model_executor/warmup/kernel_warmup.py").read_text()
    assert "    if current_platform.has_device_capability(90):\n        _warmup_ll_bf16_router_gemm(" in orchestrator
    # The rewritten dispatch is put before the reviewer, with the line it starts at.
    review = text.split("## For a reviewer to check")[1]
    line = 1 + (release_033 / LL_BF16).read_text().splitlines().index("    def dispatch(")
    assert f"{LL_BF16}:{line}: LLBf16Gemm.dispatch is rewritten into the form VllmJitKernel.__init__ traces" in review
    # The one-token kernel the step never warmed is stated with the keys check's table, from the check itself.
    assert "one token: the step warmed M = 1 on ll_bf16_gemm_kernel, which never serves it" in text


def test_the_router_gemm_keys_check_explains_each_difference_by_the_kernel_object_it_is_warmed_on(migrated_033):
    """The full grid, legacy (0.33.0's step) against the migrated tree, each key named by its kernel object: no
    unexplained difference; the one-token move is named exactly where the step warmed M = 1 (JIT on, CuTe DSL
    there, a bf16 gate with K % 8 == 0), the rest of the differences are JIT warmup off."""
    report = key_equivalence("ll-bf16-router-gemm", "full", legacy_tree=vllm_tree("0.33.0"), migrated_tree=migrated_033)
    assert report.configs == len(ROUTER_CONFIGS) and report.ok, report.to_dict()["details"][:2]
    one_token = [d for d in report.diffs if d.intended.startswith("one token")]
    assert {(d.config.arch, d.config.gates) for d in one_token} == {
        (c.arch, c.gates)
        for c in ROUTER_CONFIGS
        if c.enable_jit_warmup and c.cutedsl and any(dtype == "bf16" and k % 8 == 0 for k, _, dtype in c.gates)
    }
    assert all(d.only_legacy == [k.replace("_c1_pdl_kernel:", "_kernel:") for k in d.only_migrated] for d in one_token)
    assert all(not d.config.enable_jit_warmup for d in report.diffs if d not in one_token)


# -- GEMM-RS/AR: an owner written for a cached CuTe DSL compile, registered where can_run records a dtype


def test_the_gemm_rs_ar_migration_warms_what_the_orchestrator_step_did_through_a_new_owner(migrated_033):
    """The full grid: every key the step compiled (the arguments that reach `Sm100GemmRsAr.compile`, recorded
    there) is the migrated tree's, through the owner's own compile, with JIT warmup on; with it off, nothing."""
    adapter = GemmRsArEquivalence(legacy_tree=vllm_tree("0.33.0"), migrated_tree=migrated_033)
    warmed = 0
    for config in GemmRsArEquivalence.grids["full"]():
        legacy, migrated = adapter.legacy_keys(config), adapter.migrated_keys(config)
        assert migrated == (legacy if config.enable_jit_warmup else set()), config
        warmed += bool(migrated)
    assert warmed == 16  # built, JIT on, a set the kernel serves: 2 world sizes x 2 ranks x 2 modes x 2 sets
    # What the step warmed, from its own code: each dtype can_run accepted, both CTA groups; nothing it refused.
    served = GemmRsArConfig(world_size=8, rank=7, projections=(("mxfp8-cutlass", 7168, 1024), ("bf16", 7168, 4096)))
    assert adapter.legacy_keys(served) == {f"7,8,{cta},False,{dtype}" for cta in (1, 2) for dtype in ("bf16", "mxfp8")}
    refused = GemmRsArEquivalence.grids["full"]()[2].projections
    assert adapter.legacy_keys(GemmRsArConfig(projections=refused)) == set()
    # The module function the step reached through sys.modules stays (public) and is said to be left in place.
    text = " ".join((migrated_033.parent / "pr.md").read_text().split())
    assert "warmup_gemm_rs_ar() is public and kept, but nothing in the repo calls it any more" in text
    source = (migrated_033 / GEMM_RS_AR_FILE).read_text()
    assert "        self.dtypes.add(dtype)\n\n        _GEMM_RS_AR_KERNEL.register_warmup(" in source
    assert source.index("class Sm100GemmRsAr") < source.index("class GemmRsArKernel(") < source.index("class GemmRsAr:")


def test_a_gemm_rs_ar_registration_before_can_runs_refusals_is_caught_by_the_keys_check(tmp_path, release_033):
    """With early_returns "register", the registration also goes before each `return False` of can_run: a
    projection the kernel never serves registers a dtype (an fp32 weight: bf16's keys), as the keys check sees."""
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    result = migrate(repo, [GEMM_RS_AR.replaced(early_returns="register")])
    write(result)
    assert "self._register_gemm_rs_ar_warmup(dtype)\n            return False" in (repo / GEMM_RS_AR_FILE).read_text()
    adapter = GemmRsArEquivalence(legacy_tree=release_033, migrated_tree=repo)
    fp32 = GemmRsArConfig(projections=(("fp32", 7168, 2048),))
    assert adapter.legacy_keys(fp32) == set() and adapter.migrated_keys(fp32) == {
        "0,4,1,False,bf16",
        "0,4,2,False,bf16",
    }


# -- BF16x3 router GEMM: an owner of the module's own warmup, registered by each GateLinear that allows the tier


def test_the_bf16x3_migration_warms_what_the_step_did_and_each_gate_shape_it_skipped(migrated_033):
    """The full grid: every compile the step reached (the CuTe DSL GEMM's, the Triton reduction's, recorded where
    they compile) is the migrated tree's; where a model's gates differ in shape, the migrated tree warms each
    gate's own, which is what the step warmed for a model of that gate alone."""
    adapter = Bf16x3RouterGemmEquivalence(legacy_tree=vllm_tree("0.33.0"), migrated_tree=migrated_033)
    warmed = 0
    for config in Bf16x3RouterGemmEquivalence.grids["full"]():
        legacy, migrated = adapter.legacy_keys(config), adapter.migrated_keys(config)
        alone = set().union(*(adapter.legacy_keys(dataclasses.replace(config, gates=(g,))) for g in config.gates))
        assert migrated == alone, config
        assert legacy <= migrated and (legacy == migrated) == (not legacy or len({g[:2] for g in config.gates}) == 1)
        warmed += bool(migrated)
    assert warmed == 12  # sm100, JIT on, three gate sets the tier serves, two SM counts, two batch budgets
    # Beside the fp32 kernel the tier starts at 33 tokens: the step's own floor, carried by the registration.
    fp32 = Bf16x3Config(gates=((6144, 128, True, True),), max_num_batched_tokens=48)
    assert (
        adapter.migrated_keys(fp32)
        == adapter.legacy_keys(fp32)
        != adapter.legacy_keys(dataclasses.replace(fp32, gates=((6144, 128, True, False),)))
    )
    report = key_equivalence("bf16x3-router-gemm", "smoke", legacy_tree=vllm_tree("0.33.0"), migrated_tree=migrated_033)
    assert report.ok and any("first such gate" in (d.intended or "") for d in report.diffs)
    text = " ".join((migrated_033.parent / "pr.md").read_text().split())
    assert "the legacy step warmed only the first layer its search found (`next(...)`)" in text


def test_a_filter_a_fork_adds_to_the_inline_gate_search_is_carried_into_the_registration(tmp_path, release_033):
    """The step's `next(...)` search keeps the gates its `if`s pass: a fork's extra filter is the layer's own
    condition, written in the constructor's names; never dropped."""
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    search = "            if isinstance(module, GateLinear) and module.allow_bf16x3_router_gemm\n"
    edit(repo, ORCHESTRATOR, search, search.rstrip("\n") + " and module.input_size % 64 == 0\n")
    # The built-in pins the step it was written for; unpinned, the search's filters are what is read.
    write(migrate(repo, [BF16X3_ROUTER_GEMM.replaced(owner_written_for=())]))
    gate = (repo / GATE_LINEAR).read_text()
    # joined into the registration's own innermost condition
    assert (
        ") is not None and self.input_size % 64 == 0:\n                BF16X3_ROUTER_GEMM_KERNEL.register_warmup("
        in gate
    )


def test_a_bf16x3_step_with_other_local_names_keywords_and_log_lines_migrates_as_the_release_does(
    tmp_path, release_033
):
    """The owner pins the step its registration translates, but not the names of its locals, how its call passes
    the arguments, nor its log lines: a fork that renames `gate` and `min_num_tokens`, passes the warmup's
    arguments by name in another order and logs once more is the code the owner was written for, and migrates to
    what the release migrates to."""
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    step = (repo / ORCHESTRATOR).read_text()
    start, end = step.index("def _warmup_bf16x3_router_gemm("), step.index("def _warmup_gemm_rs_ar(")
    renamed = re.sub(r"\bgate\b", "router", step[start:end]).replace("min_num_tokens", "floor")
    renamed = renamed.replace("import GateLinear\n", "import GateLinear as RouterLinear\n")
    renamed = renamed.replace("isinstance(module, GateLinear)", "isinstance(module, RouterLinear)")
    logged = renamed.replace(
        "    configs = ", '    logger.debug("BF16x3 router GEMM tokens from %d.", floor)\n    configs = '
    )
    by_name = logged.replace(
        "        router.input_size,\n        router.output_size,\n        floor,\n        max_num_tokens,\n",
        "        max_num_tokens=max_num_tokens,\n        min_num_tokens=floor,\n"
        "        K=router.input_size,\n        M=router.output_size,\n",
    )
    assert by_name != logged
    edit(repo, ORCHESTRATOR, step[start:end], by_name)
    forked, released = migrate(repo, [BF16X3_ROUTER_GEMM]), migrate(release_033, [BF16X3_ROUTER_GEMM])
    assert {c.path.relative_to(repo): c.after for c in forked.changes} == {
        c.path.relative_to(release_033): c.after for c in released.changes
    }


def test_a_gemm_rs_ar_compile_loop_that_passes_by_name_is_refused_as_the_cache_keys_it_apart(tmp_path, release_033):
    """`Sm100GemmRsAr.compile` is a `functools.cache`d compile: a loop that passes its arguments by name fills other
    cache entries than the owner's positional call (and a runtime call written the same way looks those up), so
    it is not the loop the owner was written for: refused at the loop."""
    positional = "                _gemm_rs_ar.rank,\n                _gemm_rs_ar.world_size,\n"
    by_name = "                rank=_gemm_rs_ar.rank,\n                num_ranks=_gemm_rs_ar.world_size,\n"
    loop = "                cta_group,\n                _gemm_rs_ar.all_reduce,\n"
    named_loop = "                cta_group=cta_group,\n                all_reduce=_gemm_rs_ar.all_reduce,\n"
    result = migrated_fork(
        tmp_path, release_033, "gemm-rs-ar", GEMM_RS_AR_FILE, positional + loop, by_name + named_loop
    )
    assert result.exit_code == 2, result.output
    assert "warmup_gemm_rs_ar is not the code the owner of _GEMM_RS_AR_KERNEL was written for" in " ".join(
        result.output.split()
    )


ADD = "        self.dtypes.add(dtype)\n        return True\n"
GEMM_FORKS = {  # a fork of gemm_rs_ar.py the written owner or the mirrored recording does not fit: refused there
    "the compile loop warms one CTA group": (
        "        for cta_group in (1, 2):\n",
        "        for cta_group in (2,):\n",
        "warmup_gemm_rs_ar is not the code the owner of _GEMM_RS_AR_KERNEL was written for",
    ),
    "the owner's object name is taken": (
        "logger = init_logger(__name__)\n",
        'logger = init_logger(__name__)\n\n_GEMM_RS_AR_KERNEL = "sm100_gemm_rs_ar"\n',
        "already binds _GEMM_RS_AR_KERNEL, which the owner of _GEMM_RS_AR_KERNEL defines",
    ),
    "the workspace starts with a dtype": (
        "        self.dtypes: set[str] = set()\n",
        '        self.dtypes: set[str] = {"bf16"}\n',
        "GemmRsAr.__init__ changes self.dtypes here, which the legacy warmup read",
    ),
    "another method records a dtype": (
        "    def warn_incompatible_projection(self) -> None:\n",
        "    def force_bind(self, dtype: str) -> None:\n        self.dtypes.add(dtype)\n\n"
        "    def warn_incompatible_projection(self) -> None:\n",
        "GemmRsAr.force_bind changes self.dtypes here",
    ),
    "the recording is written another way": (
        ADD,
        "        self.dtypes |= {dtype}\n        return True\n",
        "no statement of GemmRsAr.can_run starts with 'self.dtypes.add(dtype)'",
    ),
    "a later initialization upgrades the singleton's mode": (
        '            current = "AR" if _gemm_rs_ar.all_reduce else "RS"\n',
        "            _gemm_rs_ar.all_reduce = True  # AR reuses the RS workspace\n            return\n"
        '            current = "AR" if _gemm_rs_ar.all_reduce else "RS"\n',
        "this changes _gemm_rs_ar.all_reduce after GemmRsAr is built, and the registration in its can_run read",
    ),
    "a second path records": (
        "        w = linear.weight\n        if (\n",
        "        w = linear.weight\n        if w.is_meta and w.shape[0] == self.N:\n"
        "            self.dtypes.add(dtype)\n            return True\n        if (\n",
        "GemmRsAr.can_run records here too",
    ),
}


@pytest.mark.parametrize("fork", list(GEMM_FORKS))
def test_a_gemm_rs_ar_fork_the_owner_or_the_recording_does_not_fit_is_refused_at_its_line(tmp_path, release_033, fork):
    old, new, why = GEMM_FORKS[fork]
    result = migrated_fork(tmp_path, release_033, "gemm-rs-ar", GEMM_RS_AR_FILE, old, new)
    assert result.exit_code == 2 and f"{GEMM_RS_AR_FILE}:" in result.output and why in result.output, result.output


DEEPSEEK_ATTENTION = "vllm/models/deepseek_v41/attention.py"
GEMM_HOLDER_FORKS = {  # the workspace's mode changed through what holds it, after can_run recorded (and registered)
    "a layer switches the workspace it bound to all-reduce": (
        DEEPSEEK_ATTENTION,
        "            self.gemm_rs = gemm_rs\n",
        "            self.gemm_rs = gemm_rs\n            gemm_rs.all_reduce = True\n",
        f"{DEEPSEEK_ATTENTION}:761: this changes get_gemm_rs_ar().all_reduce after GemmRsAr is built",
    ),
    "a layer keeps the workspace and switches it in another method": (
        DEEPSEEK_ATTENTION,
        "        if self.gemm_rs is None:\n            return self.wo_b(z)\n",
        "        if self.gemm_rs is None:\n            return self.wo_b(z)\n        self.gemm_rs.all_reduce = True\n",
        f"{DEEPSEEK_ATTENTION}:774: this changes get_gemm_rs_ar().all_reduce after GemmRsAr is built",
    ),
    "a layer holds the workspace in one arm of a conditional, and annotates the store": (
        DEEPSEEK_ATTENTION,
        "        gemm_rs = get_gemm_rs_ar()\n",
        "        gemm_rs = get_gemm_rs_ar() if self.wo_b is not None else None\n        gemm_rs.all_reduce: bool = True\n",
        f"{DEEPSEEK_ATTENTION}:759: this changes get_gemm_rs_ar().all_reduce after GemmRsAr is built",
    ),
    "a layer sets the mode through the module": (
        DEEPSEEK_ATTENTION,
        "        gemm_rs = get_gemm_rs_ar()\n",
        "        gemm_rs = get_gemm_rs_ar()\n"
        "        import vllm.model_executor.kernels.linear.cute_dsl.gemm_rs_ar as workspace\n\n"
        "        workspace._gemm_rs_ar.all_reduce = True\n",
        f"{DEEPSEEK_ATTENTION}:761: this changes workspace._gemm_rs_ar.all_reduce after GemmRsAr is built",
    ),
    "the initializer sets the mode through the accessor": (
        GEMM_RS_AR_FILE,
        '    logger.info_once("%s is enabled.", mode)\n',
        '    get_gemm_rs_ar().all_reduce = all_reduce\n    logger.info_once("%s is enabled.", mode)\n',
        f"{GEMM_RS_AR_FILE}:1153: this changes get_gemm_rs_ar().all_reduce after GemmRsAr is built",
    ),
}


@pytest.mark.parametrize("fork", list(GEMM_HOLDER_FORKS))
def test_a_change_of_the_gemm_rs_ar_workspace_through_what_holds_it_is_refused_at_its_line(tmp_path, release_033, fork):
    """The workspace is a module-level object: a model reaches it through the module's accessor, a name holding
    what that returned, or the module itself. A store into what `can_run`'s registration read, anywhere, comes
    after some layer's registration read it."""
    rel, old, new, why = GEMM_HOLDER_FORKS[fork]
    result = migrated_fork(tmp_path, release_033, "gemm-rs-ar", rel, old, new)
    assert result.exit_code == 2 and why in result.output, result.output


def migrated_fork(tmp_path, release, family, rel, old, new):
    """`zerojit migrate FAMILY` on a copy of the release with one edit."""
    repo = tmp_path / "tree"
    shutil.copytree(release, repo, copy_function=os.link)
    edit(repo, rel, old, new)
    return runner.invoke(app, ["migrate", family, "--repo", str(repo)])


QWEN_WARMUP = "vllm/model_executor/warmup/qwen_triton_warmup.py"
KIMI_WARMUP = "vllm/model_executor/warmup/kimi_k3_triton_warmup.py"
PIN_FORKS = {  # a fork of the code a hand-written registration passes the facts of: refused there
    "the step passes twice the rows per token": (
        "fla-layer-norm",
        QWEN_WARMUP,
        "        rows_per_token=config.hv,\n",
        "        rows_per_token=config.hv * 2,\n",
        "_warm_gated_rms_norm_kernel is not the code the registration of _LAYER_NORM_FWD_KERNEL was written for",
    ),
    "the orchestrator passes the step another activation dtype": (
        "fla-layer-norm",
        QWEN_WARMUP,
        "    _warm_gated_rms_norm_kernel(device, gdn_config, max_num_tokens, model_config.dtype)\n",
        "    _warm_gated_rms_norm_kernel(device, gdn_config, max_num_tokens, torch.float32)\n",
        "qwen_triton_warmup(_warm_gated_rms_norm_kernel) is not the code the registration of _LAYER_NORM_FWD_KERNEL",
    ),
    "the search reads the value heads before the split across ranks": (
        "fla-fused-post-conv",
        QWEN_WARMUP,
        "        hv = int(layer.num_v_heads) // tp_size\n",
        "        hv = int(layer.num_v_heads)\n",
        "_qwen_gdn_warmup_config(_QwenGDNWarmupConfig) is not the code the registration of _fused_post_conv_kernel",
    ),
    "the attn_res step warms one block more": (
        "kimi-k3-attn-res",
        KIMI_WARMUP,
        "    max_blocks = (int(config.num_hidden_layers) + block_size - 1) // block_size\n",
        "    max_blocks = (int(config.num_hidden_layers) + block_size - 1) // block_size + 1\n",
        "_warm_attn_res(get_attn_res_triton_warmup_profiles) is not the code the registration of _attn_res_kernel",
    ),
    "the warmup passes the recurrent KDA step bf16 whatever the model's dtype": (
        "kimi-k3-recurrent-kda",
        KIMI_WARMUP,
        "    _warm_recurrent_kda(layer, worker.model_config.dtype)\n",
        "    _warm_recurrent_kda(layer, torch.bfloat16)\n",
        "kimi_k3_triton_warmup(_warm_recurrent_kda) is not the code the registration of fused_recurrent_kda_fwd_kernel",
    ),
    "the KDA layer search keeps only layers that decode speculative tokens": (
        "kimi-k3-attn-res",
        KIMI_WARMUP,
        "            if isinstance(layer, kda.KimiK3DeltaAttention)\n",
        "            if isinstance(layer, kda.KimiK3DeltaAttention) and layer.num_spec > 0\n",
        "_get_kda_layer is not the code the registration of _attn_res_kernel was written for",
    ),
    "the Mamba cache test skips caches without prefix caching": (
        "mamba-batch-memcpy",
        "vllm/model_executor/warmup/mamba_triton_warmup.py",
        "        if isinstance(spec, MambaSpec):\n",
        '        if isinstance(spec, MambaSpec) and spec.mamba_cache_mode != "none":\n',
        "_has_mamba_style_cache is not the code the registration of batch_memcpy_kernel was written for",
    ),
}


@pytest.mark.parametrize("fork", list(PIN_FORKS))
def test_a_fork_of_what_a_registration_was_written_from_is_refused_there(tmp_path, release_033, fork):
    """A registration written by hand passes what the release's step and search computed (the layer's facts, a
    block count, the model's dtype): a fork that computes them otherwise
    would get a registration that warms the release's keys with exit 0, not its own: refused at that code."""
    family, rel, old, new, why = PIN_FORKS[fork]
    result = migrated_fork(tmp_path, release_033, family, rel, old, new)
    assert result.exit_code == 2 and why in " ".join(result.output.split()), result.output
    assert f"{rel}:" in result.output


GDN_LAYER_FILE = "vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py"
OUTPUT_NORM = """        self.norm = RMSNormGated(
            self.head_v_dim,
            eps=self.layer_norm_epsilon,
            group_size=None,
            norm_before_gate=True,
            activation=output_gate_type,
            device=current_platform.current_device(),
        )
"""


def test_a_layer_that_builds_what_the_search_reads_in_a_helper_only_its_constructor_calls_registers_after_it(
    tmp_path, release_033
):
    """A fork moves the output norm into `_init_output_norm`, which only `__init__` calls: the search's
    `hasattr(module, "norm")` read what construction set, so the layer registers after that call. A method
    something else calls (`set_out_dtype`) still refuses (test_migration_gates)."""
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    edit(repo, GDN_LAYER_FILE, OUTPUT_NORM, "        self._init_output_norm(output_gate_type)\n")
    helper = "    def _init_output_norm(self, output_gate_type: str) -> None:\n" + OUTPUT_NORM
    edit(repo, GDN_LAYER_FILE, "    def forward(\n", helper + "\n    def forward(\n")
    result = migrate(repo, [migration_specs()["fla-layer-norm"]])
    (change,) = [c for c in result.changes if c.path == repo / GDN_LAYER_FILE]
    after = change.after
    assert after.index("self._init_output_norm(output_gate_type)") < after.index("_LAYER_NORM_FWD_KERNEL.register")


def test_a_helper_the_constructor_calls_that_something_else_calls_too_is_a_later_change(tmp_path, release_033):
    """The same helper, called again by a method of the layer: the norm the search read may be that call's, not
    the constructor's, and the run is refused there."""
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    edit(repo, GDN_LAYER_FILE, OUTPUT_NORM, "        self._init_output_norm(output_gate_type)\n")
    helper = "    def _init_output_norm(self, output_gate_type: str) -> None:\n" + OUTPUT_NORM
    again = "    def reset_norm(self) -> None:\n        self._init_output_norm('swish')\n"
    edit(repo, GDN_LAYER_FILE, "    def forward(\n", helper + "\n" + again + "\n    def forward(\n")
    with pytest.raises(SpecError, match=r"_init_output_norm\(\) sets self.norm again"):
        migrate(repo, [migration_specs()["fla-layer-norm"]])


def test_a_step_the_migration_deletes_called_as_an_attribute_of_its_module_is_refused_there(tmp_path, release_033):
    """`kw._warm_attn_res(worker)` through `import ... kimi_k3_triton_warmup as kw`: the step goes, so the call
    would raise AttributeError at run time, which neither compiling nor pyflakes sees."""
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    mine = "from vllm.model_executor.warmup import kimi_k3_triton_warmup as kw\n\n\ndef mine(worker):\n"
    (repo / "vllm/model_executor/warmup/mine.py").write_text(mine + "    kw._warm_attn_res(worker)\n")
    result = runner.invoke(app, ["migrate", "kimi-k3-attn-res", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    assert "mine.py:5: uses vllm.model_executor.warmup.kimi_k3_triton_warmup._warm_attn_res, which the migration" in (
        " ".join(result.output.split())
    )


def test_the_qwen_registrations_fit_the_search_of_each_release_they_were_written_for():
    """0.29.0's search reads no output norm and 0.30.0's no fused spec-decode switch, which 0.33.0's reads: each is
    pinned, and each migrates. 0.29.0's contract has no Triton dispatcher, so its lift is refused there, at the
    launch (test_survey's 0.29.0 given 0.30.0's contract migrates it)."""
    specs = migration_specs()
    for release in ("0.30.0", "0.33.0"):
        result = migrate(vllm_tree(release), [specs["fla-layer-norm"], specs["fla-fused-post-conv"]])
        assert len(result.changes) >= 2, release
    with pytest.raises(MigrationError) as refused:
        migrate(vllm_tree("0.29.0"), [specs["fla-fused-post-conv"]])
    assert re.search(
        r"fused_gdn_prefill_post_conv\.py:\d+: the engine's contract is older than what the lift writes \(vllm\.model_"
        r"executor\.warmup\.jit_warmup_triton_helper has no DispatchSpec or triton_kernel_dispatcher_with_warmup; "
        r"vllm\.model_executor\.warmup\.jit_warmup has no WarmupChoices\)",
        str(refused.value),
    )


def test_a_gemm_rs_ar_recording_inside_a_branch_registers_inside_it(tmp_path, release_033):
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    edit(
        repo,
        GEMM_RS_AR_FILE,
        ADD,
        "        if not w.is_meta:\n            self.dtypes.add(dtype)\n        return True\n",
    )
    write(migrate(repo, [GEMM_RS_AR]))
    text = (repo / GEMM_RS_AR_FILE).read_text()
    assert "            self.dtypes.add(dtype)\n\n            _GEMM_RS_AR_KERNEL.register_warmup(\n" in text


BF16X3_FORKS = {  # a fork the owner's registration was not written for, or that changes what it read: refused there
    "the step starts the tier at FP32_MAX_TOKENS": (
        ORCHESTRATOR,
        "    min_num_tokens = gate.FP32_MAX_TOKENS + 1 if gate.allow_fp32_router_gemm else 1\n",
        "    min_num_tokens = gate.FP32_MAX_TOKENS if gate.allow_fp32_router_gemm else 1\n",
        f"{ORCHESTRATOR}:107: _warmup_bf16x3_router_gemm is not the code the owner of BF16X3_ROUTER_GEMM_KERNEL was",
    ),
    "the orchestrator passes the step a larger batch budget": (
        ORCHESTRATOR,
        "            worker.scheduler_config.max_num_batched_tokens,\n        )\n",
        "            worker.scheduler_config.max_num_batched_tokens + worker.scheduler_config.max_num_seqs,\n        )\n",
        f"{ORCHESTRATOR}:211: kernel_warmup(_warmup_bf16x3_router_gemm) is not the code the owner of",
    ),
    "set_out_dtype turns the tier off after the gate is built": (
        GATE_LINEAR,
        "        self.out_dtype = out_dtype\n\n",
        "        self.out_dtype = out_dtype\n        self.allow_bf16x3_router_gemm &= out_dtype == torch.float32\n\n",
        "this changes self.gate.allow_bf16x3_router_gemm (through set_out_dtype) after GateLinear is built",
    ),
}


@pytest.mark.parametrize("fork", list(BF16X3_FORKS))
def test_a_bf16x3_fork_the_registration_was_not_written_for_is_refused_at_its_line(tmp_path, release_033, fork):
    rel, old, new, why = BF16X3_FORKS[fork]
    result = migrated_fork(tmp_path, release_033, "bf16x3-router-gemm", rel, old, new)
    assert result.exit_code == 2 and why in result.output, result.output


def test_a_gate_on_a_setting_is_read_through_the_sites_own_module_import(tmp_path, release_033):
    """`envs.X` where the site imports `vllm.envs as envs` (vLLM reads a setting at each access), never a new
    `from vllm.envs import X`, read once at import."""
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    call = "    if enable_jit_warmup and current_platform.is_device_capability_family(100):\n"
    edit(repo, ORCHESTRATOR, call, call.replace(":\n", ' and envs.VLLM_DEEP_GEMM_WARMUP != "skip":\n'))
    write(migrate(repo, [BF16X3_ROUTER_GEMM]))
    gate = (repo / GATE_LINEAR).read_text()
    assert '        if envs.VLLM_DEEP_GEMM_WARMUP != "skip":\n' in gate and "from vllm.envs import" not in gate


def test_a_gate_on_a_setting_at_a_site_without_the_module_imports_the_module_not_the_setting(tmp_path, release_033):
    """Where the site does not import vllm.envs, it gets `from vllm import envs` and reads `envs.X` as each layer is
    built: a `from vllm.envs import X` would freeze the setting at import, and vLLM sets this one at run time."""
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    call = "    mamba_triton_warmup(worker.model_runner)\n"
    edit(repo, ORCHESTRATOR, call, "    if not envs.VLLM_ENABLE_V1_MULTIPROCESSING:\n    " + call)
    result = migrate(repo, [migration_specs()["mamba-batch-memcpy"]])
    sites = [c.after for c in result.changes if c.after and "batch_memcpy_dispatch.register_warmup()" in c.after]
    assert len(sites) > 5
    for site in sites:
        assert "\nfrom vllm import envs\n" in site and "if not envs.VLLM_ENABLE_V1_MULTIPROCESSING:\n" in site
        assert "from vllm.envs import" not in site


def test_a_gate_on_a_module_the_site_does_not_import_imports_it_there(tmp_path, release_033):
    """A fork's `if os.environ.get(...) != "1":` around the call: each site gets `import os` and the same test, and
    the orchestrator loses the import only its call used."""
    repo = tmp_path / "tree"
    shutil.copytree(release_033, repo, copy_function=os.link)
    call = "    mamba_triton_warmup(worker.model_runner)\n"
    edit(repo, ORCHESTRATOR, call, '    if os.environ.get("FORK_SKIP_MAMBA_WARMUP") != "1":\n    ' + call)
    edit(repo, ORCHESTRATOR, "\nimport json\n", "\nimport json\nimport os\n")
    result = migrate(repo, [migration_specs()["mamba-batch-memcpy"]])
    sites = [c.after for c in result.changes if c.after and "batch_memcpy_dispatch.register_warmup()" in c.after]
    assert len(sites) > 5
    for site in sites:
        assert "\nimport os\n" in site and 'if os.environ.get("FORK_SKIP_MAMBA_WARMUP") != "1":\n' in site
    orchestrator = next(c.after for c in result.changes if c.path == repo / ORCHESTRATOR)
    assert "\nimport os\n" not in orchestrator
