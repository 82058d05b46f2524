"""The recurrent KDA kernel of Kimi-K3 (`fused_recurrent_kda_fwd_kernel`), lifted from a survey draft answered
the way a maintainer answers it: the migrated release tree is lint-clean, and its provider warms in Triton's
own keys exactly what the legacy step did."""

import ast
import itertools
import json
import types

import pytest
import torch
from tree_forks import changed_files, copy_033, draft_fields, repeated, ruff_findings
from typer.testing import CliRunner

from zerojit.codemods.runner import migrate, write
from zerojit.codemods.spec import load_specs
from zerojit.contract.backends import triton as triton_backend
from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.engine_trees.warmup import TreeWarmup
from zerojit.migrate.families import equivalence_adapter
from zerojit.migrate.triton_lifts.equivalence import KimiConfig, compile_only_triton
from zerojit.migrate.triton_lifts.meta_memory import MetaAllocations
from zerojit.migrate.triton_lifts.specs import RECURRENT_KDA

pytestmark = pytest.mark.release_tree

runner = CliRunner()


# A maintainer's answers to the Kimi-K3 recurrent KDA draft: the site of the built-in migration
# (kimi-k3-recurrent-kda), where each KDA layer registers once its KV cache is bound, checking that cache as the
# step did.
_SITE = ("construction_module", "construction_class", "construction_method", "registration", "intended_differences")
KDA_ANSWERS = {
    **{field: RECURRENT_KDA.fields()[field] for field in _SITE},
    "construction_class": list(RECURRENT_KDA.registration.classes),
    "intended_differences": [list(d) for d in RECURRENT_KDA.registration.intended_differences],
    "confirm": [],
}
KDA_KERNEL = "vllm/models/kimi_k3/nvidia/ops/third_party/kda/fused_recurrent.py"
KDA_FILES = {KDA_KERNEL, "vllm/models/kimi_k3/nvidia/kda.py", "vllm/model_executor/warmup/kimi_k3_triton_warmup.py"}


@pytest.fixture(scope="module")
def kda_lifted(tmp_path_factory):
    """The survey's recurrent KDA draft, answered, and the fresh 0.33.0 tree it migrated."""
    folder = tmp_path_factory.mktemp("kda")
    drafts = folder / "drafts"
    assert (
        runner.invoke(app, ["survey", "--repo", str(vllm_tree("0.33.0")), "--draft-specs", str(drafts)]).exit_code == 0
    )
    (draft,) = load_specs(drafts / "fused_recurrent_kda_fwd_kernel.toml")
    fields = draft_fields(draft)
    answered = folder / "answered.toml"
    answered.write_text(
        "[[migration]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in {**fields, **KDA_ANSWERS}.items())
    )
    repo = copy_033(folder / "tree")
    result = runner.invoke(app, ["migrate", draft.family, "--repo", str(repo), "--spec", str(answered), "--write"])
    assert result.exit_code == 0, result.output
    return draft, load_specs(answered)[0], repo


def test_the_recurrent_kda_draft_answered_migrates_a_fresh_tree_lint_clean(kda_lifted, tmp_path):
    """The split of a packed q|k|v into views by a generator, and a slice of the KV cache the registration
    passes, lift; the answered draft migrates 0.33.0 with only its three files changed, as the built-in
    migration does."""
    draft, _, repo = kda_lifted
    builtin = copy_033(tmp_path / "tree")
    write(migrate(builtin, [RECURRENT_KDA]))
    assert all((repo / rel).read_bytes() == (builtin / rel).read_bytes() for rel in KDA_FILES)
    assert draft.lift.launcher == "fused_recurrent_kda_fwd" and draft.legacy.step == "_warm_recurrent_kda"
    changed, deleted, _ = changed_files(repo, vllm_tree("0.33.0"))
    assert changed == KDA_FILES and not deleted
    for rel in changed:
        compile((repo / rel).read_text(encoding="utf-8"), rel, "exec", dont_inherit=True)
        assert [f for f in ruff_findings(repo / rel) if f not in ruff_findings(vllm_tree("0.33.0") / rel)] == [], rel
    assert "fused_recurrent_kda_fwd_kernel[" not in (repo / KDA_KERNEL).read_text()


