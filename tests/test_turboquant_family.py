"""vLLM 0.33.0's own FlyDSL TurboQuant decode and its Triton reduction, compiled for gfx950 with no GPU: keys from
the launcher's rules, real code objects, a second process loading them all, zero JIT over random decode steps,
the engine's own decode path as the key oracle, and a bake."""

import json
import math
import subprocess
import sys

import pytest

from zerojit.migrate.families import get_preset
from zerojit.migrate.flydsl_turboquant_decode.kernel import DecodeKey, ReduceKey
from zerojit.migrate.flydsl_turboquant_decode.presets import PRESETS

pytestmark = pytest.mark.release_tree

BACKEND = "flydsl+triton"
SERVE = """
import json, sys
from pathlib import Path
from zerojit.contract.backends import Together, flydsl, triton
Together(("flydsl", "triton")).configure("gfx950", Path(sys.argv[1]))
from zerojit.migrate.families import get_preset
from zerojit.migrate.flydsl_turboquant_decode.kernel import run_decode_step
from zerojit.migrate.flydsl_turboquant_decode.launches import decode_steps
for step in decode_steps(get_preset(sys.argv[2])[1], 4, 1):
    run_decode_step(**step)
print(json.dumps({"flydsl": flydsl.compiles_in_this_thread(), "triton": triton.compiles_in_this_thread()}))
"""
CHECK = """
import json, sys
from pathlib import Path
from zerojit.contract.backends import Together, flydsl
Together(("flydsl", "triton")).configure("gfx950", Path(sys.argv[1]))
from zerojit.migrate.flydsl_turboquant_decode.engine_kernel import launcher_module
from zerojit.migrate.flydsl_turboquant_decode.model import decode_kernels
from zerojit.contract import WarmupRegistry, execute
from zerojit.migrate.families import get_preset
family, preset = get_preset(sys.argv[2])
registry = WarmupRegistry(preset.limits)
with registry.capture():
    family.construct(preset)
report = execute(registry.plan()).to_dict()
module = launcher_module()
artifacts = [launch._last_compiled[1] for launch in module._KERN_CACHE.values()]
triton_codes = [kernel.asm["hsaco"] for kernel in module._reduce_partitions.device_caches[0][0].values()]
print(json.dumps({"compiled": report["compiled"], "cached": report["cached"], "failed": report["failed"],
                  "flydsl_chips": [artifact._ir_text.count('chip = "gfx950"') for artifact in artifacts],
                  "flydsl_sizes": [flydsl.kernel_code_bytes(artifact) for artifact in artifacts], "hsaco": [[c[:4].hex(), len(c)] for c in triton_codes],
                  "kern_cache": [list(k) for k in module._KERN_CACHE]}))
"""


