"""`zerojit migrate` on real vLLM trees (PyPI wheels, cached) and on small repos for the safety rules."""

import ast
import difflib
import gc
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from zerojit.codemods.repo import RepoModules
from zerojit.codemods.runner import migrate, write
from zerojit.codemods.spec import SpecError, load_specs
from zerojit.codemods.spec_reference import with_reference_tables
from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import migration_specs
from zerojit.migrate.rocm_nvfp4.example import EXAMPLE_TREE, ORCHESTRATOR, add_legacy_layout

pytestmark = pytest.mark.release_tree

runner = CliRunner()
SPECS = migration_specs()
FA4_NAMES = ("FA4_MLA_PREFILL_KERNEL", "INKLING_FA4_REL_ATTENTION_KERNEL", "fa4_cutedsl_warmup", "register_warmup")


def changed_lines(before: str, after: str) -> tuple[Counter, Counter]:
    """Lines removed and added between two versions of a file (as multisets)."""
    a, b = before.splitlines(), after.splitlines()
    removed, added = Counter(), Counter()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed.update(a[i1:i2])
        if tag in ("replace", "insert"):
            added.update(b[j1:j2])
    return removed, added


def compiles(tree: Path) -> list[str]:
    bad = []
    for path in tree.rglob("*.py"):
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)
        except SyntaxError as exc:
            bad.append(f"{path}: {exc}")
    return bad


def test_fa4_and_inkling_reproduce_upstream_030(migrated_029):
    repo, report = migrated_029
    old, new = vllm_tree("0.29.0"), vllm_tree("0.30.0")
    assert report["deleted"] == ["vllm/model_executor/warmup/fa4_cutedsl_warmup.py"]
    assert not (new / report["deleted"][0]).exists()  # upstream deleted it too
    for rel in report["changed"]:
        ours_removed, ours_added = changed_lines((old / rel).read_text(), (repo / rel).read_text())
        up_removed, up_added = changed_lines((old / rel).read_text(), (new / rel).read_text())
        # Every statement we changed, upstream changed the same way ...
        assert not ours_removed - up_removed, (rel, ours_removed - up_removed)
        assert not ours_added - up_added, (rel, ours_added - up_added)

        # ... and every upstream change that concerns these migrations, we made.
        def relevant(lines):
            return Counter({line: n for line, n in lines.items() if any(w in line for w in FA4_NAMES)})

        assert not relevant(up_removed) - ours_removed, rel
        assert not relevant(up_added) - ours_added, rel
    assert set(report["changed"]) == {
        "vllm/model_executor/warmup/kernel_warmup.py",
        "vllm/models/inkling/nvidia/attention.py",
        "vllm/models/inkling/nvidia/ops/__init__.py",
        "vllm/models/inkling/nvidia/ops/fa4_rel_attention.py",
        "vllm/v1/attention/backends/mla/prefill/flash_attn.py",
    }
    # The registrations read exactly as upstream wrote them.
    for rel in ("vllm/v1/attention/backends/mla/prefill/flash_attn.py", "vllm/models/inkling/nvidia/attention.py"):
        assert (repo / rel).read_text().count("register_warmup()") == (new / rel).read_text().count("register_warmup()")


def test_untouched_files_are_byte_identical_and_tree_compiles(migrated_029):
    repo, report = migrated_029
    old = vllm_tree("0.29.0")
    touched = set(report["changed"]) | set(report["deleted"])
    for path in old.rglob("*.py"):
        rel = path.relative_to(old).as_posix()
        if rel not in touched:
            assert (repo / rel).read_bytes() == path.read_bytes(), rel
    assert compiles(repo) == []


def test_second_run_changes_nothing_and_check_exit_codes(migrated_029):
    repo, _ = migrated_029
    args = ["migrate", "fa4-mla-prefill", "inkling-rel-attention", "--repo", str(repo)]
    assert runner.invoke(app, [*args, "--check"]).exit_code == 0
    assert "0 changed, 0 deleted" in runner.invoke(app, args).output
    pending = runner.invoke(app, [*args[:3], "--repo", str(vllm_tree("0.29.0")), "--check"])
    assert pending.exit_code == 1
    listed = sorted(line.split(": ", 1)[1] for line in pending.stdout.splitlines() if line.startswith("would change: "))
    assert listed == sorted(
        [
            "vllm/model_executor/warmup/fa4_cutedsl_warmup.py",
            "vllm/model_executor/warmup/kernel_warmup.py",
            "vllm/models/inkling/nvidia/attention.py",
            "vllm/models/inkling/nvidia/ops/__init__.py",
            "vllm/models/inkling/nvidia/ops/fa4_rel_attention.py",
            "vllm/v1/attention/backends/mla/prefill/flash_attn.py",
        ]
    )


