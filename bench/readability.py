"""How a reviewer would size up the built-in migrations on a fresh vLLM 0.33.0, applied together.

Two measures (issue 38's must-show): each expression of 8 or more AST nodes that a changed
function repeats and the original file did not repeat (printed with where it is), and the lines
the diff adds against the lines it removes, in total (goal: at most 1.25x) and per file. The exit
status is 1 when a repeat is found or the ratio is over the goal.

    .venv/bin/python bench/readability.py [--families a,b,...]
"""

from __future__ import annotations

import argparse
import ast
import shutil
import sys
import tempfile
from pathlib import Path

from zerojit.codemods.runner import migrate
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import migration_specs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from tree_forks import diff_size, repeated  # noqa: E402  (the measures the tests use)

GOAL = 1.25
FAMILIES = (
    "fla-layer-norm",
    "fla-fused-post-conv",
    "fla-sigmoid-gating",
    "mamba-causal-conv1d",
    "mamba-batch-memcpy",
    "kimi-k3-attn-res",
    "kimi-k3-recurrent-kda",
    "fla-gdn-mtp-update",
    "fla-gdn-mtp-rmsnorm",
    "ll-bf16-router-gemm",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES), help="Comma-separated built-in migrations.")
    args = parser.parse_args()
    specs = migration_specs()
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch) / "vllm-0.33.0"
        shutil.copytree(vllm_tree("0.33.0"), repo)
        result = migrate(repo, [specs[family] for family in args.families.split(",")], jobs=2)
        repeats, total_added, total_removed = 0, 0, 0
        for change in sorted(result.changes, key=lambda c: str(c.path)):
            before, after = change.before or "", change.after or ""
            added, removed = diff_size(before, after)
            total_added, total_removed = total_added + added, total_removed + removed
            print(f"{added:5d} {removed:5d}  {change.path.relative_to(repo)}")
            if not after:
                continue
            original = repeated(before)
            for dump, (function, count) in repeated(after).items():
                if dump not in original:
                    repeats += 1
                    code = next(ast.unparse(n) for n in ast.walk(ast.parse(after)) if ast.dump(n) == dump)
                    print(f"      repeated {count}x in {function}: {code[:100]}")
    ratio = total_added / max(total_removed, 1)
    print(f"{total_added} lines added, {total_removed} removed: {ratio:.2f}x (goal {GOAL}x); {repeats} repeats")
    if repeats or ratio > GOAL:
        sys.exit(1)


if __name__ == "__main__":
    main()
