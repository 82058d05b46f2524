"""Registrations carry the tree's own gates on every constructor path, and say what they change in words.

Each case is a fork of vLLM 0.33.0 with one ordinary change (tests/tree_forks.py), migrated
with the built-in specs. What the registration must be gated on is read off the fork's own
source by the test (the condition it wrote), never from zerojit's output.
"""

import ast
import json
import re
import textwrap
from pathlib import Path

import pytest
from tree_forks import GATE_LINEAR, GDN_LAYER, ORCHESTRATOR, add, copy_033, edit, make_dispatch_traceable, replace_file
from typer.testing import CliRunner

from zerojit.codemods.runner import MigrationError, migrate
from zerojit.codemods.spec import SpecError
from zerojit.migrate.cli import app
from zerojit.migrate.engine_specs import LL_BF16_ROUTER_GEMM
from zerojit.migrate.fla_layer_norm.spec import SPEC as FLA
from zerojit.migrate.triton_lifts.specs import (
    BATCH_MEMCPY,
    FUSED_POST_CONV,
    QWEN_GDN_SEARCH,
    RECURRENT_KDA,
    SIGMOID_GATING,
)

pytestmark = pytest.mark.release_tree

runner = CliRunner()
QWEN_CALL = "    qwen_triton_warmup(worker.model_runner, worker.vllm_config.model_config)\n"
NORM = "        self.norm = RMSNormGated(\n"


def registrations(text: str, kernel: str = "") -> list[tuple[list[str], ast.stmt]]:
    """Each `<kernel>.register_warmup` call statement with the tests of the `if`s around it, outermost first."""
    found = []

    def visit(body, tests):
        for statement in body:
            if isinstance(statement, ast.If):
                visit(statement.body, tests + [ast.unparse(statement.test)])
                visit(statement.orelse, tests + [f"not ({ast.unparse(statement.test)})"])
            elif isinstance(statement, (ast.FunctionDef, ast.ClassDef, ast.With, ast.For, ast.Try)):
                visit(statement.body, tests)
            elif f"{kernel}.register_warmup" in ast.unparse(statement):
                found.append((tests, statement))

    visit(ast.parse(text).body, [])
    return found


def written(repo, *families, args=()):
    result = runner.invoke(app, ["migrate", *families, "--repo", str(repo), "--write", *args])
    assert result.exit_code == 0, result.output
    return result


def refused(repo, *families, spec=None):
    before = {p: p.read_bytes() for p in repo.rglob("*.py")}
    result = migrate_cli(repo, families, spec)
    assert result.exit_code == 2, result.output
    assert {p: p.read_bytes() for p in repo.rglob("*.py")} == before  # nothing written
    return " ".join(result.output.split())


def migrate_cli(repo, families, spec):
    extra = ["--spec", str(spec)] if spec else []
    return runner.invoke(app, ["migrate", *families, "--repo", str(repo), "--write", *extra])


def test_a_forks_own_orchestrator_gate_goes_with_the_registration(tmp_path):
    repo = copy_033(tmp_path / "tree")
    condition = "current_platform.is_device_capability_family(100)"
    edit(repo, ORCHESTRATOR, QWEN_CALL, f"    if {condition}:\n    " + QWEN_CALL)
    written(repo, "fla-layer-norm")
    [(tests, _)] = registrations((repo / GDN_LAYER).read_text())
    assert tests == [condition]  # the same condition, in the layer's own names (it imports current_platform)


def test_a_legacy_call_run_only_with_the_registry_switch_off_registers_without_that_guard_and_says_so(tmp_path):
    """Under `not enable_jit_warmup` a registration would never be compiled (the registry runs only with it on): the
    guard is dropped and the difference stated, not copied onto the registration."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, ORCHESTRATOR, QWEN_CALL, "    if not enable_jit_warmup:\n    " + QWEN_CALL)
    result = written(repo, "fla-layer-norm")
    [(tests, _)] = registrations((repo / GDN_LAYER).read_text())
    assert not any("enable_jit_warmup" in test for test in tests)
    said = " ".join(result.output.split())
    assert "the legacy call ran only when `not enable_jit_warmup`" in said
    assert "ran whatever `enable_jit_warmup`" not in said


def test_the_router_gemm_follows_a_forks_capability_gate_and_reads_the_config_without_asserting(tmp_path):
    repo = copy_033(tmp_path / "tree")
    make_dispatch_traceable(repo)
    edit(
        repo,
        ORCHESTRATOR,
        "    if current_platform.has_device_capability(90):\n        _warmup_ll_bf16_router_gemm(",
        "    if current_platform.has_device_capability(100) and "
        "worker.vllm_config.parallel_config.tensor_parallel_size > 1:\n        _warmup_ll_bf16_router_gemm(",
    )
    written(repo, "ll-bf16-router-gemm")
    layer = (repo / GATE_LINEAR).read_text()
    [(tests, _)] = registrations(layer, LL_BF16_ROUTER_GEMM.kernel_name)
    outer = " ".join(tests[0].split())
    assert "current_platform.has_device_capability(100)" in outer and "(90)" not in outer
    # GateLinear has no vllm_config: the non-raising accessor, checked before use (a unit test builds the layer
    # with no config set; get_current_vllm_config() would assert there).
    assert "(vllm_config := get_current_vllm_config_or_none()) is not None" in outer
    assert "vllm_config.parallel_config.tensor_parallel_size > 1" in outer
    assert "get_current_vllm_config()" not in layer
    assert tests[1:] and "is_ll_bf16_gemm_available()" in tests[-1]  # the step's own early return, kept


def test_a_written_gate_the_tree_does_not_have_is_refused_with_both_gates_unless_listed(tmp_path):
    repo = copy_033(tmp_path / "tree")
    spec = tmp_path / "spec.toml"
    table = {key: value for key, value in FLA.fields().items() if value and key != "intended_differences"}
    table.update(family="fla-rocm", gate="current_platform.is_rocm()")
    spec.write_text(
        "\n".join(["[[migration]]"] + [f"{key} = {json.dumps(value)}" for key, value in table.items()]) + "\n"
    )
    why = refused(repo, "fla-rocm", spec=spec)
    assert (
        f"{GDN_LAYER}:" in why
        and "the registration requires `current_platform.is_rocm()`, which the legacy call did not" in why
    )
    assert "Legacy gate: `model_type in _QWEN_MODEL_TYPES`; migrated gate: `current_platform.is_rocm()`" in why
    # The release's own search filters (which layer, a bound cache), listed as the built-in spec lists them.
    differences = [["model_type not in _QWEN_MODEL_TYPES", "any model"], *map(list, QWEN_GDN_SEARCH)]
    differences.append(["current_platform.is_rocm()", "this fork warms it on ROCm only"])
    listed = spec.read_text() + f"intended_differences = {json.dumps(differences)}\n"
    spec.write_text(listed)
    result = written(repo, "fla-rocm", args=["--spec", str(spec), "--report", str(tmp_path / "r.json")])
    said = " ".join(result.output.split())
    assert "the registration is warmed only when it holds: this fork warms it on ROCm only" in said
    report = json.loads((tmp_path / "r.json").read_text())
    assert any("this fork warms it on ROCm only" in words for words in report["intended_differences"])


def test_an_early_return_before_the_registration_point_is_refused_naming_its_line(tmp_path):
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        GDN_LAYER,
        "        self.num_k_heads = config.linear_num_key_heads\n",
        "        if prefix.endswith('.draft'):\n            return\n"
        "        self.num_k_heads = config.linear_num_key_heads\n",
    )
    line = 1 + (repo / GDN_LAYER).read_text().splitlines().index("            return")
    why = refused(repo, "fla-layer-norm")
    assert f"{GDN_LAYER}:{line}:" in why and "returns here, before the registration" in why and "self.norm" in why


def test_an_early_return_where_the_registration_can_run_gets_it_once_or_before_each_exit(tmp_path):
    """Where nothing between the return and the insertion point can change what the registration reads, it goes
    once, before the return's `if`; past a call that may set attributes (a method of self), it runs before the
    return and at the insertion point, so every path registers with what it reads set: written once, in a method
    of the class that both places call with the constructor's locals it reads."""
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        GDN_LAYER,
        "        self.out_proj = RowParallelLinear(\n",
        "        if prefix.endswith('.draft'):\n            return\n\n        self.out_proj = RowParallelLinear(\n",
    )
    for insert_after, once in (("self.out_proj = RowParallelLinear(", True), ("", False)):
        result = migrate(repo, [FLA.replaced(insert_after=insert_after)])
        layer = next(c.after for c in result.changes if c.path.name == "qwen_gdn_linear_attn.py")
        init = init_of(layer)
        order = [ast.unparse(s) for s in init.body]
        early = next(i for i, s in enumerate(init.body) if isinstance(s, ast.If) and "draft" in ast.unparse(s.test))
        registered = [i for i, s in enumerate(order) if "register_warmup" in s]
        if once:
            assert registered == [early - 1]
        else:  # in the return's `if`, right before the return, and at the end: a call of the method
            call = "self._register_layer_norm_fwd_warmup(vllm_config)"
            assert registered == [] and order[-1] == call
            assert [ast.unparse(s) for s in init.body[early].body] == [call, "return"]
            layer_class = next(
                n
                for n in ast.parse(layer).body
                if isinstance(n, ast.ClassDef) and n.name == "QwenGatedDeltaNetAttention"
            )
            methods = [m for m in layer_class.body if isinstance(m, ast.FunctionDef)]
            helper = methods[[m.name for m in methods].index("__init__") + 1]  # right after the constructor
            assert helper.name == "_register_layer_norm_fwd_warmup" and ast.unparse(helper.args) == "self, vllm_config"
            assert len(registrations(ast.unparse(helper))) == 1


