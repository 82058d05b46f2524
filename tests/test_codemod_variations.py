"""Ordinary variations of the real vLLM 0.29.0 tree: each is migrated correctly or refused, never broken.

Every case edits a copy of the tree the way engine code really varies (aliases, second
callers, try/except, getattr, star imports, names that merely collide, comments), then
runs the FA4 + Inkling migration. "migrated": every changed file compiles, pyflakes finds
no undefined name or redefinition the file did not have, colliding names are untouched,
and a second run is a no-op. "refused": exit 2 naming the file and line, and nothing written.
Checks use pyflakes and `compile` directly, not the tool's own gate.
"""

import ast
import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from pyflakes import checker, messages
from tree_forks import add, copy_release, edit, make_029_dispatch_traceable
from typer.testing import CliRunner

from zerojit.codemods.runner import MigrationError, migrate, write
from zerojit.codemods.spec import MigrationSpec, SpecError
from zerojit.codemods.transforms import RemoveLegacyCalls
from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import migration_specs

pytestmark = pytest.mark.release_tree

SPECS = migration_specs()
FA4 = [SPECS["fa4-mla-prefill"], SPECS["inkling-rel-attention"]]
ORCH = "vllm/model_executor/warmup/kernel_warmup.py"
FLASH = "vllm/v1/attention/backends/mla/prefill/flash_attn.py"
ATTN = "vllm/models/inkling/nvidia/attention.py"
CALL = "        fa4_cutedsl_warmup(worker)\n"
IMPORT = "from vllm.model_executor.warmup.fa4_cutedsl_warmup import (\n    fa4_cutedsl_warmup,\n)\n"


@pytest.fixture
def repo(tmp_path):
    """A copy of vLLM 0.29.0 made of hard links (fast); every write here and in the tool replaces files."""
    return copy_release("0.29.0", tmp_path / "repo")


def blocking(source: str) -> set:
    found = checker.Checker(ast.parse(source)).messages
    return {  # without the line of an earlier binding a redefinition names: inserted code above moves it
        (type(m).__name__, tuple(a for a in m.message_args if not isinstance(a, int)))
        for m in found
        if isinstance(m, (messages.UndefinedName, messages.RedefinedWhileUnused, messages.UndefinedExport))
    }


def migrated(repo: Path) -> dict[str, str]:
    """Run the migration for real; check what every case must hold; return the changed files' new text."""
    before = {p: p.read_text() for p in repo.rglob("*.py")}
    write(migrate(repo, FA4))
    after = {p: p.read_text() for p in repo.rglob("*.py")}
    changed = {p: text for p, text in after.items() if before.get(p) != text}
    for path, text in changed.items():
        compile(text, str(path), "exec")
        assert blocking(text) - blocking(before.get(path, "")) == set(), path
    assert migrate(repo, FA4).changes == []  # a second run is a no-op
    return {p.relative_to(repo).as_posix(): t for p, t in changed.items()}


def refused(repo: Path, *fragments: str) -> str:
    before = {p: p.read_bytes() for p in repo.rglob("*.py")}
    result = CliRunner().invoke(
        app, ["migrate", "fa4-mla-prefill", "inkling-rel-attention", "--repo", str(repo), "--write"]
    )
    assert result.exit_code == 2, result.output
    assert {p: p.read_bytes() for p in repo.rglob("*.py")} == before  # nothing written
    for fragment in fragments:
        assert fragment in result.output, result.output
    return result.output


def test_legacy_module_imported_under_an_alias(repo):
    edit(repo, ORCH, IMPORT, "import vllm.model_executor.warmup.fa4_cutedsl_warmup as fw\n")
    edit(repo, ORCH, CALL, "        fw.fa4_cutedsl_warmup(worker)\n")
    text = migrated(repo)[ORCH]
    assert "fw" not in text.split("def kernel_warmup")[0] and "fa4_cutedsl_warmup" not in text


