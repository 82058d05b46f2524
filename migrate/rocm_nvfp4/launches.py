"""Random in-range serving steps, and the launches each step makes of every launcher.

A step is what the scheduler hands the model: some prefill chunks (each with its
context length) and some decode requests at one query length. The launches derived from
it are the inputs the real forward pass gives each launcher's dispatch. The first steps
are the edges that matter (two 8K prompts in one step, a full decode batch at the longest
context, a one-token step); the rest are drawn at random inside the limits.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

from zerojit.contract import JitKernel, ServingLimits

from .kernel import FusedNormRopeKVInsert, IndexDecode, IndexPrefill, SparseDecode, SparsePrefill, TopK

PUBLISHED_PROMPT_TOKENS = 8192  # the published MI355X workload: 8K-token prompts


@dataclasses.dataclass(frozen=True)
class Step:
    prefill_chunks: tuple[int, ...] = ()  # query tokens of each prefill chunk this step
    prefill_contexts: tuple[int, ...] = ()  # context length of each of those sequences
    decode_reqs: int = 0
    decode_query_len: int = 1
    decode_max_context: int = 0

    @property
    def num_tokens(self) -> int:
        return sum(self.prefill_chunks) + self.decode_reqs * self.decode_query_len


def edge_steps(limits: ServingLimits) -> list[Step]:
    prompt = min(PUBLISHED_PROMPT_TOKENS, limits.max_model_len)
    edges = [
        Step(
            decode_reqs=limits.max_num_seqs,
            decode_query_len=limits.max_query_len,
            decode_max_context=limits.max_model_len,
        ),
        Step(decode_reqs=1, decode_max_context=1),
        Step(prefill_chunks=(1,), prefill_contexts=(1,)),
    ]
    if 2 * prompt <= limits.max_num_batched_tokens and limits.max_num_seqs >= 2:
        edges.insert(0, Step(prefill_chunks=(prompt, prompt), prefill_contexts=(prompt, prompt)))
    return edges


def random_step(rng: random.Random, limits: ServingLimits) -> Step:
    decode_reqs = rng.randint(0, limits.max_num_seqs - 1)
    query_len = rng.choice(limits.decode_query_lens)
    budget = limits.max_num_batched_tokens - decode_reqs * query_len
    chunks, contexts = [], []
    for _ in range(rng.randint(0 if decode_reqs else 1, limits.max_num_seqs - decode_reqs)):
        if budget <= 0:
            break
        chunk = rng.randint(1, min(budget, limits.max_model_len))
        chunks.append(chunk)
        contexts.append(rng.randint(chunk, limits.max_model_len))
        budget -= chunk
    max_context = rng.randint(query_len, limits.max_model_len) if decode_reqs else 0
    return Step(tuple(chunks), tuple(contexts), decode_reqs, query_len, max_context)


def launches_of(step: Step, launchers: dict[type, JitKernel]) -> list[tuple[JitKernel, dict[str, Any]]]:
    """The launch inputs each launcher sees while the model runs `step`."""
    out: list[tuple[JitKernel, dict[str, Any]]] = [(launchers[FusedNormRopeKVInsert], {"num_tokens": step.num_tokens})]
    if step.prefill_chunks:
        longest = max(step.prefill_contexts)
        out += [
            (launchers[SparsePrefill], {"max_context_len": longest}),
            (launchers[IndexPrefill], {"num_prefill_tokens": sum(step.prefill_chunks)}),
            (launchers[TopK], {"context_len": longest, "decode": False}),
        ]
    if step.decode_reqs:
        out += [
            (launchers[SparseDecode], {"num_reqs": step.decode_reqs, "query_len": step.decode_query_len}),
            (
                launchers[IndexDecode],
                {
                    "num_reqs": step.decode_reqs,
                    "query_len": step.decode_query_len,
                    "max_context_len": step.decode_max_context,
                },
            ),
            (launchers[TopK], {"context_len": step.decode_max_context, "decode": True}),
        ]
    return out


def step_launches(
    launchers: tuple[JitKernel, ...], limits: ServingLimits, per_launcher: int, seed: int
) -> list[tuple[JitKernel, dict[str, Any]]]:
    """At least `per_launcher` launches of every launcher: the edge steps first, then random steps."""
    by_type = {type(launcher): launcher for launcher in launchers}
    rng = random.Random(seed)
    counts = {launcher.name: 0 for launcher in launchers}
    launches = []
    steps = iter(edge_steps(limits))
    while min(counts.values()) < per_launcher:
        step = next(steps, None) or random_step(rng, limits)
        for launcher, inputs in launches_of(step, by_type):
            launches.append((launcher, inputs))
            counts[launcher.name] += 1
    return launches


def sample_launches(
    preset: Any, kernels: Sequence[JitKernel], per_kernel: int, seed: int
) -> list[tuple[JitKernel, dict[str, Any]]]:
    """The family's verification hook: launches of every launcher from in-range steps of the preset's server."""
    return step_launches(tuple(kernels), preset.limits, per_kernel, seed)
