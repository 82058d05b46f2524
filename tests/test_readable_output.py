"""The built-in migrations' output as a reviewer reads it: no expression a changed function repeats that the
original did not (tree_forks.repeated), on a fresh vLLM 0.33.0. The line ratio, and every repeat with its
place, are printed by bench/readability.py."""

from __future__ import annotations

import pytest
from tree_forks import copy_033, repeated

from zerojit.codemods.runner import migrate
from zerojit.migrate.families import migration_specs

FAMILIES = [
    "fla-layer-norm",
    "fla-fused-post-conv",
    "fla-sigmoid-gating",
    "mamba-batch-memcpy",
    pytest.param(
        "kimi-k3-attn-res",
        marks=pytest.mark.xfail(
            strict=True,
            reason="the provider's WarmupChoices argument writes max_blocks out again: vLLM 0.33.0 evaluates a "
            "domain with the provider's parameters only (the site should pass max_blocks)",
        ),
    ),
]


def test_the_measure_sees_a_repeat_and_ignores_small_ones():
    code = "def f(c):\n    a = c.x.y(1) + c.x.y(1)\n    return c.z + c.z\n"
    assert [where for where, _ in repeated(code).values()] == ["f"]
    assert repeated("def f(c):\n    return c.x.y(1)\n") == {}


@pytest.mark.release_tree
@pytest.mark.parametrize("family", FAMILIES)
def test_a_migration_repeats_no_expression_the_original_did_not(tmp_path, family):
    repo = copy_033(tmp_path / "vllm")
    result = migrate(repo, [migration_specs()[family]])
    assert result.changes
    new = {
        (str(change.path.relative_to(repo)), function, count)
        for change in result.changes
        if change.after
        for dump, (function, count) in repeated(change.after).items()
        if dump not in repeated(change.before or "")
    }
    assert not new
