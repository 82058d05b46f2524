"""`zerojit survey --kernels`: the JIT map of a real vLLM 0.33.0 tree (before and after a migration), and of a small
engine built here with one kernel of each kind and status."""

import json
import re
from pathlib import Path

import pytest
from tree_forks import TOY_CONTRACT, copy_033, write_tree
from typer.testing import CliRunner

from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.releases import vllm_tree

pytestmark = pytest.mark.release_tree

runner = CliRunner()
STATUSES = ("registered", "unregistered", "legacy", "unwarmed")
TQ_LAUNCHER = "vllm.v1.attention.ops.flydsl_turboquant_decode"


def jit_map(repo: Path, *extra: str) -> dict:
    result = runner.invoke(app, ["survey", "--kernels", "--repo", str(repo), "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def map033(tmp_path_factory):
    plot = tmp_path_factory.mktemp("plot") / "map.png"
    document = jit_map(vllm_tree("0.33.0"), "--plot", str(plot))
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return document


@pytest.fixture(scope="module")
def migrated_map_repo(tmp_path_factory):
    repo = copy_033(tmp_path_factory.mktemp("fla") / "tree")
    result = runner.invoke(app, ["migrate", "fla-layer-norm", "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    return repo


@pytest.fixture(scope="module")
def migrated_map(migrated_map_repo):
    return jit_map(migrated_map_repo)


def kernel(document: dict, module: str, name: str) -> dict:
    (found,) = [k for k in document["kernels"] if (k["module"], k["name"]) == (module, name)]
    return found


def test_counts_add_up_and_match_the_decorators_read_off_the_tree(map033):
    counts = map033["counts"]
    assert map033["format"] == "zerojit-jit-map/1" and counts["kernels"] == len(map033["kernels"])
    assert sum(counts[s] for s in STATUSES) == counts["kernels"]
    for backend, row in counts["by_backend"].items():
        assert row["total"] == sum(row[s] for s in STATUSES) == sum(k["backend"] == backend for k in map033["kernels"])
    # Independently, from the text: every @triton.autotune'd function and every @tilelang_jit one is a kernel (an
    # autotuner or a TileLang jit is never inlined into another kernel).
    tree = vllm_tree("0.33.0")
    sources = [p.read_text(errors="replace") for p in (tree / "vllm").rglob("*.py")]
    autotuned = sum(len(re.findall(r"^\s*@triton\.autotune\b", s, re.M)) for s in sources)
    tilelang = sum(len(re.findall(r"^@tilelang_jit\b", s, re.M)) for s in sources)
    assert (counts["by_backend"]["triton-autotune"]["total"], counts["by_backend"]["tilelang"]["total"]) == (
        autotuned,
        tilelang,
    ) and autotuned > 50
    assert counts["by_backend"]["triton-jit"]["total"] > 500 and counts["by_backend"]["flydsl"]["total"] >= 8


def test_every_kernel_a_register_warmup_names_is_registered(map033):
    tree = vllm_tree("0.33.0")
    named: set[str] = set()
    for path in (tree / "vllm").rglob("*.py"):
        text = path.read_text(errors="replace")
        named |= set(re.findall(r"\b([A-Za-z_]\w*)\.register_warmup\(", text))
        for arms in re.findall(r"\(\s*(\w+)\s+if\s+[^()]*?\s+else\s+(\w+)\s*\)\s*\.register_warmup\(", text):
            named |= set(arms)
    defined = {k["name"]: k for k in map033["kernels"]}
    at_top_level = {name for name in named if name in defined}
    assert len(at_top_level) > 40
    assert {name: defined[name]["status"] for name in at_top_level} == {name: "registered" for name in at_top_level}
    assert all(
        k["registered_at"] and k["backend"] == "contract" for k in map033["kernels"] if k["name"] in at_top_level
    )
    # Each site names what it registers, the local `indexer_q_kernel = (A if c else B)` included.
    assert map033["unresolved_registrations"] == []
    fp8 = kernel(map033, "vllm.models.deepseek_v4.nvidia.ops.fused_indexer_q_cutedsl", "_INDEXER_Q_FP8_KERNEL")
    (site,) = fp8["registered_at"]
    assert site["owner"] == "vllm.models.deepseek_v4.attention:DeepseekV4Indexer.__init__"
    assert "enable_jit_warmup" in site["gate"] and "not (" in site["gate"]


def test_the_turboquant_launcher_is_warmed_by_nothing(map033):
    tree = vllm_tree("0.33.0")
    launcher = (tree / "vllm/v1/attention/ops/flydsl_turboquant_decode.py").read_text()
    backend = (tree / "vllm/v1/attention/backends/turboquant_attn.py").read_text()
    assert re.search(r"^def _get_kernel\((?:.|\n)*?^    @flyc\.jit\n    def _launch\(", launcher, re.M)
    assert "return flydsl_turboquant_decode_attention(" in backend and "class TurboQuantAttentionImpl(" in backend
    found = kernel(map033, TQ_LAUNCHER, "_get_kernel.<locals>._launch")
    assert (found["backend"], found["status"]) == ("flydsl", "unwarmed")
    assert f"{TQ_LAUNCHER}:flydsl_turboquant_decode_attention" in found["launched_by"]
    assert "vllm.v1.attention.backends.turboquant_attn:TurboQuantAttentionImpl" in found["constructed_in"]
    reduce = kernel(map033, TQ_LAUNCHER, "_reduce_partitions")  # the Triton reduction it launches after it
    assert (reduce["backend"], reduce["status"]) == ("triton-jit", "unwarmed")


def test_the_layer_norm_kernel_is_registered_after_its_migration_and_was_not_before(
    map033, migrated_map, migrated_map_repo
):
    module = "vllm.third_party.flash_linear_attention.ops.layernorm_guard"
    before, after = (
        kernel(map033, module, "_LAYER_NORM_FWD_KERNEL"),
        kernel(migrated_map, module, "_LAYER_NORM_FWD_KERNEL"),
    )
    assert (before["status"], before["warmed_by"], before["verdict"], before["registered_at"]) == (
        "legacy",
        ["vllm.model_executor.warmup.qwen_triton_warmup:qwen_triton_warmup"],
        "spec",
        [],
    )
    assert after["status"] == "registered" and after["warmed_by"] == []
    (site,) = after["registered_at"]
    layer = "vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn"
    assert site["owner"] == f"{layer}:QwenGatedDeltaNetAttention.__init__"
    line = int(site["site"].removeprefix(f"{layer}:"))
    source = (migrated_map_repo / (layer.replace(".", "/") + ".py")).read_text().splitlines()
    assert source[line - 1].strip() == "_LAYER_NORM_FWD_KERNEL.register_warmup("
    # The Triton kernel the object compiles follows it.
    jit_before, jit_after = (
        kernel(map033, module, "layer_norm_fwd_kernel"),
        kernel(migrated_map, module, "layer_norm_fwd_kernel"),
    )
    assert (jit_before["status"], jit_after["status"]) == ("legacy", "registered")
    assert jit_after["via"] == f"{module}:_LAYER_NORM_FWD_KERNEL"
    assert migrated_map["counts"]["registered"] == map033["counts"]["registered"] + 2
    assert migrated_map["counts"]["legacy"] == map033["counts"]["legacy"] - 2


ENGINE = {
    "eng/__init__.py": "",
    "eng/warmup/__init__.py": "",
    "eng/warmup/kernel_warmup.py": """
        from eng.warmup.norm_warmup import norm_warmup

        def kernel_warmup(worker):
            if worker.jit:
                norm_warmup(worker)
        """,
    "eng/warmup/norm_warmup.py": """
        from eng.ops.norm import rms_norm

        def norm_warmup(worker):
            rms_norm(worker.x)
        """,
    "eng/jit.py": """
        class JitKernel:
            def register_warmup(self, **inputs):
                pass

        def dispatcher_with_warmup(*, warmup_inputs, kernel=None):
            def wrap(fn):
                return JitKernel()
            return wrap
        """,
    "eng/ops/__init__.py": "",
    "eng/ops/norm.py": """
        import triton
        import triton.language as tl

        @triton.jit
        def _square(x):
            return x * x

        @triton.jit
        def _rms_norm_kernel(X, N: tl.constexpr):
            tl.store(X, _square(tl.load(X)))

        def rms_norm(x):
            _rms_norm_kernel[(1,)](x, 16)
        """,
    "eng/ops/gemm.py": """
        import triton
        from eng.jit import JitKernel, dispatcher_with_warmup

        class GemmKernel(JitKernel):
            pass

        GEMM_KERNEL = GemmKernel()
        SPARE_KERNEL = GemmKernel()
        FP8_KERNEL = GemmKernel()
        BF16_KERNEL = GemmKernel()

        @triton.autotune(configs=[], key=["n"])
        @triton.jit
        def _scale_kernel(X, n):
            pass

        @dispatcher_with_warmup(warmup_inputs=lambda: {}, kernel=_scale_kernel)
        def scale_dispatch(x):
            return (1,), {"X": x}
        """,
    "eng/ops/decode.py": """
        import flydsl.compiler as flyc
        import cutlass.cute as cute

        @flyc.kernel
        def _body(out):
            pass

        def get_kernel(heads):
            @flyc.jit
            def launch(out):
                _body(out).launch(grid=(heads, 1, 1))
            return launch

        def decode(out, heads):
            get_kernel(heads)(out)

        class Attention:
            @cute.jit
            def __call__(self, x):
                self.tile(x)

            @cute.jit
            def tile(self, x):
                pass
        """,
    "eng/layers.py": """
        from eng.ops.decode import Attention, decode
        from eng.ops.gemm import BF16_KERNEL, FP8_KERNEL, GEMM_KERNEL, scale_dispatch
        from eng.ops.norm import rms_norm

        class Linear:
            def __init__(self, config, fp8):
                if config.jit:
                    GEMM_KERNEL.register_warmup()
                    kernel = FP8_KERNEL if fp8 else BF16_KERNEL
                    kernel.register_warmup()
                scale_dispatch.register_warmup()

        class Norm:
            def forward(self, x):
                return rms_norm(x)

        class Decoder:
            def forward(self, out):
                decode(out, 8)
                Attention()(out)
        """,
}


def test_a_small_engine_one_kernel_of_each_kind_and_status(tmp_path):
    write_tree(tmp_path, {**ENGINE, **TOY_CONTRACT})
    document = jit_map(tmp_path, "--orchestrator", "eng.warmup.kernel_warmup")
    found = {(k["module"].removeprefix("eng."), k["name"]): k for k in document["kernels"]}
    assert {name: (k["backend"], k["status"]) for name, k in found.items()} == {
        ("ops.norm", "_rms_norm_kernel"): ("triton-jit", "legacy"),
        ("ops.gemm", "GEMM_KERNEL"): ("contract", "registered"),
        ("ops.gemm", "SPARE_KERNEL"): ("contract", "unregistered"),
        ("ops.gemm", "FP8_KERNEL"): ("contract", "registered"),
        ("ops.gemm", "BF16_KERNEL"): ("contract", "registered"),
        ("ops.gemm", "_scale_kernel"): ("triton-autotune", "registered"),
        ("ops.gemm", "scale_dispatch"): ("contract", "registered"),
        ("ops.decode", "get_kernel.<locals>.launch"): ("flydsl", "unwarmed"),
        ("ops.decode", "Attention.__call__"): ("cute-dsl", "unwarmed"),
    }
    # _square is inlined into the norm kernel, _body compiles inside `launch`, `tile` inside __call__.
    device = {backend: row["device_helpers"] for backend, row in document["counts"]["by_backend"].items()}
    assert (device["triton-jit"], device["flydsl"], device["cute-dsl"]) == (1, 1, 1)
    assert found[("ops.gemm", "GEMM_KERNEL")]["registered_at"] == [
        {"site": "eng.layers:9", "owner": "eng.layers:Linear.__init__", "gate": "(config.jit)"}
    ]
    assert [r["gate"] for r in found[("ops.gemm", "FP8_KERNEL")]["registered_at"]] == ["(config.jit) and (fp8)"]
    assert [r["gate"] for r in found[("ops.gemm", "BF16_KERNEL")]["registered_at"]] == ["(config.jit) and not (fp8)"]
    assert found[("ops.gemm", "_scale_kernel")]["via"] == "eng.ops.gemm:scale_dispatch"
    norm = found[("ops.norm", "_rms_norm_kernel")]
    assert (norm["warmed_by"], norm["verdict"]) == (["eng.warmup.norm_warmup:norm_warmup"], "lift")
    launch = found[("ops.decode", "get_kernel.<locals>.launch")]
    assert (launch["launched_by"], launch["constructed_in"]) == (
        ["eng.ops.decode:get_kernel", "eng.ops.decode:decode"],
        ["eng.layers:Decoder"],
    )
    assert found[("ops.decode", "Attention.__call__")]["constructed_in"] == ["eng.layers:Decoder"]


SPELLINGS = {
    "eng/__init__.py": "",
    "eng/jit.py": ENGINE["eng/jit.py"],
    "eng/ops/__init__.py": "",
    "eng/ops/spelled.py": """
        import triton as tr
        from triton import jit as tjit
        from triton.experimental.gluon import jit as gjit
        from eng.jit import JitKernel

        my_jit = tr.jit
        HAS_TRITON = True

        if HAS_TRITON:
            @tr.jit
            def _under_if(X):
                pass

        try:
            @tjit
            def _aliased(X):
                pass
        except ImportError:
            pass

        @gjit
        def _gluon(X):
            pass

        @my_jit
        def _bound_alias(X):
            pass

        class CopyKernel(JitKernel):
            @staticmethod
            @tr.jit
            def kernel(X):
                pass

            def compile(self, key):
                self.kernel[(1,)](key)

        COPY_KERNEL = CopyKernel()

        def launch(x):
            _under_if[(1,)](x)
            _aliased[(1,)](x)
            _gluon[(1,)](x)
            _bound_alias[(1,)](x)
        """,
    "eng/ops/broken.py": "import triton\n\n@triton.jit\ndef _lost(X:\n",
    "eng/layers.py": """
        from eng.ops.spelled import COPY_KERNEL

        class Copy:
            def __init__(self):
                COPY_KERNEL.register_warmup()
        """,
}


def test_every_way_of_writing_a_kernel_is_found_and_an_unreadable_module_is_named(tmp_path):
    write_tree(tmp_path, SPELLINGS)
    result = runner.invoke(
        app, ["survey", "--kernels", "--repo", str(tmp_path), "--orchestrator", "eng.warmup.kernel_warmup", "--json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    found = {k["name"]: (k["backend"], k["status"]) for k in document["kernels"]}
    assert found == {
        "_under_if": ("triton-jit", "unwarmed"),
        "_aliased": ("triton-jit", "unwarmed"),
        "_gluon": ("triton-gluon", "unwarmed"),
        "_bound_alias": ("triton-jit", "unwarmed"),
        "CopyKernel.kernel": ("triton-jit", "registered"),
        "COPY_KERNEL": ("contract", "registered"),
    }
    held = next(k for k in document["kernels"] if k["name"] == "CopyKernel.kernel")
    assert held["via"] == "eng.ops.spelled:COPY_KERNEL"
    (why,) = document["unreadable_modules"].values()
    assert list(document["unreadable_modules"]) == ["eng.ops.broken"] and "does not parse" in why
    assert "eng.ops.broken is not mapped" in result.stderr
    # Without --orchestrator the map would read vllm/, which this tree does not hold: one line.
    refused = runner.invoke(app, ["survey", "--kernels", "--repo", str(tmp_path)])
    assert refused.exit_code == 2 and "holds no vllm/ package" in refused.output


def test_a_module_nested_deeper_than_the_map_can_read_is_named_and_the_rest_mapped(tmp_path):
    # Python parses a 500-deep call chain, but cannot write it back (ast.unparse) at its default recursion limit.
    deep = "import triton\n\n\n@triton.jit" + "()" * 500 + "\ndef _deep():\n    pass\n"
    write_tree(tmp_path, {**SPELLINGS, "eng/ops/deep.py": deep})
    result = runner.invoke(
        app, ["survey", "--kernels", "--repo", str(tmp_path), "--orchestrator", "eng.warmup.kernel_warmup", "--json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["unreadable_modules"]["eng.ops.deep"].endswith("deep.py: nested too deeply to read")
    assert {k["name"] for k in document["kernels"]} >= {"_under_if", "_aliased", "COPY_KERNEL"}


def test_a_tree_with_no_legacy_warmup_left_is_mapped_with_a_warning(tmp_path):
    write_tree(tmp_path, {rel: text for rel, text in ENGINE.items() if not rel.startswith("eng/warmup/")})
    result = runner.invoke(
        app, ["survey", "--kernels", "--repo", str(tmp_path), "--orchestrator", "eng.warmup.kernel_warmup", "--json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["orchestrator_problem"].endswith(
        "has no orchestrator module eng.warmup.kernel_warmup (--orchestrator names it)"
    )
    assert "no kernel is listed as reached by a legacy warmup" in result.stderr
    norm = next(k for k in document["kernels"] if k["name"] == "_rms_norm_kernel")
    assert (norm["status"], norm["launched_by"], norm["constructed_in"]) == (
        "unwarmed",
        ["eng.ops.norm:rms_norm"],
        ["eng.layers:Norm"],
    )


@pytest.mark.parametrize(
    "args, why",
    [
        (["--plot", "map.png"], "--plot draws the JIT map: give --kernels too"),
        (["--kernels", "--status", "cold"], "--status cold: not one of registered"),
        (["--kernels", "--plot", "map.txt"], "name a .png, .svg, .pdf file"),
        (
            ["--kernels", "--plot", "map.json"],
            "name a .png, .svg, .pdf file",
        ),  # a warmup timeline may be data; a map not
        (["--kernels", "--plot", "no/such/map.png"], "does not exist"),
    ],
)
def test_bad_map_options_are_one_line(tmp_path, monkeypatch, args, why):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["survey", "--repo", str(vllm_tree("0.33.0")), *args])
    assert result.exit_code == 2 and why in result.output and "Traceback" not in result.output