def zerojit(*args):
    result = subprocess.run(
        [sys.executable, "-m", "zerojit", *args, "--json"], capture_output=True, text=True, timeout=1800
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    return json.loads(result.stdout)


def in_a_fresh_process(script, cache, preset) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", script, str(cache), preset], capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.splitlines()[-1])


def expected_keys(preset) -> set:
    """The launcher's rules, written from its comments and code independently of the family: the block table holds
    every block of the longest sequence, padded to whole 128-token runs; partitions are a power of two, at least 2,
    at least the split floor (itself at most 32), and at most 32 once they cover the worst case; tile groups are
    the fewest (a power of two) with partitions x tile groups x 256 tokens covering the worst case. The reduction's
    output is a view of vLLM's workspace, which the rest of the model sizes: under 2 GB or past it."""
    limits, layer, splits = preset.limits, preset.model.layer, preset.model.max_num_kv_splits
    blocks = math.ceil(limits.max_model_len / layer.block_size)
    run = 128 // layer.block_size  # both block sizes divide 128
    width = next(w for w in range(blocks, blocks + run) if w % run == 0)
    worst = width * layer.block_size
    powers = [1 << i for i in range(12)]
    needed = min(32, max(min(32, splits), math.ceil(worst / 256)))
    parts = next(p for p in powers if p >= max(2, needed))
    tiles = next(t for t in powers if parts * t * 256 >= worst)
    group = layer.num_heads // layer.num_kv_heads
    decode = DecodeKey(
        layer.num_kv_heads, parts, width, round(layer.scale, 8), group, layer.block_size, tiles, layer.scale
    )
    reduce = [
        ReduceKey(limits.dtype, "div16", "div16", layer.num_kv_heads, group, parts, 128, (output, True, True, True))
        for output in (True, False)
    ]
    return {decode.to_json(), *(key.to_json() for key in reduce)}


@pytest.mark.parametrize("preset", [p.name for p in PRESETS])
def test_each_presets_keys_follow_the_launchers_rules(preset):
    family, chosen = get_preset(preset)
    from zerojit.contract import WarmupRegistry

    registry = WarmupRegistry(chosen.limits)
    with registry.capture():
        family.construct(chosen)
    assert {key.to_json() for _, key in registry.plan().work()} == expected_keys(chosen)


def test_cold_warmup_compiles_real_gfx950_code_later_processes_load_it_and_random_steps_compile_nothing(tmp_path):
    cache, preset = tmp_path / "cache", "minimax-m2-tq-mi355x-tp4"
    cold = in_a_fresh_process(CHECK, cache, preset)
    assert (cold["compiled"], cold["cached"], cold["failed"]) == (3, 0, 0)
    # The FlyDSL kernel is gfx950 machine code of real size (an empty kernel is a 4-byte s_endpgm) ...
    ((sizes,),) = [cold["flydsl_sizes"]]
    assert cold["flydsl_chips"] == [1] and min(sizes.values()) > 10_000
    # ... the Triton reduction's two (output within 2 GB or past it) AMDGPU code objects (ELF), and the launcher's
    # own cache holds the derived key.
    assert len(cold["hsaco"]) == 2 and all(magic == "7f454c46" and size > 4096 for magic, size in cold["hsaco"])
    (derived,) = cold["kern_cache"]  # the launcher's key: the scale as it rounds it (the build's is the exact one)
    chosen = get_preset(preset)[1]
    assert DecodeKey(*derived, chosen.model.layer.scale).to_json() in expected_keys(chosen)
    warm = in_a_fresh_process(CHECK, cache, preset)
    assert (warm["compiled"], warm["cached"], warm["failed"]) == (0, 3, 0) and warm["flydsl_sizes"] == [sizes]
    # A server's first decode steps, in a new process that warmed nothing: the engine's own launcher builds its
    # kernels as it does in a request (from the exact softmax scale), and finds both on disk.
    assert in_a_fresh_process(SERVE, cache, preset) == {"flydsl": 0, "triton": 0}
    verify = zerojit("verify", "--preset", preset, "--launches", "50", "--cache-dir", str(cache))
    assert verify["launches"] == 100 and verify["cache_growth"] == 0 and not verify["post_warmup_compiles"]
    assert {k["name"]: k["variants"] for k in verify["launchers"]} == {
        "flydsl_turboquant_decode": 1,
        "turboquant_reduce_partitions": 2,
    }


def test_the_engines_own_decode_path_builds_exactly_the_registered_keys():
    report = zerojit("keys", "diff", "--family", "flydsl-turboquant-decode", "--grid", "full")
    assert report["configs"] >= 3000 and report["mismatches"] == 0
    # The one intended difference: JIT warmup off, where the server builds the kernels itself.
    assert report["intended_differences"] > 0 and all(
        d["config"]["enable_jit_warmup"] is False and d["migrated_keys"] == 0 for d in report["details"]
    )
    covered = report["coverage"]
    assert set(covered["arch"]) == {"gfx950", "gfx942"} and len(covered["kv_cache_dtype"]) == 4


def test_a_bake_serves_with_zero_compiles(tmp_path):
    bake, preset = tmp_path / "bake", "qwen3-32b-tq-mi355x"
    subprocess.run(
        [sys.executable, "-m", "zerojit", "bake", "--preset", preset, "--out", str(bake)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    assert (bake / BACKEND / "zerojit-manifest.json").is_file()
    served = zerojit("warmup", "--preset", preset, "--cache-dir", str(bake / BACKEND), "--require-baked")
    assert (served["compiled"], served["cached"], served["failed"]) == (0, 3, 0)