def test_the_recurrent_kda_provider_reads_as_its_launcher_does(kda_lifted):
    """The launcher picks its tile by `head_sequences = H * N`, N being one less than the step's
    `torch.arange(0, num_tokens + 1, tokens_per_sequence)`: with `num_tokens = num_sequences * tokens_per_sequence`
    that is the sequence count. The provider says so, each value once, the views' strides named as passed."""
    _, _, repo = kda_lifted
    source = (repo / KDA_KERNEL).read_text()
    provider = next(
        ast.unparse(f) for f in ast.parse(source).body if isinstance(f, ast.FunctionDef) and f.name.endswith("_inputs")
    )
    assert repeated(provider) == {}
    readable = ("head_sequences = h * num_sequences", "shape=(num_sequences + 1,)", "strides=strides")
    for said in (*readable, "state[slice(None, 1)]"):
        assert said in provider, said
    assert "BV=4 if head_sequences <= 48 else 8 if head_sequences <= 96" in provider


def test_the_recurrent_kda_provider_warms_in_tritons_own_keys_what_the_legacy_step_did(kda_lifted):
    """The release's own step on a KDA layer (meta tensors, Triton's hook recording) against the lifted provider
    expanded by the tree's `_DecoratedTritonJitKernel`, over head counts, speculative lengths and dtypes."""
    _, spec, repo = kda_lifted
    engine = type(equivalence_adapter("kimi-k3-attn-res")).engine
    legacy = TreeWarmup(vllm_tree("0.33.0"), spec, engine, run_compiles=True)
    lifted = TreeWarmup(repo, spec, engine, run_compiles=True)
    compile_only_triton()
    for heads, spec_tokens, dtype in itertools.product((2, 8, 64), (0, 1, 3), (torch.bfloat16, torch.float16)):

        def facts():
            state = torch.empty(5, heads, 128, 128, device="cuda")  # the KDA state of 5 slots
            return dict(
                num_spec=spec_tokens,
                kv_cache=[torch.empty(5, 1, device="cuda"), state],
                local_num_heads=heads,
                head_dim=128,
                A_log=torch.empty(heads, device="cuda"),
                dt_bias=torch.empty(heads * 128, device="cuda"),
                gate_lower_bound=-5.0,
            )

        def step(tree):
            layer = types.SimpleNamespace(**facts())
            tree.sources.module(spec.legacy.module)._warm_recurrent_kda(layer, dtype)

        def provider(tree):
            dispatch = tree.sources.module(spec.kernel.module).fused_recurrent_kda_fwd_dispatch
            for key in dispatch.get_warmup_keys(**facts(), input_dtype=dtype):
                dispatch.compile(key)

        def keys(tree, run):
            def recorded():
                with triton_backend.jit_keys_recorded() as found, MetaAllocations():
                    run(tree)
                return {key for name, key in found if name == spec.kernel.name}

            return tree.within(KimiConfig(kda_layers=False), recorded)  # the layer is the step's own, above

        before, after = keys(legacy, step), keys(lifted, provider)
        # One variant per sequence count the step's profile tries (1, 48 // h + 1, 96 // h + 1), distinct ones; none
        # without speculative decoding (the step returns first; the provider's cases all fail its `_when`, where
        # vLLM's helper computes each case's locals before any `_when`: none of them may raise there).
        variants = len({1, 48 // heads + 1, 96 // heads + 1}) if spec_tokens else 0
        assert after == before and len(before) == variants, (heads, spec_tokens)


# Forks a held-out review made of 0.33.0 (a fork's ordinary change each), where an earlier lift wrote wrong code with
# exit 0: each is now refused, naming the line and why.