def test_legacy_function_imported_under_an_alias(repo):
    edit(repo, ORCH, "    fa4_cutedsl_warmup,\n)", "    fa4_cutedsl_warmup as warm_fa4,\n)")
    edit(repo, ORCH, CALL, "        warm_fa4(worker)\n")
    text = migrated(repo)[ORCH]
    assert "warm_fa4" not in text and "kimi_k3_triton_warmup(worker)\n        sparse_mla_triton_warmup" in text


def test_result_used_is_refused(repo):
    edit(repo, ORCH, CALL, "        ok = fa4_cutedsl_warmup(worker)\n        assert ok is None\n")
    refused(repo, f"{ORCH}:", "the result of fa4_cutedsl_warmup() is used")


def test_function_passed_as_a_value_is_refused(repo):
    edit(repo, ORCH, CALL, "        for fn in (fa4_cutedsl_warmup,):\n            fn(worker)\n")
    refused(repo, f"{ORCH}:", "fa4_cutedsl_warmup is used as a value")


def test_a_second_caller_elsewhere_is_refused(repo):
    add(
        repo,
        "vllm/model_executor/warmup/extra_warmup.py",
        "from vllm.model_executor.warmup import fa4_cutedsl_warmup as legacy\n\n\n"
        "def extra(worker):\n    legacy.fa4_cutedsl_warmup(worker)\n",
    )
    refused(
        repo,
        "vllm/model_executor/warmup/extra_warmup.py:1:",
        "vllm.model_executor.warmup.fa4_cutedsl_warmup, which the migration deletes",
    )


def test_call_inside_try_except_goes_with_its_try(repo):
    edit(
        repo,
        ORCH,
        CALL,
        "        try:\n            fa4_cutedsl_warmup(worker)\n        except Exception:\n"
        "            logger.warning('FA4 warmup failed')\n",
    )
    text = migrated(repo)[ORCH]
    assert "FA4 warmup failed" not in text
    assert "        kimi_k3_triton_warmup(worker)\n        sparse_mla_triton_warmup(worker)\n" in text


def test_call_in_one_branch_of_an_if_else(repo):
    edit(
        repo,
        ORCH,
        CALL,
        "        if worker.model_config.use_mla:\n            fa4_cutedsl_warmup(worker)\n"
        "        else:\n            logger.info('no MLA')\n",
    )
    texts = migrated(repo)
    assert "        if not worker.model_config.use_mla:\n            logger.info('no MLA')\n" in texts[ORCH]

    # The fork's own guard goes with the Inkling registration, in the site's names (its config). The FA4 step
    # checks the same condition itself, which its spec drops on purpose (an MLA-only backend): not carried there.
    def gate(site):
        return [
            ast.unparse(v)
            for v in next(
                n.test
                for n in ast.walk(ast.parse(texts[site]))
                if isinstance(n, ast.If) and "register_warmup" in ast.unparse(n.body[0])
            ).values
        ]

    assert "vllm_config.model_config.use_mla" in gate("vllm/models/inkling/nvidia/attention.py")
    assert "vllm_config.model_config.use_mla" not in gate("vllm/v1/attention/backends/mla/prefill/flash_attn.py")


def test_getattr_by_literal_name_is_renamed(repo):
    add(
        repo,
        "vllm/tools/kernel_probe.py",
        "from vllm.v1.attention.backends.mla.prefill import flash_attn\n\n\n"
        'def probe():\n    return getattr(flash_attn, "FA4_MLA_PREFILL_KERNEL")\n',
    )
    text = migrated(repo)["vllm/tools/kernel_probe.py"]
    assert 'getattr(flash_attn, "_FA4_MLA_PREFILL_KERNEL")' in text


