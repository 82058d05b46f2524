"""Each libcst transform on small before/after sources, written out by hand.

Sources are written into a throwaway package tree, because names are resolved the way a
repo resolves them (fully qualified, relative imports against the file's package).
"""

import textwrap

import libcst as cst
import pytest
from libcst.metadata import ScopeProvider

from zerojit.codemods import gate
from zerojit.codemods.spec import MigrationSpec, SpecError
from zerojit.codemods.style import repo_style
from zerojit.codemods.transforms import (
    AnchorError,
    InsertRegistration,
    RemoveLegacyCalls,
    RenameKernel,
    apply,
    pipeline,
)
from zerojit.codemods.transforms.insert_owner import InsertOwner
from zerojit.codemods.transforms.registration_code import joined_into_registration_if, without_keywords
from zerojit.codemods.transforms.remove_dead_local import dead_locals, unread_somewhere


def src(text):
    return textwrap.dedent(text).lstrip("\n")


def run(tmp_path, module, source, ops):
    """Apply `ops` to `source` as module `module` (e.g. "pkg.sub.mod") of a repo rooted at tmp_path."""
    path = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return apply(source, ops, path=path, repo=tmp_path)


RENAME = RenameKernel("KERNEL", "_KERNEL", frozenset({"pkg.ops", "pkg"}))


def test_rename_in_defining_module_with_strings_and_comments_kept(tmp_path):
    before = src("""
        # the singleton
        KERNEL = Kernel()  # keep this comment

        __all__ = ["Kernel", 'KERNEL']
        _LAZY = {"KERNEL": "ops", "OTHER_KERNEL": "x"}


        def run(KERNEL=None):
            class Local:
                KERNEL = 1
            configure(KERNEL=2)
            return KERNEL, Local.KERNEL


        def use():
            return KERNEL(1)
        """)
    after = src("""
        # the singleton
        _KERNEL = Kernel()  # keep this comment

        __all__ = ["Kernel", '_KERNEL']
        _LAZY = {"_KERNEL": "ops", "OTHER_KERNEL": "x"}


        def run(KERNEL=None):
            class Local:
                KERNEL = 1
            configure(KERNEL=2)
            return KERNEL, Local.KERNEL


        def use():
            return _KERNEL(1)
        """)
    edit = run(tmp_path, "pkg.ops", before, [RENAME])
    # A parameter, a class attribute and a keyword argument that share the name are not the kernel.
    assert edit.source == after and edit.refusals == []
    assert edit.counts["rename_kernel"] == 4


def test_rename_in_importers_multi_name_parenthesized_relative_aliased_and_lazy(tmp_path):
    before = src("""
        import pkg.ops as kernels
        from pkg.ops import (
            helper,  # first
            KERNEL,
            other,
        )
        from .ops import KERNEL as k
        from elsewhere import KERNEL as unrelated
        from pkg import ops


        def f():
            from pkg.ops import KERNEL as lazy
            ops.KERNEL(helper, other)
            kernels.KERNEL.go()
            getattr(ops, "KERNEL")
            unrelated.KERNEL
            k(), lazy()
            return KERNEL
        """)
    after = src("""
        import pkg.ops as kernels
        from pkg.ops import (
            helper,  # first
            _KERNEL,
            other,
        )
        from .ops import _KERNEL as k
        from elsewhere import KERNEL as unrelated
        from pkg import ops


        def f():
            from pkg.ops import _KERNEL as lazy
            ops._KERNEL(helper, other)
            kernels._KERNEL.go()
            getattr(ops, "_KERNEL")
            unrelated.KERNEL
            k(), lazy()
            return _KERNEL
        """)
    edit = run(tmp_path, "pkg.user", before, [RENAME])
    assert edit.source == after and edit.refusals == []


def test_rename_leaves_strings_alone_outside_exporters_but_renames_dotted_paths(tmp_path):
    before = 'patch("pkg.ops.KERNEL")\nlabel = "KERNEL"\n'
    assert run(tmp_path, "other", before, [RENAME]).source == 'patch("pkg.ops._KERNEL")\nlabel = "KERNEL"\n'


