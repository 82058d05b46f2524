"""The engine-tree runner on a small engine written here: gates followed, compiles recorded, stubs enforced."""

import textwrap
import types

import pytest
from tree_forks import write_tree

from zerojit.codemods.spec import Kernel, Legacy, MigrationSpec, Registration
from zerojit.migrate.engine_trees.construction import ConstructionBroken
from zerojit.migrate.engine_trees.sources import EngineSources, NamesOnlyUsed
from zerojit.migrate.engine_trees.warmup import Engine, EngineRunError, TreeWarmup

pytestmark = pytest.mark.release_tree

ENGINE = Engine(package="eng", entry="kernel_warmup", jit_module="eng.jit", stubs={})
FILES = {
    "eng/__init__.py": "",
    "eng/jit.py": """
        import contextlib
        import contextvars

        _ACTIVE = contextvars.ContextVar("registry", default=None)


        class VllmJitKernel:
            def register_warmup(self):
                registry = _ACTIVE.get()
                if registry is not None:
                    registry.kernels.append(self)

            def warmup(self, config):
                for key in self.get_warmup_keys(config):
                    self.compile(key)


        class JitWarmupRegistry:
            def __init__(self, config):
                self.config, self.kernels = config, []

            @contextlib.contextmanager
            def activate(self):
                token = _ACTIVE.set(self)
                try:
                    yield
                finally:
                    _ACTIVE.reset(token)

            def warmup(self):
                for kernel in self.kernels:
                    for key in kernel.get_warmup_keys(self.config):
                        kernel.compile(key)
        """,
    "eng/ops.py": """
        from eng.jit import VllmJitKernel
        from eng.platforms import current_platform


        class Norm(VllmJitKernel):
            def get_warmup_keys(self, config):
                widths = (64, 128) if current_platform.big else (64,)
                return [(width, config.dtype) for width in widths]

            def compile(self, key):
                raise RuntimeError("a real compile must never run here")


        NORM = Norm()
        """,
    "eng/legacy_warmup.py": """
        from eng.ops import NORM


        def _warm_norm(worker):
            if worker.config.uses_norm:
                NORM.warmup(worker.config)


        def legacy_warmup(worker, *, enabled=True):
            if not enabled:
                return
            _warm_norm(worker)
        """,
    "eng/kernel_warmup.py": """
        from eng.legacy_warmup import legacy_warmup


        def kernel_warmup(worker):
            jit = worker.config.jit
            if jit:
                registry = worker.model_runner.jit_warmup_registry
                registry.warmup()
            if worker.config.skip:
                return
            legacy_warmup(worker, enabled=jit)
        """,
    "eng/layer.py": """
        from eng.ops import NORM
        from eng.helpers import decide


        class Layer:
            def __init__(self, config):
                if config.jit:
                    NORM.register_warmup()
                self.mode = decide(config)
        """,
}
SPEC = MigrationSpec(
    family="norm",
    legacy=Legacy(
        module="eng.legacy_warmup", function="legacy_warmup", step="_warm_norm", orchestrator_module="eng.kernel_warmup"
    ),
    kernel=Kernel(module="eng.ops", name="NORM"),
    registration=Registration(module="eng.layer", classes="Layer", code="NORM.register_warmup()", gate="config.jit"),
)


class Platform:
    """The stubbed platform: its one fact comes from the configuration under test."""

    def __init__(self, state):
        self._state = state

    @property
    def big(self):
        return self._state.config["big"]


class NormEngine:
    """The small engine's family description: one value stub (the platform), the rest names only."""

    real_modules = ("eng.layer",)

    def stubs(self, state):
        return {"eng.platforms": {"current_platform": Platform(state)}}

    def import_facts(self, config):
        return config["big"]

    def vllm_config(self, config):
        return types.SimpleNamespace(dtype="bf16", **{k: v for k, v in config.items() if k != "big"})

    def worker(self, config, vllm_config, registry):
        return types.SimpleNamespace(
            config=vllm_config,
            vllm_config=vllm_config,
            model_runner=types.SimpleNamespace(jit_warmup_registry=registry),
        )

    def construct(self, config, vllm_config, tree):
        import importlib

        importlib.import_module("eng.layer").Layer(vllm_config)

    def to_key(self, key):
        return key


def write_engine(root, changes=None):
    return write_tree(root, {**FILES, **(changes or {})})


def config(**changes):
    return {"big": True, "jit": True, "skip": False, "uses_norm": True, **changes}


def test_the_standalone_path_follows_gates_arguments_and_returns(tmp_path):
    tree = TreeWarmup(write_engine(tmp_path), SPEC, NormEngine(), ENGINE)
    assert tree.standalone_keys(config()) == {(64, "bf16"), (128, "bf16")}
    assert tree.standalone_keys(config(big=False)) == {(64, "bf16")}  # a stubbed fact, per import variant
    assert tree.standalone_keys(config(jit=False)) == set()  # enabled=jit, then `if not enabled: return`
    assert tree.standalone_keys(config(skip=True)) == set()  # `if ...: return` before the call
    assert tree.standalone_keys(config(uses_norm=False)) == set()  # the step's own gate


