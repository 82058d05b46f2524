"""Triton compile checks run in a child process (Triton's LLVM is kept out of the pytest process).

Compiles a small Triton kernel for sm_90 for real (`triton.compile` with an explicit
target needs no GPU) under armed JIT monitors, and prints what they saw as JSON.
"""

import json
import warnings

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

from zerojit.contract.backends import triton as triton_backend
from zerojit.contract.monitor import JitAfterWarmupError, JitMonitor


@triton.jit
def scale(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)


def source(block):
    return triton.compiler.ASTSource(
        fn=scale, signature={"x": "*fp32", "y": "*fp32", "n": "i32"}, constexprs={"BLOCK": block}
    )


if __name__ == "__main__":
    triton_backend.install_compile_hook()
    facts = {}
    quiet = triton.compile(source(64), target=GPUTarget("cuda", 90, 32))  # before warmup ends: not reported
    facts["cubin_bytes"] = len(quiet.asm["cubin"])
    with warnings.catch_warnings(record=True) as caught, JitMonitor("warn").armed() as monitor:
        warnings.simplefilter("always")
        triton.compile(source(128), target=GPUTarget("cuda", 90, 32))
        facts["warn_events"] = [str(e) for e in monitor.events]
        facts["warnings"] = [str(w.message) for w in caught if "after warmup" in str(w.message)]
    with JitMonitor("error").armed():
        try:
            triton.compile(source(256), target=GPUTarget("cuda", 90, 32))
        except JitAfterWarmupError as exc:
            facts["error"] = str(exc)
    facts["jit_cache_hook_installed"] = triton.knobs.runtime.jit_cache_hook is not None
    print(json.dumps(facts))
