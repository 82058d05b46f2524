"""Compile keys (canonical JSON, digest, order) and key-space expansion."""

import dataclasses
import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zerojit.contract import Choice, CompileKey, Product, Range, Zip, expand


@dataclasses.dataclass(frozen=True)
class DemoKey(CompileKey):
    heads: int
    causal: bool
    window: tuple[int, int]
    bucket: int | None


def test_canonical_json_is_sorted_compact_and_round_trips():
    key = DemoKey(heads=16, causal=True, window=(-1, -1), bucket=None)
    assert key.to_json() == '{"bucket":null,"causal":true,"heads":16,"window":[-1,-1]}'
    assert DemoKey.from_json(key.to_json()) == key
    assert hash(DemoKey.from_json(key.to_json())) == hash(key)


def test_digest_is_sha256_of_type_and_canonical_json():
    key = DemoKey(heads=8, causal=False, window=(127, 0), bucket=4)
    expected = hashlib.sha256(b'DemoKey:{"bucket":4,"causal":false,"heads":8,"window":[127,0]}').hexdigest()[:16]
    assert key.digest() == expected


def test_from_json_names_unknown_and_missing_fields():
    with pytest.raises(ValueError, match=r"unknown \['extra'\], missing \['window'\]"):
        DemoKey.from_json(json.dumps({"heads": 1, "causal": True, "bucket": None, "extra": 2}))


def test_key_fields_refuse_unhashable_values():
    with pytest.raises(TypeError, match=r"DemoKey.window=\[1, 2\]"):
        DemoKey(heads=1, causal=True, window=[1, 2], bucket=None)


def test_keys_order_with_none_after_numbers():
    a = DemoKey(1, False, (0, 0), 2)
    b = DemoKey(1, False, (0, 0), None)
    c = DemoKey(0, True, (0, 0), None)
    assert sorted([b, a, c]) == [c, a, b]


keys = st.builds(
    DemoKey,
    st.integers(-5, 1 << 40),
    st.booleans(),
    st.tuples(st.integers(-1, 10**6), st.integers(-1, 10**6)),
    st.none() | st.integers(0, 64),
)


@given(keys)
def test_round_trip_property(key):
    assert DemoKey.from_json(key.to_json()) == key
    assert DemoKey.from_json(key.to_json()).digest() == key.digest()


def test_powers_of_two_range_visits_stop():
    assert [p["n"] for p in Range.powers_of_two("n", 1, 100)] == [1, 2, 4, 8, 16, 32, 64, 100]
    assert [p["n"] for p in Range.powers_of_two("n", 1, 64)] == [1, 2, 4, 8, 16, 32, 64]
    assert [p["n"] for p in Range.powers_of_two("n", 3, 20)] == [3, 4, 8, 16, 20]


def test_custom_progression_and_step():
    # Inkling-style buckets: next power of two strictly above, plus one.
    def nxt(v):
        return (1 << v.bit_length()) + 1

    assert [p["q"] for p in Range("q", 1, 40, step=nxt)] == [1, 3, 5, 9, 17, 33, 40]
    assert [p["q"] for p in Range("q", 0, 10, step=4)] == [0, 4, 8, 10]


def test_non_increasing_progression_is_refused():
    with pytest.raises(ValueError, match="must increase"):
        list(Range("q", 1, 10, step=lambda v: v))


def test_product_order_last_axis_fastest_and_zip_lockstep():
    space = Zip([{"kind": "global", "window": -1}, {"kind": "local", "window": 127}]) * Choice("causal", (False, True))
    assert [tuple(p.values()) for p in space] == [
        ("global", -1, False),
        ("global", -1, True),
        ("local", 127, False),
        ("local", 127, True),
    ]
    assert space.axes == ("kind", "window", "causal")


def test_product_refuses_shared_axes_and_zip_refuses_ragged_rows():
    with pytest.raises(ValueError, match=r"share axes \['a'\]"):
        Product(Choice("a", (1,)), Choice("a", (2,)))
    with pytest.raises(ValueError, match="row 1 has axes"):
        Zip([{"a": 1, "b": 2}, {"a": 1}])


def test_predicate_sees_whole_point():
    space = (Range("q", 1, 4) * Range("n", 1, 4)).where(lambda p: p["q"] + p["n"] <= 5)
    points = [(p["q"], p["n"]) for p in space]
    assert points == [(q, n) for q in range(1, 5) for n in range(1, 5) if q + n <= 5]


def test_expand_dedups_in_first_seen_order_and_skips_none():
    calls = []

    def dispatch(n, causal):
        calls.append((n, causal))
        if n == 3:
            return None
        return DemoKey(heads=1, causal=causal, window=(-1, -1), bucket=min(n, 2))

    keys = expand(Range("n", 1, 4) * Choice("causal", (True, False)), dispatch)
    assert len(calls) == 8  # dispatch is called once per point, as ordinary code
    assert [(k.bucket, k.causal) for k in keys] == [(1, True), (1, False), (2, True), (2, False)]


def test_expansion_is_lazy():
    """A huge product is not materialized: taking the first points is immediate."""
    space = Range("a", 1, 10**9) * Choice("b", (1, 2))
    first = [p for _, p in zip(range(3), space)]
    assert first == [{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 1}]
