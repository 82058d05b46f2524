"""What a migration writes follows the repo's ruff style, and only those lines change (codemods/style.py).

Expected values come from ruff itself, run here on the files as written (`python -m ruff`, not
through codemods/style.py), compared with what ruff says of the original files; and from the
transforms' own output with the style step switched off. The built-in
0.33.0 migrations change what they insert as they grow, so these are properties (no new
finding, untouched lines identical), never the inserted text.
"""

import ast
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from test_codemod_repo import changed_lines
from tree_forks import GDN_LAYER, make_dispatch_traceable, replace_file
from typer.testing import CliRunner

from zerojit.codemods import style
from zerojit.codemods.errors import MigrationError
from zerojit.codemods.runner import migrate
from zerojit.migrate.cli import app
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import migration_specs

pytestmark = pytest.mark.release_tree

runner = CliRunner()
SPECS = migration_specs()
FAMILIES = ("fla-layer-norm", "ll-bf16-router-gemm", "gemm-rs-ar", "bf16x3-router-gemm")
VLLM = ("--isolated", "--config", "line-length=88", "--config", "lint.isort.known-first-party=['vllm']")


def ruff(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=cwd, input=stdin, capture_output=True, text=True)


def findings(tree: Path, rel: str, settings=VLLM) -> Counter:
    """ruff's lint findings on a file as (code, message) with line numbers dropped: the same finding anywhere."""
    done = ruff(
        "check",
        "--no-cache",
        *settings,
        "--select",
        "E,F,W,I,UP,B",
        "--output-format",
        "json",
        "--exit-zero",
        rel,
        cwd=tree,
    )
    assert done.returncode == 0, done.stderr
    return Counter((f["code"], f["message"].split(" from line ")[0]) for f in json.loads(done.stdout))


def reformatted_lines(tree: Path, rel: str, settings=VLLM) -> Counter:
    """The lines `ruff format` would rewrite in a file (as text, so two files can be compared)."""
    text = (tree / rel).read_text()
    done = ruff("format", "--no-cache", *settings, "--stdin-filename", rel, "-", cwd=tree, stdin=text)
    assert done.returncode == 0, done.stderr
    return changed_lines(text, done.stdout)[0]


