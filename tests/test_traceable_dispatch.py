"""A dispatch rewritten into the traced form (codemods.traceable_dispatch): run as Python, the rewrite returns
the key the original returns on every input of a brute-force grid, evaluates nothing the original would not,
and the symbolic proof finds every planted difference."""

import ast
import itertools
import textwrap

import pytest
from tree_forks import RELEASE_DISPATCH

from zerojit.codemods.engines import VLLM
from zerojit.codemods.traceable_dispatch import KeyFields, NotRewritable, prove, rewrite
from zerojit.codemods.transforms import apply
from zerojit.codemods.transforms.adopt_contract import RewriteDispatch

KERNEL = """
from dataclasses import dataclass, field
from typing import ClassVar

DOT_TABLE = {{(4096, 256): {{1: 256, 3: 256}}, (7168, 384): {{2: 256}}}}
SPLIT_TABLE = {{(4096, 256): {{M: (8, 5) for M in range(5, 12)}}, (7168, 256): {{8: (6, 5)}}}}
_DEFAULT_DOTPROD_BS = 128
_DEFAULT_DOTPROD_MAX_M = 4
_DEFAULT_SPLITK_CONFIG = (6, 4)
TUNED = True
LIMIT = 8


def _arch_tuned_configs():
    return (DOT_TABLE, SPLIT_TABLE) if TUNED else ({{}}, {{}})


class Kernel:
    @dataclass(frozen=True)
    class CompileKey:
        VERSION: ClassVar[int] = 2  # not a field
        backend: str
        M: int = 0
        K: int = 0
        bs: int = 0
        split_k: int = 0
        num_stages: int = 0
        output_dtype: str = "f32"

    def dispatch(self, *, M, K, N, output_dtype="f32"):
{body}"""


def kernels(body: str):
    """The kernel class with `body` as its dispatch, and with the rewrite's body; the first class's AST."""
    original = KERNEL.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))
    cls = next(n for n in ast.parse(original).body if isinstance(n, ast.ClassDef))
    dispatch = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "dispatch")
    rewritten = rewrite(dispatch, KeyFields.of(cls), OPERATORS)
    new = KERNEL.format(body=textwrap.indent(rewritten, " " * 8))
    return run(original), run(new), rewritten, dispatch, KeyFields.of(cls)


