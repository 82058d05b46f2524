"""On a GPU host: serve vLLM's gated RMS norm from a Triton cache baked compile-only, counting compiles.

Triton's real driver, real tensors: vLLM 0.33.0's own `layer_norm_fwd` (run from the release's tree)
normalises a Qwen3-Next TP4 step of every token count 1..TOKENS (8 value heads x 128 per token, gated
by SiLU), as the GDN layer does. Triton's compilation listener counts real compiles and disk-cache
loads; each output is compared with an fp32 torch reference. Prints one JSON line.

    python bench/h200_triton_serve.py CACHE_DIR [TOKENS]
"""

import json
import os
import sys
import time

import torch
import torch.nn.functional as F
import triton

from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.engine_trees.sources import EngineSources
from zerojit.migrate.fla_layer_norm.engine_kernel import KERNEL_MODULE, KERNEL_RELEASE
from zerojit.migrate.fla_layer_norm.presets import QWEN3_NEXT_TP4

EPS = 1e-6


def main(cache_dir: str, tokens: int) -> dict:
    counts = {"compiled": 0, "loaded": 0}

    def listen(*, cache_hit: bool, **_: object) -> None:
        counts["loaded" if cache_hit else "compiled"] += 1

    triton.knobs.cache.dir = cache_dir
    triton.knobs.compilation.listener = listen
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    sources = EngineSources(
        vllm_tree(KERNEL_RELEASE),
        "vllm",
        (KERNEL_MODULE, "vllm.utils.math_utils"),
        {
            "vllm.triton_utils": {"triton": triton, "tl": triton.language},
            "vllm.utils.platform_utils": {"num_compute_units": lambda device_id=0: sms},
        },
    )
    with sources.installed():
        norm_fwd = sources.module(KERNEL_MODULE).layer_norm_fwd
    width, rows = QWEN3_NEXT_TP4.group_size, QWEN3_NEXT_TP4.rows_per_token
    weight = torch.randn(width, dtype=torch.bfloat16, device="cuda")
    worst, started = 0.0, time.perf_counter()
    for count in range(1, tokens + 1):
        x = torch.randn(count * rows, width, dtype=torch.bfloat16, device="cuda")
        z = torch.randn_like(x)
        out, _, _ = norm_fwd(
            x, weight, None, EPS, z=z, group_size=width, norm_before_gate=True, is_rms_norm=True, activation="silu"
        )
        xf = x.float()
        reference = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * weight.float() * F.silu(z.float())
        worst = max(worst, (out.float() - reference).abs().max().item())
    torch.cuda.synchronize()
    return {
        "device": torch.cuda.get_device_name(0),
        "sms": sms,
        "triton": triton.__version__,
        "cache_manager": os.environ.get("TRITON_CACHE_MANAGER", "Triton's stock FileCacheManager"),
        "launches": tokens,
        **counts,
        "max_abs_error_vs_fp32": worst,
        "seconds": round(time.perf_counter() - started, 2),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8192)))