def test_a_names_only_value_used_in_a_decision_stops_the_run(tmp_path):
    tree = TreeWarmup(
        write_engine(tmp_path, {"eng/helpers.py": "def decide(config):\n    return 1\n"}), SPEC, NormEngine(), ENGINE
    )
    assert tree.registered_keys(config()) == {(64, "bf16"), (128, "bf16")}  # decide() is real code here
    (tmp_path / "eng/helpers.py").unlink()  # now eng.helpers is names only: calling decide() is fine ...
    fresh = TreeWarmup(tmp_path, SPEC, NormEngine(), ENGINE)
    assert fresh.registered_keys(config(jit=False)) == set()
    changed = FILES["eng/layer.py"].replace(
        "self.mode = decide(config)", "if decide(config):\n                    self.mode = 1"
    )
    broken = TreeWarmup(write_engine(tmp_path, {"eng/layer.py": changed}), SPEC, NormEngine(), ENGINE)
    with pytest.raises(NamesOnlyUsed, match="eng.helpers.decide"):  # ... deciding on its result is not
        broken.registered_keys(config())


def test_the_registry_path_reads_the_orchestrators_locals(tmp_path):
    tree = TreeWarmup(
        write_engine(tmp_path, {"eng/helpers.py": "def decide(config):\n    return 1\n"}), SPEC, NormEngine(), ENGINE
    )
    assert tree.registered_keys(config(skip=True)) == {(64, "bf16"), (128, "bf16")}  # registry runs before return
    assert tree.registered_keys(config(jit=False)) == set()


def test_a_call_in_a_loop_or_a_helper_is_refused(tmp_path):
    looped = FILES["eng/kernel_warmup.py"].replace(
        "            legacy_warmup(worker, enabled=jit)",
        "            for _ in range(2):\n                legacy_warmup(worker, enabled=jit)",
    )
    tree = TreeWarmup(write_engine(tmp_path, {"eng/kernel_warmup.py": looped}), SPEC, NormEngine(), ENGINE)
    with pytest.raises(EngineRunError, match="inside a loop"):
        tree.standalone_keys(config())
    helper = FILES["eng/kernel_warmup.py"] + "\n\n        def _more(worker):\n            legacy_warmup(worker)\n"
    tree = TreeWarmup(write_engine(tmp_path, {"eng/kernel_warmup.py": helper}), SPEC, NormEngine(), ENGINE)
    with pytest.raises(EngineRunError, match=r"in _more\(\), not in the entry kernel_warmup\(\)"):
        tree.standalone_keys(config())


def test_nothing_leaks_into_sys_modules(tmp_path):
    import sys

    sources = EngineSources(write_engine(tmp_path), "eng", ("eng.ops",), {"eng.platforms": {"current_platform": 1}})
    with sources.installed("x"):
        assert sources.module("eng.ops").NORM is not None
    assert not any(name == "eng" or name.startswith("eng.") for name in sys.modules)


class RegistrationsOnly(NormEngine):
    """Builds no layer: makes the registrations the layer's constructor writes, from the tree."""

    def construct(self, config, vllm_config, tree):
        tree.constructor_registrations("Layer", {"self": types.SimpleNamespace(), "config": vllm_config})


def test_constructor_registrations_run_as_written_and_nothing_else_of_the_constructor(tmp_path):
    deciding = FILES["eng/layer.py"].replace(
        "self.mode = decide(config)", "if decide(config):\n                    self.mode = 1"
    )
    tree = TreeWarmup(write_engine(tmp_path, {"eng/layer.py": deciding}), SPEC, RegistrationsOnly(), ENGINE)
    assert tree.registered_keys(config()) == {(64, "bf16"), (128, "bf16")}  # decide() (names only) never ran
    assert tree.registered_keys(config(jit=False)) == set()  # the registration's own gate
    moved = deciding.replace("                if config.jit:\n                    NORM.register_warmup()\n", "")
    assert (
        TreeWarmup(write_engine(tmp_path, {"eng/layer.py": moved}), SPEC, RegistrationsOnly(), ENGINE).registered_keys(
            config()
        )
        == set()
    )  # no registration written: none made


def constructed(tmp_path, init: str, methods: str = "", definitions: str = "") -> TreeWarmup:
    """The small engine with `Layer.__init__(self, config)`'s body (and other methods, and module-level
    `definitions` after the imports) as given, built by its registrations only: its constructor runs on every path
    (`decide` is names only, so it decides nothing)."""
    layer = (
        f"from eng.ops import NORM\nfrom eng.helpers import decide\n{definitions}\n\nclass Layer:\n"
        "    def __init__(self, config):\n"
        + textwrap.indent(textwrap.dedent(init), " " * 8)
        + textwrap.indent(textwrap.dedent(methods), " " * 4)
    )
    return TreeWarmup(write_engine(tmp_path, {"eng/layer.py": layer}), SPEC, RegistrationsOnly(), ENGINE)


BOTH = {(64, "bf16"), (128, "bf16")}