def test_rename_refuses_a_star_import_and_warns_about_computed_names(tmp_path):
    edit = run(tmp_path, "other", "from pkg.ops import *\nKERNEL.go()\n", [RENAME])
    assert [r.place.line for r in edit.refusals] == [2] and "star import" in edit.refusals[0].reason
    edit = run(tmp_path, "third", "from pkg import ops\nname = 'KER' + 'NEL'\ngetattr(ops, name)\n", [RENAME])
    assert edit.refusals == [] and [w.line for w in edit.warnings] == [3]


def test_rename_warns_about_a_computed_name_in_a_function_that_names_the_lookup_only_by_its_alias(tmp_path):
    before = src("""
        from builtins import getattr as lookup

        from pkg import ops


        def find(name):
            return lookup(ops, name)
    """)
    edit = run(tmp_path, "fourth", before, [RENAME])
    assert edit.refusals == [] and [w.line for w in edit.warnings] == [7]


ORCHESTRATOR = src("""
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
        try:
            legacy_warmup(worker)
        except RuntimeError:
            pass
        if worker.debug:
            legacy_warmup(worker)
        else:
            third_warmup(worker)
    """)
LEGACY = RemoveLegacyCalls(frozenset({"engine.warmup.legacy.legacy_warmup"}))


def test_remove_calls_with_the_code_that_exists_only_for_them(tmp_path):
    expected = src("""
        from typing import TYPE_CHECKING

        from engine.warmup.other import other_warmup, third_warmup


        def kernel_warmup(worker):
            other_warmup(worker)

            if worker.enabled:
                third_warmup(worker)
            if not worker.debug:
                third_warmup(worker)
        """)
    edit = run(tmp_path, "engine.warmup.kernel_warmup", ORCHESTRATOR, [LEGACY])
    assert edit.refusals == []
    assert edit.source == expected
    assert edit.counts == {"remove_legacy_call": 5}


def test_a_local_left_unread_goes_only_from_the_method_the_removal_changed(tmp_path):
    """Two methods of one name, each with a local `cfg`: the one whose only reader the removal took loses it; the
    other, already unread before (not the migration's business), keeps it."""
    source = src("""
        from engine.warmup.legacy import legacy_warmup


        class A:
            def warm(self):
                cfg = None


        class B:
            def warm(self, worker):
                cfg = worker.config
                legacy_warmup(cfg)
        """)
    edit = run(tmp_path, "engine.layers", source, [LEGACY])
    assert edit.refusals == [] and edit.counts == {"remove_legacy_call": 1, "remove_dead_local": 1}
    assert "        cfg = None\n" in edit.source and "worker.config" not in edit.source


def test_a_local_unread_before_the_removal_stays_in_the_function_it_changed(tmp_path):
    """In the function the removal changed, the local whose only reader it took goes; one nothing read before stays
    (what the file had unread is not the migration's business)."""
    source = src("""
        from engine.warmup.legacy import legacy_warmup


        def warm(worker):
            spare = worker.rank
            cfg = worker.config
            legacy_warmup(cfg)
            return worker
        """)
    edit = run(tmp_path, "engine.layers", source, [LEGACY])
    assert edit.refusals == [] and edit.counts == {"remove_legacy_call": 1, "remove_dead_local": 1}
    assert "    spare = worker.rank\n" in edit.source and "worker.config" not in edit.source


@pytest.mark.parametrize("declares", ["", "global SEEN; "])
def test_scopes_are_resolved_for_dead_locals_only_where_a_function_may_hold_one_and_a_global_reads_the_file(
    tmp_path, monkeypatch, declares
):
    """The scopes are resolved once: for the function the removal changed, which holds a local left unread, and not
    for its version before (nothing unread there) or after the local goes. Where a function declares a global the
    whole file's scopes are read, before and after: the local another function never read stays."""
    source = src(f"""
        from engine.warmup.legacy import legacy_warmup


        class A:
            def warm(self):
                {declares}cfg = None


        class B:
            def warm(self, worker):
                spec = worker.config
                legacy_warmup(spec)
                return worker
        """)
    resolved = []
    monkeypatch.setattr(pipeline, "dead_locals", lambda scopes: resolved.append(scopes) or dead_locals(scopes))
    edit = run(tmp_path, "engine.layers", source, [LEGACY])
    assert edit.refusals == [] and edit.counts == {"remove_legacy_call": 1, "remove_dead_local": 1}
    assert f"        {declares}cfg = None\n" in edit.source and "worker.config" not in edit.source
    assert len(resolved) == (3 if declares else 1)