def shape(source: str) -> str:
    """The file's syntax tree with each run of adjacent imports sorted: what formatting and import sorting keep."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not (isinstance(block, list) and block and isinstance(block[0], ast.stmt)):
                continue
            out, run = [], []
            for statement in [*block, None]:
                if isinstance(statement, (ast.Import, ast.ImportFrom)):
                    run.append(statement)
                    continue
                out += sorted(run, key=ast.dump)
                run = []
                if statement is not None:
                    out.append(statement)
            setattr(node, field, out)
    return ast.dump(tree)


def unstyled(repo: Path, families) -> dict[str, str]:
    """What the transforms alone write (the style step and the gate's ruff half off), by path; nothing is written."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(style, "restyle", lambda st, path, before, after, *found: after)
        patch.setattr(style, "check", lambda *args: [])
        result = migrate(repo, [SPECS[f] for f in families], jobs=1)  # one process: the patch holds
    return {c.path.relative_to(repo).as_posix(): c.after for c in result.changes}


def copy_tree(where: Path, original: Path | None = None) -> Path:
    """A hard-linked copy (the cached release by default): every write in the tool and here replaces files."""
    shutil.copytree(original or vllm_tree("0.33.0"), where, copy_function=os.link)
    return where


def changed(original: Path, repo: Path) -> list[str]:
    return sorted(
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*.py")
        if p.read_bytes() != (original / p.relative_to(repo)).read_bytes()
    )


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """(the 0.33.0 tree the migrations apply to, that tree with both written, what the transforms alone wrote).

    The tree is the release with LLBf16Gemm.dispatch made traceable (the router GEMM's adoption of the
    contract refuses the release's own); nothing else differs.
    """
    base = tmp_path_factory.mktemp("style-033")
    fork = copy_tree(base / "fork")
    make_dispatch_traceable(fork)
    repo = copy_tree(base / "migrated", fork)
    result = runner.invoke(app, ["migrate", *FAMILIES, "--repo", str(repo), "--write", "-j", "2"])
    assert result.exit_code == 0, result.output
    return fork, repo, unstyled(fork, FAMILIES)


def test_the_033_migrations_add_no_ruff_finding_and_no_unformatted_line(migrated):
    fork, repo, raw = migrated
    files = changed(fork, repo)
    assert len(files) >= 4 and set(files) == set(raw)
    formatted_originals = 0
    for rel in files:
        new = findings(repo, rel) - findings(fork, rel)
        assert not new, (rel, new)
        # ruff format would rewrite nothing in the migrated file that it would not rewrite in the original.
        extra = reformatted_lines(repo, rel) - reformatted_lines(fork, rel)
        assert not extra, (rel, extra)
        formatted_originals += not reformatted_lines(fork, rel)
        _, added = changed_lines((fork / rel).read_text(), (repo / rel).read_text())
        # vLLM's own idiom for an import path past 88 columns: an `import (` line that carries ruff's E501 noqa.
        assert max((len(line) for line in added if not line.endswith("  # noqa: E501")), default=0) <= 88, rel
    assert formatted_originals >= 3  # the release's own files are ruff-formatted: the check above has teeth


def test_only_the_lines_the_transforms_wrote_change(migrated):
    """Formatting and import sorting touch what the transforms wrote, never a line they kept, nor what it means."""
    fork, repo, raw = migrated
    for rel, unformatted in raw.items():
        before, after = (fork / rel).read_text(), (repo / rel).read_text()
        removed_styled, _ = changed_lines(before, after)
        removed_raw, _ = changed_lines(before, unformatted)
        assert not removed_styled - removed_raw, rel
        assert shape(after) == shape(unformatted), rel


def test_a_tree_with_its_own_ruff_settings_is_written_in_them(tmp_path, migrated):
    """A checkout whose pyproject.toml sets line-length = 100: what fits in 100 columns stays on one line."""
    settings = '[project]\nname = "vllm"\n\n[tool.ruff]\nline-length = 100\n'
    original, repo = copy_tree(tmp_path / "original"), copy_tree(tmp_path / "tree")
    for tree in (original, repo):
        (tree / "pyproject.toml").write_text(settings)
    result = runner.invoke(app, ["migrate", "fla-layer-norm", "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output
    files = changed(original, repo)
    assert files
    own = ()  # ruff finds the tree's pyproject.toml itself
    longest = 0
    for rel in files:
        assert not findings(repo, rel, own) - findings(original, rel, own), rel
        assert not reformatted_lines(repo, rel, own) - reformatted_lines(original, rel, own), rel
        _, added = changed_lines((original / rel).read_text(), (repo / rel).read_text())
        longest = max([longest, *map(len, added)])
    assert 88 < longest <= 100  # a line vLLM's own 88 columns would have wrapped
    assert any((repo / rel).read_text() != (migrated[1] / rel).read_text() for rel in files)


def test_a_fork_with_unsorted_imports_keeps_its_order(tmp_path):
    """The fork's own import block is unsorted (ruff I001): the migration adds its import there and sorts nothing."""
    fork = copy_tree(tmp_path / "fork")
    text = (fork / GDN_LAYER).read_text()
    forward, logger = (
        "from vllm.forward_context import ForwardContext, get_forward_context\n",
        "from vllm.logger import init_logger\n",
    )
    assert forward + logger in text
    replace_file(fork / GDN_LAYER, text.replace(forward + logger, logger + forward, 1))
    assert findings(fork, GDN_LAYER)[("I001", "Import block is un-sorted or un-formatted")] == 1
    repo = copy_tree(tmp_path / "migrated", fork)
    result = runner.invoke(app, ["migrate", "fla-layer-norm", "--repo", str(repo), "--write"])
    assert result.exit_code == 0, result.output  # the I001 is the fork's, not the migration's
    after = (repo / GDN_LAYER).read_text()
    assert after != (fork / GDN_LAYER).read_text() and logger + forward in after  # the fork's order, as it was
    assert not findings(repo, GDN_LAYER) - findings(fork, GDN_LAYER)
    removed, _ = changed_lines((fork / GDN_LAYER).read_text(), after)
    assert not any(line.startswith(("import ", "from ")) for line in removed)  # no import line of the fork moved


def test_a_registration_ruff_finds_fault_with_is_refused(tmp_path):
    """A spec written with getattr(self, "name"): ruff's B009, which no formatter fixes: refused, nothing written."""
    repo = copy_tree(tmp_path / "tree")
    spec = SPECS["fla-layer-norm"]
    spec = spec.replaced(
        registration=spec.registration.code.replace(
            "group_size=self.head_v_dim", 'group_size=getattr(self, "head_v_dim")'
        ),
    )
    assert spec.registration.code != SPECS["fla-layer-norm"].registration.code
    with pytest.raises(MigrationError, match=rf"refused by the safety gate(.|\n)*\n{GDN_LAYER}:\d+: ruff B009 "):
        migrate(repo, [spec])


def test_restyle_formats_the_written_lines_of_a_fork_and_nothing_else(tmp_path):
    """A fork that is not ruff-formatted, with unsorted top-level imports: only what the migration wrote changes."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    before = "import sys\nimport os\n\n\ndef f():\n    x = {  'a':1 }\n    return x, os, sys\n"
    written = (
        "    from pkg.b import y\n    from pkg.a import z\n"
        "    if os.environ.get('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA') and os.environ.get('BBBBBBBBBBBBBBBB'): y(z)\n"
    )
    after = before.replace("    return", written + "    return")
    for name, text in (("before.py", before), ("after.py", after)):
        (repo / "pkg" / name).write_text(text)
    path = repo / "pkg" / "after.py"
    settings = style.repo_style(repo, ["pkg"])
    original = functools.partial(settings.lint, path, before)
    result = style.restyle(settings, path, before, after, original, settings.lint(path, after))
    (repo / "pkg" / "result.py").write_text(result)
    removed, added = changed_lines(before, result)
    assert not removed  # every line of the fork is still there, as it was (its quotes, its spacing, its order)
    assert result.startswith("import sys\nimport os\n") and "    x = {  'a':1 }\n" in result
    assert max(map(len, added)) <= 88 and result.index("from pkg.a import z") < result.index("from pkg.b import y")
    assert not findings(repo, "pkg/result.py") - findings(repo, "pkg/before.py")
    assert findings(repo, "pkg/after.py") - findings(repo, "pkg/before.py")  # what the transforms wrote was not clean
    assert style.check(settings, path, before, result, original) == []
    crlf = style.restyle(
        settings,
        path,
        before.replace("\n", "\r\n"),
        after.replace("\n", "\r\n"),
        functools.partial(settings.lint, path, before.replace("\n", "\r\n")),
        settings.lint(path, after.replace("\n", "\r\n")),
    )
    assert crlf == result.replace("\n", "\r\n")  # a CRLF file keeps its line endings


def test_the_gate_reports_what_ruff_finds_new_where_the_migration_wrote_it(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    path = repo / "pkg" / "m.py"
    before = "def f(self):\n    return self.size\n"
    after = 'def f(self):\n    print("x")\n    return getattr(self, "size")\n'
    settings = style.repo_style(repo, ["pkg"])
    found = style.check(settings, path, before, after, functools.partial(settings.lint, path, before))
    assert [(f.line, f.what.split(" ")[:2]) for f in found] == [(3, ["ruff", "B009"])]
    kept = 'def f(self):\n    return getattr(self, "size")\n'  # B009 in the original, kept by the migration
    grown = kept + "\n\ndef g():\n    pass\n"
    assert style.check(settings, path, kept, grown, functools.partial(settings.lint, path, kept)) == []
    unformatted = "def f(self):\n    return self.size\n\n\n\n\ndef g():\n    return [1,2]\n"
    found = style.check(settings, path, before, unformatted, functools.partial(settings.lint, path, before))
    assert {f.line for f in found} == {3} and all("ruff format" in f.what for f in found)


def test_a_line_the_migration_copies_as_it_was_brings_its_finding_along_a_new_one_is_reported(tmp_path):
    """A dispatcher takes the launcher's comment with the statement it copies: the comment's E501 is the
    original's, copied; a long line the migration wrote itself is new."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    path = repo / "pkg" / "m.py"
    comment = "    # " + "long words " * 8 + "the end\n"
    before = "def f(x):\n" + comment + "    y = x + 1\n    return y\n"
    copied = "def g(x):\n" + comment + "    y = x + 1\n    return y\n\n\n" + before
    settings = style.repo_style(repo, ["pkg"])
    original = functools.partial(settings.lint, path, before)
    assert [d.code for d in original()] == ["E501"]
    assert style.check(settings, path, before, copied, original) == []
    written = copied.replace("    return y\n\n\n", "    return y  # " + "written " * 10 + "end\n\n\n", 1)
    found = style.check(settings, path, before, written, original)
    assert [(f.line, f.what.split(" ")[:2]) for f in found] == [(4, ["ruff", "E501"])]


@pytest.mark.parametrize(
    "name, text, configured",
    [
        ("ruff.toml", "line-length = 100\n", True),
        (".ruff.toml", "line-length = 100\n", True),
        ("pyproject.toml", "[tool.ruff]\nline-length = 100\n", True),
        ("pyproject.toml", "[project]\nname = 'x'\n", False),
    ],
)
def test_the_repo_root_says_whether_ruff_is_configured(tmp_path, name, text, configured):
    (tmp_path / name).write_text(text)
    assert style.configures_ruff(tmp_path) is configured
    assert (style.repo_style(tmp_path, ["vllm"]).settings == ()) is configured


def test_without_ruff_a_migration_is_one_clear_error(tmp_path, monkeypatch):
    repo = copy_tree(tmp_path / "tree")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name == "ruff" else real(name, *args))
    result = runner.invoke(app, ["migrate", "fla-layer-norm", "--repo", str(repo)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1].startswith("error: ruff is not installed")