def test_a_constructor_registering_on_every_path_makes_its_registrations(tmp_path):
    after_the_branch = """
        if decide(config):
            self.mode = 1
        else:
            self.mode = 2
        NORM.register_warmup()
        """
    assert constructed(tmp_path, after_the_branch).registered_keys(config()) == BOTH
    a_path_that_raises_builds_nothing = """
        if decide(config):
            raise ValueError("unsupported")
        NORM.register_warmup()
        """
    assert constructed(tmp_path, a_path_that_raises_builds_nothing).registered_keys(config()) == BOTH
    an_arm_that_asserts_false_builds_nothing = """
        if decide(config):
            self.mode = 1
            NORM.register_warmup()
        else:
            assert False, "unsupported"
        """
    assert constructed(tmp_path, an_arm_that_asserts_false_builds_nothing).registered_keys(config()) == BOTH
    through_a_helper_on_both_arms = """
        if decide(config):
            self._register()
            return
        self._register()
        """
    helper = """
    def _register(self):
        NORM.register_warmup()
    """
    assert constructed(tmp_path, through_a_helper_on_both_arms, helper).registered_keys(config()) == BOTH
    decided_by_the_configuration = """
        if config.uses_norm:
            self.mode = 1
            NORM.register_warmup()
        """
    tree = constructed(tmp_path, decided_by_the_configuration)
    assert tree.registered_keys(config()) == BOTH and tree.registered_keys(config(uses_norm=False)) == set()


def test_the_constructor_reads_its_modules_own_constants_and_functions(tmp_path):
    init = """
        if _FUSED or _fused():
            self.mode = 1
        else:
            self.mode = 2
            NORM.register_warmup()
        """
    definitions = "_FUSED = False\n\n\ndef _fused() -> Unknown:\n    return False\n"  # its annotation: no value here
    assert constructed(tmp_path, init, definitions=definitions).registered_keys(config()) == BOTH


@pytest.mark.parametrize(
    ("init", "why"),
    [
        (
            """
            if decide(config):
                self.mode = 1
                NORM.register_warmup()
            else:
                self.mode = 2
            """,
            "eng/layer.py: Layer.__init__ finishes without registering where line 8: decide(config) is false",
        ),
        (
            """
            if decide.enabled:
                self.mode = 1
                NORM.register_warmup()
            """,
            "finishes without registering where line 8: decide.enabled is false (other paths register)",
        ),
        (
            """
            if decide(config):
                return
            NORM.register_warmup()
            """,
            "finishes without registering where line 8: decide(config) (other paths register)",
        ),
        (
            """
            if self.width:
                NORM.register_warmup()
            self.width = 64
            """,
            "the registration's gate `self.width` raises AttributeError: self.width is read before eng/layer.py: "
            "Layer.__init__ sets it on line 10",
        ),
        (
            """
            NORM.register_warmup(self.width)
            self.width = 64
            """,
            "registers on line 8 (`NORM.register_warmup(self.width)`), which raises AttributeError",
        ),
        (
            """
            if decide(config):
                self.shape = (1, 2)
            else:
                self.shape = (3, 4)
            if self.shape == (1, 2):
                self.mode = 1
                NORM.register_warmup()
            """,
            "where line 8: decide(config) is false",
        ),
        (
            """
            fused = True
            fused &= decide(config)
            if fused:
                self.mode = 1
                NORM.register_warmup()
            """,
            "where line 10: fused is false",
        ),
        (
            """
            if decide(config):
                use = True
            else:
                use = False
            if use:
                NORM.register_warmup()
            """,
            "where line 8: decide(config) is false",
        ),
        (
            """
            try:
                if decide(config):
                    return
            finally:
                pass
            NORM.register_warmup()
            """,
            "where line 9: decide(config) (other paths register)",
        ),
    ],
    ids=[
        "one-arm",
        "one-arm-on-a-names-only-value",
        "early-return",
        "gate-reads-later",
        "call-reads-later",
        "arms-apart-by-a-tuple",
        "a-reassignment-it-cannot-evaluate",
        "a-gate-false-on-one-path",
        "early-return-inside-try",
    ],
)
def test_a_constructor_path_that_registers_wrongly_is_refused_with_its_line(tmp_path, init, why):
    with pytest.raises(ConstructionBroken) as broken:
        constructed(tmp_path, init).registered_keys(config())
    assert why in str(broken.value)


def test_a_loop_walking_a_names_only_value_stops_the_run_instead_of_spinning(tmp_path):
    """Code that follows an attribute until it runs out (`while k is not None: k = getattr(k, "fn", None)`, as
    vLLM's `_is_autotuned` does) never runs out on a placeholder: past DEEPEST_READ reads the run stops."""
    changed = FILES["eng/layer.py"].replace(
        "self.mode = decide(config)",
        "kernel = decide\n                while kernel is not None:\n                    kernel = getattr(kernel, 'fn', None)"
        "\n                self.mode = 1",
    )
    tree = TreeWarmup(write_engine(tmp_path, {"eng/layer.py": changed}), SPEC, NormEngine(), ENGINE)
    with pytest.raises(NamesOnlyUsed, match=r"eng\.helpers\.decide\.fn\.fn.* attributes deep"):
        tree.registered_keys(config())