@pytest.mark.parametrize("declares", ["", "global SEEN; "])
def test_no_scopes_are_resolved_where_no_function_of_the_file_leaves_a_name_unread(tmp_path, monkeypatch, declares):
    """With a global, the whole file's symbol table decides; without, the changed functions'. Here neither has a
    name bound and never read, so nothing is resolved."""
    source = src(f"""
        from engine.warmup.legacy import legacy_warmup


        class A:
            def warm(self):
                {declares}SEEN = None


        class B:
            def warm(self, worker):
                legacy_warmup(worker.config)
                return worker
        """)
    resolved = []
    monkeypatch.setattr(pipeline, "dead_locals", lambda scopes: resolved.append(scopes) or dead_locals(scopes))
    edit = run(tmp_path, "engine.layers", source, [LEGACY])
    assert edit.refusals == [] and edit.counts == {"remove_legacy_call": 1}
    assert resolved == []


@pytest.mark.parametrize(
    "code, unread",
    [
        ("def f(worker):\n    cfg = worker.config\n    return worker\n", True),
        ("class A:\n    def warm(self):\n        cfg = None\n", True),  # a method's
        ("def f(worker):\n    cfg = worker.config\n    return cfg\n", False),
        ("def f(worker):\n    import os\n    def g():\n        pass\n    return worker\n", False),  # not locals
        ("def f(a, *args, **kwargs):\n    return a\n", False),  # parameters
        ("x = 1\nclass A:\n    y = 2\n", False),  # no function
        ("def f():\n    x = 1\n    return lambda: x\n", True),  # read only by an inner scope: asked for anyway
        ("SEEN = 0\ndef f():\n    global SEEN\n    SEEN = 1\n", False),  # the module's name, not a local
    ],
)
def test_what_may_hold_a_local_left_unread_and_what_cannot(code, unread):
    """Where the symbol table finds no name a function binds and never reads, dead_locals (on libcst's scopes) finds
    none either; where it does, the scopes decide."""
    assert unread_somewhere(code) is unread
    found = dead_locals(cst.MetadataWrapper(cst.parse_module(code)).resolve(ScopeProvider))
    assert not found or unread


def test_a_comment_on_a_local_left_unread_goes_with_it_not_onto_the_next_statement(tmp_path):
    """The comment above a local that only the removed call read is about that call (0.33.0's `# ROCm runs the
    Triton port ...` above `spec_config = ...`, read only by the removed `if`): it goes with the local instead of
    introducing the statement after. A section comment, above a blank line, stays (the gap after it goes)."""
    source = src("""
        from engine.warmup.legacy import legacy_warmup


        def warm(worker):
            # Warm what the worker serves.

            # Only the drafts' count matters here.
            drafts = worker.drafts
            legacy_warmup(drafts)
            worker.synchronize()
        """)
    edit = run(tmp_path, "engine.layers", source, [LEGACY])
    assert edit.refusals == [] and edit.counts == {"remove_legacy_call": 1, "remove_dead_local": 1}
    assert edit.source == src("""
        def warm(worker):
            # Warm what the worker serves.
            worker.synchronize()
        """)


@pytest.mark.parametrize(
    "use, why",
    [
        ("ok = legacy_warmup(worker)", "the result of legacy_warmup() is used"),
        ("keep(legacy_warmup)", "legacy_warmup is used as a value"),
        ("for fn in (legacy_warmup,):\n        fn(worker)", "legacy_warmup is used as a value"),
        ("if x:\n        pass\n    elif y:\n        legacy_warmup(worker)", "if/elif chain"),
        ("try:\n        legacy_warmup(worker)\n    finally:\n        done()", "try with a finally"),
    ],
)
def test_unsafe_removals_are_refused_with_the_line(tmp_path, use, why):
    source = f"from engine.warmup.legacy import legacy_warmup\n\n\ndef warm(worker):\n    {use}\n"
    edit = run(tmp_path, "engine.warmup.kernel_warmup", source, [LEGACY])
    assert len(edit.refusals) == 1 and why in edit.refusals[0].reason and edit.refusals[0].place.line >= 5