def test_an_explicit_re_export_is_renamed_as_one_with_its_users(repo):
    """`from .flash_attn import K as K` in the package (the form ruff reads as a re-export): renamed to `_K as _K`,
    which re-exports the new name the same way (`_K as K` would be an unused import); users of the package's name
    follow. The run's ruff gate passes (it refused this fork with F401 before)."""
    package = "vllm/v1/attention/backends/mla/prefill/__init__.py"
    reexport = "from .flash_attn import FA4_MLA_PREFILL_KERNEL as FA4_MLA_PREFILL_KERNEL\n"
    add(repo, package, (repo / package).read_text() + reexport)
    add(
        repo,
        "vllm/tools/package_user.py",
        "from vllm.v1.attention.backends.mla.prefill import FA4_MLA_PREFILL_KERNEL\n\n\n"
        "def run():\n    return FA4_MLA_PREFILL_KERNEL\n",
    )
    text = migrated(repo)
    assert text[package].endswith("from .flash_attn import _FA4_MLA_PREFILL_KERNEL as _FA4_MLA_PREFILL_KERNEL\n")
    user = text["vllm/tools/package_user.py"]
    assert "import _FA4_MLA_PREFILL_KERNEL\n" in user and "return _FA4_MLA_PREFILL_KERNEL\n" in user
    assert "FA4_MLA_PREFILL_KERNEL" not in user.replace("_FA4_MLA_PREFILL_KERNEL", "")


def test_star_import_of_the_kernel_module_is_refused(repo):
    add(
        repo,
        "vllm/tools/star_user.py",
        "from vllm.v1.attention.backends.mla.prefill.flash_attn import *  # noqa: F403\n\n\n"
        "def run():\n    return FA4_MLA_PREFILL_KERNEL  # noqa: F405\n",
    )
    refused(repo, "vllm/tools/star_user.py:5:", "star import")


def test_names_that_only_collide_are_untouched(repo):
    add(
        repo,
        "vllm/tools/collide.py",
        "class Settings:\n    FA4_MLA_PREFILL_KERNEL = 'tuned'\n\n\n"
        "def configure(FA4_MLA_PREFILL_KERNEL=None, **kw):\n    return dict(FA4_MLA_PREFILL_KERNEL=1), Settings.FA4_MLA_PREFILL_KERNEL\n",
    )
    edit(
        repo,
        FLASH,
        "FA4_MLA_PREFILL_KERNEL = FA4MLAPrefillKernel()\n",
        "FA4_MLA_PREFILL_KERNEL = FA4MLAPrefillKernel()\n\n\ndef tune(FA4_MLA_PREFILL_KERNEL=2):\n"
        "    return dict(FA4_MLA_PREFILL_KERNEL=FA4_MLA_PREFILL_KERNEL)\n",
    )
    changed = migrated(repo)
    assert "vllm/tools/collide.py" not in changed
    assert (
        "def tune(FA4_MLA_PREFILL_KERNEL=2):\n    return dict(FA4_MLA_PREFILL_KERNEL=FA4_MLA_PREFILL_KERNEL)"
        in changed[FLASH]
        and "\n_FA4_MLA_PREFILL_KERNEL = FA4MLAPrefillKernel()" in changed[FLASH]
    )


def test_a_comment_introducing_the_next_code_stays(repo):
    # The comment sits directly above the call, and the next statement follows with no blank
    # line: it introduces what comes after, so it stays with that.
    edit(
        repo,
        ORCH,
        "        kimi_k3_triton_warmup(worker)\n" + CALL,
        "        kimi_k3_triton_warmup(worker)\n        # Sparse MLA Triton kernels, after FA4.\n" + CALL,
    )
    text = migrated(repo)[ORCH]
    assert text.count("# Sparse MLA Triton kernels, after FA4.") == 1
    assert "        # Sparse MLA Triton kernels, after FA4.\n        sparse_mla_triton_warmup(worker)\n" in text


def test_legacy_function_naming_an_inline_step_is_refused_not_the_orchestrator_deleted():
    with pytest.raises(SpecError, match="is the orchestrator itself"):
        SPECS["fa4-mla-prefill"].replaced(
            legacy_module="vllm.model_executor.warmup.kernel_warmup",
            legacy_function="_warmup_ll_bf16_router_gemm",
            legacy_step="",
        )


