"""Key-space expansion: zerojit's declared spaces vs vLLM 0.29.0's AST-traced expansion, in one run.

vLLM expands a kernel's warmup space by interpreting `dispatch` through a restricted AST
evaluator (`jit_warmup.py`); zerojit declares the space and calls `dispatch` as plain
Python. Both expand the same kernel for the same server here: vLLM's standalone warmup
runs from its release tree (the family's legacy side, migrate/engine_trees/warmup.py), and the
key counts are printed side by side (zerojit's Sq = 257 probes are left out of its count).

    .venv/bin/python bench/expansion_vs_vllm.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from zerojit.migrate.fa4_mla_prefill.equivalence import FA4MLAEquivalence, MLAConfig
from zerojit.migrate.fa4_mla_prefill.kernel import MULTI_BLOCK_Q, MLADims
from zerojit.migrate.inkling_rel_attention.equivalence import InklingConfig, InklingEquivalence


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
    print(f"  vLLM 0.29.0 AST-traced  {theirs_s * 1e3:9.2f} ms   {theirs_n} keys")
    print(f"  zerojit declared space  {ours_s * 1e3:9.2f} ms   {ours_n} keys")
    print(f"  zerojit is {theirs_s / ours_s:.1f}x faster")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    # FA4 MLA prefill on B200 with a QK-128 layout (vLLM expands it; DeepSeek dims hit its defect).
    fa4, config = FA4MLAEquivalence(), MLAConfig("sm100", MLADims(64, 64, 128), total_heads=128, tp_size=8)
    report(
        "FA4 MLA prefill, sm100, dims (64, 64, 128), 16 heads per rank",
        lambda: [k for k in fa4.family_keys(config) if f'"max_seqlen_q":{MULTI_BLOCK_Q}' not in k],
        lambda: fa4.legacy.standalone_keys(config),
        args.repeats * 10,
    )

    # Inkling on B200: the large space (2 layer kinds x query buckets x request counts).
    inkling, config = (
        InklingEquivalence(),
        InklingConfig("sm100", "inkling-64h", tp_size=8, scheduler=(256, 8192, 32768)),
    )
    report(
        "Inkling relative attention, sm100, 64 heads TP8, 256 seqs x 8192 tokens",
        lambda: inkling.family_keys(config),
        lambda: inkling.legacy.standalone_keys(config),
        max(1, args.repeats // 4),
    )


if __name__ == "__main__":
    main()