SUBCLASS = """from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import QwenGatedDeltaNetAttention
from vllm.model_executor.layers.layernorm import RMSNormGated


class ForkGatedDeltaNet(QwenGatedDeltaNetAttention):
    def __init__(self, config, vllm_config, prefix=""):
        torch.nn.Module.__init__(self)
        self.tp_size = 1
        self.num_v_heads = config.linear_num_value_heads
        self.head_v_dim = config.linear_value_head_dim
        self.norm = RMSNormGated(self.head_v_dim, eps=1e-6, group_size=None, norm_before_gate=True)


class KeepsTheParent(QwenGatedDeltaNetAttention):
    def __init__(self, config, vllm_config, prefix=""):
        super().__init__(config, vllm_config, prefix)


class SkipsTheParent(QwenGatedDeltaNetAttention):  # super(Parent, self) starts after Parent: its __init__ never runs
    def __init__(self, config, vllm_config, prefix=""):
        super(QwenGatedDeltaNetAttention, self).__init__()
        self.tp_size = 1
        self.num_v_heads = config.linear_num_value_heads
        self.head_v_dim = config.linear_value_head_dim
        self.norm = RMSNormGated(self.head_v_dim, eps=1e-6, group_size=None, norm_before_gate=True)


class NamesItself(QwenGatedDeltaNetAttention):
    def __init__(self, config, vllm_config, prefix=""):
        super(NamesItself, self).__init__(config, vllm_config, prefix)
"""


def test_a_subclass_that_replaces_the_constructor_registers_too(tmp_path):
    repo = copy_033(tmp_path / "tree")
    fork = repo / "vllm/model_executor/layers/mamba/gdn/fork_gdn.py"
    replace_file(fork, "import torch\n" + SUBCLASS)
    written(repo, "fla-layer-norm")
    classes = {n.name: n for n in ast.parse(fork.read_text()).body if isinstance(n, ast.ClassDef)}
    for replacing in ("ForkGatedDeltaNet", "SkipsTheParent"):
        assert len(registrations(ast.unparse(classes[replacing]))) == 1, replacing
    for keeping in ("KeepsTheParent", "NamesItself"):  # they run the parent's, which registers
        assert registrations(ast.unparse(classes[keeping])) == [], keeping
    # Without the config in the constructor's signature: test_a_replacing_subclass_without_the_config_...


def test_the_pr_body_and_summary_state_the_intended_differences_and_what_is_left(tmp_path):
    repo = copy_033(tmp_path / "tree")
    body = tmp_path / "pr.md"
    result = runner.invoke(app, ["migrate", "fla-layer-norm", "--repo", str(repo), "--pr-body", str(body)])
    assert result.exit_code == 0, result.output
    text = body.read_text()
    orchestrator = (repo / ORCHESTRATOR).read_text().splitlines()
    jit_line = 1 + next(i for i, line in enumerate(orchestrator) if line.strip() == "if enable_jit_warmup:")
    # Both changes of behaviour, in words, where the tree makes them.
    assert f"kernel_warmup.py:{jit_line}: the legacy call ran whatever `enable_jit_warmup`" in text
    assert "the legacy call ran only when `model_type in _QWEN_MODEL_TYPES`; the registration does not" in text
    guard = (repo / "vllm/third_party/flash_linear_attention/ops/layernorm_guard.py").read_text().splitlines()
    helper_line = 1 + next(i for i, line in enumerate(guard) if line.startswith("def warmup_layer_norm_fwd("))
    assert f"layernorm_guard.py:{helper_line}: warmup_layer_norm_fwd() is public and kept" in text
    assert "_QwenGDNWarmupConfig.norm_before_gate is still filled but nothing reads it" in text
    # A field a step the migration keeps still reads (`config.<field>` outside the removed step) is no leftover.
    steps = ast.parse((repo / QWEN_STEPS).read_text())
    kept = [f for f in steps.body if isinstance(f, ast.FunctionDef) and f.name != FLA.legacy.step]
    read = {
        n.attr for f in kept for n in ast.walk(f) if isinstance(n, ast.Attribute) and ast.unparse(n.value) == "config"
    }
    assert read and not [field for field in read if f"_QwenGDNWarmupConfig.{field} is still filled" in text]
    row = next(line for line in text.splitlines() if line.startswith("| `fla-layer-norm` |"))
    assert "vllm 0.33.0" in row and row.split("|")[4].strip() == "0"  # mismatches, from the key check
    for said in ("model_type in _QWEN_MODEL_TYPES", "warmup_layer_norm_fwd() is public and kept"):
        assert said in " ".join(result.output.split())  # the CLI summary says it too
    again = runner.invoke(app, ["migrate", "fla-layer-norm", "--repo", str(repo), "--pr-body", str(body)])
    assert again.exit_code == 2 and f"--pr-body {body} exists; zerojit never writes over a file" in again.output


def test_a_second_caller_the_removal_leaves_with_nothing_to_do_is_named_for_a_human(tmp_path):
    """A fork calls the legacy step from a public function of its own too: the call goes with the step, which
    leaves that function a docstring that its callers still call. The run says where it is."""
    repo = copy_033(tmp_path / "tree")
    kimi = "vllm/model_executor/warmup/kimi_k3_triton_warmup.py"
    fork = (repo / kimi).read_text() + (
        '\n\ndef warm_kda_for_tests(layer, dtype) -> None:\n    """Warm the step alone."""\n'
        "    _warm_recurrent_kda(layer, dtype)\n"
    )
    add(repo, kimi, fork)
    result = migrate(repo, [RECURRENT_KDA])
    after = next(c.after for c in result.changes if c.path == repo / kimi)  # the line as the migrated file has it
    line = 1 + after.splitlines().index("def warm_kda_for_tests(layer, dtype) -> None:")
    assert [f for f in result.leftovers if "does nothing" in f] == [
        f"{kimi}:{line}: warm_kda_for_tests() does nothing any more (the removed legacy call was all it did); "
        "remove it and its calls, or give it work"
    ]


def test_an_unreadable_legacy_call_is_refused_not_guessed(tmp_path):
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        ORCHESTRATOR,
        QWEN_CALL,
        "    for step in (qwen_triton_warmup,):\n        step(worker.model_runner, worker.vllm_config.model_config)\n",
    )
    why = refused(repo, "fla-layer-norm")
    assert f"{ORCHESTRATOR}:" in why and "qwen_triton_warmup" in why


@pytest.mark.parametrize("spec", [LL_BF16_ROUTER_GEMM, FLA])
def test_built_in_specs_write_no_gate_of_their_own(spec):
    assert spec.registration.gate == ""  # the tree's guards, read at each run, are the gate
    with pytest.raises(SpecError, match="needs a reason"):
        spec.replaced(intended_differences=(("x", " "),))


def test_a_guard_that_reads_the_legacy_code_being_removed_is_refused_not_imported(tmp_path):
    """A fork's step guarded by a helper of the warmup module: importing it from code that goes would break."""
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        "vllm/model_executor/warmup/qwen_triton_warmup.py",
        "    max_num_tokens = max(1, int(runner.max_num_tokens))\n",
        "    max_num_tokens = max(1, int(runner.max_num_tokens))\n    if not _norm_warmup_wanted(model_config):\n"
        "        return\n",
    )
    edit(
        repo,
        "vllm/model_executor/warmup/qwen_triton_warmup.py",
        "\n\ndef _warm_gated_rms_norm_kernel(",
        "\n\ndef _norm_warmup_wanted(model_config) -> bool:\n    return model_config.dtype is not None\n\n\n"
        "def _warm_gated_rms_norm_kernel(",
    )
    why = refused(repo, "fla-layer-norm")
    assert "reads _norm_warmup_wanted from vllm.model_executor.warmup.qwen_triton_warmup" in why


def test_the_registry_run_through_an_orchestrator_helper_is_followed(tmp_path):
    repo = copy_033(tmp_path / "tree")
    text = (repo / ORCHESTRATOR).read_text()
    start = text.index("    enable_jit_warmup = worker.vllm_config.kernel_config.enable_jit_warmup\n")
    end = text.index(QWEN_CALL)
    block = text[start:end]
    helper = "\n\ndef _run_registry(worker, enable_jit_warmup):\n" + block.split("\n", 1)[1]
    helper = helper.replace("    if enable_jit_warmup:", "    if enable_jit_warmup and current_platform.is_cuda():")
    rewritten = (
        text[:start] + block.split("\n", 1)[0] + "\n    _run_registry(worker, enable_jit_warmup)\n\n" + text[end:]
    )
    rewritten = rewritten.replace("\n\ndef kernel_warmup(", helper.rstrip() + "\n\n\ndef kernel_warmup(", 1)
    replace_file(repo / ORCHESTRATOR, rewritten)
    written(repo, "fla-layer-norm", args=["--report", str(tmp_path / "r.json")])
    [plan] = json.loads((tmp_path / "r.json").read_text())["gates"]
    assert [atom["written"] for atom in plan["registry_gate"]] == ["enable_jit_warmup", "current_platform.is_cuda()"]


def test_a_guard_that_reads_the_model_itself_is_refused(tmp_path):
    """Only "the step found such layers" is the registering layer's own fact; a flag read off the model is not."""
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        ORCHESTRATOR,
        QWEN_CALL,
        "    if not getattr(worker.get_model(), 'skip_qwen_warmup', False):\n    " + QWEN_CALL,
    )
    why = refused(repo, "fla-layer-norm")
    assert (
        "the legacy call runs only when `not getattr(worker.get_model(), 'skip_qwen_warmup', False)`, which "
        "cannot be written at" in why
    )
    assert "it reads `worker.get_model`, which only the worker has" in why and "@" not in why


def test_a_walrus_guard_and_a_caught_legacy_call(tmp_path):
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        ORCHESTRATOR,
        QWEN_CALL,
        "    if not (eager := worker.vllm_config.model_config.enforce_eager):\n"
        "        try:\n            qwen_triton_warmup(worker.model_runner, worker.vllm_config.model_config)\n"
        "        except Exception:\n            logger.warning('Qwen warmup failed')\n",
    )
    result = written(repo, "fla-layer-norm")
    [(tests, _)] = registrations((repo / GDN_LAYER).read_text())
    assert tests == ["not vllm_config.model_config.enforce_eager"]  # what the walrus bound, in the layer's names
    said = " ".join(result.output.split())
    assert "the legacy call's failures were caught (try: ... except Exception); the registration's are not" in said


