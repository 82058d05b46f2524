"""A file's outline (codemods/transforms/outline.py): it puts back to the file byte for byte, its lines name the
file's, and an edit made on it is the edit made on the whole file."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from test_codemod_transforms import insert

from zerojit.codemods.transforms import InsertRegistration, apply, pipeline
from zerojit.codemods.transforms.outline import Outline

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
    if outline is None:
        assert not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(ast.parse(source)))
        return
    assert outline.restore(outline.text) == source
    lines, outlined = source.splitlines(), outline.text.splitlines()
    assert len(outlined) < len(lines)
    for number, text in enumerate(outlined, 1):
        if "zerojit:outlined" in text:  # a marker: where the body it stands for starts, at its indentation
            body = lines[outline.line(number) - 1]
            assert body.strip() and body[: len(body) - len(body.lstrip())] == text[: len(text) - len(text.lstrip())]
        else:
            assert lines[outline.line(number) - 1] == text, (number, text)
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
                return 3""")
    outline = Outline.of(source, [lambda function, holders, code: function.name == "kept"])
    assert outline.text == source.replace(
        "    '''Gone from the outline.'''\n    return x\n", "    ...  # zerojit:outlined:0\n"
    ).replace("        return 3", "        ...  # zerojit:outlined:1\n")
    assert outline.restore(outline.text) == source  # the file's last line had no line end, and has none
    assert [outline.line(n) for n in (18, 19, 26, 29)] == [18, 20, 27, 30]
    assert outline.restore(outline.text.replace("...  # zerojit:outlined:1\n", "")) is None  # a marker dropped
    copied = outline.text + "    ...  # zerojit:outlined:0\n"
    assert outline.restore(copied) is None


@pytest.mark.parametrize(
    "source",
    ["def f():\r\n    return 1\r\n", "def f():\n    return 1  # zerojit:outlined:0\n", "def f(:\n    return 1\n"],
    ids=["crlf", "holds-a-marker", "does-not-parse"],
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


@pytest.mark.parametrize(
    "op",
    [
        _registration(),  # reads what a method __init__ calls sets: it goes after that call (and warns there)
        _registration(cls="Nested", registration="_KERNEL.register_warmup(width=self.width)", insert_after=""),
        _registration(cls="Later", gate="enabled", names=frozenset({"enabled", "_KERNEL"})),  # refused at its line
        _registration(cls="Later", registration="_KERNEL.register_warmup()", insert_after="self.missing ="),
    ],
    ids=["method-it-calls", "class-in-a-function", "refusal-line", "guessed-anchor-warning"],
)
def test_a_registration_made_on_the_outline_is_the_one_made_on_the_whole_file(tmp_path, monkeypatch, op):
    path = tmp_path / "engine" / "layer.py"
    path.parent.mkdir()
    path.write_text(LAYERS)
    assert Outline.of(LAYERS, [op.keeps]) is not None  # `unrelated` and `forward` at least are left out
    outlined = apply(LAYERS, [op], path=path, repo=tmp_path)
    monkeypatch.setattr(pipeline.Outline, "of", classmethod(lambda cls, source, keeps: None))
    whole = apply(LAYERS, [op], path=path, repo=tmp_path)
    assert (outlined.source, outlined.counts, outlined.warnings) == (whole.source, whole.counts, whole.warnings)
    assert list(map(str, outlined.refusals)) == list(map(str, whole.refusals))
    assert outlined.counts or outlined.refusals