def test_a_typo_in_legacy_module_is_an_error_not_already_migrated(repo):
    typo = SPECS["inkling-rel-attention"].replaced(legacy_module="vllm.model_executor.warmup.fa4_cutedsl_warmpu")
    with pytest.raises(SpecError, match="legacy_module 'vllm.model_executor.warmup.fa4_cutedsl_warmpu' not found"):
        migrate(repo, [typo])


@pytest.mark.parametrize(
    "fields", [{"dispatcher": True}, {"dispatcher": 5}, {"launcher": "", "dispatcher": "_x_dispatch"}], ids=str
)
def test_a_lift_field_of_the_wrong_kind_is_a_spec_error_not_a_traceback(fields):
    with pytest.raises(SpecError, match="spec field dispatcher="):
        SPECS["fla-fused-post-conv"].replaced(**fields)


def test_field_types_are_checked():
    with pytest.raises(SpecError, match="spec field legacy_step=0: must be a string"):
        SPECS["fa4-mla-prefill"].replaced(legacy_step=0)


def test_migrating_one_family_then_both_is_idempotent(repo):
    write(migrate(repo, [SPECS["inkling-rel-attention"]]))
    write(migrate(repo, FA4))
    assert migrate(repo, FA4).changes == []
    assert not (repo / "vllm/model_executor/warmup/fa4_cutedsl_warmup.py").exists()


def test_refusal_lists_every_problem_and_never_a_traceback(repo):
    edit(repo, ORCH, CALL, "        ok = fa4_cutedsl_warmup(worker)\n        print(fa4_cutedsl_warmup)\n")
    output = refused(repo)
    problems = [line for line in output.splitlines() if line.startswith(ORCH + ":")]
    assert len(problems) == 2 and "Traceback" not in output
    with pytest.raises(MigrationError) as caught:
        migrate(repo, FA4)
    # Typed: what refused (the transform's operation), the file and the line of each use, found here by text.
    lines = (repo / ORCH).read_text().splitlines()
    uses = [n for n, line in enumerate(lines, 1) if "fa4_cutedsl_warmup(worker)" in line or "print(fa4_cut" in line]
    found = [(r.code, r.place.path, r.place.line) for r in caught.value.refusals]
    assert found == [(RemoveLegacyCalls.name, ORCH, line) for line in uses]


def test_global_statement_and_type_checking_import(repo):
    """`global KERNEL` in the defining module follows the rename; a TYPE_CHECKING import of the legacy entry goes."""
    edit(
        repo,
        FLASH,
        "FA4_MLA_PREFILL_KERNEL = FA4MLAPrefillKernel()\n",
        "FA4_MLA_PREFILL_KERNEL = FA4MLAPrefillKernel()\n\n\ndef reset():\n    global FA4_MLA_PREFILL_KERNEL\n"
        "    FA4_MLA_PREFILL_KERNEL = FA4MLAPrefillKernel()\n",
    )
    edit(
        repo,
        ORCH,
        IMPORT,
        "if TYPE_CHECKING:\n    from vllm.model_executor.warmup.fa4_cutedsl_warmup import fa4_cutedsl_warmup\n",
    )
    edit(
        repo,
        ORCH,
        CALL,
        "        from . import fa4_cutedsl_warmup as module\n        module.fa4_cutedsl_warmup(worker)\n",
    )
    changed = migrated(repo)
    assert "    global _FA4_MLA_PREFILL_KERNEL\n    _FA4_MLA_PREFILL_KERNEL = FA4MLAPrefillKernel()" in changed[FLASH]
    assert "fa4_cutedsl_warmup" not in changed[ORCH]


SPEC_033 = Path(__file__).with_name("specs") / "vllm033_qwen_mrope.toml"


