"""zerojit kernels inside vLLM 0.33.0's own JIT warmup registry (its jit_warmup.py, from the wheel).

Stubbed with values for vLLM's registry module: `vllm.distributed.is_global_first_rank`; everything
else it imports from vLLM is names only (migrate/engine_trees/sources.py), e.g. `jit_warmup_triton_helper`,
the Triton parallel path these kernels do not take.
"""

import importlib.metadata
import os
import subprocess
import sys
import types

import pytest

from zerojit.contract.backends import flydsl as flydsl_backend
from zerojit.contract.monitor import JitAfterWarmupError
from zerojit.contract.vllm_adapter import VllmKernel, arm_after_warmup, limits_from_vllm_config, register_plugin
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.engine_trees.sources import EngineSources
from zerojit.migrate.rocm_nvfp4.kernel import (
    FusedNormRopeKVInsert,
    IndexDecode,
    IndexPrefill,
    SparseDecode,
    SparsePrefill,
    TopK,
)
from zerojit.migrate.rocm_nvfp4.model import nvfp4_kv_launchers

pytestmark = pytest.mark.release_tree

REGISTRY = "vllm.model_executor.warmup.jit_warmup"


@pytest.fixture(scope="module")
def vllm033():
    return EngineSources(
        vllm_tree("0.33.0"), "vllm", (REGISTRY,), {"vllm.distributed": {"is_global_first_rank": lambda: True}}
    )


def vllm_config(enable_jit_warmup=True):
    return types.SimpleNamespace(
        scheduler_config=types.SimpleNamespace(max_num_seqs=16, max_num_batched_tokens=16384),
        model_config=types.SimpleNamespace(max_model_len=8704),
        parallel_config=types.SimpleNamespace(tensor_parallel_size=4),
        kernel_config=types.SimpleNamespace(enable_jit_warmup=enable_jit_warmup),
        speculative_config=types.SimpleNamespace(num_speculative_tokens=3),
    )


def reachable_keys(launchers, limits) -> set:
    """Brute force: the key of every launch a server with `limits` can make (every input value in range)."""
    by_type = {type(launcher): launcher for launcher in launchers}
    tokens, context, seqs = (
        range(1, limits.max_num_batched_tokens + 1),
        range(1, limits.max_model_len + 1),
        range(1, limits.max_num_seqs + 1),
    )
    keys = {by_type[FusedNormRopeKVInsert].dispatch(num_tokens=n) for n in tokens}
    keys |= {by_type[IndexPrefill].dispatch(num_prefill_tokens=n) for n in tokens}
    keys |= {by_type[SparsePrefill].dispatch(max_context_len=c) for c in context}
    keys |= {by_type[TopK].dispatch(context_len=c, decode=d) for c in context for d in (False, True)}
    for reqs in seqs:
        for query in limits.decode_query_lens:
            keys.add(by_type[SparseDecode].dispatch(num_reqs=reqs, query_len=query))
            keys |= {by_type[IndexDecode].dispatch(num_reqs=reqs, query_len=query, max_context_len=c) for c in context}
    return keys


def test_limits_from_a_vllm_config():
    limits = limits_from_vllm_config(vllm_config(), arch="gfx950", kv_cache_dtype="nvfp4")
    assert (limits.max_num_seqs, limits.max_num_batched_tokens, limits.max_model_len) == (16, 16384, 8704)
    assert (limits.spec_query_lens, limits.tp_size, limits.arch) == ((4,), 4, "gfx950")


def test_vllm_registry_compiles_zerojit_kernels_then_the_monitor_is_armed(vllm033, tmp_path):
    flydsl_backend.configure("gfx950", tmp_path)
    limits = limits_from_vllm_config(vllm_config(), arch="gfx950", kv_cache_dtype="nvfp4")
    launchers = nvfp4_kv_launchers()
    for launcher in launchers:
        launcher.forget_variants()
    with vllm033.installed():
        registry_class = vllm033.module(REGISTRY).JitWarmupRegistry
        registry = registry_class(vllm_config())
        with registry.activate():
            for _layer in range(4):  # every layer registers; vLLM keeps one per kernel
                for launcher in launchers:
                    VllmKernel(launcher, limits).register_warmup()
        assert len(registry) == 6
        monitor = arm_after_warmup(registry_class, "error")
        try:
            registry.warmup()
            assert sum(launcher.variant_count() for launcher in launchers) == len(reachable_keys(launchers, limits))
            decode = next(launcher for launcher in launchers if isinstance(launcher, SparseDecode))
            decode.launch(num_reqs=16, query_len=4)  # warmed (64 rows: 4 splits): silent
            with pytest.raises(JitAfterWarmupError, match="sparse_decode"):
                decode.launch(num_reqs=100, query_len=1)  # beyond max_num_seqs: never warmed
        finally:
            monitor.disarm()


def test_plugin_entry_point_and_modes(vllm033, monkeypatch):
    plugins = importlib.metadata.entry_points(group="vllm.general_plugins")
    assert "zerojit.contract.vllm_adapter:register_plugin" in {p.value for p in plugins}
    with vllm033.installed():
        monkeypatch.setenv("ZEROJIT_MONITOR", "off")
        assert register_plugin() is None
        for bad in ("loud", "", "WARN"):  # a plugin never raises into vLLM: it warns and stays off
            monkeypatch.setenv("ZEROJIT_MONITOR", bad)
            with pytest.warns(RuntimeWarning, match="is not one of warn, error or off; the JIT monitor stays off"):
                assert register_plugin() is None
        monkeypatch.setenv("ZEROJIT_MONITOR", "warn")
        registry_class = vllm033.module(REGISTRY).JitWarmupRegistry
        original = registry_class.warmup
        monitor = register_plugin()
        try:
            assert monitor.mode == "warn" and registry_class.warmup is not original
        finally:
            registry_class.warmup = original


def test_plugin_without_vllm_registry_returns_normally(monkeypatch):
    """Loaded into an engine that lacks vLLM's JIT warmup registry, the plugin warns and leaves the monitor off."""
    monkeypatch.setenv("ZEROJIT_MONITOR", "error")
    monkeypatch.setitem(__import__("sys").modules, "vllm", None)  # `import vllm...` fails as if not installed
    with pytest.warns(RuntimeWarning, match="the JIT monitor stays off"):
        assert register_plugin() is None


@pytest.mark.parametrize("mode", ["loud", "warn"])  # a bad mode; a good one in a process without vLLM
def test_the_plugin_never_raises_even_when_warnings_are_errors(mode):
    """vLLM 0.33.0's load_general_plugins calls each plugin without a try, and `-W error` turns warnings into
    exceptions: the plugin still returns, and says why the monitor is off on stderr."""
    load = (
        "import importlib.metadata as m; "
        "plugin = next(e for e in m.entry_points(group='vllm.general_plugins') if e.name == 'zerojit_monitors'); "
        "print(plugin.load()())"
    )
    env = {**os.environ, "ZEROJIT_MONITOR": mode}
    done = subprocess.run([sys.executable, "-W", "error", "-c", load], capture_output=True, text=True, env=env, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None" and "the JIT monitor stays off" in done.stderr
    assert "Traceback" not in done.stderr