MULTI_LINE_HEADER = "class ForkGatedDeltaNet(\n    torch.nn.Module,  # note: the fork's own base first\n    QwenGatedDeltaNetAttention,\n):"


def test_a_replacing_subclass_that_never_sets_what_the_registration_reads_is_refused(tmp_path):
    repo = copy_033(tmp_path / "tree")
    fork = SUBCLASS.replace("        self.tp_size = 1\n", "")
    replace_file(repo / "vllm/model_executor/layers/mamba/gdn/fork_gdn.py", "import torch\n" + fork)
    why = refused(repo, "fla-layer-norm")
    assert (
        "ForkGatedDeltaNet replaces QwenGatedDeltaNetAttention.__init__ without running it and never sets "
        "self.tp_size" in why
    )
    # Written over several lines, with a colon in a comment before the parent (and the only class of its module
    # that names the parent): found all the same.
    fork = fork.replace("class ForkGatedDeltaNet(QwenGatedDeltaNetAttention):", MULTI_LINE_HEADER).replace(
        "class KeepsTheParent(QwenGatedDeltaNetAttention):", "class KeepsTheParent(ForkGatedDeltaNet):"
    )
    replace_file(repo / "vllm/model_executor/layers/mamba/gdn/fork_gdn.py", "import torch\n" + fork)
    assert "ForkGatedDeltaNet replaces QwenGatedDeltaNetAttention.__init__" in refused(repo, "fla-layer-norm")
    # The parent imported under another name, as a fork may write it.
    fork = SUBCLASS.replace("        self.tp_size = 1\n", "").replace(
        "import QwenGatedDeltaNetAttention\n", "import QwenGatedDeltaNetAttention as QwenGDN\n", 1
    )
    fork = fork.replace("(QwenGatedDeltaNetAttention):", "(QwenGDN):")  # each class of the fork
    replace_file(repo / "vllm/model_executor/layers/mamba/gdn/fork_gdn.py", "import torch\n" + fork)
    assert "ForkGatedDeltaNet replaces QwenGatedDeltaNetAttention.__init__" in refused(repo, "fla-layer-norm")
    why = refused(repo, "fla-layer-norm")
    assert (
        "ForkGatedDeltaNet replaces QwenGatedDeltaNetAttention.__init__ without running it and never sets "
        "self.tp_size" in why
    )


def test_a_subclass_that_replaces_what_the_parents_registration_read_after_running_it_is_refused(tmp_path):
    """The parent's constructor registers with `self.dt_bias`; a subclass that runs it and then replaces dt_bias
    (an fp32 parameter) would have the kernel warmed for the parent's dtype: refused at the replacing line."""
    repo = copy_033(tmp_path / "tree")
    fork = repo / "vllm/model_executor/layers/mamba/gdn/fork_gdn.py"
    late = """import torch
from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import QwenGatedDeltaNetAttention


class Fp32DtBias(QwenGatedDeltaNetAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra = 1
        self.dt_bias = torch.nn.Parameter(torch.ones(self.num_v_heads // self.tp_size, dtype=torch.float32))
"""
    replace_file(fork, late)
    line = 1 + next(i for i, text in enumerate(late.splitlines()) if text.startswith("        self.dt_bias ="))
    why = refused(repo, "fla-fused-post-conv")
    assert (
        f"fork_gdn.py:{line}: Fp32DtBias.__init__ changes self.dt_bias after running QwenGatedDeltaNetAttention" in why
    )
    # Set before the parent's constructor runs (which sets it again), or an attribute the registration does not read:
    # the parent's registration reads what the layer holds.
    replace_file(fork, late.replace("        self.dt_bias = torch.nn", "        self.other = torch.nn"))
    written(repo, "fla-fused-post-conv")


def test_on_a_fork_the_key_runner_cannot_model_the_pr_body_says_so_and_verify_keys_refuses(tmp_path):
    """The fork reads a field of the HF config that neither the check's stand-in nor vLLM's config classes give a
    value (HF's own config is no vLLM config class with defaults)."""
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        ORCHESTRATOR,
        QWEN_CALL,
        "    if worker.vllm_config.model_config.hf_config.tie_word_embeddings:\n        return\n" + QWEN_CALL,
    )
    body = tmp_path / "pr.md"
    result = runner.invoke(app, ["migrate", "fla-layer-norm", "--repo", str(repo), "--pr-body", str(body)])
    assert result.exit_code == 0, result.output
    row = next(line for line in body.read_text().splitlines() if line.startswith("| `fla-layer-norm` |"))
    assert "could not be run on this tree" in row
    strict = runner.invoke(app, ["migrate", "fla-layer-norm", "--repo", str(repo), "--verify-keys", "--write"])
    assert strict.exit_code == 2 and "--verify-keys: the key check could not be run on this tree" in strict.output
    assert "internal error" not in strict.output