def test_a_spec_that_registers_a_plain_triton_kernel_is_refused_on_vllm_033(tmp_path):
    """`_triton_mrope_forward` is a `@triton.jit def`: a JITFunction has no register_warmup, so the inserted
    registration would raise when vLLM builds the layer. Refused (exit 2, the kernel, where and why); nothing written."""
    original = vllm_tree("0.33.0")
    repo = tmp_path / "repo033"
    shutil.copytree(original, repo, copy_function=os.link)
    result = CliRunner().invoke(app, ["migrate", "--spec", str(SPEC_033), "--repo", str(repo), "--write"])
    assert result.exit_code == 2
    assert (
        "_triton_mrope_forward (vllm.model_executor.layers.rotary_embedding.mrope:17) is a function with "
        "@triton.jit: it has no register_warmup"
    ) in result.output
    assert all(p.read_bytes() == (original / p.relative_to(repo)).read_bytes() for p in repo.rglob("*.py"))


def test_format_hook_output_is_what_the_gate_sees(repo):
    import sys

    stamp = [sys.executable, "-c", "import sys; sys.stdout.write('# formatted\\n' + sys.stdin.read())"]
    result = migrate(repo, [SPECS["fa4-mla-prefill"]], format_command=stamp)
    flash = next(c.after for c in result.changes if c.path.name == "flash_attn.py")
    assert flash.startswith("# formatted\n")  # the formatter's output is what is written
    # Indenting with tabs: the gate checks that output too, and ruff finds what the original did not have.
    tabs = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read().replace('    ', '\\t'))"]
    with pytest.raises(MigrationError, match=r"refused by the safety gate(.|\n)*flash_attn\.py:\d+: ruff W191 "):
        migrate(repo, [SPECS["fa4-mla-prefill"]], format_command=tabs)
    broken = f"{sys.executable} -c \"print('def broken(:')\""
    result = CliRunner().invoke(app, ["migrate", "fa4-mla-prefill", "--repo", str(repo), "--format", broken])
    assert result.exit_code == 2 and "would not compile" in result.output


ROUTER_GEMM = dict(
    family="ll-bf16-router-gemm",
    orchestrator_module="vllm.model_executor.warmup.kernel_warmup",
    orchestrator_step="_warmup_ll_bf16_router_gemm",
    singleton_module="vllm.model_executor.kernels.linear.cute_dsl.ll_bf16",
    singleton="ll_bf16_gemm_kernel",
    private_singleton="_LL_BF16_GEMM_KERNEL",
    construction_module="vllm.model_executor.layers.fused_moe.router.gate_linear",
    construction_class="GateLinear",
    registration="_LL_BF16_GEMM_KERNEL.register_warmup(\n    shapes=((input_size, output_size),),\n    m_values=range(1, 17),\n)",
    gate="vllm_config is not None and vllm_config.kernel_config.enable_jit_warmup "
    "and self.allow_specialized_router_gemm",
    contract_base="vllm.model_executor.warmup.jit_warmup:VllmJitKernel",  # LLBf16Gemm owns keys and compile
)
GATE_LINEAR = "vllm/model_executor/layers/fused_moe/router/gate_linear.py"
LL_BF16 = "vllm/model_executor/kernels/linear/cute_dsl/ll_bf16.py"


@pytest.fixture
def router_repo(repo):
    """0.29.0 whose LLBf16Gemm.dispatch its author made traceable (the release's cannot take VllmJitKernel)."""
    make_029_dispatch_traceable(repo)
    return repo


