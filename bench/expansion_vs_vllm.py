"""Key-space expansion: zerojit's declared spaces vs vLLM 0.33.0's AST-traced expansion, in one run.

vLLM expands a kernel's warmup space by interpreting `dispatch` through a restricted AST
evaluator (`jit_warmup.py`); zerojit declares the space and calls `dispatch` as plain
Python. Both expand the same kernel for the same server here (vLLM's code from its wheel,
with the stubs tests/vllm_oracle.py lists), and the key counts are checked equal first.

    .venv/bin/python bench/expansion_vs_vllm.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from vllm_oracle import Oracle  # noqa: E402

from zerojit.contract import ServingLimits  # noqa: E402
from zerojit.migrate.fa4_mla_prefill.kernel import FA4MLAPrefill, MLADims  # noqa: E402
from zerojit.migrate.inkling_rel_attention.kernel import InklingModel, InklingRelAttention  # noqa: E402


def timed(fn, repeats: int) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        count = len(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times), count


def report(name: str, ours, theirs, repeats: int) -> None:
    ours_s, ours_n = timed(ours, repeats)
    theirs_s, theirs_n = timed(theirs, repeats)
    print(f"{name}")
    print(f"  vLLM 0.33.0 AST-traced  {theirs_s * 1e3:9.2f} ms   {theirs_n} keys")
    print(f"  zerojit declared space  {ours_s * 1e3:9.2f} ms   {ours_n} keys")
    print(f"  zerojit is {theirs_s / ours_s:.1f}x faster")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    oracle = Oracle("0.33.0")

    # FA4 MLA prefill on B200 with a QK-128 layout (vLLM expands it; DeepSeek dims hit its defect).
    dims = MLADims(64, 64, 128)
    limits = ServingLimits(max_num_seqs=128, max_num_batched_tokens=16384, max_model_len=32768, arch="sm100")
    mla = FA4MLAPrefill()
    report("FA4 MLA prefill, sm100, dims (64, 64, 128), 16 heads",
           lambda: [k for k in mla.warmup_keys(limits, num_heads=16, dims=dims) if k.max_seqlen_q != 257],
           lambda: oracle.fa4_mla_keys(capability=(10, 0), qk_nope=64, qk_rope=64, v_head_dim=128,
                                       heads_per_rank=16, dtype=torch.bfloat16, forced_fa_version=None),
           args.repeats * 10)

    # Inkling on B200: the large space (2 layer kinds x query buckets x request counts).
    hf = types.SimpleNamespace(num_attention_heads=64, num_key_value_heads=8, head_dim=128, rel_extent=1024,
                               sliding_window_size=512, swa_num_attention_heads=64, swa_num_key_value_heads=8,
                               swa_head_dim=128)
    limits = ServingLimits(max_num_seqs=256, max_num_batched_tokens=8192, max_model_len=32768, tp_size=8,
                           arch="sm100")
    model = InklingModel(8, 1, 128, 1024, 512, 8, 1, 128)
    inkling = InklingRelAttention("sm100")
    report("Inkling relative attention, sm100, 64 heads TP8, 256 seqs x 8192 tokens",
           lambda: inkling.warmup_keys(limits, model=model),
           lambda: oracle.inkling_keys(capability=(10, 0), tp=8, hf_config=hf, dtype=torch.bfloat16,
                                       block_size=128, max_num_seqs=256, max_num_batched_tokens=8192,
                                       max_model_len=32768),
           max(1, args.repeats // 4))


if __name__ == "__main__":
    main()
