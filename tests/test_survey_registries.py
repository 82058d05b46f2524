"""`zerojit survey` on warmups that compile CuTe DSL kernels, on a small engine written here: one compiles what
a registry of providers hands it (vLLM 0.33.0's `cutedsl_warmup`), each provider's kernels found through the
methods it reaches (a provider that compiles another library's kernels lists none); one calls a function of a
module it looks up by name (0.33.0's `_warmup_gemm_rs_ar`), which compiles through a static method."""

import json

from tree_forks import write_tree
from typer.testing import CliRunner

from zerojit.migrate.cli import app

ENGINE = {
    "eng/__init__.py": "",
    "eng/warmup/__init__.py": "",
    "eng/warmup/kernel_warmup.py": """
        import sys

        from eng.warmup.units_warmup import units_warmup


        def _warmup_allreduce():
            module = sys.modules.get("eng.ops.allreduce")
            if module is not None:
                module.warmup_allreduce()


        def kernel_warmup(worker):
            units_warmup()
            _warmup_allreduce()
        """,
    "eng/ops/allreduce.py": """
        import cutlass.cute as cute


        class AllReduceGemm:
            @staticmethod
            def compile(rank):
                kernel = AllReduceGemm()
                return cute.compile(kernel, rank)


        class LegacyGemm:
            pass


        def warmup_allreduce(legacy=False):
            if legacy:  # never taken from the warmup's call: LegacyGemm is not one it compiles
                return cute.compile(LegacyGemm())
            for rank in (0, 1):
                AllReduceGemm.compile(rank)
        """,
    "eng/warmup/units_warmup.py": """
        import weakref

        _PROVIDERS = weakref.WeakSet()


        def register_units_provider(provider):
            _PROVIDERS.add(provider)


        def _units():
            for provider in tuple(_PROVIDERS):
                get_units = getattr(provider, "get_compile_units", None)
                if callable(get_units):
                    yield from get_units()


        def units_warmup():
            for unit in _units():
                unit.compile()
        """,
    "eng/ops/__init__.py": "from eng.ops.tail import TailKernel\n",
    "eng/ops/_skinny.py": """
        class SkinnyKernel:
            pass
        """,
    "eng/ops/skinny.py": """
        from functools import partial


        class Skinny:
            def __init__(self):
                from eng.warmup.units_warmup import register_units_provider

                register_units_provider(self)

            def _compile(self, rows):
                import cutlass.cute as cute

                from ._skinny import SkinnyKernel

                kernel = SkinnyKernel(rows)
                cute.compile(kernel, rows)

            def get_compile_units(self):
                return [partial(self._compile, rows) for rows in (1, 2)]
        """,
    "eng/ops/tail.py": """
        import cutlass.cute as cute


        class DynamicGemm:
            pass


        def compile_dynamic(launch):
            gemm = DynamicGemm()
            return cute.compile(launch, gemm)


        class TailKernel:
            def compile(self):
                return compile_dynamic(None)
        """,
    "eng/ops/vision.py": """
        import cutlass.cute as cute

        from eng.warmup.units_warmup import register_units_provider


        class VisionKernel:
            pass


        class _Provider:
            def get_compile_units(self):
                return [lambda: cute.compile(VisionKernel())]


        _PROVIDER = _Provider()


        def register_vision_warmup():
            register_units_provider(_PROVIDER)
        """,
    "eng/ops/base.py": """
        import cutlass.cute as cute


        class BaseKernel:
            pass


        class Compiles:
            def compile_base(self):
                return cute.compile(BaseKernel())
        """,
    "eng/ops/derived.py": """
        from eng.ops.base import Compiles
        from eng.warmup.units_warmup import register_units_provider


        class Derived(Compiles):
            def __init__(self):
                register_units_provider(self)

            def get_compile_units(self):
                return [self.compile_base]
        """,
    "eng/layers.py": """
        from eng.warmup.units_warmup import register_units_provider


        class Tail:
            def __init__(self):
                from .ops import TailKernel

                self._kernel = TailKernel()
                register_units_provider(self)

            def get_compile_units(self):
                return [self._kernel.compile]


        class Library:
            def __init__(self):
                register_units_provider(self)

            def get_compile_units(self):
                import cutlass.cute as cute
                from other_library import Kernel

                return [lambda: cute.compile(Kernel())]
        """,
}


def test_a_registry_warmup_lists_the_cute_dsl_kernels_its_providers_compile(tmp_path):
    write_tree(tmp_path, ENGINE)
    result = CliRunner().invoke(
        app, ["survey", "--repo", str(tmp_path), "--orchestrator", "eng.warmup.kernel_warmup", "--json"]
    )
    assert result.exit_code == 0, result.output
    warmup, allreduce = json.loads(result.stdout)["warmups"]
    kernels = {(k["module"], k["name"]): k for k in warmup["kernels"]}
    assert set(kernels) == {
        ("eng.ops._skinny", "SkinnyKernel"),  # cute.compile(kernel) of a local, the class imported in the method
        ("eng.ops.tail", "DynamicGemm"),  # through the object the constructor stores, then a module function
        ("eng.ops.vision", "VisionKernel"),  # a module-level provider a function registers
        ("eng.ops.base", "BaseKernel"),  # a method the provider inherits, read in its base's module
    }
    assert {k["kind"] for k in kernels.values()} == {"cute.compile"}
    skinny = kernels[("eng.ops._skinny", "SkinnyKernel")]
    assert skinny["verdict"] == warmup["verdict"] == "manual"
    assert "eng.ops.skinny:Skinny.get_compile_units compiles for a registry of providers" in skinny["reasons"][0]
    (gemm,) = allreduce["kernels"]
    assert (allreduce["function"], gemm["module"], gemm["name"]) == (
        "_warmup_allreduce",
        "eng.ops.allreduce",
        "AllReduceGemm",
    )
    assert "eng.ops.allreduce:warmup_allreduce compiles: put AllReduceGemm on the contract" in gemm["reasons"][0]