def legacy_033(tmp_path) -> tuple[Path, str]:
    repo = tmp_path / "vllm-0.33.0-rocm"
    shutil.copytree(vllm_tree("0.33.0"), repo)
    original = add_legacy_layout(repo)
    assert (repo / ORCHESTRATOR).read_text().count("rocm_nvfp4_kv_warmup") == 3
    return repo, original


def test_rocm_migration_on_vllm_033(tmp_path):
    repo, original_orchestrator = legacy_033(tmp_path)
    result = migrate(repo, [SPECS["rocm-nvfp4"]], jobs=2)
    write(result)
    report = result.report()
    assert report["deleted"] == ["vllm/model_executor/warmup/rocm_nvfp4_kv_warmup.py"]
    assert not (repo / report["deleted"][0]).exists()
    # The call and its gate are gone: the orchestrator is 0.33.0's own file again, byte for byte.
    assert (repo / ORCHESTRATOR).read_text() == original_orchestrator
    model = (repo / "vllm/model_executor/models/minimax_m3.py").read_text()
    init = next(
        node for node in ast.walk(ast.parse(model)) if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    )
    # The model imports the kernel under an alias: the registration reuses it (no second import).
    assert ast.unparse(init.body[-1]) == (
        "if vllm_config.kernel_config.enable_jit_warmup and self.use_nvfp4_kv:\n"
        "    nvfp4_launchers.register_warmup(head_dim=self.head_dim, topk=self.topk)"
    )
    imports = [
        (n.module, a.name, a.asname)
        for n in ast.walk(ast.parse(model))
        if isinstance(n, ast.ImportFrom)
        for a in n.names
        if "NVFP4_KV_LAUNCHERS" in a.name
    ]
    assert imports == [("vllm.v1.attention.ops.rocm_nvfp4_kv", "_ROCM_NVFP4_KV_LAUNCHERS", "nvfp4_launchers")]
    launchers = (repo / "vllm/v1/attention/ops/rocm_nvfp4_kv.py").read_text()
    assert "\n_ROCM_NVFP4_KV_LAUNCHERS = NVFP4KVLaunchers()" in launchers
    assert "\nROCM_NVFP4_KV_LAUNCHERS" not in launchers and '"ROCM_NVFP4_KV_LAUNCHERS"' not in launchers
    assert compiles(repo) == []
    assert migrate(repo, [SPECS["rocm-nvfp4"]]).changes == []  # idempotent


def small_repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_TREE, repo)
    return repo


def snapshot(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file()}


def test_dry_run_writes_nothing_and_jobs_do_not_change_the_result(tmp_path):
    repo = small_repo(tmp_path)
    before = snapshot(repo)
    serial = migrate(repo, [SPECS["rocm-nvfp4"]], jobs=1)
    parallel = migrate(repo, [SPECS["rocm-nvfp4"]], jobs=2)
    assert [c.after for c in serial.changes] == [c.after for c in parallel.changes]
    result = runner.invoke(app, ["migrate", "rocm-nvfp4", "--repo", str(repo)])
    assert result.exit_code == 0 and "+            nvfp4_launchers.register_warmup(" in result.output
    assert snapshot(repo) == before


def test_a_file_that_does_not_parse_stops_the_run_before_any_write(tmp_path):
    repo = small_repo(tmp_path)
    broken = repo / "vllm/model_executor/models/broken.py"
    broken.write_text("from vllm.v1.attention.ops.rocm_nvfp4_kv import ROCM_NVFP4_KV_LAUNCHERS\n\ndef f(:\n")
    before = snapshot(repo)
    result = runner.invoke(app, ["migrate", "rocm-nvfp4", "--repo", str(repo), "--write"])
    assert result.exit_code == 2
    assert f"{broken}:3: does not parse" in result.output
    assert snapshot(repo) == before


def test_missing_anchor_is_named(tmp_path):
    repo = small_repo(tmp_path)
    model = repo / "vllm/model_executor/models/minimax_m3.py"
    model.write_text(model.read_text().replace("class MiniMaxM3SparseAttention", "class Renamed"))
    with pytest.raises(SpecError, match="construction_class 'MiniMaxM3SparseAttention' not found"):
        migrate(repo, [SPECS["rocm-nvfp4"]])
    (repo / "vllm/v1/attention/ops/rocm_nvfp4_kv.py").unlink()
    with pytest.raises(SpecError, match="singleton_module 'vllm.v1.attention.ops.rocm_nvfp4_kv' not found"):
        migrate(repo, [SPECS["rocm-nvfp4"]])