def test_remove_through_a_module_alias_and_an_aliased_name(tmp_path):
    before = src("""
        import engine.warmup.legacy as fw
        from engine.warmup.legacy import legacy_warmup as lw


        def warm(worker):
            fw.legacy_warmup(worker)
            lw(worker)
            worker.legacy_warmup()  # another object's method of the same name stays
        """)
    after = src("""
        def warm(worker):
            worker.legacy_warmup()  # another object's method of the same name stays
        """)
    edit = run(tmp_path, "engine.warmup.kernel_warmup", before, [LEGACY])
    assert edit.refusals == [] and edit.source == after


def test_comments_stay_with_the_code_they_introduce(tmp_path):
    before = src("""
        from engine.warmup.legacy import legacy_warmup


        def warm(worker):
            # Warm the JIT kernels.
            legacy_warmup(worker)
            other(worker)

            # Only the legacy kernel.
            legacy_warmup(worker)

            last(worker)
            # Pooling models skip the legacy kernel.
            if not worker.pooling:
                legacy_warmup(worker)
            # The next step says what it is.
            after_all(worker)
        """)
    after = src("""
        def warm(worker):
            # Warm the JIT kernels.
            other(worker)

            last(worker)
            # The next step says what it is.
            after_all(worker)
        """)
    assert run(tmp_path, "engine.warmup.kernel_warmup", before, [LEGACY]).source == after


def test_an_import_whose_name_is_left_only_as_an_attribute_goes_with_the_removed_call(tmp_path):
    """`obj.helper` names the word but not the import: the symbol table cannot settle it, libcst's scopes do."""
    source = src("""
        from engine.helpers import helper
        from engine.warmup.legacy import legacy_warmup


        def warm(worker):
            legacy_warmup(helper(worker))
            return worker


        def other(obj):
            return obj.helper
        """)
    edit = run(tmp_path, "engine.layers", source, [LEGACY])
    assert edit.refusals == [] and edit.counts == {"remove_legacy_call": 1}
    assert "import" not in edit.source and "return obj.helper\n" in edit.source


def test_helpers_only_the_removed_code_used_are_deleted(tmp_path):
    before = src("""
        def _warm_a(worker):
            _setup(worker)


        def _setup(worker):
            worker.a()


        def _warm_b(worker):
            worker.b()


        def entry(worker):
            _warm_a(worker)
            _warm_b(worker)
        """)
    after = src("""
        def _warm_b(worker):
            worker.b()


        def entry(worker):
            _warm_b(worker)
        """)
    edit = run(
        tmp_path, "engine.warmup.legacy", before, [RemoveLegacyCalls(frozenset({"engine.warmup.legacy._warm_a"}))]
    )
    assert edit.source == after and edit.counts["remove_dead_helper"] == 2


LAYER = src("""
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
    """)


def insert(**changes):
    fields = dict(
        cls="Layer",
        gate="config.enable_jit_warmup",
        registration="_KERNEL.register_warmup()",
        insert_after="",
        kernel_module="engine.ops",
        kernel_name="_KERNEL",
        lazy=False,
        names=frozenset({"config", "_KERNEL"}),
    )
    return InsertRegistration(**{**fields, **changes})


def test_insert_registration_after_a_nested_anchor_goes_after_its_branch_with_multiline_gate(tmp_path):
    """The anchor sits in an `if`: every construction must reach the registration, so it follows the `if`."""
    op = insert(
        gate="(\n    config.enable_jit_warmup\n    and self.version == 4\n)",
        insert_after="self.fn = make(",
        names=frozenset({"config", "self", "_KERNEL"}),
    )
    expected = LAYER.replace(
        """            self.fn = make(self.version)
""",
        """            self.fn = make(self.version)

        if (
            config.enable_jit_warmup
            and self.version == 4
        ):
            _KERNEL.register_warmup()
""",
    )
    edit = run(tmp_path, "engine.layer", LAYER, [op])
    assert edit.source == expected and edit.counts == {"insert_registration": 1}
    assert [w.why for w in edit.warnings] == [
        "insert_after 'self.fn = make(' is inside a branch or loop of Layer.__init__: the registration goes after "
        "that statement, where every construction reaches it once"
    ]
    assert run(tmp_path, "engine.layer", edit.source, [op]).counts == {}  # idempotent


