"""Serving limits are refused with a message naming the field and the rule."""

import pytest

from zerojit.contract import LimitsError, ServingLimits

GOOD = dict(max_num_seqs=16, max_num_batched_tokens=8192, max_model_len=32768)


def test_good_limits_and_derived_query_lengths():
    limits = ServingLimits(**GOOD, spec_query_lens=(2, 4))
    assert limits.max_query_len == 4
    assert limits.decode_query_lens == (1, 2, 4)
    assert ServingLimits.from_mapping({**GOOD, "spec_query_lens": [2]}).spec_query_lens == (2,)


@pytest.mark.parametrize(
    "changes, field, rule",
    [
        ({"max_num_seqs": 0}, "max_num_seqs", "at least 1"),
        ({"max_num_seqs": -4}, "max_num_seqs", "at least 1"),
        ({"max_num_batched_tokens": 0}, "max_num_batched_tokens", "at least 1"),
        ({"max_model_len": -1}, "max_model_len", "at least 1"),
        ({"tp_size": 0}, "tp_size", "at least 1"),
        ({"max_num_seqs": 2.5}, "max_num_seqs", "must be an integer"),
        ({"max_num_seqs": True}, "max_num_seqs", "must be an integer"),
        ({"arch": "sm75"}, "arch", "unknown arch"),
        ({"dtype": "int4"}, "dtype", "must be one of"),
        ({"kv_cache_dtype": "fp4"}, "kv_cache_dtype", "must be one of"),
        ({"spec_query_lens": (1,)}, "spec_query_lens", "at least 2"),
        ({"spec_query_lens": (4, 2)}, "spec_query_lens", "strictly increasing"),
        ({"spec_query_lens": "2"}, "spec_query_lens", "must be a tuple"),
        ({"max_num_seqs": 512, "max_num_batched_tokens": 256}, "max_num_batched_tokens", "needs 512 tokens per step"),
        (
            {"max_num_seqs": 16, "max_num_batched_tokens": 32, "spec_query_lens": (4,)},
            "max_num_batched_tokens",
            "needs 64 tokens per step",
        ),
        ({"max_model_len": 2, "spec_query_lens": (4,)}, "max_model_len", "smaller than one step"),
        ({"enable_chunked_prefill": False}, "max_model_len", "without chunked prefill"),
    ],
)
def test_bad_limits_are_refused_by_field_and_rule(changes, field, rule):
    with pytest.raises(LimitsError, match=rule) as info:
        ServingLimits(**{**GOOD, **changes})
    assert info.value.field == field
    assert f"serving limit {field}=" in str(info.value)


def test_unknown_and_missing_fields_from_a_mapping():
    with pytest.raises(LimitsError, match="unknown serving limit"):
        ServingLimits.from_mapping({**GOOD, "max_seqs": 4})
    with pytest.raises(LimitsError, match="is required") as info:
        ServingLimits.from_mapping({"max_num_seqs": 4, "max_num_batched_tokens": 64})
    assert info.value.field == "max_model_len"