def test_a_fork_gate_on_an_engine_config_field_the_grid_does_not_set_is_checked_at_the_trees_default(tmp_path):
    """The fork skips the Qwen warmup under `enforce_eager`, a field no config of the key check's grid sets:
    both sides read the tree's own default for it (`enforce_eager: bool = False` in vLLM's ModelConfig), and
    the check says it ran at that value."""
    repo = copy_033(tmp_path / "tree")
    edit(
        repo,
        ORCHESTRATOR,
        QWEN_CALL,
        "    if worker.vllm_config.model_config.enforce_eager:\n        return\n" + QWEN_CALL,
    )
    result = runner.invoke(app, ["migrate", "fla-layer-norm", "--repo", str(repo), "--verify-keys"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("keys: fla-layer-norm:")]
    assert "no unexplained difference" in line
    assert "at the tree's defaults: " in line and "vllm_config.model_config.enforce_eager = False" in line


def init_of(text: str) -> ast.FunctionDef:
    """QwenGatedDeltaNetAttention.__init__ of the layer's module."""
    cls = next(
        n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == "QwenGatedDeltaNetAttention"
    )
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")


def test_an_anchor_inside_a_branch_gets_the_registration_after_the_branch_where_every_path_reaches_it(tmp_path):
    repo = copy_033(tmp_path / "tree")
    text = (repo / GDN_LAYER).read_text()
    start = text.index(NORM)
    end = text.index("        )\n", start) + len("        )\n")
    built = text[start:end]
    plain = "        self.norm = RMSNormGated(self.head_v_dim, eps=self.layer_norm_epsilon)\n"
    branched = (
        "        if getattr(config, 'fork_gated_output_norm', True):\n"
        + "".join("    " + line for line in built.splitlines(keepends=True))
        + "        else:\n    "
        + plain
    )
    replace_file(repo / GDN_LAYER, text[:start] + branched + text[end:])
    result = migrate(repo, [FLA])
    layer = next(c.after for c in result.changes if c.path.name == "qwen_gdn_linear_attn.py")
    init = init_of(layer)
    branch = next(i for i, s in enumerate(init.body) if isinstance(s, ast.If) and "fork_gated" in ast.unparse(s.test))
    assert "register_warmup" not in ast.unparse(init.body[branch])  # in neither arm alone
    assert "_LAYER_NORM_FWD_KERNEL.register_warmup" in ast.unparse(init.body[branch + 1])
    line = 1 + text[:start].count("\n") + 1  # the anchor, one level deeper, one line down
    assert any(f"{GDN_LAYER}:{line}:" in w and "inside a branch" in w for w in result.warnings), result.warnings


def test_attributes_the_registration_reads_set_below_the_anchor_move_it_after_them(tmp_path):
    repo = copy_033(tmp_path / "tree")
    text = (repo / GDN_LAYER).read_text()
    start = text.index("        self.dt_bias = nn.Parameter(\n")
    end = text.index("        output_gate_type = getattr(config")
    parameters = text[start:end]
    text = text[:start] + text[end:]
    out_proj = text.index("        self.out_proj = RowParallelLinear(")
    replace_file(repo / GDN_LAYER, text[:out_proj] + parameters + text[out_proj:])
    result = migrate(repo, [FUSED_POST_CONV])
    layer = next(c.after for c in result.changes if c.path.name == "qwen_gdn_linear_attn.py")
    init = init_of(layer)
    order = [ast.unparse(s) for s in init.body]
    registered = next(i for i, s in enumerate(order) if "register_warmup" in s)
    for attribute in ("self.A_log", "self.dt_bias"):
        assert any(s.startswith(f"{attribute} =") for s in order[:registered]), attribute
    assert any("sets only below insert_after" in w and "self.A_log" in w for w in result.warnings), result.warnings


def test_a_method_that_changes_an_attribute_of_what_the_registration_reads_moves_it_after_the_call(tmp_path):
    """The fork's constructor calls `self._apply_norm_overrides(config)` after building the norm, and that method
    sets `self.norm.activation` (a constexpr of the layer-norm kernel): the registration goes after the call."""
    repo = copy_033(tmp_path / "tree")
    helper = (
        "    def _apply_norm_overrides(self, config) -> None:\n"
        "        if getattr(config, 'gdn_norm_activation', None) is not None:\n"
        "            self.norm.activation = config.gdn_norm_activation\n\n"
    )
    edit(repo, GDN_LAYER, "    def get_state_shape(\n", helper + "    def get_state_shape(\n")
    call = "        self.chunk_gated_delta_rule = ChunkGatedDeltaRule()\n"
    edit(repo, GDN_LAYER, call, "        self._apply_norm_overrides(config)\n" + call)
    layer = next(c.after for c in migrate(repo, [FLA]).changes if c.path.name == "qwen_gdn_linear_attn.py")
    order = [ast.unparse(s) for s in init_of(layer).body]
    assert order.index("self._apply_norm_overrides(config)") < next(
        i for i, s in enumerate(order) if "register_warmup" in s
    )


def test_a_subclass_that_changes_an_attribute_of_what_the_parents_registration_read_is_refused(tmp_path):
    repo = copy_033(tmp_path / "tree")
    fork = repo / "vllm/model_executor/layers/mamba/gdn/fork_gdn.py"
    text = (
        "from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import QwenGatedDeltaNetAttention\n\n\n"
        "class SigmoidNorm(QwenGatedDeltaNetAttention):\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        super().__init__(*args, **kwargs)\n"
        '        self.norm.activation = "sigmoid"\n'
    )
    replace_file(fork, text)
    why = refused(repo, "fla-layer-norm")
    assert "fork_gdn.py:7: SigmoidNorm.__init__ changes self.norm after running QwenGatedDeltaNetAttention" in why


def test_a_layer_that_changes_what_its_childs_registration_read_after_building_it_is_refused(tmp_path):
    """Qwen3-Next's decoder layer builds the GDN layer, then (in the fork) sets its norm's activation, a constexpr
    the registration in the GDN constructor read before: refused at that line. An attribute the registration does
    not read migrates."""
    repo = copy_033(tmp_path / "tree")
    model = "vllm/model_executor/models/qwen3_next.py"
    built = "                reduce_results=not self.use_attn_reduce_scatter_for_moe,\n            )\n"
    late = '            self.linear_attn.norm.activation = "sigmoid"\n'
    edit(repo, model, built, built + late)
    line = 1 + (repo / model).read_text().splitlines().index(late.rstrip("\n"))
    why = refused(repo, "fla-layer-norm")
    assert f"qwen3_next.py:{line}: this changes self.linear_attn.norm after QwenGatedDeltaNetAttention is built" in why
    edit(repo, model, late, '            self.linear_attn.label = "sigmoid"\n')
    written(repo, "fla-layer-norm")


@pytest.mark.parametrize(
    "body, changed",
    [
        ('        self.linear_attn.norm.activation = "sigmoid"\n', "self.linear_attn.norm"),
        (
            '        linear_attn = self.linear_attn\n        linear_attn.norm.activation = "sigmoid"\n',
            "self.linear_attn.norm",
        ),
    ],
)
def test_a_layer_method_that_changes_what_its_childs_registration_read_is_refused(tmp_path, body, changed):
    """A method of the decoder layer other than its constructor (`use_sigmoid`) sets the GDN layer's norm
    activation, through `self.linear_attn` or a local holding it: it runs after the registration in the GDN
    constructor read it, so the run is refused at that line."""
    repo = copy_033(tmp_path / "tree")
    model = "vllm/model_executor/models/qwen3_next.py"
    text = (repo / model).read_text()
    at = text.index("    def forward(\n", text.index("class Qwen3NextDecoderLayer"))
    replace_file(repo / model, text[:at] + "    def use_sigmoid(self):\n" + body + "\n" + text[at:])
    line = 1 + (repo / model).read_text().splitlines().index(body.splitlines()[-1])
    why = refused(repo, "fla-layer-norm")
    assert f"qwen3_next.py:{line}: this changes {changed} after QwenGatedDeltaNetAttention is built" in why


BUILT = "            self.linear_attn = QwenGatedDeltaNetAttention(\n"


@pytest.mark.parametrize(
    "built, after",
    [
        (BUILT, '            norm = self.linear_attn.norm\n            norm.activation = "sigmoid"\n'),
        (
            BUILT.replace(" = Qwen", ": QwenGatedDeltaNetAttention = Qwen"),
            '            self.linear_attn.norm.activation = "s"\n',
        ),
    ],
)
def test_a_change_through_a_name_one_level_down_or_built_annotated_is_refused(tmp_path, built, after):
    """The decoder layer's constructor changes the norm its GDN child's registration read, through a local that
    holds the norm itself, or after building the child with an annotated assignment: refused at the change."""
    repo = copy_033(tmp_path / "tree")
    model = "vllm/model_executor/models/qwen3_next.py"
    tail = "                reduce_results=not self.use_attn_reduce_scatter_for_moe,\n            )\n"
    text = (repo / model).read_text()
    at = text.index(tail, text.index(BUILT)) + len(tail)
    changed = text[:at].replace(BUILT, built) + after + text[at:]
    replace_file(repo / model, changed)
    line = 1 + changed.splitlines().index(after.splitlines()[-1])
    why = refused(repo, "fla-layer-norm")
    assert f"qwen3_next.py:{line}: this changes self.linear_attn.norm after QwenGatedDeltaNetAttention is built" in why


def test_a_subclass_that_replaces_the_constructor_holds_its_own_child_and_migrates(tmp_path):
    """A subclass of the decoder layer that skips its constructor (`super(Qwen3NextDecoderLayer, self)`) builds a
    `linear_attn` of its own: what its methods change there is not the GDN layer the parent builds."""
    repo = copy_033(tmp_path / "tree")
    replace_file(
        repo / "vllm/model_executor/models/qwen3_next_v2.py",
        "from torch import nn\n\nfrom vllm.model_executor.models.qwen3_next import Qwen3NextDecoderLayer\n\n\n"
        "class Qwen3NextV2DecoderLayer(Qwen3NextDecoderLayer):\n"
        "    def __init__(self):\n"
        "        super(Qwen3NextDecoderLayer, self).__init__()\n"
        "        self.linear_attn = nn.Module()\n\n"
        "    def use_sigmoid(self):\n"
        "        self.linear_attn.norm.activation = 'sigmoid'\n",
    )
    written(repo, "fla-layer-norm")


def test_a_subclass_of_the_layer_that_changes_what_its_childs_registration_read_is_refused(tmp_path):
    """A subclass of the decoder layer, in another module, sets the norm activation of the GDN layer the decoder
    layer built (`self.linear_attn`), in a method of its own: refused at that line."""
    repo = copy_033(tmp_path / "tree")
    replace_file(
        repo / "vllm/model_executor/models/sigmoid_qwen3_next.py",
        "from vllm.model_executor.models.qwen3_next import Qwen3NextDecoderLayer\n\n\n"
        "class SigmoidDecoderLayer(Qwen3NextDecoderLayer):\n"
        "    def use_sigmoid(self):\n"
        "        self.linear_attn.norm.activation = 'sigmoid'\n",
    )
    why = refused(repo, "fla-layer-norm")
    assert "sigmoid_qwen3_next.py:6: this changes self.linear_attn.norm after QwenGatedDeltaNetAttention" in why


def test_an_anchor_written_with_an_annotation_is_the_same_anchor(tmp_path):
    """`self.norm: RMSNormGated = RMSNormGated(` assigns what `self.norm = RMSNormGated(` does: the registration
    goes right after it, as on the release."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, GDN_LAYER, NORM, NORM.replace("self.norm = ", "self.norm: RMSNormGated = "))
    init = init_of(next(c.after for c in migrate(repo, [FLA]).changes if c.path.name == "qwen_gdn_linear_attn.py"))
    order = [ast.unparse(s) for s in init.body]
    built = next(i for i, s in enumerate(order) if s.startswith("self.norm: RMSNormGated = RMSNormGated("))
    assert "register_warmup" in order[built + 1]


def test_an_early_return_of_the_router_gets_the_block_once_in_a_method_and_a_second_run_changes_nothing(tmp_path):
    """A fork's GateLinear returns early for quantized weights, past the ll_fp32w registration call: both exits
    call one `_register_ll_bf16_gemm_warmup()` that holds the 20-line block (it reads no constructor local), as the
    class's own `_register_ll_fp32w_warmup()` does; the migrated tree migrates to itself."""
    repo = copy_033(tmp_path / "tree")
    anchor = "        self.allow_specialized_router_gemm = can_use_specialized_kernels\n"
    edit(repo, GATE_LINEAR, anchor, anchor + "        if not self.is_unquantized:\n            return\n")
    written(repo, "ll-bf16-router-gemm")
    text = (repo / GATE_LINEAR).read_text()
    layer_class = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == "GateLinear")
    methods = {m.name: m for m in layer_class.body if isinstance(m, ast.FunctionDef)}
    init, helper = methods["__init__"], methods["_register_ll_bf16_gemm_warmup"]
    early = next(s for s in init.body if isinstance(s, ast.If) and "is_unquantized" in ast.unparse(s.test))
    assert [ast.unparse(s) for s in early.body] == ["self._register_ll_bf16_gemm_warmup()", "return"]
    assert ast.unparse(init.body[-1]) == "self._register_ll_bf16_gemm_warmup()"
    assert "register_warmup" not in ast.unparse(init) and len(registrations(ast.unparse(helper))) == 2
    assert "wrote: 0 changed" in written(repo, "ll-bf16-router-gemm").output


@pytest.mark.parametrize(
    "change",
    [
        "self.norm.weight.data = self.norm.weight.data.float()",
        "self.norm.float()",
        "torch.nn.init.ones_(self.norm.weight)",
        "setattr(self.norm, 'weight', torch.nn.Parameter(self.norm.weight.float()))",
        "setattr(self, 'norm', self.norm.float())",
        "self.norm = self.norm.float()",  # set again in one arm: it was set before, so after the branch
    ],
)
def test_an_attribute_the_registration_reads_and_the_constructor_changes_below_the_anchor_moves_it_after(
    tmp_path, change
):
    """A fork keeps the norm's weight in fp32 on some checkpoints, changing it right after building the norm (by
    assignment, or by a call made for its effect): the legacy step read the built layer's weight dtype, so the
    registration goes after the change (in neither arm)."""
    repo = copy_033(tmp_path / "tree")
    text = (repo / GDN_LAYER).read_text()
    end = text.index("        )\n", text.index(NORM)) + len("        )\n")
    fixup = f"        if getattr(config, 'fp32_gated_norm', False):\n            {change}\n"
    replace_file(repo / GDN_LAYER, text[:end] + fixup + text[end:])
    result = migrate(repo, [FLA])
    init = init_of(next(c.after for c in result.changes if c.path.name == "qwen_gdn_linear_attn.py"))
    order = [ast.unparse(s) for s in init.body]
    changed = next(i for i, s in enumerate(order) if "fp32_gated_norm" in s)
    assert "register_warmup" in order[changed + 1] and "register_warmup" not in order[changed]
    assert any("changes below insert_after" in w and "self.norm" in w for w in result.warnings), result.warnings


