"""Lines as Python counts them (`syntax.source_lines`): a line number from `ast`, libcst or ruff indexes them, where
`str.splitlines` also ends a line at a form feed (a PEP 8 page break), a vertical tab and a few other characters
a comment may hold."""

from __future__ import annotations

import ast
import re
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tree_forks import copy_033, replace_file

from zerojit.codemods.files import SourceFile
from zerojit.codemods.results import FileChange
from zerojit.codemods.runner import migrate
from zerojit.codemods.syntax import source_lines
from zerojit.migrate.families import migration_specs

# What str.splitlines ends a line at and the tokenizer does not.
NOT_LINE_ENDS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@given(
    st.lists(
        st.tuples(st.sampled_from(["\n", "\r\n", "\r"]), st.text(alphabet="ab #" + NOT_LINE_ENDS, max_size=6)),
        min_size=1,
        max_size=12,
    )
)
def test_each_statement_is_on_the_line_its_lineno_names(parts):
    source = "".join(f"v{i} = {i}  # {comment}{end}" for i, (end, comment) in enumerate(parts))
    lines = source_lines(source)
    for node in ast.parse(source).body:
        assert lines[node.lineno - 1].startswith(f"v{node.value.value} = ")
    assert len(lines) == len(parts)
    assert "".join(source_lines(source, keepends=True)) == source


@pytest.mark.parametrize("text", ["", "a", "a\n", "a\r\nb", "a\rb\r", "\n\n", "a\x0cb\n"])
def test_the_lines_join_back_and_end_where_the_tokenizer_ends_them(text):
    assert "".join(source_lines(text, keepends=True)) == text
    split = re.split(r"\r\n|\r|\n", text)
    assert source_lines(text) == (split[:-1] if split[-1] == "" else split)


PAGE_BREAK = "#\x0c page break\n"


def with_page_breaks(source: str) -> tuple[str, list[int]]:
    """The source with a comment holding a form feed above its first line and above each statement that sets `self.x`
    (constructors hold the anchors registrations go after), and the lines of the source each stands above."""
    lines = source_lines(source, keepends=True)
    starts = {
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.stmt) and re.match(r"\s+self\.", lines[node.lineno - 1])
    }
    text = "".join(
        (re.match(r"[ \t]*", line)[0] + PAGE_BREAK) * (n in starts) + line for n, line in enumerate(lines, 1)
    )
    return PAGE_BREAK + text, [1, *sorted(starts)]


@pytest.mark.release_tree
def test_page_breaks_in_comments_move_each_note_down_and_change_no_edit(tmp_path):
    """Every built-in applied together on 0.33.0, and again with comments holding a form feed in every file it
    changes: the same edits, and each note as many lines lower as page breaks were added above it. Before, the line
    lookups that split with `str.splitlines` missed the owners' and recordings' anchors and refused, and import
    sorting edited the wrong lines."""
    repo = copy_033(tmp_path / "plain")
    specs = list(migration_specs().values())
    specs = [spec for spec in specs if spec.family != "rocm-nvfp4" and not spec.family.startswith(("fa4", "inkling"))]
    plain = migrate(repo, specs, jobs=2)
    changed = {change.path.relative_to(repo).as_posix(): change for change in plain.changes}
    assert len(changed) > 20
    above = {}
    for rel, change in changed.items():
        text, above[rel] = with_page_breaks(change.before)
        replace_file(repo / rel, text)
    broken = migrate(repo, specs, jobs=2)
    assert {
        c.path.relative_to(repo).as_posix(): c.after and re.sub(rf"[ \t]*{PAGE_BREAK}", "", c.after)
        for c in broken.changes
    } == {rel: change.after for rel, change in changed.items()}

    def lower(note: str) -> str:
        return re.sub(
            r"([\w/.]+\.py):(\d+)",
            lambda m: f"{m[1]}:{int(m[2]) + sum(k <= int(m[2]) for k in above.get(m[1], ()))}",
            note,
        )

    assert broken.warnings == [lower(w) for w in plain.warnings]
    assert broken.leftovers == [lower(left) for left in plain.leftovers]


def test_a_diff_through_a_page_break_applies(tmp_path):
    """The diff counts a comment that holds a form feed as one line, as `git apply` does."""
    before, after = "import os\n#\x0c page break\nx = 1\n", "import os\n#\x0c page break\nx = 2\n"
    (tmp_path / "m.py").write_text(before)
    diff = FileChange(SourceFile(tmp_path / "m.py", before, "utf-8", 0o644), after).diff(tmp_path)
    assert "@@ -1,3 +1,3 @@" in diff
    subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=diff, text=True, check=True)
    assert (tmp_path / "m.py").read_text() == after
