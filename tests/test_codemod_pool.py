"""The worker pool starts files while planning goes on: whatever it started early, each file's result is that
of the job it has when planning ends, the same as a transform run in this process after planning."""

import dataclasses
from concurrent.futures import Future

import pytest
from tree_forks import write_tree

from zerojit.codemods import gate, pool, style
from zerojit.codemods.files import Prefiltered, naming
from zerojit.codemods.heads import Heads
from zerojit.codemods.planner import Planner
from zerojit.codemods.transforms import RenameKernel
from zerojit.migrate.families import migration_specs

SOURCE = "KERNEL = object()\nOTHER = object()\n\n\ndef use():\n    return KERNEL, OTHER\n"
NO_FACTS = gate.Facts(frozenset(), frozenset(), ())


def job(tmp_path, *renamed):
    path = tmp_path / "pkg" / "ops.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(SOURCE)
    operations = tuple(RenameKernel(name, f"_{name}", frozenset({"pkg.ops"})) for name in renamed)
    file = pool.FileJob(path, "pkg.ops", "pkg", SOURCE)
    return pool.TransformJob(file, operations, tmp_path, (), style.repo_style(tmp_path, ["pkg"]))


def test_a_file_offered_again_with_another_operation_gets_the_result_of_its_last_job(tmp_path):
    first, last = job(tmp_path, "KERNEL"), job(tmp_path, "KERNEL", "OTHER")
    with pool.Pool(2) as workers:
        workers.offer([first])  # a worker starts it at once: planning holds the other core
        workers.offer([last])
        seen = []
        (result,), _ = workers.finish([last], [], NO_FACTS, seen.append, lambda done, total: None)
    assert result == pool.transform(last) and seen == [result]  # told as it ended, in this process
    assert "return _KERNEL, _OTHER" in result.edit.source


def test_a_file_no_longer_planned_is_not_part_of_the_results(tmp_path):
    kept = job(tmp_path, "KERNEL")
    dropped = dataclasses.replace(kept, file=dataclasses.replace(kept.file, path=tmp_path / "pkg" / "gone.py"))
    with pool.Pool(2) as workers:
        workers.offer([dropped, kept])
        seen = []
        results, _ = workers.finish([kept], [], NO_FACTS, seen.append, lambda done, total: None)
    assert [r.path for r in results] == [r.path for r in seen] == [kept.file.path]


def test_a_run_that_stops_while_planning_leaves_no_callback_error(tmp_path, caplog):
    """A transform that ends while the pool shuts down (the planner raised) starts nothing after it."""
    first = job(tmp_path, "KERNEL")
    second = dataclasses.replace(first, file=dataclasses.replace(first.file, path=tmp_path / "pkg" / "other.py"))
    with pytest.raises(KeyboardInterrupt):
        with pool.Pool(2) as workers:
            workers.offer([first, second])  # one starts, the other waits for its slot
            raise KeyboardInterrupt
    assert [r.getMessage() for r in caplog.records] == []


def test_the_prefilter_a_worker_reads_decides_what_the_planner_has_not_searched_when_it_comes_for_texts_read_alike(
    tmp_path,
):
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "batch_memcpy = 1\n",
        "pkg/b.py": "class Base:\n    pass\n",
        "pkg/c.py": "MambaMixer\n",
        "pkg/d.py": "from pkg.b import Base as B\n\n\nclass D(B):\n    pass\n",
    }
    repo = write_tree(tmp_path / "repo", files)
    spec = migration_specs()["mamba-batch-memcpy"]
    planner = Planner(repo, [spec])
    here = set(planner.candidates)
    assert planner.head_index.naming("Base") == {"pkg.d"}
    with pool.Pool(2) as workers:
        planner = Planner(repo, [spec], prefilter=workers.prefilter)
        read = set(planner.candidates)
        assert planner.head_index.naming("Base") == {"pkg.d"}
    assert here == read == {"pkg.a", "pkg.c"}

    def stale(paths, words):  # each file read as another text: other lengths, the other answer, no classes
        return _answered(
            [Prefiltered(len(p.read_text()) + 1, not naming(p.read_text(), words), Heads((), ())) for p in paths]
        )

    planner = Planner(repo, [spec], prefilter=stale)
    assert set(planner.candidates) == here and planner.head_index.naming("Base") == {"pkg.d"}

    def late(paths, words):  # read as the run did, each answer the other one, and come once two modules are searched
        answer = [Prefiltered(len(p.read_text()), not naming(p.read_text(), words), Heads((), ())) for p in paths]
        return _answered(answer, polls_before=2)

    planner = Planner(repo, [spec], prefilter=late)
    searched_here, answered = list(planner.modules)[:2], list(planner.modules)[2:]
    assert set(planner.candidates) == {n for n in searched_here if n in here} | {n for n in answered if n not in here}


def _answered(answer, polls_before=0):
    """A worker's answer as the planner gets it: a future, done once it has been asked `polls_before` times."""

    class Arriving(Future):
        polls = 0

        def done(self):
            self.polls += 1
            return self.polls > polls_before

    future = Arriving()
    future.set_result(answer)
    return future


def test_a_migrated_file_its_style_step_leaves_as_it_is_is_linted_once(tmp_path, monkeypatch):
    """The lint that finds unsorted imports is the gate's (its rules hold I001): where restyling changes nothing,
    the gate reads it instead of running ruff on the same text again."""
    linted = []
    lint = style.Style.lint

    def counted(self, path, source, *rules):
        linted.append(source)
        return lint(self, path, source, *rules)

    monkeypatch.setattr(style.Style, "lint", counted)
    result = pool.transform(job(tmp_path, "KERNEL"))
    assert "return _KERNEL, OTHER" in result.edit.source and not result.violations
    assert linted == [result.edit.source]


def test_a_migrated_file_its_style_step_changes_is_linted_again(tmp_path):
    """A rename past the line length: the style step wraps the line, and the gate reads the wrapped file."""
    long = "KERNEL_" + "X" * 70  # its definition still fits in 88 columns, the return does not
    renamed = dataclasses.replace(job(tmp_path), operations=(RenameKernel("KERNEL", long, frozenset({"pkg.ops"})),))
    result = pool.transform(renamed)
    assert f"        {long},\n" in result.edit.source and not result.violations