def test_files_outside_the_repo_are_never_touched(tmp_path):
    repo = small_repo(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_text("from vllm.v1.attention.ops.rocm_nvfp4_kv import ROCM_NVFP4_KV_LAUNCHERS\n")
    (repo / "vllm/model_executor/models/linked.py").symlink_to(outside)
    result = migrate(repo, [SPECS["rocm-nvfp4"]])
    write(result)
    assert result.skipped == {"vllm/model_executor/models/linked.py": "a symlink out of the repo"}
    assert outside.read_text().startswith("from vllm.v1.attention.ops.rocm_nvfp4_kv import ROCM_")


def test_toml_spec_file_round_trip_and_errors(tmp_path):
    spec = SPECS["rocm-nvfp4"]
    lines = ["[[migration]]"] + [
        f"{name} = {json.dumps(spec.fields()[name])}"
        for name in (
            "family",
            "legacy_module",
            "legacy_function",
            "orchestrator_module",
            "singleton_module",
            "singleton",
            "private_singleton",
            "construction_module",
            "construction_class",
            "registration",
            "gate",
        )
    ]
    path = tmp_path / "mine.toml"
    path.write_text("\n".join(lines).replace('family = "rocm-nvfp4"', 'family = "my-launchers"') + "\n")
    (loaded,) = load_specs(path)
    assert loaded.kernel.name == spec.kernel.name and loaded.family == "my-launchers"
    repo = small_repo(tmp_path)
    result = runner.invoke(app, ["migrate", "--spec", str(path), "--repo", str(repo), "--check"])
    assert result.exit_code == 1  # the file's specs apply when no family is named
    path.write_text(path.read_text().replace('singleton = "ROCM', 'singletn = "ROCM'))
    with pytest.raises(SpecError, match=r"#1: unknown keys \['singletn'\], missing keys \['singleton'\]"):
        load_specs(path)
    assert runner.invoke(app, ["migrate", "nope", "--repo", str(repo)]).exit_code == 2


def test_spec_reference_example_is_a_valid_spec(tmp_path):
    reference = (Path(__file__).parents[1] / "docs" / "spec-reference.md").read_text()
    example = next(block.split("```", 1)[0] for block in reference.split("```toml\n")[1:] if "[[migration]]" in block)
    (path := tmp_path / "example.toml").write_text(example)
    (spec,) = load_specs(path)
    assert spec.family == "my-fused-moe" and spec.kernel.private_name == "_FUSED_MOE_KERNEL"


def test_the_spec_reference_tables_are_the_specs_own_and_name_every_key():
    reference = (Path(__file__).parents[1] / "docs" / "spec-reference.md").read_text()
    assert with_reference_tables(reference) == reference, "the field tables are stale: run `make spec-reference`"
    example = next(block.split("```", 1)[0] for block in reference.split("```toml\n")[1:] if "[[migration]]" in block)
    written = {line.split("=")[0].strip() for line in example.splitlines() if "=" in line}
    tabled = set(re.findall(r"^\| `(\w+)` \|", reference, re.M))
    # The keys a table may hold, read from a spec's flat form: the example (which names a legacy module, so no
    # orchestrator step, and leaves `confirm` to the survey), the tables and the spec agree.
    assert written | {"confirm", "orchestrator_step"} == tabled == set(SPECS["rocm-nvfp4"].fields())


@pytest.mark.parametrize("release, families", [("0.33.0", ["mamba-batch-memcpy"]), ("0.29.0", ["fa4-mla-prefill"])])
def test_a_run_leaves_its_repo_model_to_reference_counting(release, families):
    """The collector does not run while migrate plans (runner._fewer_collections), so what the run read must go
    when it ends, not wait in a cycle (a class or a recursive closure made in a function) for the next collection:
    a model of 0.33.0 holds some 200,000 objects, and their collection would land on the run's end."""
    gc.collect()
    gc.disable()
    try:
        alive = {id(o) for o in gc.get_objects() if type(o) is RepoModules}  # another test's, if any
        migrate(vllm_tree(release), [migration_specs()[f] for f in families], jobs=1)
        assert not [o for o in gc.get_objects() if type(o) is RepoModules and id(o) not in alive]
    finally:
        gc.enable()