def test_insert_registration_that_reads_what_only_its_branch_builds_stays_in_that_branch(tmp_path):
    op = insert(registration="_KERNEL.register_warmup(fn=self.fn)", insert_after="self.fn = make(")
    edit = run(tmp_path, "engine.layer", LAYER, [op])
    expected = LAYER.replace(
        """            self.fn = make(self.version)
""",
        """            self.fn = make(self.version)

            if config.enable_jit_warmup:
                _KERNEL.register_warmup(fn=self.fn)
""",
    )
    assert edit.source == expected and edit.warnings == []


def test_insert_registration_that_reads_a_local_only_its_branch_binds_stays_in_that_branch(tmp_path):
    layer = src("""
        from engine.ops import _KERNEL


        class Layer:
            def __init__(self, config):
                if config.fast:
                    fn = make(config)
                    self.fn = fn
                self.pad = 0
        """)
    op = insert(registration="_KERNEL.register_warmup(fn=fn)", insert_after="self.fn = fn", names={"config", "fn"})
    edit = run(tmp_path, "engine.layer", layer, [op])
    assert "            self.fn = fn\n\n            if config.enable_jit_warmup:\n" in edit.source, edit.source


def test_insert_registration_that_reads_what_a_loop_sets_first_is_refused(tmp_path):
    layer = src("""
        from engine.ops import _KERNEL


        class Layer:
            def __init__(self, config):
                self.ready = True
                for part in config.parts:
                    self.block = part
        """)
    op = insert(registration="_KERNEL.register_warmup(block=self.block)", insert_after="self.ready = True")
    edit = run(tmp_path, "engine.layer", layer, [op])
    assert [r.reason for r in edit.refusals] == [
        "the registration reads self.block, which Layer.__init__ first sets inside a loop, below insert_after: it "
        "would register once per iteration; move insert_after or migrate this constructor by hand"
    ]


def test_multiline_registration_is_indented_and_imports_merge(tmp_path):
    op = insert(
        registration="_OTHER.register_warmup(\n    max_terms=4,\n)\nlog('registered')",
        kernel_name="_OTHER",
        gate_imports=("from engine.jit import enabled",),
        gate="enabled(config)",
        names=frozenset({"config", "enabled", "_OTHER", "log"}),
    )
    edit = run(tmp_path, "engine.layer", LAYER.replace("class Layer", "log = print\n\n\nclass Layer"), [op])
    assert edit.refusals == []
    # The kernel joins the module's existing import from its module; the gate's import goes in module order.
    assert edit.source.startswith("from engine.jit import enabled\nfrom engine.ops import _OTHER, _KERNEL\n\n\nlog")
    assert (
        """        self.pad = self.version is None

        if enabled(config):
            _OTHER.register_warmup(
                max_terms=4,
            )
            log('registered')

    def forward"""
        in edit.source
    )


def test_lazy_import_goes_inside_the_block_as_ruffs_formatter_writes_it(tmp_path):
    layer = LAYER.replace("from engine.ops import _KERNEL\n", "")
    op = insert(lazy=True, kernel_name="_KERNEL", names=frozenset({"config", "_KERNEL"}))
    edit = run(tmp_path, "engine.layer", layer, [op])
    block = "        if config.enable_jit_warmup:\n            from engine.ops import _KERNEL\n\n            _KERNEL.register_warmup()\n"
    assert block in edit.source
    start = edit.source[: edit.source.index(block)].count("\n") + 1
    ranged = repo_style(tmp_path, ["engine"]).format(tmp_path / "engine" / "layer.py", edit.source, (start, start + 3))
    assert block in ranged  # the style step has nothing left to do there


def test_a_registration_whose_names_are_not_bound_is_refused(tmp_path):
    op = insert(gate="vllm_config.enable", names=frozenset({"vllm_config", "_KERNEL"}))
    edit = run(tmp_path, "engine.layer", LAYER, [op])
    assert len(edit.refusals) == 1 and "vllm_config is not bound" in edit.refusals[0].reason
    later = LAYER.replace(
        "            self.pad = self.version is None\n",
        "            self.pad = self.version is None\n            enabled = config.jit\n",
    )
    late = insert(insert_after="self.version = pick(", gate="enabled", names=frozenset({"enabled", "_KERNEL"}))
    assert "enabled is not bound" in run(tmp_path, "engine.layer", later, [late]).refusals[0].reason


