"""A provider's integer sizes written as the polynomials they are: every rewrite is evaluated against the original
over a grid of integers (brute force), and what is not exactly a polynomial of integers is left as written."""

import ast
import itertools

import pytest

from zerojit.codemods.lift import polynomials

# The recurrent KDA step's locals, as its provider writes them (a loop's values are a domain, not a polynomial).
LOCALS = {
    "h": "int(local_num_heads)",
    "tokens_per_sequence": "spec + 1 if spec > 0 else None",
    "num_sequences": "WarmupChoices(*profiles(h))",
    "num_tokens": "num_sequences * tokens_per_sequence",
}
# What the provider returns: tensor sizes say which names are integers (`num_sequences`), as `int(...)` does (`h`).
SIZES = ["TritonWarmupTensor(torch.int32, shape=(num_sequences, tokens_per_sequence))"]
CASES = {
    # torch.arange(0, num_tokens + 1, tokens_per_sequence) has this many elements, one per sequence and one more
    "(num_tokens + 1 + (tokens_per_sequence - 1)) // tokens_per_sequence": "num_sequences + 1",
    "h * ((num_tokens + 1 + (tokens_per_sequence - 1)) // tokens_per_sequence - 1)": "h * num_sequences",
    "(h * 4 + h * 4) * itemsize % 16": "8 * h * itemsize % 16",
    "(2 * h - 2) // 2 - h": "-1",
    "(num_tokens + 15) // 16": None,  # not exact: a ceiling stays as written
    "(h * 3) // 2": None,  # 3 is no multiple of 2
    "(4 * x) // 2": None,  # x is no integer the provider knows of: floor(2x) is not 2x for x = 0.5
    "3 * h * num_tokens": None,  # written out through its locals it would be longer
}


def parse(code: str) -> ast.expr:
    return ast.parse(code, mode="eval").body


def written(code: str) -> str:
    definitions = {name: parse(value) for name, value in LOCALS.items()}
    (result,) = polynomials.quotients([parse(code)], definitions, [parse(s) for s in SIZES])
    return ast.unparse(result)


@pytest.mark.parametrize("code", CASES)
def test_a_polynomial_of_integers_is_written_as_it_is_where_that_is_shorter(code):
    assert written(code) == (CASES[code] or ast.unparse(parse(code)))


@pytest.mark.parametrize("code", CASES)
def test_every_rewrite_computes_what_the_original_did(code):
    for sequences, spec, heads, x, itemsize in itertools.product(
        (1, 3, 7, 49), (1, 2, 5), (1, 2, 3, 8), (1, 2), (1, 2)
    ):
        values = {"num_sequences": sequences, "tokens_per_sequence": spec + 1, "h": heads, "x": x, "itemsize": itemsize}
        values["num_tokens"] = sequences * (spec + 1)
        assert eval(written(code), {}, values) == eval(code, {}, values), (code, values)


def test_nothing_is_rewritten_in_place():
    tree = parse("h * ((num_tokens + 1 + (tokens_per_sequence - 1)) // tokens_per_sequence - 1)")
    before = ast.dump(tree)
    polynomials.quotients([tree], {name: parse(v) for name, v in LOCALS.items()}, [parse(s) for s in SIZES])
    assert ast.dump(tree) == before


def test_only_arithmetic_of_int_locals_is_safe_to_compute_ahead_of_a_branch():
    """A provider's locals run before its `_when`s: `tokens_per_sequence` is None where the guard drops the case,
    so `3 * tokens_per_sequence` could raise there; `3 * h` cannot, nor can a product of literals."""
    total = polynomials.total({name: parse(value) for name, value in LOCALS.items()})
    assert total(parse("3 * h * h - h")) and total(parse("2 * 8"))
    for code in ("3 * tokens_per_sequence", "h // 2", "h * x", "h.bit_length()"):
        assert not total(parse(code)), code
