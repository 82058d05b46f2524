"""The built-in migrations' output as a reviewer reads it: no expression a changed function repeats that the
original did not (tree_forks.repeated), no `pass` beside other statements, on a fresh vLLM 0.33.0. The line ratio, and every repeat with its
place, are printed by bench/readability.py."""

from __future__ import annotations

import ast

import libcst as cst
import pytest
from tree_forks import copy_033, repeated

from zerojit.codemods.runner import migrate, write
from zerojit.codemods.transforms.lift_kernel import _read_in_place
from zerojit.migrate.families import migration_specs

RUNS = [  # built-in migrations, each run with those it must move with (one launcher's kernels)
    ("fla-layer-norm",),
    ("fla-fused-post-conv",),
    ("fla-sigmoid-gating",),
    ("mamba-causal-conv1d",),
    ("mamba-batch-memcpy",),
    ("kimi-k3-attn-res",),
    ("kimi-k3-recurrent-kda",),
    ("fla-gdn-mtp-update", "fla-gdn-mtp-rmsnorm"),
    ("gemm-rs-ar",),
    ("bf16x3-router-gemm",),
]
# Every built-in applied together, as the backlog's run does: registrations that share a layer read each fact once.
RUNS.append(tuple(family for run in RUNS for family in run) + ("ll-bf16-router-gemm",))


def test_the_measure_sees_a_repeat_and_ignores_small_ones():
    code = "def f(c):\n    a = c.x.y(1) + c.x.y(1)\n    return c.z + c.z\n"
    assert [where for where, _ in repeated(code).values()] == ["f"]
    assert repeated("def f(c):\n    return c.x.y(1)\n") == {}


def test_a_pass_counts_only_beside_other_statements():
    code = "def f():\n    pass\n\nclass A:\n    pass\n\nif x:\n    pass\n    y = 1\nelse:\n    y = 2\n    pass\n"
    assert needless_passes(code) == 2


def needless_passes(code: str) -> int:
    """How many `pass` statements share their block with other statements (ruff's PIE790)."""
    blocks = [
        getattr(node, field, None) for node in ast.walk(ast.parse(code)) for field in ("body", "orelse", "finalbody")
    ]
    return sum(isinstance(s, ast.Pass) for block in blocks if isinstance(block, list) and len(block) > 1 for s in block)


DISPATCHERS = {
    "the grid and a launch option, read once by the return": (
        """
def dispatch(x, n):
    batch = x[0]

    grid = (batch,)
    BLOCK = 1024
    return grid, dict(BLOCK=BLOCK, n=n)
""",
        """
def dispatch(x, n):
    return (x[0],), dict(BLOCK=1024, n=n)
""",
    ),
    "a commented local, one read twice, one inside an operator, one whose input is rebound": (
        """
def dispatch(x, n):
    # tokens per block
    BLOCK = 16
    twice = n + 1
    inner = n * 2
    late = n
    n = n + 3
    grid = inner, twice
    return grid, dict(BLOCK=BLOCK, twice=twice, late=late, scaled=inner + 1)
""",
        """
def dispatch(x, n):
    # tokens per block
    BLOCK = 16
    twice = n + 1
    inner = n * 2
    late = n
    n = n + 3
    return (inner, twice), dict(BLOCK=BLOCK, twice=twice, late=late, scaled=inner + 1)
""",
    ),
    "a call that may change something, a value moved past one, or read in a comprehension stays": (
        """
def dispatch(x, n):
    before = len(x)
    grown = x.append(n)
    total = n * 2
    return (before,), dict(grown=grown, items=[total for n in range(2)])
""",
        """
def dispatch(x, n):
    before = len(x)
    grown = x.append(n)
    total = n * 2
    return (before,), dict(grown=grown, items=[total for n in range(2)])
""",
    ),
    "a local the return reads whole once and inside an operator once stays": (
        """
def dispatch(x, n):
    rows = len(x) + n
    return (rows,), dict(scaled=rows * 2)
""",
        """
def dispatch(x, n):
    rows = len(x) + n
    return (rows,), dict(scaled=rows * 2)
""",
    ),
    "the first local computed in place, the comment on the next line kept": (
        """
def dispatch(x, n):
    rows = len(x)
    # a fixed block
    BLOCK = 4
    return (rows,), dict(BLOCK=BLOCK)
""",
        """
def dispatch(x, n):
    # a fixed block
    BLOCK = 4
    return (len(x),), dict(BLOCK=BLOCK)
""",
    ),
}