def test_missing_anchors_are_named(tmp_path):
    with pytest.raises(AnchorError, match="class Missing not found"):
        run(tmp_path, "engine.layer", LAYER, [insert(cls="Missing")])
    # A statement the spec names that the class does not have: the block goes where what it reads is set (it reads
    # only `config`, a parameter: the constructor's end), and a warning names the missing statement.
    edit = run(tmp_path, "engine.layer", LAYER, [insert(insert_after="if nothing:")])
    assert edit.source == run(tmp_path, "engine.layer", LAYER, [insert()]).source
    assert ["no statement starting with 'if nothing:'" in w.why for w in edit.warnings] == [True]


def test_two_registrations_under_one_gate_share_an_if_and_a_binding_made_once_and_never_changed(tmp_path):
    """The second block joins the first's `if`; of its bindings, the one the first makes as it is and nowhere else
    goes (`size`), the one the first also rebinds in a branch stays (`width`: the second reads the first's)."""
    first = "width = pick(config)\nif config.wide:\n    width = 2 * width\nsize = measure(config)\n_KERNEL.register_warmup(width, size)"
    second = "width = pick(config)\nsize = measure(config)\n_OTHER.register_warmup(width, size)"
    edit = run(tmp_path, "engine.layer", LAYER, [insert(registration=first), insert(registration=second)])
    block = edit.source[edit.source.index("        if config.enable_jit_warmup:") :]
    assert block.count("if config.enable_jit_warmup:") == 1
    assert block.count("width = pick(config)") == 2 and block.count("size = measure(config)") == 1
    assert block.index("_KERNEL.register_warmup") < block.index("_OTHER.register_warmup")


def test_a_binding_the_method_makes_above_is_not_made_again_inside_the_registrations_own_if(tmp_path):
    """A fork's constructor already binds `version = pick(config)` at its top: the registration's own `if` reads
    that one instead of binding it again (a line only the tool would write)."""
    bound = "        self.version = pick(config)\n"
    assert LAYER.count(bound) == 1
    layer = LAYER.replace(bound, "        version = pick(config)\n        self.version = version\n")
    code = "if config.wide:\n    version = pick(config)\n    _KERNEL.register_warmup(version)"
    edit = run(tmp_path, "engine.layer", layer, [insert(registration=code)])
    block = edit.source[edit.source.index("if config.wide:") :]
    assert "version = pick(config)" not in block and "_KERNEL.register_warmup(version)" in block
    assert edit.source.count("version = pick(config)") == 1


WITH_LAYER = src("""
    from engine.ops import _KERNEL


    class Layer:
        def __init__(self, config):
            version = pick(config)
            with ctx():
                self.fn = make(version)
                self.pad = version
            self.width = version
    """)
PICKED = "version = pick(config)\n_KERNEL.register_warmup(version)"


def test_a_binding_the_method_makes_above_the_statement_holding_the_block_is_read_there(tmp_path):
    """The anchor sits in a `with` (every path runs it): the block goes there, and reads the `version` the method
    bound above the `with` rather than binding it again."""
    edit = run(tmp_path, "engine.layer", WITH_LAYER, [insert(registration=PICKED, insert_after="self.fn = make(")])
    assert not edit.refusals and edit.source.count("version = pick(config)") == 1
    block = edit.source[edit.source.index("if config.enable_jit_warmup:") :]
    assert block.index("_KERNEL.register_warmup(version)") < block.index("self.pad = version")


def test_a_block_that_would_rebind_a_local_the_method_reads_after_it_is_refused_at_that_read(tmp_path):
    """With `config` rebound in between, the block's `version = pick(config)` is not the method's: bound in the
    block, it would change the `version` that `self.pad` and `self.width` read after it. Refused, naming the first
    such read; a read after the method binds the name again is its own."""
    fork = WITH_LAYER.replace("        with ctx():\n", "        config = other(config)\n        with ctx():\n")
    edit = run(tmp_path, "engine.layer", fork, [insert(registration=PICKED, insert_after="self.fn = make(")])
    line = 1 + fork.splitlines().index("            self.pad = version")
    assert [(r.place.line, r.reason.split(",")[0]) for r in edit.refusals] == [
        (line, "the registration binds `version`")
    ]
    rebound = fork.replace(
        "            self.pad = version\n", "            version = 0\n            self.pad = version\n"
    )
    assert not run(
        tmp_path, "engine.layer", rebound, [insert(registration=PICKED, insert_after="self.fn = make(")]
    ).refusals