def test_an_inline_orchestrator_step_and_a_lazily_imported_kernel(router_repo):
    """0.29.0's inline `_warmup_ll_bf16_router_gemm` step: the orchestrator stays; the kernel is imported lazily."""
    repo = router_repo
    spec = MigrationSpec.from_fields(ROUTER_GEMM)
    before = (repo / ORCH).read_text()
    write(migrate(repo, [spec]))
    orchestrator = (repo / ORCH).read_text()
    assert "def kernel_warmup(" in orchestrator and "_warmup_ll_bf16_router_gemm" not in orchestrator
    # Its helpers had no other caller: gone with it; the other steps stay.
    assert "_ll_bf16_router_shapes_from_model" not in orchestrator and "_LL_BF16_WARMUP_M_RANGE" not in orchestrator
    assert "_warmup_kimi_k3_gemm_rs_ar()" in orchestrator
    assert blocking(orchestrator) - blocking(before) == set()
    layer = (repo / GATE_LINEAR).read_text()
    gate = next(
        n
        for n in ast.walk(ast.parse(layer))
        if isinstance(n, ast.If)
        and "register_warmup" in ast.unparse(n)
        and "vllm_config is not None" in ast.unparse(n.test)
    )
    # The spec's gate, then the guards the tree ran the step under: the orchestrator's capability check, the filters
    # of the step's model search (which the spec's registration does not check: a bf16 2-D weight whose K, the
    # second of `n, k = weight.shape`, is a multiple of 8), and the step's own early return, checked after its lazy
    # import (the layer imports the kernel's module only lazily).
    written = [ast.unparse(part) for part in gate.test.values]
    assert written[3:] == [
        "current_platform.has_device_capability(90)",
        "isinstance((weight := getattr(self, 'weight', None)), torch.Tensor)",
        "weight.dim() == 2",
        "weight.dtype == torch.bfloat16",
        "weight.shape[1] % 8 == 0",
    ]
    inner = [n for n in gate.body if isinstance(n, ast.If)]
    assert [ast.unparse(n.test) for n in inner] == ["is_ll_bf16_gemm_available()"]
    assert "import is_available as is_ll_bf16_gemm_available" in ast.unparse(gate)
    assert (
        ast.unparse(inner[0].body)
        == "_LL_BF16_GEMM_KERNEL.register_warmup(shapes=((input_size, output_size),), m_values=range(1, 17))"
    )
    assert "ll_bf16_gemm_kernel" not in layer  # its lazy imports and uses follow the rename
    kernel = (repo / "vllm/model_executor/kernels/linear/cute_dsl/ll_bf16.py").read_text()
    assert "class LLBf16Gemm(VllmJitKernel):" in kernel  # adopted (no sibling there parameterizes the base)
    assert "super().__init__()" in kernel  # and its __init__ runs the base's
    assert "from vllm.model_executor.warmup.jit_warmup import VllmJitKernel\n" in kernel
    assert migrate(repo, [spec]).changes == []


@pytest.mark.parametrize(
    "change, why",
    [
        ({"contract_base": ""}, "makes an object with no register_warmup"),
        (
            {"registration": "_LL_BF16_GEMM_KERNEL.register_warmup(shape=(input_size, output_size))"},
            "do not fit LLBf16Gemm.get_warmup_keys(*, shapes, m_values)",
        ),
    ],
)
def test_a_kernel_off_the_contract_or_a_registration_its_keys_cannot_take_is_refused(router_repo, change, why):
    with pytest.raises(SpecError, match=re.escape(why)):
        migrate(router_repo, [MigrationSpec.from_fields({**ROUTER_GEMM, **change})])


def test_the_release_dispatch_the_base_cannot_trace_is_rewritten_and_one_it_cannot_take_is_refused(repo):
    """0.29.0's dispatch (a tuple assignment, two returns): the tree's own VllmJitKernel.__init__ refuses it, so
    it is rewritten into the traced form first; with a loop in it, neither takes it and the run is refused."""
    header = "    def dispatch(self, *, M: int, K: int, N: int) -> CompileKey:"
    line = 1 + (repo / LL_BF16).read_text().splitlines().index(header)
    spec = MigrationSpec.from_fields(ROUTER_GEMM)
    rewritten = next(c.after for c in migrate(repo, [spec]).changes if c.path == repo / LL_BF16)
    dispatch = next(
        n for n in ast.walk(ast.parse(rewritten)) if isinstance(n, ast.FunctionDef) and n.name == "dispatch"
    )
    assert [type(s).__name__ for s in dispatch.body][-1] == "Return" and not any(
        isinstance(n, ast.If | ast.Dict) for n in ast.walk(dispatch)
    )
    edit(repo, LL_BF16, header + "\n", header + "\n        while False:\n            pass\n")
    with pytest.raises(SpecError) as refused:
        migrate(repo, [spec])
    why = " ".join(str(refused.value).split())
    assert f"{LL_BF16}:{line}: VllmJitKernel.__init__ from the tree cannot take LLBf16Gemm.dispatch" in why
    assert f"rewriting it: {LL_BF16}:{line + 1}: `while False:`" in why
    # What the proof cannot evaluate (a comprehension) is not written on trust.
    edit(repo, LL_BF16, "        while False:\n            pass\n", "        ks = {k for k in (K,)}\n")
    with pytest.raises(SpecError) as refused:
        migrate(repo, [spec])
    why = " ".join(str(refused.value).split())
    assert f"rewriting it: {LL_BF16}:{line}: the rewrite is not proven equal: line {line + 1}: cannot evaluate" in why


