"""The lift's tensor views (`split`, `chunk`, `view`/`reshape`, `as_strided`) against torch's own.

A legacy step builds a kernel's inputs as views of one allocation (the packed projections a layer
splits); Triton's key sees each view's strides and, through its address, its 16-byte alignment. The
lift writes both symbolically; here each written expression is evaluated with numbers and compared
with what torch gives the same view of a real (meta) tensor.
"""

import ast

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zerojit.codemods.lift.evaluator import Scope
from zerojit.codemods.lift.provider import Lift
from zerojit.codemods.lift.values import LiftError, Tensor, Value
from zerojit.codemods.repo import RepoModules
from zerojit.migrate.engine_trees.releases import vllm_tree

pytestmark = pytest.mark.release_tree

SIZES = ("r", "a", "b", "c")
FUNCTION = ast.parse("def step():\n    pass\n").body[0]


def _scope(**tensors):
    lift = Lift(RepoModules(vllm_tree("0.33.0"), "vllm"), "vllm.model_executor.warmup.kernel_warmup", "launcher")
    env = {name: Value(name) for name in SIZES}
    env.update(tensors)
    return Scope(lift, "vllm.model_executor.warmup.kernel_warmup", FUNCTION, env)


def _numbers(tensor, sizes):
    """The written view's shape, strides and element offset, evaluated with the sizes."""
    value = lambda v: eval(v.code, {}, dict(sizes))  # noqa: E731 - a written size, in numbers
    return tuple(map(value, tensor.shape)), tuple(map(value, tensor.stride())), value(tensor.offset)


def _torch(view):
    return tuple(view.shape), view.stride(), view.storage_offset()


def _packed(width):
    return Tensor(Value("torch.float16"), (Value("r"), Value(width)))


@settings(max_examples=60, deadline=None)
@given(r=st.integers(1, 5), a=st.integers(1, 9), b=st.integers(1, 6), c=st.integers(1, 6))
def test_split_parts_and_a_reshaped_part_have_torchs_strides_and_offsets(r, a, b, c):
    sizes = dict(r=r, a=a, b=b, c=c)
    x = torch.empty(r, a + b * c, dtype=torch.float16, device="meta")
    scope = _scope(x=_packed("a + b * c"))
    first, second = scope.value(ast.parse("x.split([a, b * c], dim=-1)", mode="eval").body).items
    real_first, real_second = x.split([a, b * c], dim=-1)
    assert _numbers(first, sizes) == _torch(real_first) and _numbers(second, sizes) == _torch(real_second)
    reshaped = scope.value(ast.parse("x.split([a, b * c], dim=-1)[1].reshape(r, b, c)", mode="eval").body)
    assert _numbers(reshaped, sizes) == _torch(real_second.reshape(r, b, c))
    assert reshaped.code().count("aligned=") == 1  # at an offset: its alignment depends on a's bytes


@settings(max_examples=40, deadline=None)
@given(r=st.integers(1, 5), b=st.integers(1, 8), parts=st.sampled_from((2, 3, 4)))
def test_chunks_of_a_multiple_have_torchs_strides_and_offsets(r, b, parts):
    sizes = dict(r=r, a=parts, b=b, c=1)
    x = torch.empty(r, parts * b, dtype=torch.float16, device="meta")
    scope = _scope(x=_packed(f"{parts} * b"))
    chunks = scope.value(ast.parse(f"x.chunk({parts}, dim=-1)", mode="eval").body).items
    assert [_numbers(t, sizes) for t in chunks] == [_torch(t) for t in x.chunk(parts, dim=-1)]


def test_a_view_across_non_contiguous_dimensions_and_an_uncountable_split_are_refused():
    scope = _scope(x=_packed("a + b * c"))
    with pytest.raises(LiftError, match="cannot match"):  # (r, b*c) of a wider row: merging r with it is a copy
        scope.value(ast.parse("x.split([a, b * c], dim=-1)[1].view(r * b * c)", mode="eval").body)
    with pytest.raises(LiftError, match="cannot count"):  # how many parts of width b: not written in the sizes
        scope.value(ast.parse("x.split(b, dim=-1)", mode="eval").body)


def test_as_strided_takes_the_shape_and_strides_given():
    sizes = dict(r=3, a=4, b=5, c=2)
    x = torch.zeros(2 * 60, dtype=torch.bfloat16, device="meta")
    scope = _scope(x=Tensor(Value("torch.bfloat16"), (Value("2 * 60", 120),)))
    written = scope.value(ast.parse("x.as_strided((2, r, b, a), (60, b * a, a, 1))", mode="eval").body)
    assert _numbers(written, sizes) == _torch(x.as_strided((2, 3, 5, 4), (60, 20, 4, 1)))