def test_a_search_filter_joins_only_an_if_that_holds_every_registration_of_the_code():
    """The innermost `if` around all the register_warmup calls takes the filter after its own conditions; with
    the calls under two sibling `if`s none holds them all, and nothing is joined (the filter stays in the gate)."""
    nested = "if a:\n    if b:\n        x.register_warmup()\n        y.register_warmup()\n"
    joined = "if a:\n    if b and c:\n        x.register_warmup()\n        y.register_warmup()\n"
    assert joined_into_registration_if(nested, ["c"]) == joined
    siblings = "if a:\n    x.register_warmup()\nif b:\n    y.register_warmup()\n"
    assert joined_into_registration_if(siblings, ["c"]) is None


@pytest.mark.parametrize("importer", ["importlib.import_module", "importlib.__import__", "builtins.__import__"])
def test_the_gate_warns_about_a_module_imported_by_a_computed_name_whichever_importer(tmp_path, importer):
    facts = gate.Facts(frozenset({"pkg.warmup"}), frozenset(), ())
    # The file names the deleted module's leaf (the gate reads only files that could refer to it).
    source = f"import builtins\nimport importlib\n\n\ndef load(leaf='warmup'):\n    return {importer}(leaf)\n"
    _, warnings = gate.check_references(tmp_path / "probe.py", "pkg.probe", "pkg", source, facts)
    assert [(w.line, w.what.split(";")[0]) for w in warnings] == [(6, "imports a module by a computed name")]


BIND = insert(
    method="bind_kv_cache",
    registration="_KERNEL.register_warmup(self.kv_cache.dtype)",
    gate="self.enabled",
    names=frozenset({"_KERNEL"}),
)


@pytest.mark.parametrize("first", ["", "        self.mixer.bind_kv_cache(kv_cache)\n"])
def test_a_bind_kv_cache_return_before_the_bases_call_is_a_path_that_registers_nothing(tmp_path, first):
    """An override returns for an empty cache before `super().bind_kv_cache(...)`, which binds what the
    registration reads: it goes after that call, at the end, and the return is stated. A sub-layer's
    `self.mixer.bind_kv_cache(...)` above is not the base's call."""
    source = (
        "class Layer(Base):\n    def bind_kv_cache(self, kv_cache):\n"
        f"{first}        if kv_cache.numel() == 0:\n            return\n"
        "        super().bind_kv_cache(kv_cache)\n        self.bound = True\n"
    )
    edit = run(tmp_path, "pkg.layer", source, [BIND])
    assert edit.refusals == []
    body = source.split("    def bind_kv_cache(self, kv_cache):\n")[1]
    assert edit.source.endswith(
        body + "\n        if self.enabled:\n            _KERNEL.register_warmup(self.kv_cache.dtype)\n"
    )
    line = source.splitlines().index("            return") + 1
    assert [(w.line, "returns here before the base's bind_kv_cache runs" in w.why) for w in edit.warnings] == [
        (line, True)
    ]


def test_a_bind_kv_cache_that_also_calls_the_base_in_a_returning_branch_is_refused(tmp_path):
    """One path binds the cache in a branch and returns, another returns before the call every path runs: no one
    place is after the binding on every path that has one."""
    source = src("""
        class Layer(Base):
            def bind_kv_cache(self, kv_cache):
                if kv_cache is None:
                    super().bind_kv_cache(self.default)
                    return
                if kv_cache.numel() == 0:
                    return
                super().bind_kv_cache(kv_cache)
        """)
    edit = run(tmp_path, "pkg.layer", source, [BIND])
    assert [(r.place.line, "in a branch that may return" in r.reason) for r in edit.refusals] == [(3, True)]


