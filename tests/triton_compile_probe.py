"""Compile-only Triton checks run in a child process (see test_triton_family.py).

Triton's LLVM and its process-wide driver stay out of the pytest process; each check runs here
and prints its observations as JSON for the test to assert on.
Usage: python triton_compile_probe.py CHECK CACHE_DIR
"""

import json
import sys
import warnings

from zerojit.contract.backends import triton as triton_backend
from zerojit.contract.monitor import JitAfterWarmupWarning, JitMonitor


def jit_hook_oracle(configs):
    """Per config: what Triton would compile for vLLM 0.33.0's own standalone warmup, and for zerojit's keys."""
    from zerojit.migrate.engine_trees.releases import vllm_tree
    from zerojit.migrate.engine_trees.warmup import TreeWarmup
    from zerojit.migrate.fla_layer_norm.engine_kernel import engine_kernel
    from zerojit.migrate.fla_layer_norm.equivalence import GdnConfig
    from zerojit.migrate.fla_layer_norm.legacy import LEGACY_RELEASE, GdnEngine
    from zerojit.migrate.fla_layer_norm.model import layer_norm_kernel
    from zerojit.migrate.fla_layer_norm.spec import SPEC

    tree = TreeWarmup(vllm_tree(LEGACY_RELEASE), SPEC, GdnEngine(), run_compiles=True)
    out = []
    for fields in configs:
        config = GdnConfig(**{**fields, "scheduler": tuple(fields["scheduler"])})
        with triton_backend.jit_keys_recorded() as legacy:
            tree.standalone_keys(config)
        kernel = layer_norm_kernel(config.num_sms)
        with triton_backend.jit_keys_recorded() as migrated:
            for key in kernel.warmup_keys(config.limits(), norm=config.norm()):
                args, kwargs = kernel.warmup_arguments(key)
                engine_kernel().warmup(*args, **kwargs)
        out.append({"legacy": sorted(map(list, legacy)), "migrated": sorted(map(list, migrated))})
    return out


def compile_once():
    """One key compiled for real: a cubin, then an in-memory hit; an unwarmed variant after warmup is reported."""
    from zerojit.contract import ServingLimits
    from zerojit.migrate.fla_layer_norm.engine_kernel import engine_kernel
    from zerojit.migrate.fla_layer_norm.kernel import GatedNorm
    from zerojit.migrate.fla_layer_norm.model import layer_norm_kernel

    kernel = layer_norm_kernel(132)
    norm = GatedNorm(rows_per_token=8, group_size=128, weight_dtype="bf16", norm_before_gate=True, activation="silu")
    limits = ServingLimits(max_num_seqs=4, max_num_batched_tokens=16, max_model_len=64)
    keys = kernel.warmup_keys(limits, norm=norm)
    first = kernel.compile(keys[0])
    args, kwargs = kernel.warmup_arguments(keys[0])
    compiled = engine_kernel().warmup(*args, **kwargs)  # the variant the process holds
    facts = {
        "first": first.value,
        "again": kernel.compile(keys[0]).value,
        "variants": kernel.variant_count(),
        "cubin_magic": compiled.asm["cubin"][:4].hex(),
        "cubin_bytes": len(compiled.asm["cubin"]),
        "target": str(compiled.metadata.target),
        "keys": len(keys),
    }
    with warnings.catch_warnings(), JitMonitor("warn").armed() as monitor:
        warnings.simplefilter("ignore", JitAfterWarmupWarning)
        kernel.launch(**{**kernel.launch_shape(limits, norm), "num_rows": 8 * 10_000})  # past the limits
        facts["events"] = [str(event) for event in monitor.events]
    facts["variants_after"] = kernel.variant_count()
    return facts


def refusals(cache_dir):
    """One target per process, and NVIDIA or AMD targets only: each refusal's one line."""
    seen = {}
    for arch in ("sm100", "gfx950", "tpu7"):
        try:
            triton_backend.configure(arch, cache_dir)
        except triton_backend.BackendConfigError as exc:
            seen[arch] = str(exc)
    triton_backend.configure("sm90", cache_dir)  # the same target again is fine
    return seen


if __name__ == "__main__":
    check, cache_dir = sys.argv[1], sys.argv[2]
    triton_backend.configure("sm90", cache_dir)
    if check == "refusals":
        print(json.dumps(refusals(cache_dir)))
    elif check == "oracle":
        print(json.dumps(jit_hook_oracle(json.loads(sys.argv[3]))))
    elif check == "compile":
        print(json.dumps(compile_once()))