def test_an_orchestrator_gate_on_the_config_reads_the_constructors_own_config_or_the_accessor(tmp_path):
    """mamba_mixer2's constructor binds vllm_config itself, below the anchor: the registration goes after it.
    bailing_moe_v3's constructor has none (other functions of its module do): the gate reads the accessor."""
    repo = copy_033(tmp_path / "tree")
    call = "    mamba_triton_warmup(worker.model_runner)\n"
    condition = "worker.vllm_config.cache_config.enable_prefix_caching"
    edit(repo, ORCHESTRATOR, call, f"    if {condition}:\n    " + call)
    result = migrate(repo, [BATCH_MEMCPY])
    after = {c.path.name: c.after for c in result.changes if c.after is not None}
    mixer = ast.parse(after["mamba_mixer2.py"])
    init = next(n for n in ast.walk(mixer) if isinstance(n, ast.ClassDef) and n.name == "MambaMixer2").body
    init = next(n for n in init if isinstance(n, ast.FunctionDef) and n.name == "__init__").body
    order = [ast.unparse(s) for s in init]
    bound = order.index("vllm_config = get_current_vllm_config()")
    [(tests, _)] = registrations(after["mamba_mixer2.py"], "batch_memcpy_dispatch")
    assert tests == ["vllm_config.cache_config.enable_prefix_caching"]
    assert next(i for i, s in enumerate(order) if "register_warmup" in s) > bound
    [(tests, _)] = registrations(after["bailing_moe_v3.py"], "batch_memcpy_dispatch")
    assert tests == [
        "(vllm_config := get_current_vllm_config_or_none()) is not None and "
        "vllm_config.cache_config.enable_prefix_caching"
    ]


QWEN_STEPS = "vllm/model_executor/warmup/qwen_triton_warmup.py"
POST_CONV_STEP = "    _warm_fused_post_conv_kernel(device, gdn_config)\n"
SPEC_HELD = "        self.speculative_config = vllm_config.speculative_config\n"


def test_a_config_the_runner_holds_as_the_engine_configs_own_is_gated_on_that_config(tmp_path):
    """Both model runners set `self.speculative_config = vllm_config.speculative_config`, once: a step gated on
    `runner.speculative_config` registers under the layer's `vllm_config.speculative_config`. A runner that
    also sets it elsewhere holds something else: the gate cannot be written, and the migration says so."""
    repo = copy_033(tmp_path / "tree")
    runners = ["vllm/v1/worker/gpu_model_runner.py", "vllm/v1/worker/gpu/model_runner.py"]
    assert all((repo / runner).read_text().count(SPEC_HELD) == 1 for runner in runners)
    edit(repo, QWEN_STEPS, POST_CONV_STEP, "    if runner.speculative_config is None:\n    " + POST_CONV_STEP)
    other = copy_033(tmp_path / "other")
    edit(other, QWEN_STEPS, POST_CONV_STEP, "    if runner.speculative_config is None:\n    " + POST_CONV_STEP)
    eager = "        if self.model_config.enforce_eager:\n            self.speculative_config = None\n"
    edit(other, runners[1], SPEC_HELD, SPEC_HELD + eager)
    layer = next(c.after for c in migrate(repo, [FUSED_POST_CONV]).changes if c.path == repo / GDN_LAYER)
    [(tests, _)] = registrations(layer, "fused_post_conv_prep_dispatch")
    assert tests == ["vllm_config.speculative_config is None"]
    with pytest.raises(SpecError, match=r"`runner.speculative_config is None`, which cannot be written"):
        migrate(other, [FUSED_POST_CONV])


def test_a_constructor_that_takes_the_config_under_another_name_registers_with_that_name(tmp_path):
    """A fork's layer takes `engine_config: VllmConfig`: the registration reads the config through that name (the
    spec's `vllm_config` names nothing there), and a second run finds it done."""
    repo = copy_033(tmp_path / "tree")
    text = (repo / GDN_LAYER).read_text()
    start = text.index("class QwenGatedDeltaNetAttention")
    end = text.index("\n    def ", text.index("def __init__", start) + 1)
    assert "        vllm_config: VllmConfig,\n" in text[start:end]
    replace_file(repo / GDN_LAYER, text[:start] + text[start:end].replace("vllm_config", "engine_config") + text[end:])
    written(repo, "fla-layer-norm")
    [(_, call)] = registrations((repo / GDN_LAYER).read_text(), "_LAYER_NORM_FWD_KERNEL")
    expected = ast.parse(FLA.registration.code).body[0]
    for node in ast.walk(expected):
        if isinstance(node, ast.Name) and node.id == "vllm_config":
            node.id = "engine_config"
    assert ast.dump(call) == ast.dump(expected)
    assert "wrote: 0 changed" in written(repo, "fla-layer-norm").output


SEARCH_LOOP = "        cache_tensors = _split_qwen_gdn_cache("
ROUTER_SEARCH = '        weight = getattr(module, "weight", None)\n'
WARMUP = "def _warmup_ll_bf16_router_gemm("
ROUTER_LOOP = "    for module in model.modules():\n"
LAUNCHERS = ("fused_post_conv_prep", "fused_sigmoid_gating_delta_rule_update")


PREDICATE_END = '            "dt_bias",\n        )\n    )\n'