@pytest.mark.parametrize("case", list(DISPATCHERS))
def test_a_dispatcher_computes_in_its_return_what_only_the_return_reads_once(case):
    written, expected = DISPATCHERS[case]
    function = cst.parse_module(written).body[0]
    body = _read_in_place(list(function.body.body))
    after = cst.Module([function.with_changes(body=function.body.with_changes(body=body))]).code
    assert after.strip() == expected.strip()
    run = {}
    for code in (written, after):
        exec(code, scope := {})
        run[code] = [scope["dispatch"]([7, 8], n) for n in (0, 5)]
    assert run[written] == run[after]  # the same grid and launch arguments


@pytest.mark.release_tree
@pytest.mark.parametrize("families", RUNS, ids="+".join)
def test_a_migration_repeats_no_expression_and_adds_no_needless_pass(tmp_path, families):
    repo = copy_033(tmp_path / "vllm")
    result = migrate(repo, [migration_specs()[family] for family in families])
    assert result.changes
    new = {
        (str(change.path.relative_to(repo)), function, count)
        for change in result.changes
        if change.after
        for dump, (function, count) in repeated(change.after).items()
        if dump not in repeated(change.before or "")
    }
    assert not new
    passes = {
        str(change.path.relative_to(repo)): needless_passes(change.after) - needless_passes(change.before or "")
        for change in result.changes
        if change.after
    }
    assert not any(passes.values()), passes


def _private_imports(code: str, package: str) -> set[str]:
    """`module.name` of each underscore name `code` imports from outside `package` (relative imports are inside)."""
    return {
        f"{node.module}.{alias.name}"
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
        for alias in node.names
        if alias.name.startswith("_") and not node.module.startswith(package + ".")
    } - UPSTREAM_IMPORTS


# Private names upstream's own code imports across packages: the contract's case filter
# (vllm/v1/sample/ops/topk_topp_triton.py imports it for its provider).
UPSTREAM_IMPORTS = {"vllm.model_executor.warmup.jit_warmup._when"}


@pytest.mark.release_tree
def test_no_lift_makes_a_module_import_a_private_name_of_another_package(tmp_path):
    """A dispatcher registered from another module is public (upstream imports private dispatchers only within
    a package): the layers import what the lifts wrote by its public name."""
    repo = copy_033(tmp_path / "vllm")
    lifts = (
        "fla-fused-post-conv",
        "fla-sigmoid-gating",
        "mamba-batch-memcpy",
        "kimi-k3-attn-res",
        "kimi-k3-recurrent-kda",
        "fla-gdn-mtp-update",
        "fla-gdn-mtp-rmsnorm",
    )
    result = migrate(repo, [migration_specs()[family] for family in lifts])
    new = {}
    for change in (c for c in result.changes if c.after):
        package = ".".join(change.path.relative_to(repo).with_suffix("").parts[:-1])
        added = _private_imports(change.after, package) - _private_imports(change.before or "", package)
        if added:
            new[str(change.path.relative_to(repo))] = added
    assert not new


@pytest.mark.release_tree
def test_every_built_in_applied_together_then_again_changes_nothing(tmp_path):
    """The second run finds each registration as the first wrote it, facts shared with its neighbours included."""
    repo = copy_033(tmp_path / "vllm")
    specs = [migration_specs()[family] for family in RUNS[-1]]
    write(migrate(repo, specs))
    assert not migrate(repo, specs).changes
