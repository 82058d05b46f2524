"""codemods.reachable: what a call of a function can run, given the arguments it fixes.

The oracle is the function itself: each example is executed with the call's arguments, its helper calls
recorded, and what ran must be among what `reachable` keeps (nothing that can run is ever left out); what the
example leaves out is the path the known values rule out, named by hand.
"""

import ast
import textwrap

import pytest

from zerojit.codemods.reachable import call_arguments, reachable

EXAMPLES = [
    # (function, call, helpers the known values rule out)
    (
        """
        def fused(q, fuse_gate=None):
            if fuse_gate is None:
                fuse_gate = True
            if fuse_gate:
                gate = plain(q)
            else:
                gate = gate_kernel(q)
            return recurrent(gate)
        """,
        "fused(x)",
        {"gate_kernel"},
    ),
    (
        """
        def prefill(q, backend="triton", state=None):
            fused = backend == "fused" and state is not None and probe(q)
            if state is not None and not fused:
                gather(state)
            if backend == "gluon":
                return aiter(q)
            if fused:
                return fused_kernel(q)
            return chunk(q)
        """,
        "prefill(x, backend='gluon')",
        {"gather", "fused_kernel", "chunk"},  # probe stays: what a statement holds counts whole
    ),
    (
        """
        def picked(q, mode=None):
            mode = mode or "fast"
            if mode == "fast":
                fast(q)
            else:
                slow(q)
        """,
        "picked(x)",
        {"slow"},
    ),
    (
        """
        def both_ways(q, flag):
            if flag:
                same = 1
                differs = 1
                left(q)
            else:
                same = 1
                differs = 2
                right(q)
            if same == 1:
                kept(q)
            else:
                dropped(q)
            if differs == 1:
                one(q)
            else:
                two(q)
        """,
        "both_ways(x, y)",
        {"dropped"},  # `same` is 1 whichever way; `differs` is not known
    ),
    (
        """
        def looped(q, n=0):
            for _ in range(3):
                n = n + 1
            if n == 0:
                zero(q)
            else:
                more(q)
        """,
        "looped(x)",
        set(),
    ),
    (
        """
        def early(q, enabled=False):
            if not enabled:
                return off(q)
            on(q)
        """,
        "early(x, **options)",
        set(),
    ),
]


def _function(source):
    return ast.parse(textwrap.dedent(source)).body[0]


def _helpers(nodes):
    return {n.func.id for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _ran(source, call):
    """The helpers the function really calls, run with x, y = 1, 2 and an empty **options."""
    ran = []

    class Recorder(dict):
        def __missing__(self, name):
            return lambda *args, **kwargs: ran.append(name)

    scope = Recorder(x=1, y=2, options={}, range=range)
    exec(textwrap.dedent(source) + f"\n{call}\n", scope)
    return set(ran)


@pytest.mark.parametrize(("source", "call", "ruled_out"), EXAMPLES, ids=[e[1].split("(")[0] for e in EXAMPLES])
def test_a_call_reaches_what_it_runs_and_not_the_path_its_arguments_rule_out(source, call, ruled_out):
    function = _function(source)
    kept = _helpers(reachable(function, call_arguments(function, ast.parse(call, mode="eval").body)))
    everything = _helpers(ast.walk(function))
    assert _ran(source, call) <= kept
    assert everything - kept == ruled_out


def test_a_decorated_function_or_a_call_that_spreads_arguments_fixes_nothing_it_does_not_name():
    plain = _function("def f(a, b=1, *, c=None):\n    pass\n")
    call = ast.parse("f(0, c='x')", mode="eval").body
    assert call_arguments(plain, call) == {"a": 0, "b": 1, "c": "x"}
    spread = ast.parse("f(*args, c='x')", mode="eval").body
    assert call_arguments(plain, spread) == {"c": "x"}
    decorated = _function("@functools.cache\ndef f(a, b=1):\n    pass\n")
    assert call_arguments(decorated, ast.parse("f(0)", mode="eval").body) == {}