@pytest.mark.parametrize(
    ("anchor", "fork"),
    [
        (SEARCH_LOOP, '        if layer.gdn_prefill_backend == "flashinfer":\n            continue\n' + SEARCH_LOOP),
        # the same filter in the repo predicate the search's generator calls, after its hasattr checks
        (PREDICATE_END, PREDICATE_END.rstrip("\n") + ' and module.gdn_prefill_backend != "flashinfer"\n'),
    ],
    ids=["in-the-loop", "in-the-predicate"],
)
def test_a_filter_a_fork_adds_to_the_model_search_gates_every_registration_in_the_layers_names(tmp_path, anchor, fork):
    """The fork's search skips layers whose prefill runs on FlashInfer: the legacy step never warmed them, so each
    layer registers only where `self.gdn_prefill_backend != "flashinfer"` (the filter, the loop's layer read as
    `self`), after the constructor sets it, the two constructor registrations under one `if`; a second run
    changes nothing. Written in `_is_qwen_gdn_layer`, the filter is read from the predicate's body (its
    `hasattr` checks each answered by the class): the same gate."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, QWEN_STEPS, anchor, fork)
    families = ("fla-layer-norm", "fla-fused-post-conv", "fla-sigmoid-gating")
    written(repo, *families)
    text = (repo / GDN_LAYER).read_text()
    kept = ast.unparse(ast.parse('self.gdn_prefill_backend != "flashinfer"'))
    for kernel in ("_LAYER_NORM_FWD_KERNEL", *(f"{launcher}_dispatch" for launcher in LAUNCHERS)):
        [(tests, _)] = registrations(text, kernel)
        assert tests == [kept], kernel
    init = init_of(text)
    [gate] = [s for s in init.body if isinstance(s, ast.If) and ast.unparse(s.test) == kept]
    assert len(gate.body) == 2  # both constructor registrations
    [backend_set] = [
        s for s in init.body if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "self.gdn_prefill_backend"
    ]
    assert backend_set.lineno < gate.lineno
    assert "wrote: 0 changed" in written(repo, *families).output


@pytest.mark.parametrize(
    ("attribute", "gated"),
    [("gdn_prefill_backend", False), ("gdn_fast_path", True)],
    ids=["set-by-the-constructor", "never-set"],
)
def test_an_attribute_a_fork_adds_to_the_predicates_hasattr_list_is_answered_only_where_every_layer_has_it(
    tmp_path, attribute, gated
):
    """`_is_qwen_gdn_layer` checks one attribute more: one the GDN layer's constructor sets at its top level is
    true of every built layer (the release's registrations, unchanged); one it never sets keeps the search from
    finding the layer, so the registration is gated on it as the legacy step was."""
    release = copy_033(tmp_path / "release")
    fork = copy_033(tmp_path / "fork")
    edit(fork, QWEN_STEPS, '            "dt_bias",\n', f'            "dt_bias",\n            "{attribute}",\n')
    kernel = "fused_post_conv_prep_dispatch"
    [(expected, _)] = registrations(
        next(c.after for c in migrate(release, [FUSED_POST_CONV]).changes if c.path == release / GDN_LAYER), kernel
    )
    [(tests, _)] = registrations(
        next(c.after for c in migrate(fork, [FUSED_POST_CONV]).changes if c.path == fork / GDN_LAYER), kernel
    )
    assert tests == ([*expected, f"hasattr(self, '{attribute}')"] if gated else expected)


def test_a_search_that_skips_a_subclass_gates_the_registration_on_the_layers_type_imported_where_it_registers(
    tmp_path,
):
    """The fork's search skips its own subclass of the GDN layer, whose module imports the layer's: the
    registration checks `not isinstance(self, QwenGDNVariant)`, importing the subclass inside the constructor
    (at the module's top the two modules would import each other)."""
    repo = copy_033(tmp_path / "tree")
    variant = "vllm.model_executor.layers.mamba.gdn.qwen_gdn_variant"
    (repo / (variant.replace(".", "/") + ".py")).write_text(
        f"from {GDN_LAYER[:-3].replace('/', '.')} import QwenGatedDeltaNetAttention\n\n\n"
        "class QwenGDNVariant(QwenGatedDeltaNetAttention):\n    pass\n"
    )
    edit(
        repo,
        QWEN_STEPS,
        SEARCH_LOOP,
        "        if isinstance(layer, QwenGDNVariant):\n            continue\n" + SEARCH_LOOP,
    )
    search = "def _qwen_gdn_warmup_config("
    edit(repo, QWEN_STEPS, search, f"from {variant} import QwenGDNVariant\n\n\n" + search)
    layer = next(c.after for c in migrate(repo, [FUSED_POST_CONV]).changes if c.path == repo / GDN_LAYER)
    [(tests, _)] = registrations(layer, "fused_post_conv_prep_dispatch")
    assert tests == ["not isinstance(self, QwenGDNVariant)"]
    imports = [n for n in ast.walk(ast.parse(layer)) if isinstance(n, ast.ImportFrom) and n.module == variant]
    assert [n.lineno for n in imports] == [
        n.lineno for n in ast.walk(init_of(layer)) if isinstance(n, ast.ImportFrom) and n.module == variant
    ]
    assert len(imports) == 1


def test_a_local_the_forks_method_already_binds_is_read_not_bound_again(tmp_path):
    """The fork's GDN layer binds its KV cache itself and names the SSM state as the sigmoid registration does
    (`ssm_state = self.kv_cache[1]`): the registration goes after it and reads that local, not a second copy."""
    repo = copy_033(tmp_path / "tree")
    state = "        ssm_state = self.kv_cache[1]\n"
    method = (
        "    def bind_kv_cache(self, kv_cache: torch.Tensor) -> None:\n"
        "        super().bind_kv_cache(kv_cache)\n" + state + "        self.state_rows = ssm_state.shape[0]\n\n"
    )
    edit(repo, GDN_LAYER, "    def get_state_shape(\n", method + "    def get_state_shape(\n")
    layer = next(c.after for c in migrate(repo, [SIGMOID_GATING]).changes if c.path == repo / GDN_LAYER)
    assert layer.count(state) == 1
    [(_, call)] = registrations(layer, "fused_sigmoid_gating_delta_rule_update_dispatch")
    assert call.lineno > layer[: layer.index(state)].count("\n") + 1
    assert "state_stride_token=ssm_state.stride(0)" in ast.unparse(call)


def router_gate(repo, spec=LL_BF16_ROUTER_GEMM) -> list[str]:
    """The conjuncts of the outer gate around the router's ll_bf16 registration, each as written."""
    layer = next(c.after for c in migrate(repo, [spec]).changes if c.path == repo / GATE_LINEAR)
    [(tests, _)] = registrations(layer, "ll_bf16_gemm_kernel")
    gate = ast.parse(tests[0], mode="eval").body
    return [ast.unparse(part) for part in (gate.values if isinstance(gate, ast.BoolOp) else [gate])]


def test_a_search_that_filters_in_a_comprehension_gets_the_same_gate(tmp_path):
    """The fork filters the modules it walks in a generator expression: its `if` is a filter like a `continue`,
    and the loop's own filters (the weight's) are still read through it."""
    repo = copy_033(tmp_path / "tree")
    make_dispatch_traceable(repo)
    edit(repo, ORCHESTRATOR, ROUTER_LOOP, "    for module in (m for m in model.modules() if m.input_size >= 64):\n")
    edit(
        repo,
        ORCHESTRATOR,
        ROUTER_SEARCH,
        "        if module.output_size > 1024:\n            continue\n" + ROUTER_SEARCH,
    )
    assert {"self.input_size >= 64", "self.output_size <= 1024"} <= set(router_gate(repo))


def test_a_filter_the_registration_checks_through_getattr_is_not_written_again(tmp_path):
    """The fork's search reads `module.weight.dtype` where the release reads it through
    `getattr(module, "weight", None)`; the registration's own code checks the latter, which is the same wherever
    the layer has a weight (it does, once built): the gate is the release's, with no second dtype check."""
    release = copy_033(tmp_path / "release")
    make_dispatch_traceable(release)
    fork = copy_033(tmp_path / "fork")
    make_dispatch_traceable(fork)
    skip = "        if module.weight.dtype != torch.bfloat16:\n            continue\n"
    edit(fork, ORCHESTRATOR, ROUTER_SEARCH, skip + ROUTER_SEARCH)
    assert router_gate(fork) == router_gate(release)


def test_a_filter_guarded_by_checks_the_registration_makes_joins_its_if_after_them(tmp_path):
    """The fork's search skips K over 4096, a filter that reads the weight only after the search's checks of it
    (a 2-D bf16 tensor), which the registration's own `if` makes too: the filter joins that `if`, after them, in
    its names (`weight.shape[1] <= 4096`); the outer gate is the release's, with no second copy of the checks."""
    release = copy_033(tmp_path / "release")
    make_dispatch_traceable(release)
    fork = copy_033(tmp_path / "fork")
    make_dispatch_traceable(fork)
    edit(
        fork,
        ORCHESTRATOR,
        "        if k % 8 == 0:\n",
        "        if k > 4096:\n            continue\n        if k % 8 == 0:\n",
    )
    assert router_gate(fork) == router_gate(release)

    def inner_tests(repo) -> list[str]:
        layer = next(c.after for c in migrate(repo, [LL_BF16_ROUTER_GEMM]).changes if c.path == repo / GATE_LINEAR)
        [(tests, _)] = registrations(layer, "ll_bf16_gemm_kernel")
        test = ast.parse(tests[-1], mode="eval").body
        return [ast.unparse(part) for part in test.values]

    assert inner_tests(fork) == [*inner_tests(release), "weight.shape[1] <= 4096"]


def test_a_predicate_that_holds_for_every_layer_adds_nothing_to_the_gate(tmp_path):
    """The fork's search asks `_is_router(module)`, whose body returns True: no layer is filtered, so the gate is
    the release's."""
    release = copy_033(tmp_path / "release")
    make_dispatch_traceable(release)
    fork = copy_033(tmp_path / "fork")
    make_dispatch_traceable(fork)
    edit(
        fork, ORCHESTRATOR, ROUTER_SEARCH, "        if not _is_router(module):\n            continue\n" + ROUTER_SEARCH
    )
    edit(fork, ORCHESTRATOR, WARMUP, "def _is_router(module):\n    return True\n\n\n" + WARMUP)
    assert router_gate(fork) == router_gate(release)


@pytest.mark.parametrize(
    ("skip", "expected"),
    [
        # an attribute the layer's base sets in its constructor: written in the layer's names
        ("        if module.input_size < 64:\n            continue\n", "self.input_size >= 64"),
        # an attribute a later method sets again: the constructor's value is not the one the search read
        (
            "        if not module.allow_ll_bf16_gemm:\n            continue\n",
            r"set_out_dtype\(\) sets self.allow_ll_bf16_gemm again \(vllm/model_executor/layers/fused_moe/router/"
            r"gate_linear.py:\d+\)",
        ),
        # the layer handed to a function: what it reads, and when it is set, is not known at the site
        (
            "        if not _is_router(module):\n            continue\n",
            "only the layers where `_is_router\\(module\\)`.*it hands the layer to a call",
        ),
        # an attribute the layer never sets
        ("        if module.ll_bf16_ok:\n            continue\n", "never sets self.ll_bf16_ok"),
        # a name of the step that is not the layer's (the loop's counter)
        (
            "        if index == 0:\n            continue\n",
            "it reads `index`, which the legacy code binds to something other",
        ),
    ],
    ids=["written", "set-again", "function-of-the-layer", "never-set", "not-the-layer"],
)
def test_a_router_search_filter_is_carried_into_the_gate_or_refused_at_its_line(tmp_path, skip, expected):
    repo = copy_033(tmp_path / "tree")
    make_dispatch_traceable(repo)
    edit(repo, ORCHESTRATOR, ROUTER_SEARCH, skip + ROUTER_SEARCH)
    # a body of more than one `return`: not a predicate read from its body
    router = "def _is_router(module):\n    name = type(module).__name__\n    return name.endswith('Linear')\n\n\n"
    edit(repo, ORCHESTRATOR, WARMUP, router + WARMUP)
    edit(repo, ORCHESTRATOR, ROUTER_LOOP, "    for index, module in enumerate(model.modules()):\n")
    if expected.startswith("self."):
        assert expected in router_gate(repo)
        return
    line = (repo / ORCHESTRATOR).read_text().splitlines().index(skip.splitlines()[0]) + 1
    with pytest.raises(SpecError, match=rf"{ORCHESTRATOR}:{line}: .*{expected}"):
        migrate(repo, [LL_BF16_ROUTER_GEMM])


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [
        ("        if k % 8 == 0:\n", "        if k % 4 == 0:\n", "self.weight.shape[1]"),
        ("weight.dtype != torch.bfloat16", "weight.dtype not in (torch.bfloat16, torch.float16)", "self.weight.dtype"),
    ],
    ids=["k-multiple", "dtypes"],
)
def test_a_search_filter_on_a_value_the_registration_checks_otherwise_is_refused_at_its_line(tmp_path, old, new, value):
    """The fork's search keeps K a multiple of 4 (or fp16 weights too) where the registration's own code checks 8
    (bf16): carried beside that check, the gate would register only the layers both keep, and the layers the search
    alone kept would compile while serving. Refused at the filter, naming the registration's check."""
    repo = copy_033(tmp_path / "tree")
    make_dispatch_traceable(repo)
    edit(repo, ORCHESTRATOR, old, new)
    line = next(i for i, text in enumerate((repo / ORCHESTRATOR).read_text().splitlines(), 1) if new.strip() in text)
    with pytest.raises(SpecError, match=rf"{ORCHESTRATOR}:{line}: .*own code checks .* on {re.escape(value)} instead"):
        migrate(repo, [LL_BF16_ROUTER_GEMM])


def search_field(repo, field: str) -> str:
    """What 0.33.0's `_qwen_gdn_warmup_config` puts in its result's `field`, with the layer it found as `self`."""
    tree = ast.parse((repo / QWEN_STEPS).read_text())
    [search] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_qwen_gdn_warmup_config"]
    [value] = [
        k.value
        for n in ast.walk(search)
        if isinstance(n, ast.Return) and n.value
        for k in getattr(n.value, "keywords", [])
        if k.arg == field
    ]
    return ast.unparse(value).replace("layer.", "self.")


def test_a_step_condition_on_what_the_search_read_from_the_layer_is_the_layers_own(tmp_path):
    """`if gdn_config.conv_kernel_size == 4:` around the step reads what the search took from the layer it found
    (`int(layer.conv_kernel_size)`): the registration is gated on the layer's own. A field the search took from the
    bound KV cache cannot be checked where the layer is built: refused at its line."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, QWEN_STEPS, POST_CONV_STEP, "    if gdn_config.conv_kernel_size == 4:\n    " + POST_CONV_STEP)
    layer = next(c.after for c in migrate(repo, [FUSED_POST_CONV]).changes if c.path == repo / GDN_LAYER)
    [(tests, _)] = registrations(layer, "fused_post_conv_prep_dispatch")
    assert tests == [f"{search_field(repo, 'conv_kernel_size')} == 4"]
    other = copy_033(tmp_path / "other")
    condition = "    if gdn_config.state_dtype == torch.float32:\n"
    edit(other, QWEN_STEPS, POST_CONV_STEP, condition + "    " + POST_CONV_STEP)
    line = (other / QWEN_STEPS).read_text().splitlines().index(condition.rstrip()) + 1
    with pytest.raises(SpecError, match=rf"{QWEN_STEPS}:{line}: .* the engine binds self.kv_cache after it builds"):
        migrate(other, [FUSED_POST_CONV])


def test_a_replacing_subclass_without_the_config_reads_it_through_the_non_raising_accessor(tmp_path):
    """The fork's subclass builds its own layer from the HF config alone: the registration's code reads the engine
    config, which that constructor does not take, so the block binds it through the accessor that returns None
    outside a config context (the one that asserts would break building the layer in a unit test)."""
    repo = copy_033(tmp_path / "tree")
    fork = SUBCLASS.split("\n\n\nclass KeepsTheParent")[0]
    fork = fork.replace('def __init__(self, config, vllm_config, prefix=""):', 'def __init__(self, config, prefix=""):')
    path = repo / "vllm/model_executor/layers/mamba/gdn/fork_gdn.py"
    replace_file(path, "import torch\n" + fork + "\n")
    written(repo, "fla-layer-norm")
    [(tests, _)] = registrations(path.read_text(), "_LAYER_NORM_FWD_KERNEL")
    assert tests == ["(vllm_config := get_current_vllm_config_or_none()) is not None"]
    assert "from vllm.config import get_current_vllm_config_or_none\n" in path.read_text()
    assert "wrote: 0 changed" in written(repo, "fla-layer-norm").output


LOOP = "    for module in model.modules():\n"


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (
            ROUTER_SEARCH,
            "        if module.input_size > 8192:\n            break\n" + ROUTER_SEARCH,
            "stops at a `break`",
        ),
        (
            ROUTER_SEARCH,
            "        if module.input_size > 8192:\n            return tuple(sorted(shapes))\n" + ROUTER_SEARCH,
            "returns early, with what it found so far",
        ),
        (
            "    return tuple(sorted(shapes))\n",
            "    return tuple(sorted(s for s in shapes if s[1] <= 256))\n",
            "filters what it collected again after its loop",
        ),
        (
            LOOP,
            "    pending = list(model.modules())\n    while pending:\n        module = pending.pop()\n",
            "walks the model in a `while` loop",
        ),
        (
            ROUTER_SEARCH,
            '        if getattr(module, "e_score_correction_bias", None) is not None:\n            continue\n'
            + ROUTER_SEARCH,
            r"\.py:\d+ sets \.e_score_correction_bias on a built object",
        ),
    ],
    ids=["break", "early-return", "refiltered", "while", "set-by-the-model"],
)
def test_a_search_no_layer_can_answer_for_itself_is_refused_at_its_line(tmp_path, old, new, why):
    """Which layers these searches kept depends on the others (the order it met them, what it kept before) or on
    what a model sets on the gate after building it (GLM4-MoE, DeepSeek-V2 set `e_score_correction_bias`): no
    condition of the layer's own says it, so the migration refuses, naming the line."""
    repo = copy_033(tmp_path / "tree")
    make_dispatch_traceable(repo)
    edit(repo, ORCHESTRATOR, old, new)
    with pytest.raises((SpecError, MigrationError), match=rf"{ORCHESTRATOR}:\d+: .*{why}"):
        migrate(repo, [LL_BF16_ROUTER_GEMM])


def test_a_search_over_a_list_of_the_layers_or_with_a_bound_parameter_is_read(tmp_path):
    """`list(model.modules())` walks the same layers; a filter on a parameter reads the value the step bound
    (here the default): each is carried as the layer's own condition."""
    repo = copy_033(tmp_path / "tree")
    make_dispatch_traceable(repo)
    edit(repo, ORCHESTRATOR, LOOP, "    for module in list(model.modules()):\n")
    edit(
        repo,
        ORCHESTRATOR,
        "    model: torch.nn.Module,\n) -> tuple",
        "    model: torch.nn.Module,\n    limit: int = 1024,\n) -> tuple",
    )
    edit(
        repo,
        ORCHESTRATOR,
        ROUTER_SEARCH,
        "        if module.output_size > limit:\n            continue\n" + ROUTER_SEARCH,
    )
    assert "self.output_size <= 1024" in router_gate(repo)


def test_a_carried_filter_brings_the_filters_it_ran_after(tmp_path):
    """The fork's search checks `input_size % 8` (which the registration's code checks too), `output_size` (which
    it does not) and then `input_size // 8`: carried into the gate, the last comes after the two it ran after, as
    the search evaluated them (the registration's `if` does not check them all, so it cannot take it)."""
    repo = copy_033(tmp_path / "tree")
    make_dispatch_traceable(repo)
    filters = (
        "        if module.input_size % 8 != 0:\n            continue\n"
        "        if module.output_size > 1024:\n            continue\n"
        "        if module.input_size // 8 > 512:\n            continue\n"
    )
    edit(repo, ORCHESTRATOR, ROUTER_SEARCH, filters + ROUTER_SEARCH)
    code = LL_BF16_ROUTER_GEMM.registration.code.replace(
        "    and weight.shape[1] % 8 == 0\n", "    and weight.shape[1] % 8 == 0\n    and self.input_size % 8 == 0\n"
    )
    gate = router_gate(repo, LL_BF16_ROUTER_GEMM.replaced(registration=code))
    assert gate[-3:] == ["self.input_size % 8 == 0", "self.output_size <= 1024", "self.input_size // 8 <= 512"]


MAMBA_STEPS = "vllm/model_executor/warmup/mamba_triton_warmup.py"
KIMI_STEPS = "vllm/model_executor/warmup/kimi_k3_triton_warmup.py"


def test_a_guard_on_a_local_the_step_binds_again_below_it_reads_the_value_it_tested(tmp_path):
    """`device = runner.device; if device.type != "cuda": return; ...; device = torch.device(...)`: the guard tested
    the runner's device, whatever `device` names at the call. Kimi-K3's block count clamped below its guard
    (`max_blocks = min(max_blocks, 8)`) is the provider's to refuse (the registration does not pass the clamp), not
    a guard the site cannot read."""
    repo = copy_033(tmp_path / "tree")
    guard = "    if not _has_mamba_style_cache(runner):\n        return\n"
    edit(repo, MAMBA_STEPS, guard, guard + "    device = torch.device(device.type, torch.cuda.current_device())\n")
    output = " ".join(written(repo, "mamba-batch-memcpy").output.split())
    assert "`device.type == 'cuda'` (`worker.model_runner.device.type == 'cuda'`)" in output
    assert "current_device" not in output

    repo = copy_033(tmp_path / "kimi")
    guard = "    if max_blocks < 2:\n        return\n"
    edit(repo, KIMI_STEPS, guard, guard + "    max_blocks = min(max_blocks, 8)\n")
    message = refused(repo, "kimi-k3-attn-res")
    assert "(the step's min(max_blocks, 8))" in message and "binds to something other than" not in message


TOKENS_LINE = "    max_num_tokens = max(1, int(runner.max_num_tokens))\n"  # in the Qwen entry, above its steps


def test_an_early_return_with_an_else_gates_the_registration_by_the_other_branch(tmp_path):
    """`if c: return` followed by an `else:` that logs: what comes after runs only where `not c`, as without it."""
    repo = copy_033(tmp_path / "tree")
    condition = "current_platform.is_device_capability_family(100)"
    guard = f"    if not {condition}:\n        return\n    else:\n        logger.debug('Blackwell')\n"
    edit(repo, QWEN_STEPS, TOKENS_LINE, guard + TOKENS_LINE)
    written(repo, "fla-layer-norm")
    [(tests, _)] = registrations((repo / GDN_LAYER).read_text())
    assert condition in tests


@pytest.mark.parametrize(
    "returns",
    [
        "    for config in (model_config.hf_text_config, model_config.hf_config):\n"
        "        if getattr(config, 'disable_qwen_warmup', False):\n            return\n",
        "    with torch.inference_mode():\n        if runner.is_pooling_model:\n            return\n",
        "    if runner.is_pooling_model:\n        if runner.speculative_config is None:\n            return\n",
    ],
    ids=["in a loop", "in a with block", "in one branch of an if"],
)
def test_a_return_above_the_legacy_call_that_no_gate_can_say_is_refused(tmp_path, returns):
    """A return inside a loop, a `with` block, or one branch of an `if` that does not always leave: the legacy call
    ran only where it did not return, a condition the registration cannot carry (it used to be dropped)."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, QWEN_STEPS, TOKENS_LINE, returns + TOKENS_LINE)
    line = (repo / QWEN_STEPS).read_text().splitlines().index(returns.splitlines()[0]) + 1
    why = refused(repo, "fla-layer-norm")
    assert f"{QWEN_STEPS}:{line}: qwen_triton_warmup may return here" in why


KIMI_ENTRY = "def kimi_k3_triton_warmup("


def _release_and_fork(tmp_path, family: str, fork, rel: str, marker: str):
    """The release tree and a fork of it (`fork(repo)`), each migrated by `family`: both trees, the fork's run's
    output on one line, and the line of `rel` that held `marker` before the run."""
    original = copy_033(tmp_path / "release")
    written(original, family)
    repo = copy_033(tmp_path / "renamed")
    fork(repo)
    line = (repo / rel).read_text().splitlines().index(marker) + 1
    return original, repo, " ".join(written(repo, family).output.split()), line


def _kimi_entry_naming_its_layer(repo, name: str, after: str = "") -> None:
    """Kimi-K3's warmup entry with its local `layer` named `name`, and `after` below where it tests it."""
    text = (repo / KIMI_STEPS).read_text()
    head, entry = text.split(KIMI_ENTRY)
    entry = re.sub(r"\blayer\b", name, entry)
    test = f"    if {name} is None:\n        return\n"
    replace_file(repo / KIMI_STEPS, head + KIMI_ENTRY + entry.replace(test, test + after))


def test_an_intended_difference_on_a_local_the_tree_names_otherwise_is_taken_with_a_warning(tmp_path):
    """The spec lists `layer is not None` (each KDA layer registers itself). A fork whose entry names the local
    `kda_layer` states the same condition: it migrates as the release does, and the run says what it took the
    entry for. Where a second condition reads the same once renamed, the entry could be either: refused."""
    original, repo, output, line = _release_and_fork(
        tmp_path,
        "kimi-k3-recurrent-kda",
        lambda repo: _kimi_entry_naming_its_layer(repo, "kda_layer"),
        KIMI_STEPS,
        "    if kda_layer is None:",
    )
    assert (
        "intended_differences entry `layer is not None` taken for `kda_layer is not None` "
        f"({KIMI_STEPS}:{line}), which this tree writes with kda_layer for layer" in output
    )
    for rel in ("vllm/models/kimi_k3/nvidia/kda.py", "vllm/models/kimi_k3/amd/kda.py"):
        assert (repo / rel).read_text() == (original / rel).read_text()

    repo = copy_033(tmp_path / "either")
    spare = "    spare = _get_kda_layer(worker)\n    if spare is None:\n        return\n"
    _kimi_entry_naming_its_layer(repo, "kda_layer", spare)
    message = refused(repo, "kimi-k3-recurrent-kda")
    assert "`kda_layer is not None`" in message and "taken for" not in message


GEMM_RS_AR_FILE = "vllm/model_executor/kernels/linear/cute_dsl/gemm_rs_ar.py"
RECORDING = "        self.dtypes.add(dtype)\n"


def _can_run_naming_its_dtype(repo, name: str) -> None:
    """GemmRsAr.can_run with its local `dtype` named `name` (the weight's `.dtype` stays)."""
    text = (repo / GEMM_RS_AR_FILE).read_text()
    start = text.index("    def can_run(")
    end = text.index(RECORDING, start) + len(RECORDING)
    replace_file(repo / GEMM_RS_AR_FILE, text[:start] + re.sub(r"(?<!\.)\bdtype\b", name, text[start:end]) + text[end:])


def test_an_insert_after_on_a_local_the_tree_names_otherwise_places_the_registration_there_reading_it(tmp_path):
    """gemm-rs-ar registers after `self.dtypes.add(dtype)`. A fork that names the local `quant_dtype` records the
    same way: the registration goes after its recording and passes `dtype=quant_dtype`, the file otherwise as the
    release's migrates, with a warning; a second run changes nothing. Where two statements read as the anchor
    once renamed, no place is known: refused as before."""
    original, repo, output, line = _release_and_fork(
        tmp_path,
        "gemm-rs-ar",
        lambda repo: _can_run_naming_its_dtype(repo, "quant_dtype"),
        GEMM_RS_AR_FILE,
        "        self.dtypes.add(quant_dtype)",
    )
    assert "quant_dtype" not in (original / GEMM_RS_AR_FILE).read_text()
    assert (
        "insert_after 'self.dtypes.add(dtype)' taken for 'self.dtypes.add(quant_dtype)' "
        f"({GEMM_RS_AR_FILE}:{line}), which this tree writes with quant_dtype for dtype" in output
    )
    migrated = (repo / GEMM_RS_AR_FILE).read_text()
    assert "dtype=quant_dtype," in migrated
    assert migrated.replace("quant_dtype", "dtype") == (original / GEMM_RS_AR_FILE).read_text()
    assert runner.invoke(app, ["migrate", "gemm-rs-ar", "--repo", str(repo), "--check"]).exit_code == 0

    repo = copy_033(tmp_path / "either")
    _can_run_naming_its_dtype(repo, "quant_dtype")
    edit(repo, GEMM_RS_AR_FILE, "        self.dtypes.add(quant_dtype)\n", "        self.dtypes.add(quant_dtype)\n" * 2)
    message = refused(repo, "gemm-rs-ar")
    assert "no statement of GemmRsAr.can_run starts with 'self.dtypes.add(dtype)'" in message
    assert "taken for" not in message


POOLING_GUARD = "    if not runner.is_pooling_model:"


def test_a_guard_on_the_config_above_a_registration_in_bind_kv_cache_warms_the_legacy_keys(tmp_path):
    """A fork warms the decode update only without speculative decoding: the registration, in `bind_kv_cache`,
    reads the config through the accessor, which the engine binds KV caches under (it was reported as registering
    nothing: the key check bound them with no config current). `--verify-keys` finds the legacy keys."""
    repo = copy_033(tmp_path / "tree")
    edit(repo, QWEN_STEPS, POOLING_GUARD, f"{POOLING_GUARD[:-1]} and runner.speculative_config is None:")
    result = runner.invoke(app, ["migrate", "fla-sigmoid-gating", "--repo", str(repo), "--verify-keys", "--write"])
    assert result.exit_code == 0, result.output
    assert "fla-sigmoid-gating: 19 configs, no unexplained difference" in result.output
    assert "vllm_config := get_current_vllm_config_or_none()" in (repo / GDN_LAYER).read_text()


MAMBA_GUARDS = (
    '    device = runner.device\n    if device.type != "cuda":\n        return\n'
    "    if not _has_mamba_style_cache(runner):\n        return\n    _warm_batch_memcpy_kernel(device)\n"
)
QWEN_MODEL_GUARD = "    if model_type not in _QWEN_MODEL_TYPES:\n        return\n\n"
QWEN_END = "    _synchronize_device(device)\n"


def _under_the_model_types(text: str) -> str:
    """qwen_triton_warmup's body from the model-type check on under `if model_type in _QWEN_MODEL_TYPES:`."""
    start = text.index(QWEN_MODEL_GUARD)
    end = text.index(QWEN_END, start) + len(QWEN_END)
    body = textwrap.indent(text[start + len(QWEN_MODEL_GUARD) : end], "    ")
    return text[:start] + "    if model_type in _QWEN_MODEL_TYPES:\n" + body + text[end:]


def _device_named_dev(text: str) -> str:
    return text.replace(MAMBA_GUARDS, MAMBA_GUARDS.replace("device", "dev").replace("runner.dev\n", "runner.device\n"))


def _guards_in_one_if(text: str) -> str:
    one_if = (
        '    if device.type == "cuda" and _has_mamba_style_cache(runner):\n        _warm_batch_memcpy_kernel(device)\n'
    )
    return text.replace(MAMBA_GUARDS, MAMBA_GUARDS.split("\n")[0] + "\n" + one_if)


def _kv_cache_check_de_morgan(text: str) -> str:
    """The speculative KDA step's KV cache check as `not (a and b)`: `len(kv_cache) >= 2` where the release returns on
    `len(kv_cache) < 2` (the spec's entry names `not len(kv_cache) < 2`)."""
    check = "    if not isinstance(kv_cache, (list, tuple)) or len(kv_cache) < 2:\n"
    return text.replace(check, "    if not (isinstance(kv_cache, (list, tuple)) and len(kv_cache) >= 2):\n", 1)


@pytest.mark.parametrize(
    ("family", "rel", "fork", "renamed"),
    [
        ("mamba-batch-memcpy", MAMBA_STEPS, _device_named_dev, True),
        ("mamba-batch-memcpy", MAMBA_STEPS, _guards_in_one_if, False),
        ("fla-layer-norm", QWEN_STEPS, _under_the_model_types, False),
        ("kimi-k3-recurrent-kda", KIMI_STEPS, _kv_cache_check_de_morgan, False),
    ],
    ids=["the device named dev", "both guards in one if", "the body under the model types", "de morgan"],
)
def test_an_intended_difference_names_its_guard_however_a_fork_writes_the_condition(
    tmp_path, family, rel, fork, renamed
):
    """An entry names the guard the spec's tree returns early on (`device.type != 'cuda'`, `model_type not in
    _QWEN_MODEL_TYPES`). A fork that warms under the condition itself (`if device.type == "cuda" and ...:`, the
    rest of the body under `if model_type in ...:`), or names the local otherwise (`dev`), has the same guard: it
    migrates as the release does, every file but its legacy warmup the same, a renaming said once."""
    original = copy_033(tmp_path / "release")
    written(original, family)
    repo = copy_033(tmp_path / "fork")
    text = (repo / rel).read_text()
    assert fork(text) != text
    replace_file(repo / rel, fork(text))
    output = written(repo, family).output
    assert output.count("taken for") == (1 if renamed else 0), output
    changed = {p.relative_to(repo) for p in repo.rglob("*.py")} - {Path(rel)}
    assert all((repo / p).read_bytes() == (original / p).read_bytes() for p in changed)