def run(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<kernel>", "exec"), namespace)  # noqa: S102 - the test's own text
    return namespace


OPERATORS = VLLM.traced_operators
GRID = list(
    itertools.product(range(1, 20), (1024, 2047, 2048, 4096, 7168), (128, 256, 384), ("f32", "bf16"), (True, False))
)


def same_keys(old: dict, new: dict, grid=GRID) -> int:
    for m, k, n, dtype, tuned in grid:
        old["TUNED"] = new["TUNED"] = tuned
        a = old["Kernel"]().dispatch(M=m, K=k, N=n, output_dtype=dtype)
        b = new["Kernel"]().dispatch(M=m, K=k, N=n, output_dtype=dtype)
        assert (a.backend, a.M, a.K, a.bs, a.split_k, a.num_stages, a.output_dtype) == (
            b.backend,
            b.M,
            b.K,
            b.bs,
            b.split_k,
            b.num_stages,
            b.output_dtype,
        ), (m, k, n, dtype, tuned)
    return len(grid)


def traced_form(body: str) -> None:
    """What vLLM's tracer takes: one-name assignments, then one return of a call with keywords only, no `{}`."""
    statements = ast.parse(body).body
    *assigns, last = statements
    assert all(isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) for s in assigns)
    assert isinstance(last, ast.Return) and isinstance(last.value, ast.Call) and not last.value.args
    assert not any(isinstance(n, ast.Dict | ast.If) for n in ast.walk(ast.parse(body)))
    # A value computed on one branch only (`x = ... if c else None`) is named only when read twice; else inlined.
    reads = [n.id for n in ast.walk(ast.parse(body)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    for statement in assigns:
        value = statement.value
        if isinstance(value, ast.IfExp) and None in (
            getattr(value.body, "value", 0),
            getattr(value.orelse, "value", 0),
        ):
            assert reads.count(statement.targets[0].id) >= 2, ast.unparse(statement)


def test_vllm_033_dispatch_keys_as_before_on_every_input_of_the_grid():
    old, new, body, dispatch, fields = kernels(RELEASE_DISPATCH)
    traced_form(body)
    assert same_keys(old, new) == len(GRID)
    assert prove(dispatch, body, fields) is None
    assert (
        "tuned = tuple(_arch_tuned_configs())" in body and "dotprod = M <= _DEFAULT_DOTPROD_MAX_M or K < 2048" in body
    )


def test_a_value_one_branch_computes_is_evaluated_only_there():
    """`table[...]` raises KeyError for keys the early return kept away from it: the rewrite must not reach it."""
    old, new, body, dispatch, fields = kernels(
        """
        if K not in SPLIT_TABLE:
            return self.CompileKey("dotprod", M, K)
        configs = SPLIT_TABLE[K, N]
        split = configs[M]
        return self.CompileKey(backend="splitk", split_k=split[0], num_stages=split[1], output_dtype=output_dtype)
        """
    )
    traced_form(body)
    grid = [(m, k, n, "f32", True) for m in range(5, 12) for k, n in ((4096, 256), (1024, 128))]
    assert same_keys(old, new, grid) == len(grid)
    assert prove(dispatch, body, fields) is None


def test_three_way_returns_else_branches_positional_keys_and_dict_displays():
    old, new, body, dispatch, fields = kernels(
        """
        dot, split = _arch_tuned_configs()
        if M <= 2:
            return self.CompileKey("dotprod", M, K, dot.get((K, N), {}).get(M, 64))
        elif K < 2048:
            bs = dot.get((K, N), {"x": 1}).get(M, _DEFAULT_DOTPROD_BS)
            return self.CompileKey(backend="dotprod", M=M, K=K, bs=bs, output_dtype=output_dtype)
        else:
            s, stages = split.get((K, N), {}).get(M, _DEFAULT_SPLITK_CONFIG)
        return self.CompileKey(backend="splitk", split_k=s, num_stages=stages, output_dtype=output_dtype)
        """
    )
    traced_form(body)
    assert same_keys(old, new) == len(GRID)
    assert prove(dispatch, body, fields) is None
    assert "dict(x=1)" in body


def test_an_else_that_only_passes_falls_through_to_the_return_after_it():
    old, new, body, dispatch, fields = kernels(
        """
        if M <= 2:
            return self.CompileKey("dotprod", M, K)
        else:
            pass
        return self.CompileKey(backend="splitk", output_dtype=output_dtype)
        """
    )
    traced_form(body)
    assert same_keys(old, new) == len(GRID)
    assert prove(dispatch, body, fields) is None


@pytest.mark.parametrize(
    "body",
    [
        # A fork's tweak under an `if` that falls through (the hostile probe's: refused before, as "ends without
        # returning"), and one in each branch.
        """
        tuned_bs, tuned_splitk = _arch_tuned_configs()
        if M <= _DEFAULT_DOTPROD_MAX_M or K < 2048:
            bs = tuned_bs.get((K, N), {}).get(M, _DEFAULT_DOTPROD_BS)
            if M == 1 and K >= 4096:
                bs = max(bs, 256)
            return self.CompileKey(backend="dotprod", M=M, K=K, bs=bs, output_dtype=output_dtype)
        split_k, num_stages = tuned_splitk.get((K, N), {}).get(M, _DEFAULT_SPLITK_CONFIG)
        if N > 256:
            split_k = split_k * 2
        else:
            num_stages = num_stages + 1
        return self.CompileKey(backend="splitk", split_k=split_k, num_stages=num_stages, output_dtype=output_dtype)
        """,
        # A parameter and a local assigned again on a path, each read twice after.
        """
        bs = _DEFAULT_DOTPROD_BS
        if M <= 2:
            K = K * 2
            bs = bs + K
            return self.CompileKey("dotprod", M=K, K=K, bs=bs + bs)
        return self.CompileKey("splitk", K=K, bs=bs, split_k=bs)
        """,
    ],
)
def test_ifs_that_fall_through_and_names_assigned_again_are_rewritten_and_proven(body):
    old, new, rewritten, dispatch, fields = kernels(body)
    traced_form(rewritten)
    assert same_keys(old, new) == len(GRID)
    assert prove(dispatch, rewritten, fields) is None


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("M=M if dotprod else 0", "M=M"),
        ("K < 2048", "K <= 2048"),
        ("split_k_num_stages[0]", "split_k_num_stages[1]"),
        ('backend="dotprod" if dotprod else "splitk"', 'backend="dotprod"'),
        ("output_dtype=output_dtype", "output_dtype=output_dtype if dotprod else None"),
    ],
)
def test_the_proof_finds_a_planted_difference_and_the_path_that_shows_it(before, after):
    _, _, body, dispatch, fields = kernels(RELEASE_DISPATCH)
    planted = ast.unparse(ast.parse(body)).replace(before.replace('"', "'"), after.replace('"', "'"))
    assert planted != ast.unparse(ast.parse(body))
    found = prove(dispatch, planted, fields)
    assert found is not None and found.startswith("where `M <= _DEFAULT_DOTPROD_MAX_M` is ")


