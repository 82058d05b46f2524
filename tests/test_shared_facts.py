"""Registrations inserted into one method bind each fact they share once (codemods/transforms/shared_facts.py).

Each case inserts registrations one after another, as a run whose families share a layer does,
then runs the method before and after on a stand-in layer: the kernels must receive the same
arguments from the shared form as from the blocks written one after the other as the specs give
them (the expected calls come from that naive text, not from zerojit's output).
"""

import textwrap

import pytest

from zerojit.codemods.transforms import InsertRegistration, apply

LAYER = "from engine.ops import _OTHER, _THIRD\n\n\nclass Layer(Base):\n    def bind_kv_cache(self, kv_cache):\n        super().bind_kv_cache(kv_cache)\n"
FIRST = "_KERNEL.register_warmup(heads=self.num_heads // self.tp_size, dtype=self.kv_cache[0].dtype)"
SECOND = "heads = self.num_heads // self.tp_size\nstate = self.kv_cache[0]\n_OTHER.register_warmup(heads, state.shape)"
THIRD = "scale = self.scale\nheads = self.num_heads // self.tp_size\n_THIRD.register_warmup(heads, scale)"


def insert(registration, gate=""):
    return InsertRegistration(
        cls="Layer",
        gate=gate,
        registration=registration,
        insert_after="",
        kernel_module="engine.ops",
        kernel_name="_KERNEL",
        lazy=False,
        names=frozenset({"_KERNEL", "_OTHER", "_THIRD"}),
        method="bind_kv_cache",
    )


def migrate(tmp_path, source, ops):
    path = tmp_path / "engine" / "layer.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    edit = apply(source, ops, path=path, repo=tmp_path)
    assert edit.refusals == []
    return edit.source


def calls(source: str, **attributes) -> list:
    """What the kernels receive when bind_kv_cache runs on a layer with these attributes."""
    received = []

    class Kernel:
        def __init__(self, name):
            self.name = name

        def register_warmup(self, *args, **kwargs):
            received.append((self.name, args, kwargs))

    class Base:
        def bind_kv_cache(self, kv_cache):
            self.kv_cache = kv_cache

    class Tensor:
        def __init__(self, dtype, shape):
            self.dtype, self.shape = dtype, shape

    scope = {"Base": Base, **{name: Kernel(name) for name in ("_KERNEL", "_OTHER", "_THIRD")}}
    exec("\n".join(line for line in source.splitlines() if not line.startswith("from engine.ops")), scope)
    layer = scope["Layer"].__new__(scope["Layer"])
    layer.__dict__.update(attributes)
    layer.bind_kv_cache([Tensor("bf16", (4, 8)), Tensor("fp32", (2,))])
    return received


def body(source: str) -> str:
    return source.split("        super().bind_kv_cache(kv_cache)\n")[1]


def written(*blocks: str) -> str:
    """The method's blocks one after another, as the specs write them (each its code, under its `if` if gated)."""
    return LAYER + "".join("\n" + textwrap.indent(block, " " * 8) + "\n" for block in blocks)


def gated(code: str) -> str:
    return "if self.spec:\n" + textwrap.indent(code, "    ")


def test_a_value_a_later_registration_binds_and_an_earlier_one_computes_is_bound_once_above_the_earlier(tmp_path):
    after = migrate(tmp_path, LAYER, [insert(FIRST), insert(SECOND, gate="self.spec"), insert(THIRD, "self.spec")])
    assert body(after) == (
        "\n"
        "        heads = self.num_heads // self.tp_size\n"
        "        state = self.kv_cache[0]\n"
        "        _KERNEL.register_warmup(heads=heads, dtype=state.dtype)\n"
        "\n"
        "        if self.spec:\n"
        "            _OTHER.register_warmup(heads, state.shape)\n"
        "            scale = self.scale\n"
        "            _THIRD.register_warmup(heads, scale)\n"
    )
    naive = written(FIRST, gated(SECOND), gated(THIRD))
    for spec in (True, False):
        facts = dict(num_heads=8, tp_size=2, scale=3, spec=spec)
        assert calls(after, **facts) == calls(naive, **facts)


def test_a_value_the_earlier_registration_computes_only_under_a_condition_is_not_moved(tmp_path):
    first = FIRST.replace("self.num_heads // self.tp_size", "self.num_heads // self.tp_size if self.spec else 1")
    after = migrate(tmp_path, LAYER, [insert(first), insert(SECOND, gate="self.spec")])
    assert "heads=self.num_heads // self.tp_size if self.spec else 1," in after
    assert "            heads = self.num_heads // self.tp_size\n" in after
    naive = written(first, gated(SECOND))
    for spec in (True, False):
        assert calls(after, num_heads=8, tp_size=2, spec=spec) == calls(naive, num_heads=8, tp_size=2, spec=spec)


@pytest.mark.parametrize(
    "above",
    [
        # A registration the method already has, then a method of the class that replaces the cache it read.
        f"{FIRST}\nself._reshape()\n",
        # The method's own binding, then a method that changes what it read, on some layers only.
        "heads = self.num_heads // self.tp_size\nself.heads = heads\nif self.spec:\n    self._reshape()\n",
        # The same, with the attribute assigned in place.
        "heads = self.num_heads // self.tp_size\nself.heads = heads\nself.tp_size = 1\n",
    ],
    ids=["hoist-past-a-method", "reuse-past-a-method", "reuse-past-an-assignment"],
)
def test_a_value_is_not_shared_past_a_statement_that_changes_what_it_reads(tmp_path, above):
    """A later block computes the value again after the change: reusing the earlier one would read the layer
    as it was before (the fork's method sets `self.tp_size` and `self.kv_cache`)."""
    reshape = "\n    def _reshape(self):\n        self.tp_size = 1\n        self.kv_cache = self.kv_cache[::-1]\n"
    source = written(above) + reshape
    after = migrate(tmp_path, source, [insert(SECOND, gate="self.spec")])
    assert "            heads = self.num_heads // self.tp_size\n" in after
    naive = written(above, gated(SECOND)) + reshape
    for spec in (True, False):
        facts = dict(num_heads=8, tp_size=2, spec=spec)
        assert calls(after, **facts) == calls(naive, **facts)


def test_a_local_the_method_already_names_is_not_bound_in_its_place(tmp_path):
    """`heads` means something else in the method already (a local of its own): the block keeps its binding."""
    source = LAYER + "        heads = 3\n        self.heads = heads\n"
    after = migrate(tmp_path, source, [insert(FIRST), insert(SECOND, gate="self.spec")])
    assert after.count("heads = self.num_heads // self.tp_size") == 1
    assert "_KERNEL.register_warmup(heads=self.num_heads // self.tp_size," in after


def test_a_binding_the_method_deletes_after_it_is_made_again_in_the_block(tmp_path):
    """The method binds `heads` as the block does, then deletes it: the block binds it again (reading the
    deleted one would fail to compile in the gate)."""
    above = "heads = self.num_heads // self.tp_size\nself.heads = heads\ndel heads\nx = 1\n"
    after = migrate(tmp_path, written(above), [insert(SECOND, gate="self.spec")])
    assert "            heads = self.num_heads // self.tp_size\n" in after
