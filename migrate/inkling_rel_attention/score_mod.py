"""The CuTe DSL `score_mod` that adds Inkling's relative-position bias inside FA4.

For query token q (position within its sequence, counted from the end of the KV so
that q sees KV length - query length earlier tokens) and key position k, the distance is
d = q + (seqlen_k - seqlen_q) - k. The bias is rel_logits[token, head, d] when
0 <= d < rel_extent and 0 otherwise; rel_logits is the aux tensor of shape
(total query tokens, heads, rel_extent), indexed by the token's global row.
"""

from __future__ import annotations

import functools
import hashlib
import inspect


@functools.cache
def relative_bias_score_mod(rel_extent: int):
    """One score_mod per bias width (it is compiled into the kernel)."""
    import cutlass
    import cutlass.cute as cute

    last = rel_extent - 1

    @cute.jit
    def add_relative_bias(scores, batch_idx, head_idx, q_idx, kv_idx, seqlen_info, aux_tensors):
        table = aux_tensors[0]
        query = q_idx[0]
        distance = query + (seqlen_info.seqlen_k - seqlen_info.seqlen_q) - kv_idx[0]
        index = distance if distance > 0 else 0
        index = index if index < last else last
        bias = cutlass.Float32(table[seqlen_info.offset_q + query, head_idx[0], index])
        return scores + (bias if index == distance else cutlass.Float32(0.0))

    # FA4 keys a score_mod by its source and the repr of its closure cells; these close over the
    # cutlass modules, whose repr holds the install path, so a cache baked elsewhere would miss.
    # What the generated code depends on is this source and the bias width: hash exactly that.
    source = inspect.getsource(relative_bias_score_mod)
    add_relative_bias.__cute_hash__ = hashlib.sha256(f"{source}\nrel_extent={rel_extent}".encode()).hexdigest()
    return add_relative_bias