def test_a_later_operations_note_names_the_files_own_line_even_where_an_earlier_one_edited_it(tmp_path):
    """The rename edits `self.fn = KERNEL` in place before the registration's operation warns about that line: the
    warning names it where the file has it."""
    source = src("""
        from pkg.ops import KERNEL


        class Layer:
            def __init__(self, config):
                self.version = config.version
                if config.x:
                    self.fn = KERNEL
                self.y = 1
        """)
    edit = run(tmp_path, "engine.layers", source, [RENAME, insert(insert_after="self.fn = ", kernel_module="pkg.ops")])
    line = source.splitlines().index("            self.fn = KERNEL") + 1
    assert [w.line for w in edit.warnings if "inside a branch" in w.why] == [line]


# -- insert_owner: a compile unit gets a contract object in its module

OWNER = src("""
    class UnitKernel(VllmJitKernel):
        def get_warmup_keys(self, *, n: int) -> list[int]:
            return [n]


    UNIT_KERNEL = UnitKernel()
""")


def test_the_owner_goes_after_the_compile_unit_below_its_decorators_with_its_imports(tmp_path):
    before = src("""
        import functools


        @functools.cache  # a unit
        def compile_unit(n):
            return n


        def launch(n):
            return compile_unit(n)
    """)
    owner = InsertOwner(OWNER, "def compile_unit", "UNIT_KERNEL", ("from pkg.jit import VllmJitKernel",))
    edit = run(tmp_path, "pkg.ops", before, [owner])
    assert not edit.refusals and edit.counts["insert_owner"] == 1
    assert edit.source == src("""
        import functools

        from pkg.jit import VllmJitKernel


        @functools.cache  # a unit
        def compile_unit(n):
            return n


        class UnitKernel(VllmJitKernel):
            def get_warmup_keys(self, *, n: int) -> list[int]:
                return [n]


        UNIT_KERNEL = UnitKernel()


        def launch(n):
            return compile_unit(n)
    """)


def test_an_owner_whose_compile_unit_is_gone_is_refused_at_the_transform(tmp_path):
    edit = run(tmp_path, "pkg.ops", "def other():\n    pass\n", [InsertOwner(OWNER, "def compile_unit", "UNIT_KERNEL")])
    assert edit.source == "def other():\n    pass\n"
    assert [r.reason for r in edit.refusals] == [
        "no module-level statement starts with 'def compile_unit' (owner_after): the owner of UNIT_KERNEL goes "
        "after the compile unit it calls"
    ]


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"owner": OWNER.replace("UNIT_KERNEL", "OTHER"), "owner_after": "def f"}, "must define UNIT_KERNEL"),
        ({"owner": OWNER}, "spec field owner_after: required with the owner's other fields"),
        ({"owner": OWNER, "owner_after": "def f", "contract_base": "pkg.jit:Base"}, "needs none"),
        ({"owner": "class (", "owner_after": "def f"}, "spec field owner='class \\(': not valid Python"),
        ({"owner": OWNER, "owner_after": "def f", "owner_imports": ["import os"]}, "is not one 'from module"),
        ({"early_returns": "sometimes"}, "spec field early_returns='sometimes': register or skip"),
    ],
    ids=str,
)
def test_an_owner_or_early_returns_field_that_cannot_work_is_a_spec_error(fields, why):
    base = {
        "family": "unit",
        "orchestrator_module": "pkg.warmup",
        "orchestrator_step": "_warm_unit",
        "singleton_module": "pkg.ops",
        "singleton": "UNIT_KERNEL",
        "construction_module": "pkg.layer",
        "construction_class": "Layer",
        "registration": "UNIT_KERNEL.register_warmup(n=self.n)",
    }
    with pytest.raises(SpecError, match=why):
        MigrationSpec.from_fields(base | fields)


@pytest.mark.parametrize(
    "code, left",
    [
        ("K.register_warmup(a=1, b=2, c=3)", "K.register_warmup(a=1, c=3)"),
        ("K.register_warmup(a=1, b=2)", "K.register_warmup(a=1)"),
        ("K.register_warmup(\n    a=1,\n    b=2,\n)", "K.register_warmup(\n    a=1,\n)"),
        ("K.register_warmup(\n    a=1,\n    b=2\n)", "K.register_warmup(\n    a=1\n)"),
        ("if x:\n    K.register_warmup(b=2)\nf(b=2)", "if x:\n    K.register_warmup()\nf(b=2)"),
    ],
)
def test_a_keyword_left_out_of_a_registration_keeps_the_calls_layout(code, left):
    assert without_keywords(code, {"b"}) == left