@pytest.mark.parametrize(
    ("body", "line", "why"),
    [
        ("for m in range(M):\n    pass\nreturn self.CompileKey('dotprod')\n", 1, "`for m in range(M):`"),
        ("if M:\n    return self.CompileKey('dotprod')\nx = 1\n", 3, "ends without returning"),
        ("return self.CompileKey(**{'backend': 'dotprod'})\n", 1, "unpacked arguments"),
        ("if M:\n    return self.CompileKey(M=M)\nreturn self.CompileKey('splitk')\n", 2, "required field `backend`"),
        ("t = {1: 2}\nreturn self.CompileKey('dotprod', bs=t[1])\n", 1, "keys a dict() call cannot name"),
        ("t = {'a': 1, 'a': 2}\nreturn self.CompileKey('dotprod', bs=t['a'])\n", 1, "repeats a key"),
        ("if M:\n    return self.CompileKey('dotprod')\nreturn self._fallback(M)\n", 3, "other than CompileKey"),
        ("return self.CompileKey('dotprod', bs=int(N / M))\n", 1, "does not evaluate this operator"),
        ("return self.CompileKey('dotprod', bs=N << 1)\n", 1, "does not evaluate this operator"),
    ],
)
def test_what_the_rewrite_does_not_take_is_refused_with_its_line(body, line, why):
    """Each with the line of the dispatch body it names (1: the first statement)."""
    source = KERNEL.format(body=textwrap.indent(body, " " * 8))
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    dispatch = next(n for n in cls.body if isinstance(n, ast.FunctionDef))
    with pytest.raises(NotRewritable) as refused:
        rewrite(dispatch, KeyFields.of(cls), OPERATORS)
    assert refused.value.line - dispatch.body[0].lineno + 1 == line and why in refused.value.why


def test_a_dispatch_with_more_paths_than_the_proof_tries_is_refused_before_it_is_written_out():
    """Each `if` that falls through doubles the paths the rewrite reads: thirteen are more than the proof tries."""
    body = "".join(f"if M > {i}:\n    K = K + 1\n" for i in range(13)) + "return self.CompileKey('dotprod', K=K)\n"
    source = KERNEL.format(body=textwrap.indent(body, " " * 8))
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    dispatch = next(n for n in cls.body if isinstance(n, ast.FunctionDef))
    with pytest.raises(NotRewritable) as refused:
        rewrite(dispatch, KeyFields.of(cls), OPERATORS)
    assert refused.value.why == "more than 4096 paths through dispatch"


