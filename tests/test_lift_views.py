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


@settings(max_examples=60, deadline=None)
@given(r=st.integers(2, 4), a=st.integers(1, 6), b=st.integers(2, 6))
def test_an_empty_like_has_the_strides_torch_gives_on_the_cpu_as_on_the_gpu(r, a, b):
    """A transposed tensor keeps its strides (also where a dimension has one element, which a meta tensor's
    `empty_like` lays out compact instead), a split part gets compact ones: checked against CPU tensors. (A size
    known only by name is taken as more than one: torch skips the strides of dimensions of one element.)"""
    sizes = dict(r=r, a=a, b=b, c=1)
    x, row = torch.empty(r, a + b, dtype=torch.float16), torch.empty(1, a + b, dtype=torch.float16)
    scope = _scope(x=_packed("a + b"), row=Tensor(Value("torch.float16"), (Value("1", 1), Value("a + b"))))
    for code, real in (
        ("x.t()", x.t()),
        ("row.t()", row.t()),
        ("x.split([a, b], dim=-1)[1]", x.split([a, b], dim=-1)[1]),
        ("x", x),
    ):
        made = scope.value(ast.parse(f"torch.empty_like({code})", mode="eval").body)
        assert _numbers(made, sizes)[:2] == _torch(torch.empty_like(real))[:2], code
    moved = [scope.value(ast.parse(f"x.t().to({to})", mode="eval").body) for to in ("x.device", "'cuda'")]
    assert all(_numbers(t, sizes) == _torch(x.t()) for t in moved)  # a move to a device keeps the layout
    cast = scope.value(ast.parse("x.t().to(x.device, torch.float32)", mode="eval").body)
    assert cast.dtype.code == "torch.float32" and _numbers(cast, sizes) == _torch(x.t().to(torch.float32))


@settings(max_examples=60, deadline=None)
@given(r=st.integers(2, 4), a=st.integers(2, 6), b=st.integers(2, 6))
def test_contiguous_and_clone_lay_out_as_torch_does_and_is_contiguous_answers_as_torch(r, a, b):
    """`.contiguous()` copies only what torch does not count contiguous (`row.t()`, an `(n, 1)` view with strides
    `(1, n)`, stays as it is), `.clone()` keeps a dense tensor's strides and lays out any other compact, and
    `.is_contiguous()` says what torch says: checked against CPU tensors, offsets included."""
    sizes = dict(r=r, a=a, b=b)
    x, row = torch.empty(r, a + b, dtype=torch.float16), torch.empty(1, a + b, dtype=torch.float16)
    cube = torch.empty(a, 1, b, dtype=torch.float16)
    half = Value("torch.float16")
    scope = _scope(
        x=_packed("a + b"),
        row=Tensor(half, (Value("1", 1), Value("a + b"))),
        cube=Tensor(half, (Value("a"), Value("1", 1), Value("b"))),
    )
    for code, real in (
        ("x", x),
        ("x.t()", x.t()),
        ("row.t()", row.t()),
        ("x.split([a, b], dim=-1)[1]", x.split([a, b], dim=-1)[1]),
        ("cube.transpose(0, 2)", cube.transpose(0, 2)),
        ("cube.transpose(0, 1)", cube.transpose(0, 1)),
    ):
        for method in ("contiguous", "clone"):
            made = scope.value(ast.parse(f"{code}.{method}()", mode="eval").body)
            assert _numbers(made, sizes) == _torch(getattr(real, method)()), (code, method)
        assert scope.value(ast.parse(f"{code}.is_contiguous()", mode="eval").body).known == real.is_contiguous(), code


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


def test_the_key_harness_makes_an_empty_like_of_a_gpu_tensor_as_the_gpu_does():
    """MetaAllocations (the key checks' stand-in for CUDA memory) gives `empty_like` the strides a CPU or CUDA
    tensor gets, where meta's own differs (a dimension of one element)."""
    from zerojit.migrate.triton_lifts.meta_memory import MetaAllocations

    cases = [lambda d: torch.empty(1, 48, device=d).t(), lambda d: torch.empty(6, 48, device=d)[:, 8:20]]
    cases += [lambda d: torch.empty(6, 48, device=d).t(), lambda d: torch.empty(2, 1, 3, device=d).transpose(0, 2)]
    for make in cases:
        with MetaAllocations():
            made = torch.empty_like(make("cuda"))
        assert made.is_meta and made.stride() == torch.empty_like(make("cpu")).stride()
    assert torch.empty_like(cases[0]("meta")).stride() != torch.empty_like(cases[0]("cpu")).stride()


@pytest.mark.parametrize(
    "kinds, choices",
    [
        ("bool", ("silu", None)),
        ("str", ("silu", "swish")),
        ("(str, type(None))", (None,)),
        ("str", ("silu", None)),
    ],
)
def test_a_type_test_of_a_domain_of_literals_is_decided_where_every_literal_answers_alike(kinds, choices):
    """`isinstance(activation, bool)` over a step's `for activation in ("silu", None)` (or of one value the tree
    fixes): Python's answer for each literal; where they differ, or a kind is not a builtin type's name
    (`type(None)`, which the test would otherwise leave out), the lift refuses."""
    if len(choices) == 1:  # a value the tree fixes
        scope = _scope(activation=Value(repr(choices[0]), choices[0]))
    else:
        scope = _scope(activation=Value("activation"))
        scope.lift.choices["activation"] = choices
    test = ast.parse(f"isinstance(activation, {kinds})", mode="eval").body
    answers = {isinstance(value, eval(kinds)) for value in choices}
    if len(answers) > 1 or "type(" in kinds:
        with pytest.raises(LiftError, match="a type test the lift cannot decide"):
            scope.value(test)
    else:
        (answer,) = answers
        assert scope.value(test) == Value(repr(answer), answer)


def test_a_type_test_of_a_tensor_against_a_kind_that_is_no_builtin_name_is_refused():
    """`isinstance(x, (int, torch.Tensor))` holds for a tensor: only a test against builtin types alone is decided
    False for one."""
    scope = _scope(x=_packed("a"))
    assert scope.value(ast.parse("isinstance(x, (int, float))", mode="eval").body) == Value("False", False)
    with pytest.raises(LiftError, match="a type test the lift cannot decide"):
        scope.value(ast.parse("isinstance(x, (int, torch.Tensor))", mode="eval").body)
