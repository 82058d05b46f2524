"""A file's outline (codemods/transforms/outline.py): it puts back to the file byte for byte, its lines name the
file's, and an edit made on it is the edit made on the whole file."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from test_codemod_transforms import insert

from zerojit.codemods.planner import Planner
from zerojit.codemods.syntax import source_lines
from zerojit.codemods.transforms import InsertRegistration, RemoveLegacyCalls, apply, pipeline
from zerojit.codemods.transforms.lift_kernel import LiftKernel
from zerojit.codemods.transforms.outline import Outline
from zerojit.migrate.engine_trees.releases import vllm_tree
from zerojit.migrate.families import migration_specs

REPO = Path(__file__).resolve().parents[1]
OWN_SOURCES = sorted(p for room in ("codemods", "contract", "migrate") for p in (REPO / room).rglob("*.py"))


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _keep_none(function, holders, code) -> bool:
    return False


def _outer_names(body: list[ast.stmt]) -> list[str]:
    """The defs and classes of a module's body and of its classes' bodies (not those inside functions)."""
    found = []
    for node in body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.name)
        if isinstance(node, ast.ClassDef):
            found += _outer_names(node.body)
    return found


@pytest.mark.parametrize("path", OWN_SOURCES[::3], ids=lambda p: p.name)
def test_an_outline_puts_back_to_its_file_and_each_of_its_lines_is_the_files_line(path):
    source = path.read_text(encoding="utf-8")
    outline = Outline.of(source, [_keep_none])
    if outline is None:  # nothing to leave out, or the text holds the marker itself (outline.py does)
        functions = any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(ast.parse(source)))
        assert not functions or "zerojit:outlined" in source
        return
    text, line = outline.expand(outline.text)
    assert text == source
    file_lines, outlined = source_lines(source, keepends=True), source_lines(outline.text, keepends=True)
    assert len(outlined) < len(file_lines)
    markers = iter(outline.bodies)
    for number, text in enumerate(outlined, 1):
        # A marker's line is its body's last: a note on a line added below it is said above, at the line kept.
        expected = source_lines(next(markers), keepends=True)[-1] if "zerojit:outlined" in text else text
        assert file_lines[line(number) - 1] == expected, (number, text)
    # Every def and class outside a function is still there.
    assert _outer_names(ast.parse(outline.text).body) == _outer_names(ast.parse(source).body)


def test_what_an_outline_keeps_whole():
    source = src("""
        import os


        def short(): return 1


        def long_header(a,
                        b): return a


        def declares():
            global STATE
            STATE = 1


        @decorated
        async def outlined(x):
            '''Gone from the outline.'''
            return x
        # a comment below it stays


        class Holder:
            def kept(self):
                return 2

            def other(self):
                return 3
        """)
    outline = Outline.of(source, [lambda function, holders, code: function.name == "kept"])
    assert outline.text == source.replace(
        "    '''Gone from the outline.'''\n    return x\n", "    ...  # zerojit:outlined:0\n"
    ).replace("        return 3\n", "        ...  # zerojit:outlined:1\n")
    text, line = outline.expand(outline.text)
    assert text == source and [line(n) for n in (17, 18, 19, 26, 27)] == [17, 19, 20, 27, 28]
    first, second = "    ...  # zerojit:outlined:0\n", "        ...  # zerojit:outlined:1\n"
    assert outline.expand(outline.text.replace(second, "")) is None  # a marker dropped
    assert outline.expand(outline.text + first) is None  # copied
    swapped = outline.text.replace(first, "@").replace(second, first.replace("0", "1")).replace("@", second)
    assert outline.expand(swapped) is None  # out of order


@pytest.mark.parametrize(
    "source",
    [
        "def f():\r\n    return 1\r\n",
        "def f():\n    return 1  # zerojit:outlined:0\n",
        "def f(:\n    return 1\n",
        "def f():\n    return 1",
    ],
    ids=["crlf", "holds-a-marker", "does-not-parse", "no-line-end-at-its-end"],
)
def test_a_file_the_outline_cannot_stand_for_is_edited_whole(source):
    assert Outline.of(source, [_keep_none]) is None


LAYERS = src("""
    from engine.ops import _KERNEL

    STATE = None


    def unrelated(config):
        global STATE
        STATE = config
        return [part for part in config.parts]


    def factory(config):
        class Nested:
            def __init__(self, config):
                self.width = config.width
                self.block = None

        return Nested(config)


    class Layer:
        def __init__(self, config):
            self.version = pick(config)
            self._build(config)
            self.pad = self.version is None

        def _build(self, config):
            self.block = make(config)

        def forward(self, x):
            y = x * 2
            return _KERNEL(y)


    class Later:
        def helper(self):
            return 4

        def __init__(self, config):
            self.version = pick(config)
    """)


def _registration(**changes) -> InsertRegistration:
    fields = dict(registration="_KERNEL.register_warmup(block=self.block)", insert_after="self.version = pick(")
    return insert(**{**fields, **changes})


# Found by a hostile probe: each gave a different edit, note line or error on the outline than on the whole file.
FORM_FEEDS = src("""
    def helper(x):
        y = x  # \x0c\x0c\x0c
        return y


    class Layer:
        def __init__(self, config):
            self.block = config
            self._build(config)

        def _build(self, config):
            self.block = make(config)
    """)
LAST_METHOD_OUTLINED = src("""
    def helper(x):
        y = x
        return y


    class Layer(Base):
        def forward(self, x):
            y = x + 1
            return y * 2
    """)
ABOVE_AND_BELOW = (
    "def f(x):\n" + "    x += 1\n" * 12 + "    return x\n\n\nclass Layer:\n    def __init__(self, config):\n"
    "        self.block = 1\n\n        self.pad = 1\n\n\n" + "".join(f"C{j} = {j}\n" for j in range(8))
)
BIND = "def bind(self, kv):\n    super().bind(kv)\n"
CASES = {
    "method-it-calls": (LAYERS, [_registration()]),  # it goes after the call of the method that sets what it reads
    "class-in-a-function": (  # and one of that name at the top level: the edit takes both
        LAYERS + "\n\nclass Nested:\n    def __init__(self, config):\n        self.width = config.width\n",
        [_registration(cls="Nested", registration="_KERNEL.register_warmup(width=self.width)", insert_after="")],
    ),
    "class-header-split-by-a-backslash": (
        LAYERS.replace("    class Nested:", "    class \\\n            Nested:"),
        [_registration(cls="Nested", registration="_KERNEL.register_warmup(width=self.width)", insert_after="")],
    ),
    "refusal-line": (LAYERS, [_registration(cls="Later", gate="enabled", names=frozenset({"enabled", "_KERNEL"}))]),
    "a-refusal-below-what-an-earlier-operation-added": (
        LAYERS,
        [_registration(), _registration(cls="Later", gate="enabled", names=frozenset({"enabled", "_KERNEL"}))],
    ),
    "guessed-anchor-warning": (
        LAYERS,
        [_registration(cls="Later", registration="_KERNEL.register_warmup()", insert_after="self.missing =")],
    ),
    "form-feeds-in-a-comment": (FORM_FEEDS, [_registration(insert_after="self.block = config")]),
    "a-note-on-an-added-line-below-an-outlined-body": (
        LAST_METHOD_OUTLINED,
        [
            _registration(method="bind", override=BIND, insert_after="", registration="_KERNEL.register_warmup()"),
            _registration(method="bind", override=BIND, insert_after="", gate="unbound", names=frozenset({"unbound"})),
        ],
    ),
    "notes-where-the-diff-aligns-on-more-text": (
        ABOVE_AND_BELOW,
        [
            _registration(gate="self.g", insert_after="self.block = "),
            _registration(kernel_name="_OTHER", registration="_OTHER.register_warmup()", insert_after="_KERNEL.reg"),
        ],
    ),
    "an-override-that-calls-a-method": (
        LAST_METHOD_OUTLINED.replace(
            "    def forward", "    def _build(self):\n        self.block = 1\n\n    def forward"
        ),
        [_registration(override="def __init__(self):\n    super().__init__()\n    self._build()\n", insert_after="")],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_registration_made_on_the_outline_is_the_one_made_on_the_whole_file(tmp_path, monkeypatch, case):
    source, ops = CASES[case]
    path = tmp_path / "engine" / "layer.py"
    path.parent.mkdir()
    path.write_text(source)
    assert Outline.of(source, [op.keeps for op in ops]) is not None  # some function is left out
    outlined = apply(source, ops, path=path, repo=tmp_path)
    monkeypatch.setattr(pipeline.Outline, "of", classmethod(lambda cls, source, keeps: None))
    whole = apply(source, ops, path=path, repo=tmp_path)
    assert (outlined.source, outlined.counts, outlined.warnings) == (whole.source, whole.counts, whole.warnings)
    assert list(map(str, outlined.refusals)) == list(map(str, whole.refusals))
    assert outlined.counts or outlined.refusals


class _RemovalReadingEntry(RemoveLegacyCalls):
    """remove_legacy_call as an operation that reads only `entry`: the rest of the file may be outlined."""

    outlines = True

    def keeps(self, function, holders, code) -> bool:
        return function.name == "entry"


def test_a_helper_a_body_the_outline_left_out_still_names_is_not_dead(tmp_path, monkeypatch):
    """The removed call was `_LIMIT`'s last use in the outline, not in the file: `other` reads it too."""
    source = src("""
        from engine.legacy import warm

        _LIMIT = 4


        def other(worker):
            return worker.size(_LIMIT)


        def entry(worker):
            warm(worker, _LIMIT)
            worker.b()
        """)
    path = tmp_path / "engine" / "layer.py"
    path.parent.mkdir()
    path.write_text(source)
    ops = [_RemovalReadingEntry(frozenset({"engine.legacy.warm"}))]
    assert "worker.size" not in Outline.of(source, [op.keeps for op in ops]).text
    outlined = apply(source, ops, path=path, repo=tmp_path)
    monkeypatch.setattr(pipeline.Outline, "of", classmethod(lambda cls, source, keeps: None))
    whole = apply(source, ops, path=path, repo=tmp_path)
    assert outlined.source == whole.source and "_LIMIT = 4" in outlined.source and "warm" not in outlined.source


@pytest.mark.release_tree
def test_a_lift_made_on_the_outline_is_the_one_made_on_the_whole_file(monkeypatch):
    """A launcher's file is outlined to the launcher (lift_kernel's `keeps`): each migrated file is the same, for
    every built-in lift on 0.33.0 planned together."""
    planner = Planner(vllm_tree("0.33.0"), [spec for spec in migration_specs().values() if spec.lift])
    planner.plan()
    lifted = {name: ops for name, ops in planner.ops.items() if any(isinstance(op, LiftKernel) for op in ops)}
    assert len(lifted) >= 6
    for name, ops in lifted.items():
        module = planner.modules[name]
        assert Outline.of(module.text, [op.keeps for op in ops]) is not None
        with monkeypatch.context() as whole_file:
            whole_file.setattr(pipeline.Outline, "of", classmethod(lambda cls, source, keeps: None))
            whole = apply(module.text, ops, path=module.path, repo=planner.repo)
        outlined = apply(module.text, ops, path=module.path, repo=planner.repo)
        assert (outlined.source, outlined.counts, outlined.warnings) == (whole.source, whole.counts, whole.warnings)
        assert outlined.source != module.text and not outlined.refusals, name
