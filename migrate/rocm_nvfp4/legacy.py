"""The legacy form: a standalone warmup sweep, as the engine's warmup modules wrote it.

Kept as the pre-migration reference. The orchestrator calls it for every model; it
returns early unless MiniMax M3 was imported, then drives each launcher through the
"usual" sweep: one prompt at each power-of-two length, and decode batches of every size
at power-of-two contexts. It never puts two long prompts in one step, so the large
index-prefill kernel is left to compile inside the first request that does.
"""

from __future__ import annotations

import copy
import sys
import types
from typing import Any

from zerojit.contract import JitKernel, Range, ServingLimits

from .kernel import FusedNormRopeKVInsert, IndexDecode, IndexPrefill, SparseDecode, SparsePrefill, TopK

MODEL_MODULE = "vllm.model_executor.models.minimax_m3"


def legacy_launches(limits: ServingLimits, launchers: tuple[JitKernel, ...]) -> list[tuple[JitKernel, dict[str, Any]]]:
    by_type = {type(launcher): launcher for launcher in launchers}
    launches: list[tuple[JitKernel, dict[str, Any]]] = []
    longest_prompt = min(limits.max_model_len, limits.max_num_batched_tokens)
    for point in Range.powers_of_two("tokens", 1, longest_prompt):
        tokens = point["tokens"]
        launches += [
            (by_type[FusedNormRopeKVInsert], {"num_tokens": tokens}),
            (by_type[SparsePrefill], {"max_context_len": tokens}),
            (by_type[IndexPrefill], {"num_prefill_tokens": tokens}),
            (by_type[TopK], {"context_len": tokens, "decode": False}),
        ]
    for reqs in range(1, limits.max_num_seqs + 1):
        for query_len in limits.decode_query_lens:
            launches.append((by_type[FusedNormRopeKVInsert], {"num_tokens": reqs * query_len}))
            launches.append((by_type[SparseDecode], {"num_reqs": reqs, "query_len": query_len}))
            for point in Range.powers_of_two("context", query_len, limits.max_model_len):
                context = point["context"]
                launches.append(
                    (by_type[IndexDecode], {"num_reqs": reqs, "query_len": query_len, "max_context_len": context})
                )
                launches.append((by_type[TopK], {"context_len": context, "decode": True}))
    return launches


def rocm_nvfp4_kv_warmup(limits: ServingLimits, launchers: tuple[JitKernel, ...]) -> int:
    """Legacy entry point: warm the launchers if this process serves MiniMax M3; returns launches made."""
    if MODEL_MODULE not in sys.modules:
        return 0
    launches = legacy_launches(limits, launchers)
    for launcher, inputs in launches:
        launcher.launch(**inputs)
    return len(launches)


def _recording(launcher: JitKernel, keys: set) -> JitKernel:
    """A copy of the launcher whose launches record their key instead of running."""
    clone = copy.copy(launcher)
    clone.launch = lambda **inputs: keys.add(launcher.dispatch(**inputs))
    return clone


def legacy_keys(limits: ServingLimits, launchers: tuple[JitKernel, ...], serving_minimax: bool) -> set:
    """The keys the legacy entry point launches (run for real, each launch recorded instead of compiled)."""
    keys: set = set()
    saved = sys.modules.get(MODEL_MODULE)
    if serving_minimax:
        sys.modules[MODEL_MODULE] = types.ModuleType(MODEL_MODULE)  # the model module is imported when served
    else:
        sys.modules.pop(MODEL_MODULE, None)
    try:
        rocm_nvfp4_kv_warmup(limits, tuple(_recording(launcher, keys) for launcher in launchers))
    finally:
        sys.modules.pop(MODEL_MODULE, None)
        if saved is not None:
            sys.modules[MODEL_MODULE] = saved
    return keys