def test_several_construction_classes_and_an_unbound_name(repo):
    spec = SPECS["inkling-rel-attention"].replaced(
        construction_class=[
            "InklingAttention",
            "vllm.v1.attention.backends.mla.prefill.flash_attn:FlashAttnPrefillBackend",
        ],
    )
    result = migrate(repo, [spec])
    flash = next(c.after for c in result.changes if c.path.name == "flash_attn.py")
    # The flash-attn backend's module never imported the Inkling kernel: the import is added there.
    imported = {(n.module, a.name) for n in ast.parse(flash).body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert ("vllm.models.inkling.nvidia.ops.fa4_rel_attention", "_INKLING_FA4_REL_ATTENTION_KERNEL") in imported
    assert flash.count("_INKLING_FA4_REL_ATTENTION_KERNEL.register_warmup()") == 1
    unbound = SPECS["inkling-rel-attention"].replaced(gate="engine_config.enable_jit_warmup")
    with pytest.raises(
        SpecError, match="the registration requires `engine_config.enable_jit_warmup`, which the legacy call did not"
    ):
        migrate(repo, [unbound])  # a name the site does not bind is no condition the legacy call ran under
    unbound = SPECS["inkling-rel-attention"].replaced(
        registration="_INKLING_FA4_REL_ATTENTION_KERNEL.register_warmup(engine_config)",
    )
    with pytest.raises(MigrationError, match="engine_config is not bound where the registration goes"):
        migrate(repo, [unbound])


def test_help_shows_the_spec_table_literally():
    result = CliRunner().invoke(app, ["migrate", "--help"])
    assert "[[migration]]" in result.output


def test_the_fa4_steps_own_early_returns_are_read(repo):
    """A fork's new early return in the legacy step goes with the registration; the release's own are listed."""
    edit(
        repo,
        "vllm/model_executor/warmup/fa4_cutedsl_warmup.py",
        "    vllm_config = runner.vllm_config\n",
        "    vllm_config = runner.vllm_config\n    if vllm_config.model_config.enforce_eager:\n        return\n",
    )
    result = migrate(repo, FA4)
    flash = next(c.after for c in result.changes if c.path.name == "flash_attn.py")
    gate = next(
        n.test
        for n in ast.walk(ast.parse(flash))
        if isinstance(n, ast.If) and "register_warmup" in ast.unparse(n.body[0])
    )
    assert "not vllm_config.model_config.enforce_eager" in [ast.unparse(v) for v in gate.values]
    assert any(
        "`not runner.is_pooling_model`" in d and "pooling models prefill without this backend" in d
        for d in result.differences()
    )


def test_a_constructor_local_holding_the_config_under_another_name_carries_the_specs_gate(repo):
    """A fork's InklingAttention names its `get_current_vllm_config()` local `cfg`: the spec's gate on
    `vllm_config.kernel_config.enable_jit_warmup` is written with `cfg` (it was refused as a different gate)."""
    text = (repo / ATTN).read_text()
    start = text.index("class InklingAttention")
    end = text.index("    def get_attn_backend", start)
    assert "        vllm_config = get_current_vllm_config()\n" in text[start:end]
    renamed = re.sub(r"\bvllm_config\b", "cfg", text[start:end])
    edit(repo, ATTN, text[start:end], renamed)
    changed = migrated(repo)
    init = next(
        f
        for c in ast.walk(ast.parse(changed[ATTN]))
        if isinstance(c, ast.ClassDef) and c.name == "InklingAttention"
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name == "__init__"
    )
    gate = ast.parse(SPECS["inkling-rel-attention"].registration.gate, mode="eval").body
    expected = ast.unparse(gate).replace("vllm_config", "cfg")
    [block] = [s for s in init.body if isinstance(s, ast.If) and "register_warmup" in ast.unparse(s)]
    assert ast.unparse(block.test) == expected  # and `migrated` checked that a second run finds it done


VERSION_SET = """        self.vllm_flash_attn_version = get_flash_attn_version(
            head_size=qk_head_dim, head_size_v=v_head_dim
        )
"""
HELPER = "    def _pick_version(self, qk_head_dim, v_head_dim):\n" + VERSION_SET + "\n"


@pytest.mark.parametrize("fork", ["reworded", "moved into a helper", "set again below"])
def test_an_anchor_the_fork_rewrote_or_moved_goes_after_what_the_registration_reads(repo, fork):
    """`if self.vllm_flash_attn_version:` for the spec's `... is not None:` (or the version set by a helper method
    the constructor calls): no statement matches insert_after, so the registration goes right after the last
    statement that sets what it reads (the version), with a warning that says so; a second run changes nothing."""
    anchor = SPECS["fa4-mla-prefill"].registration.insert_after
    assert (repo / FLASH).read_text().count(anchor) == 1 and VERSION_SET in (repo / FLASH).read_text()
    edit(repo, FLASH, anchor, "if self.vllm_flash_attn_version:")
    setter = "self.vllm_flash_attn_version = get_flash_attn_version(head_size=qk_head_dim, head_size_v=v_head_dim)"
    if fork == "moved into a helper":
        edit(repo, FLASH, VERSION_SET, "        self._pick_version(qk_head_dim, v_head_dim)\n")
        edit(
            repo,
            FLASH,
            "    def __init__(\n        self,\n        num_heads",
            HELPER + "\n    def __init__(\n        self,\n        num_heads",
        )
        setter = "self._pick_version(qk_head_dim, v_head_dim)"
    if fork == "set again below":  # the registration reads the version once the constructor last sets it
        again = "if envs.VLLM_BATCH_INVARIANT:\n    self.vllm_flash_attn_version = 3"
        edit(repo, FLASH, VERSION_SET, VERSION_SET + textwrap.indent(again, " " * 8) + "\n")
        setter = again
    result = migrate(repo, [SPECS["fa4-mla-prefill"]])
    write(result)
    backend = next(
        n
        for n in ast.walk(ast.parse((repo / FLASH).read_text()))
        if isinstance(n, ast.ClassDef) and n.name == "FlashAttnPrefillBackend"
    )
    body = [
        ast.unparse(s)
        for s in next(f for f in backend.body if isinstance(f, ast.FunctionDef) and f.name == "__init__").body
    ]
    registered = next(i for i, s in enumerate(body) if "register_warmup" in s)
    assert body[registered - 1] == setter
    assert any("has no statement starting with" in w and "the last that sets" in w for w in result.warnings)
    assert migrate(repo, [SPECS["fa4-mla-prefill"]]).changes == []


def test_a_redefinition_the_fork_already_has_is_not_one_the_migration_introduces(repo):
    # A fork with a platform fallback that pyflakes already reports (a redefinition of an unused function):
    # the lines the migration inserts above it move the line that report names, and that is no new finding.
    fallback = (
        "\n\ndef _fork_helper():\n    return 1\n\n\n"
        "if current_platform.is_rocm():\n\n    def _fork_helper():\n        return 2\n"
    )
    add(repo, ATTN, (repo / ATTN).read_text() + fallback)
    assert ("RedefinedWhileUnused", ("_fork_helper",)) in blocking((repo / ATTN).read_text())
    changed = migrated(repo)
    assert changed[ATTN].endswith(fallback)
