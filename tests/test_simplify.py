"""Written gates and providers say each value once and mean what they meant: every simplification is evaluated
against the original over a grid of inputs (brute force), and no subexpression of SHARED_SIZE nodes is left twice."""

import ast
import dataclasses
import itertools
import types
from collections import Counter

import pytest
import torch

from zerojit.codemods import simplify
from zerojit.codemods.lift.evaluator import Scope
from zerojit.codemods.lift.provider import Lift
from zerojit.codemods.lift.values import MaybeTensor, Tensor, Value, choice_of
from zerojit.codemods.repo import RepoModules


def cdiv(a, b):
    return -(-a // b)


def evaluate(code: str, values: dict) -> object:
    return eval(compile(code, "<gate>", "eval"), {"cdiv": cdiv, **values})  # globals: comprehensions see them


def repeated(code: str) -> list[str]:
    tree = ast.parse(code, mode="eval")
    counts = Counter(
        ast.dump(n) for n in ast.walk(tree) if isinstance(n, ast.expr) and simplify.size(n) >= simplify.SHARED_SIZE
    )
    return [dump for dump, count in counts.items() if count > 1]


CONFIGS = [
    types.SimpleNamespace(layers=layers, **({} if block is None else {"block": block}))
    for layers, block in itertools.product((0, 1, 7, 12, 27), (None, 1, 4, 12, 30))
]

GATES = [
    # the Kimi-K3 gate as the tree's guards spell it: a lookup three times, `not a < b`, a spelled-out ceiling
    "getattr(cfg, 'block', None) is not None and not (cfg.layers + getattr(cfg, 'block', None) - 1) "
    "// getattr(cfg, 'block', None) < 2",
    "not cfg.layers >= 12 and cfg.layers != 0",
    "flag and (cfg.layers + 4 - 1) // 4 > 1",
    # a lookup first made in a keyword argument, a comprehension, a dict display; a name the gate reads already
    "dict(a=getattr(cfg, 'layers', 0) + 1)['a'] > 2 and getattr(cfg, 'layers', 0) + 1 > 3",
    "any(getattr(cfg, 'layers', 0) + 1 > i for i in (1, 9)) and getattr(cfg, 'layers', 0) + 1 > 3",
    "{1: getattr(cfg, 'layers', 0) + 1, getattr(cfg, 'layers', 0) + 1: 2}[1] > 2",
    "getattr(cfg, 'block', None) is not None and getattr(cfg, 'block', None) > block",
    "(cfg.layers / 2 + 4 - 1) // 4 >= 1",
]


@pytest.mark.parametrize("gate", GATES)
def test_a_simplified_gate_means_what_it_meant_and_says_each_value_once(gate):
    written = simplify.condition(gate, taken={"cfg", "flag"}, cdiv="cdiv")
    assert "not " not in written or "not None" in written
    for cfg, flag in itertools.product(CONFIGS, (False, True)):
        names = {"cfg": cfg, "flag": flag, "block": 3}
        assert bool(evaluate(written, names)) == bool(evaluate(gate, names)), (written, vars(cfg), flag)


def test_the_kimi_gate_reads_as_a_maintainer_writes_it():
    written = simplify.condition(GATES[0], taken={"cfg"}, cdiv="cdiv")
    assert written == "(block := getattr(cfg, 'block', None)) is not None and cdiv(cfg.layers, block) >= 2"


def test_a_value_first_computed_in_a_branch_is_not_named_there():
    """`x if c else y` may skip its arms: naming the value in one would leave the name unbound for a later use."""
    gate = "(cfg.layers if flag else 0) > 1 and getattr(cfg, 'block', None) is not None and cfg.layers > 3"
    shared = "flag and getattr(cfg, 'block', 0) + 1 > 2 or getattr(cfg, 'block', 0) + 1 > 3"
    assert simplify.condition(gate, taken=set()) == gate  # as written: nothing named, no parentheses added
    assert ":=" not in simplify.condition(shared, taken=set())


def test_a_name_the_site_uses_is_never_taken_and_held_values_are_read_from_their_local():
    gate = "getattr(cfg.sub, 'block', None) is not None and getattr(cfg.sub, 'block', None) > 1"
    written = simplify.condition(gate, taken={"block"}, held={ast.dump(ast.parse("cfg.sub", mode="eval").body): "s"})
    assert written == "(block_2 := getattr(s, 'block', None)) is not None and block_2 > 1"


def test_a_lookup_of_an_attribute_the_site_holds_reads_what_it_holds():
    """The constructor read `cfg.block` into `self.block` (so it exists there, or construction stopped): the gate's
    `getattr(cfg, 'block', None)` is `self.block`, evaluated against the original on every config that has it."""
    held = {ast.dump(ast.parse("cfg.block", mode="eval").body): "self.block"}
    written = simplify.condition(GATES[0], taken={"cfg"}, cdiv="cdiv", held=held)
    assert written == "self.block is not None and cdiv(cfg.layers, self.block) >= 2"
    for cfg in (c for c in CONFIGS if hasattr(c, "block")):
        site = {"cfg": cfg, "self": types.SimpleNamespace(block=cfg.block)}
        assert bool(evaluate(written, site)) == bool(evaluate(GATES[0], {"cfg": cfg})), vars(cfg)
    other = {ast.dump(ast.parse("cfg.layers", mode="eval").body): "self.layers"}
    assert "getattr(cfg, 'block', None)" in simplify.condition(GATES[0], taken={"cfg"}, held=other)


def test_values_two_inputs_share_are_named_once_in_the_order_they_are_read():
    codes = {
        "x": "make(dtype, shape=(n, h, k))",
        "y": "make(dtype, shape=(n, hv))",
        "z": "make(dtype, shape=(n, hv))",
        "w": "make(dtype, shape=(n, h, k)) if flag else None",
    }
    statements, rewritten = bound(codes, {"n", "h", "k", "hv", "dtype", "flag"})
    assert statements == ["x = make(dtype, shape=(n, h, k))", "y = make(dtype, shape=(n, hv))"]
    assert rewritten == ["x", "y", "y", "x if flag else None"]


def bound(codes: dict[str, str], taken: set[str], hints: dict[str, str] | None = None) -> tuple[list, list[str]]:
    """simplify.bound_once on the values `codes` (keyword -> code), hints by code; the values as code."""
    values = [ast.parse(code, mode="eval").body for code in codes.values()]
    hints = {ast.dump(ast.parse(code, mode="eval").body): name for code, name in (hints or {}).items()}
    statements, rewritten = simplify.bound_once(values, taken, list(codes), hints)
    return statements, [ast.unparse(v) for v in rewritten]


def test_a_value_the_launcher_named_takes_its_name_and_a_keyword_names_what_it_passes():
    """The recurrent KDA launcher's tile choice: `head_sequences = H * N` read in three arms of a chain and one
    test; the q, k and v views passed the same strides. Values stay what they were (brute force)."""
    codes = {
        "BV": "4 if h * n <= 48 else 8 if h * n <= 96 else 16 if h * n <= 192 else 8",
        "num_stages": "4 if h * n <= 48 else 3",
        "q": "make(dtype, strides=(h * d * t, h * d, d, 1))",
        "k": "make(dtype, aligned=a, strides=(h * d * t, h * d, d, 1))",
    }
    statements, rewritten = bound(codes, {"h", "n", "d", "t", "a", "dtype"}, {"h * n": "head_sequences"})
    assert statements == ["head_sequences = h * n", "strides = (h * d * t, h * d, d, 1)"]
    assert rewritten[0] == (
        "4 if head_sequences <= 48 else 8 if head_sequences <= 96 else 16 if head_sequences <= 192 else 8"
    )
    for h, n in itertools.product((1, 3, 8, 64), (1, 7, 30)):
        local = {"h": h, "n": n, "head_sequences": h * n}
        assert [evaluate(v, local) for v in rewritten[:2]] == [evaluate(c, local) for c in list(codes.values())[:2]]


def test_a_choice_the_launcher_named_is_named_where_a_value_reads_it_once_and_its_parts_after_it():
    """The ROCm MTP launcher's V tile, `BV = 32 if heads < num_cus else 64 if heads <= 4 * num_cus else V`, read
    once in the provider's `sum_sq` shape: named as the launcher names it, read as `v // BV`; `heads`, a part of it
    the launcher also names, is named inside it. A one-arm choice read once, and a choice passed as it is, stay."""
    tile = "32 if r * hv < cus else 64 if r * hv <= 4 * cus else v"
    stages = "4 if t <= 48 else 3 if t <= 96 else 2"
    codes = {"sum_sq": f"make(shape=(t, hv, v // ({tile})))", "heads": "r * hv", "w": "2 if t == 1 else 4"}
    hints = {tile: "BV", "r * hv": "heads", "2 if t == 1 else 4": "warps", stages: "num_stages"}
    statements, rewritten = bound({**codes, "num_stages": stages}, {"r", "hv", "cus", "v", "t"}, hints)
    assert statements == ["heads = r * hv", "BV = 32 if heads < cus else 64 if heads <= 4 * cus else v"]
    assert rewritten == ["make(shape=(t, hv, v // BV))", "heads", "2 if t == 1 else 4", stages]


def test_a_value_first_computed_in_a_branch_is_named_where_a_statement_computes_it_first():
    """`(h + 1) * (n + 1)` is in an arm of `BV`, and in the shared test named first: each statement runs before
    the values, so naming it there is safe; the later statement comes after the one it reads."""
    codes = {
        "BV": "4 if (h + 1) * (n + 1) * 2 <= 48 else 8 if (h + 1) * (n + 1) <= 96 else 8",
        "num_stages": "4 if (h + 1) * (n + 1) * 2 <= 48 else 3",
    }
    statements, rewritten = bound(codes, {"h", "n"})
    assert statements == ["value_2 = (h + 1) * (n + 1)", "value = value_2 * 2 <= 48"]
    assert rewritten == ["4 if value else 8 if value_2 <= 96 else 8", "4 if value else 3"]


def test_a_gate_that_says_a_lookup_twice_says_it_once():
    for gate in (GATES[0], GATES[3]):
        assert not repeated(simplify.condition(gate, taken={"cfg"}, cdiv="cdiv")), gate


def test_values_computed_only_in_a_branch_or_a_comprehension_are_not_named():
    for codes in (
        ("x.shape[0] * 2 + 1 if x is not None else 0", "x.shape[0] * 2 + 1 if x is not None else 1"),
        ("[t.stride(i) * 2 + 1 for i in range(3)]", "[t.stride(i) * 2 + 1 for i in range(4)]"),
    ):
        values = [ast.parse(code, mode="eval").body for code in codes]
        assert simplify.bound_once(values, taken={"x", "t"}, names=["a", "b"])[0] == [], codes


CHOICE_CONDITIONS = [
    "length != 0",
    "length > 1",
    "length != 0 and blocks >= 1",
    "not (length == 2 or blocks < 0)",
    "length is not None",
    "0 < length <= 16",
    "length != blocks",
    "length + 1 > 0",  # arithmetic: not evaluated, so not known to hold
    "length is not 300",  # a number's identity: the runtime's, so not known to hold
    "length > limit",  # reads a name that is no choice
]


@pytest.mark.filterwarnings('ignore:"is not" with:SyntaxWarning')  # the literal `is not 300`, on purpose
@pytest.mark.parametrize("condition", CHOICE_CONDITIONS)
def test_a_condition_said_to_hold_for_every_choice_does_brute_force(condition):
    choices = {"length": (1, 2, 16), "blocks": (0, 4)}
    holds = simplify.holds_for_every(condition, choices)
    everywhere = all(
        evaluate(condition, {"length": length, "blocks": blocks, "limit": 0})
        for length, blocks in itertools.product(*choices.values())
    )
    assert not holds or everywhere  # never claimed where a case fails
    plain = not any(part in condition for part in ("+", "limit", "300"))
    assert holds == (everywhere and plain)  # and claimed wherever it holds and is plain


TRUTH_CONDITIONS = [  # over names no choice gives values: x and y may hold anything
    "not (not x and any((x, x, x)))",  # the launcher's `raise` where no mask but some state: never, whatever x
    "not (x and any((not x, not x)))",
    "x or not x",
    "not (x and y) or x",
    "all((x, not y)) or y or not x",
    "not (x and length == 2) or length != 2 or not x",  # with a choice
    "x and y",  # fails where either is false
    "any((x, y))",
    "not (x and x == 1)",  # x compared too: not read for its truth alone, never claimed
    "x == x",  # the same
    "not x or x == True",  # holds for both truth values, not for x = 2
]
ANY_VALUES = (None, 0, 1, 2, "", "a", (), (0,), False, True)


@pytest.mark.parametrize("condition", TRUTH_CONDITIONS)
def test_a_condition_on_names_read_only_for_their_truth_holds_where_brute_force_says_so(condition):
    """Each name a condition reads only under `not`, `and`/`or` and `any`/`all` of a tuple counts as both truth
    values; checked against every pairing of values of many kinds (and the choices)."""
    holds = simplify.holds_for_every(condition, {"length": (1, 2, 16)})
    everywhere = all(
        eval(condition, {}, {"x": x, "y": y, "length": length})
        for x, y, length in itertools.product(ANY_VALUES, ANY_VALUES, (1, 2, 16))
    )
    assert not holds or everywhere
    assert holds == (everywhere and "==" not in condition.replace("length ==", ""))


def test_only_a_choice_of_literals_has_known_values():
    assert simplify.literal_choices("WarmupChoices(1, 2, 16)") == (1, 2, 16)
    assert simplify.literal_choices("WarmupChoices(*profiles(max_blocks))") is None
    assert simplify.literal_choices("WarmupIntRange(1, 17)") is None


@pytest.mark.parametrize("op", ["!=", "==", "<"])
@pytest.mark.parametrize("body, orelse", list(itertools.permutations(["a", "b", "c", "(b)"], 2)))
def test_a_value_set_in_one_branch_reads_as_the_one_that_holds_either_way(op, body, orelse):
    """`b if a != b else a` is `b` (a cast made only where the dtypes differ); whatever choice_of writes means
    `body if test else orelse` at every point of the grid, and is that short form only where the test compares
    exactly the two values."""
    written = choice_of(Value(f"a {op} b"), Value(body), Value(orelse)).code
    for a, b, c in itertools.product(range(3), repeat=3):
        point = dict(a=a, b=b, c=c)
        assert eval(written, {}, point) == eval(f"({body}) if (a {op} b) else ({orelse})", {}, point)
    short = op in ("!=", "==") and {body.strip("()"), orelse.strip("()")} == {"a", "b"}
    assert (" if " not in written) == short


def test_a_tensor_cast_in_one_branch_keeps_its_layout_with_the_dtype_chosen():
    shape = (Value("n"), Value("1"))
    strides = (Value("1"), Value("n"))
    cast, kept = (Tensor(Value(dtype), shape, strides) for dtype in ("state.dtype", "x_dtype"))
    assert choice_of(Value("x_dtype != state.dtype"), cast, kept) == cast
    other = Tensor(Value("state.dtype"), shape)  # another layout too: the strides are chosen as well
    chosen = choice_of(Value("x_dtype != state.dtype"), other, kept)
    for cast_here, n in itertools.product((True, False), (1, 3)):
        names = {"x_dtype": 1, "state": types.SimpleNamespace(dtype=int(not cast_here)), "n": n}
        picked = other if cast_here else kept
        assert [eval(v.code, {}, names) for v in chosen.stride()] == [eval(v.code, {}, names) for v in picked.stride()]


@pytest.mark.parametrize("test", ["a < b", "not a", "a < b and b != 2", "a", "a + b"])
@pytest.mark.parametrize("body, orelse", [("True", "False"), ("False", "True"), ("1", "0"), ("True", "0")])
def test_a_choice_of_true_and_false_by_a_comparison_is_the_comparison_and_the_same_value_of_the_same_type(
    test, body, orelse
):
    """`True if a < b else False` is `a < b`, `False if a else True` is `not a`; `1 if a < b else 0` stays (1 is no
    bool, and Triton keys them apart), and so does `True if a else False` (`a` may be no bool)."""
    written = choice_of(Value(test), Value(body, eval(body)), Value(orelse, eval(orelse))).code
    for a, b in itertools.product(range(3), repeat=2):
        got, wanted = (
            eval(written, {}, {"a": a, "b": b}),
            eval(f"{body} if ({test}) else {orelse}", {}, {"a": a, "b": b}),
        )
        assert (got, type(got)) == (wanted, type(wanted)), written
    # No shortcut where it would be no bool: `a` for `True if a ...`, and for `False if not a ...`.
    plain = {body, orelse} == {"True", "False"} and body != {"a": "True", "a + b": "True", "not a": "False"}.get(test)
    assert (" if " in written) != plain


@pytest.mark.parametrize("test", ["a <= b", "a == b", "a in (b, 2)", "a is None", "not a", "a and b < 2", "a"])
def test_not_of_a_comparison_is_the_flipped_comparison_and_the_same_value_of_the_same_type(tmp_path, test):
    """The lift writes `not (a <= b)` as `a > b`; where dropping the `not` would give no bool (`not not a` is not
    `a`), the `not` stays."""
    function = ast.parse("def step():\n    pass\n").body[0]
    lift = Lift(RepoModules(tmp_path, "vllm"), "vllm.step", "launcher")
    optional = MaybeTensor(Value("a"), Tensor(Value("torch.float16"), (Value("b"),)))
    scope = Scope(lift, "vllm.step", function, {"a": Value("a"), "b": Value("b"), "idx": optional})
    written = scope.value(ast.parse(f"not ({test})", mode="eval").body).code
    assert scope.value(ast.parse("not (idx is None)", mode="eval").body).code == "a"  # as `idx is not None` is
    for a, b in itertools.product([None, 0, 1, 2], [0, 1, 2]):
        if a is None and test not in ("a is None", "not a", "a"):
            continue
        got, wanted = eval(written, {}, {"a": a, "b": b}), eval(f"not ({test})", {}, {"a": a, "b": b})
        assert (got, type(got)) == (wanted, type(wanted)), written
    assert written.startswith("not ") == (test in ("not a", "a and b < 2", "a")), written


def test_one_of_two_tensors_of_one_rank_per_case_has_the_chosen_ones_dtype_sizes_strides_and_offset():
    """`initial_state if inplace else q.new_empty(t, h, d)`: the tensor the lift writes for the choice reads, in each
    case, as the tensor that case picks (a cast in one branch chooses the dtype alone). Two ranks stay refused."""
    state = Tensor(Value("dtype"), (Value("n"), Value("h"), Value("d")), None, Value("o"))
    made = Tensor(Value("torch.float32"), (Value("t"), Value("h"), Value("d")))
    strided = Tensor(Value("dtype"), state.shape, (Value("s"), Value("d"), Value("1", 1)))
    chosen, viewed = choice_of(Value("inplace"), state, made), choice_of(Value("inplace"), state, strided)

    def read(tensor, names):
        return [
            eval(v.code, {"torch": torch}, names)
            for v in (tensor.dtype, *tensor.shape, *tensor.stride(), tensor.offset)
        ]

    for inplace, n, t, h, d, o in itertools.product((False, True), (1, 3), (2, 5), (1, 4), (2,), (0, 8)):
        names = dict(inplace=inplace, n=n, t=t, h=h, d=d, o=o, s=7 * h * d, dtype=torch.bfloat16)
        assert read(chosen, names) == read(state if inplace else made, names)
        assert read(viewed, names) == read(state if inplace else strided, names)
    cast = choice_of(Value("inplace"), state, dataclasses.replace(state, dtype=Value("torch.float32")))
    assert (cast.shape, cast.strides, cast.offset) == (state.shape, None, state.offset)
    assert choice_of(Value("inplace"), state, Tensor(Value("dtype"), (Value("n"),))) is None


@pytest.mark.parametrize("test", ["a < b", "not a", "a"])
@pytest.mark.parametrize("other", ["b != 2", "a == b and b > 0", "b"])
@pytest.mark.parametrize("fixed", [True, False])
@pytest.mark.parametrize("first", [True, False])
def test_a_choice_of_a_bool_and_a_comparison_is_an_and_or_an_or_of_the_same_value_and_type(test, other, fixed, first):
    """`True if a < b else b != 2` is `a < b or b != 2`, `b != 2 if a < b else False` is `a < b and b != 2`; where a
    part may be no bool (`a`, `b`, `not` of `not a`) the choice stays written as a choice."""
    body, orelse = (Value(repr(fixed), fixed), Value(other)) if first else (Value(other), Value(repr(fixed), fixed))
    written = choice_of(Value(test), body, orelse).code
    for a, b in itertools.product(range(3), repeat=2):
        got = eval(written, {}, {"a": a, "b": b})
        wanted = eval(f"({body.code}) if ({test}) else ({orelse.code})", {}, {"a": a, "b": b})
        assert (got, type(got)) == (wanted, type(wanted)), written
    condition = test if first == fixed else {"a < b": "a >= b", "not a": "a", "a": "not a"}[test]
    assert (" if " in written) == (condition == "a" or other == "b"), written