def test_the_transform_keeps_the_docstring_and_the_old_bodys_comments_above_the_rewrite(tmp_path):
    release = textwrap.dedent(RELEASE_DISPATCH)
    tail = 'return self.CompileKey(\n    backend="splitk"'
    assert tail in release
    docstring = '"""The key of one launch.\n\nDot product up to a small M, split-K past it.\n"""\n'
    body = docstring + "# Split-K past the dot product's M.\n" + release.replace(tail, tail.replace("(", "(  # tuned"))
    source = KERNEL.format(body=textwrap.indent(body, " " * 8))
    path = tmp_path / "pkg" / "kernel.py"
    path.parent.mkdir()
    path.write_text(source)
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    rewritten = rewrite(next(n for n in cls.body if isinstance(n, ast.FunctionDef)), KeyFields.of(cls), OPERATORS)
    edit = apply(source, [RewriteDispatch("Kernel", rewritten)], path=path, repo=tmp_path)
    assert edit.counts == {"rewrite_dispatch": 1}
    after = edit.source.split('def dispatch(self, *, M, K, N, output_dtype="f32"):\n')[1]
    assert after.startswith(
        textwrap.indent(docstring, " " * 8)
        + "        # Split-K past the dot product's M.\n        # tuned\n        tuned = tuple(_arch_tuned_configs())\n"
    )
    assert edit.source.split("def dispatch(")[0] == source.split("def dispatch(")[0]  # nothing else changes


def test_unpacking_any_iterable_keeps_its_meaning_and_unread_names_get_no_assignment():
    """`x, y = map(...)` is unpacked through `tuple(...)` (indexing a map would fail); `_` and names nothing reads
    get no assignment of their own (ruff F841 would flag them); the same `_, y` on both branches rewrites."""
    old, new, body, dispatch, fields = kernels(
        """
        m, k = map(int, (M, K))
        _, unread = N, output_dtype
        if m <= 2:
            _, y = divmod(k, 7)
            return self.CompileKey("dotprod", m, k, y)
        _, y = divmod(k, 5)
        return self.CompileKey(backend="splitk", split_k=y, output_dtype=output_dtype)
        """
    )
    traced_form(body)
    assert same_keys(old, new) == len(GRID) and prove(dispatch, body, fields) is None
    assert "tuple(map(int, (M, K)))" in body and "unread =" not in body and "_ =" not in body


def test_a_default_the_rewrite_writes_is_the_declared_one_or_the_rewrite_is_refused():
    """A field one path leaves out takes its declared default: written out when it is a value (a local of the same
    name would change it: the proof refuses that), refused when it is computed (`field(...)`)."""
    source = KERNEL.format(body=" " * 8 + "pass\n")
    source = source.replace("bs: int = 0", "bs: int = LIMIT").replace(
        "split_k: int = 0", "split_k: int = field(default=0)"
    )
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    fields = KeyFields.of(cls)
    assert "VERSION" not in fields.names and fields.computed == {"split_k"}

    def dispatch_of(body: str) -> ast.FunctionDef:
        text = source.replace(" " * 8 + "pass\n", textwrap.indent(textwrap.dedent(body), " " * 8))
        kernel = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef))
        return next(n for n in kernel.body if isinstance(n, ast.FunctionDef))

    shadowing = dispatch_of(
        """
        LIMIT = M * 2
        if M <= 2:
            return self.CompileKey("dotprod", bs=LIMIT)
        return self.CompileKey("splitk")
        """
    )
    written = rewrite(shadowing, fields, OPERATORS)
    assert "bs=LIMIT)" in written  # the declared default, written where a local of its name shadows it
    assert prove(shadowing, written, fields) is not None  # the local LIMIT is not the declared default
    computed = dispatch_of(
        """
        if M <= 2:
            return self.CompileKey("dotprod", split_k=1)
        return self.CompileKey("splitk")
        """
    )
    with pytest.raises(NotRewritable, match="whose default is computed"):
        rewrite(computed, fields, OPERATORS)
