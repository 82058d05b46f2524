"""Each libcst transform on small before/after sources, written out by hand."""

import textwrap

import pytest

from zerojit.codemods.transforms import AnchorError, InsertRegistration, RemoveLegacyCalls, RenameSingleton, apply


def src(text):
    return textwrap.dedent(text).lstrip("\n")


def rename(package="pkg", bare=False, strings=False, aliases=()):
    return RenameSingleton("KERNEL", "_KERNEL", frozenset({"pkg.ops", "pkg"}), package, bare=bare, strings=strings,
                           module_aliases=frozenset(aliases))


def test_rename_in_defining_module_with_strings_and_comments_kept():
    before = src('''
        # the singleton
        KERNEL = Kernel()  # keep this comment

        __all__ = ["Kernel", 'KERNEL']
        _LAZY = {"KERNEL": "ops", "OTHER_KERNEL": "x"}


        def run():
            return KERNEL(1)
        ''')
    after = src('''
        # the singleton
        _KERNEL = Kernel()  # keep this comment

        __all__ = ["Kernel", '_KERNEL']
        _LAZY = {"_KERNEL": "ops", "OTHER_KERNEL": "x"}


        def run():
            return _KERNEL(1)
        ''')
    new, counts = apply(before, [rename(bare=True, strings=True)])
    assert new == after
    assert counts["rename_singleton"] == 4


def test_rename_in_importers_multi_name_parenthesized_relative_and_aliased():
    before = src('''
        from pkg.ops import (
            helper,  # first
            KERNEL,
            other,
        )
        from .ops import KERNEL as k
        from elsewhere import KERNEL as unrelated
        from pkg import ops


        def f():
            ops.KERNEL(helper, other)
            k()
            return KERNEL
        ''')
    after = src('''
        from pkg.ops import (
            helper,  # first
            _KERNEL,
            other,
        )
        from .ops import _KERNEL as k
        from elsewhere import KERNEL as unrelated
        from pkg import ops


        def f():
            ops._KERNEL(helper, other)
            k()
            return _KERNEL
        ''')
    new, _ = apply(before, [rename(bare=True, aliases=("ops",))])
    assert new == after


def test_rename_leaves_strings_alone_outside_exporters_but_renames_dotted_paths():
    before = 'patch("pkg.ops.KERNEL")\nlabel = "KERNEL"\n'
    after = 'patch("pkg.ops._KERNEL")\nlabel = "KERNEL"\n'
    assert apply(before, [rename()])[0] == after


ORCHESTRATOR = src('''
    import sys
    from typing import TYPE_CHECKING

    from engine.warmup.legacy import (
        legacy_warmup,
    )
    from engine.warmup.other import other_warmup, third_warmup
    from engine.platforms import current_platform


    def kernel_warmup(worker):
        other_warmup(worker)

        # Only for the legacy model.
        if current_platform.is_rocm() and "engine.models.m3" in sys.modules:
            legacy_warmup(worker)

        if worker.enabled:
            legacy_warmup(worker); third_warmup(worker)
        else:
            legacy_warmup(worker)
    ''')


def test_remove_call_import_and_emptied_gate_and_unused_imports():
    expected = src('''
        from typing import TYPE_CHECKING

        from engine.warmup.other import other_warmup, third_warmup


        def kernel_warmup(worker):
            other_warmup(worker)

            if worker.enabled:
                third_warmup(worker)
            else:
                pass
        ''')
    op = RemoveLegacyCalls(frozenset({"legacy_warmup"}), "engine.warmup.legacy", "engine.warmup")
    new, counts = apply(ORCHESTRATOR, [op])
    assert new == expected
    # sys and current_platform lost their only uses; TYPE_CHECKING was unused before and stays.
    assert counts == {"remove_legacy_call": 4, "drop_unused_imports": 2}


def test_remove_one_name_from_an_unparenthesized_list_keeps_it_valid():
    before = "from engine.warmup.legacy import legacy_warmup, keep\n\nkeep(legacy_warmup)\nlegacy_warmup()\n"
    op = RemoveLegacyCalls(frozenset({"legacy_warmup"}), "engine.warmup.legacy", "engine.warmup")
    # legacy_warmup is still referenced (as an argument), so only its call goes; the import stays.
    new, _ = apply(before, [op])
    assert new == "from engine.warmup.legacy import keep\n\nkeep(legacy_warmup)\n"


def test_remove_step_definitions_and_calls():
    before = src('''
        def _warm_a(worker):
            worker.a()


        def _warm_b(worker):
            worker.b()


        def entry(worker):
            _warm_a(worker)
            _warm_b(worker)
        ''')
    after = src('''
        def _warm_b(worker):
            worker.b()


        def entry(worker):
            _warm_b(worker)
        ''')
    op = RemoveLegacyCalls(frozenset({"_warm_a"}), "", "engine.warmup", remove_defs=True)
    assert apply(before, [op])[0] == after


LAYER = src('''
    from engine.ops import _KERNEL


    class Layer:
        def __init__(self, config):
            self.version = pick(config)
            if self.version is not None:
                self.fn = make(self.version)

            # Decide padding.
            self.pad = self.version is None

        def forward(self):
            return _KERNEL()
    ''')


def test_insert_registration_after_anchor_with_multiline_gate():
    op = InsertRegistration("Layer", "(\n    config.enable_jit_warmup\n    and self.version == 4\n)",
                            "_KERNEL.register_warmup()", insert_after="if self.version is not None:")
    expected = LAYER.replace('''            self.fn = make(self.version)
''', '''            self.fn = make(self.version)

        if (
            config.enable_jit_warmup
            and self.version == 4
        ):
            _KERNEL.register_warmup()
''')
    new, counts = apply(LAYER, [op])
    assert new == expected and counts == {"insert_registration": 1}
    assert apply(new, [op]) == (new, {})  # idempotent


def test_insert_registration_at_end_adds_needed_import():
    op = InsertRegistration("Layer", "config.enable_jit_warmup", "_KERNEL.register_warmup()",
                            imports=("from engine.jit import register_warmup",))
    new, _ = apply(LAYER, [op])
    assert new.startswith("from engine.ops import _KERNEL\nfrom engine.jit import register_warmup\n")
    assert '''        self.pad = self.version is None

        if config.enable_jit_warmup:
            _KERNEL.register_warmup()

    def forward''' in new


def test_missing_anchors_are_named():
    with pytest.raises(AnchorError, match="class Missing not found"):
        apply(LAYER, [InsertRegistration("Missing", "True", "_KERNEL.register_warmup()")])
    with pytest.raises(AnchorError, match=r"no statement starting with 'if nothing:'"):
        apply(LAYER, [InsertRegistration("Layer", "True", "_KERNEL.register_warmup()", insert_after="if nothing:")])
