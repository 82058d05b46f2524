"""`zerojit survey` follows engine objects and says what each warmup is, on a small engine written here.

One warmup reaches its kernels only through objects: a layer found by `isinstance`, an item of a list its
constructor builds, an object stored on it and called (a CustomOp-like `__call__` that dispatches to its CUDA
forward), a function stored per branch, an autograd-like `Function.apply`. The oracle for its kernels is the
engine itself: the warmup is run and every launch recorded. The others each do one kind of work that stays
(another library, a dummy run, tuning on the device, IPC set-up); their owners are named by hand here.
"""

import importlib
import json
import sys
import textwrap

import pytest
from tree_forks import write_tree
from typer.testing import CliRunner

from zerojit.migrate.cli import app

ENGINE = {
    "ext/__init__.py": """
        class Module:  # a library's module base: calling one runs its forward (the engine's record says so)
            def __call__(self, *args):
                return self.forward(*args)


        class Function:  # a library's autograd-like base: apply runs forward
            @classmethod
            def apply(cls, *args):
                return cls.forward(None, *args)


        class Event:
            def __init__(self, enable_timing=False):
                self.enable_timing = enable_timing
        """,
    "aiter/__init__.py": "def tune(x):\n    return x\n",
    "flashinfer/__init__.py": """
        class BatchDecodeWrapper:
            def run(self, x):
                return x
        """,
    "eng/attention/__init__.py": "",
    "eng/attention/decode.py": """
        from flashinfer import BatchDecodeWrapper


        class DecodeImpl:
            def __init__(self):
                self._wrapper = BatchDecodeWrapper()

            def forward(self, x):
                return self._wrapper.run(x)
        """,
    "eng/ops/owner.py": """
        import cutlass.cute as cute


        class InnerGemm:
            pass


        class GemmOwner:  # a kernel object that owns its compile: found as one kernel, not walked into
            def warmup(self, m):
                cute.compile(InnerGemm(), m)


        GEMM = GemmOwner()
        """,
    "eng/ops/platform.py": """
        from eng import jit

        ROCM = False


        @jit.jit
        def _rocm_kernel(x):
            pass


        @jit.jit
        def _cuda_kernel(x):
            pass


        if ROCM:

            def launch(x):
                _rocm_kernel[(1,)](x)

        else:

            def launch(x):
                _cuda_kernel[(1,)](x)
        """,
    "eng/utils/deep_gemm.py": """
        def has_deep_gemm():
            return False
        """,
    "eng/__init__.py": "",
    "eng/jit.py": """
        ENABLED = True
        LAUNCHED = []


        class Kernel:
            def __init__(self, fn):
                self.__name__ = fn.__name__

            def __getitem__(self, grid):
                return lambda *args: LAUNCHED.append(self.__name__)


        def jit(fn):
            return Kernel(fn)
        """,
    "eng/ops/__init__.py": "",
    "eng/ops/rope.py": """
        from eng import jit
        from ext import Function, Module


        @jit.jit
        def _rope_kernel(x):
            pass


        @jit.jit
        def _rotary_kernel(x):
            pass


        if jit.ENABLED:  # defined where the module's `if` holds, like vLLM's `if HAS_TRITON:` kernels

            @jit.jit
            def _embed_kernel(x):
                pass


        class CustomOp:
            def __call__(self, *args):
                return self.forward_cuda(*args)


        class Rope(CustomOp):
            def forward_cuda(self, x):
                _rope_kernel[(1,)](x)

            def forward_native(self, x):
                return x


        class Embed(Module):
            def forward(self, x):
                _embed_kernel[(1,)](x)


        class RotaryFn(Function):
            @staticmethod
            def forward(ctx, x):
                _rotary_kernel[(1,)](x)


        _late_kernel = None  # a placeholder until the `if` below defines the kernel
        if jit.ENABLED:

            @jit.jit
            def _late_kernel(x):
                pass


        @jit.jit
        def _act_kernel(x):
            pass


        @jit.jit
        def _table_kernel(x):
            pass


        class Norm(CustomOp):
            def forward_cuda(self, x):
                _late_kernel[(1,)](x)


        class Act(Module):
            def forward(self, x):
                _act_kernel[(1,)](x)


        class GeluAct(Act):
            def forward(self, x):
                return super().forward(x)


        class _Table:
            def fill(self, x):
                _table_kernel[(1,)](x)


        TABLE = _Table()
        """,
    "eng/ops/attn.py": """
        from eng import jit
        from eng.ops.rope import Embed, Norm, Rope


        @jit.jit
        def _attn_kernel(x):
            pass


        @jit.jit
        def _logits_kernel(x):
            pass


        def _fast_logits(x):
            _logits_kernel[(1,)](x)


        def _slow_logits(x):
            return x


        class Adapter:
            def __init__(self, fast):
                if fast:
                    self._logits = _fast_logits
                else:
                    self._logits = _slow_logits

            def warm(self, x):
                self._logits(x)
                self.prepare(x)

            def prepare(self, x):
                _attn_kernel[(1,)](x)


        def _adapter(fast) -> "Adapter":
            return Adapter(fast)


        class Attention:
            def __init__(self):
                self.rope = Rope()
                self.adapter = _adapter(True)


        class Block:
            def __init__(self):
                self.attn = Attention()


        class Tower:
            def __init__(self, depth):
                self.blocks = [Block() for _ in range(depth)]
                self.embed = Embed()


        @jit.jit
        def _legacy_kernel(x):
            pass


        @jit.jit
        def _dense_kernel(x):
            pass


        @jit.jit
        def _moe_kernel(x):
            pass


        class Legacy:
            def warm(self, x):
                _legacy_kernel[(1,)](x)


        class Dense:
            def warm(self, x):
                _dense_kernel[(1,)](x)


        class Moe:
            def warm(self, x):
                _moe_kernel[(1,)](x)


        class BaseLayer:
            def __init__(self):
                self.norm = Norm()


        class Derived(BaseLayer):
            def __init__(self):
                super().__init__()  # stores the base's norm
                self.scale = 2
        """,
    "eng/utils/__init__.py": "",
    "eng/utils/flashinfer.py": """
        def has_flashinfer():
            return True


        def autotune_op(x):
            return x


        def flashinfer_version():
            return (0, 4)
        """,
    "eng/eng_flash_attn/__init__.py": "",
    "eng/eng_flash_attn/rotary.py": """
        from eng import jit


        @jit.jit
        def _fa_rotary_kernel(x):
            pass


        def apply_rotary(x):
            _fa_rotary_kernel[(1,)](x)


        def flash_attn_func(x):
            return x


        if not jit.ENABLED:  # a fallback on one platform: the unconditional definition is the one read

            def apply_rotary(x):
                return x
        """,
    "eng/warmup/__init__.py": "",
    "eng/warmup/objects_warmup.py": """
        from eng.ops.attn import Dense, Derived, Legacy, Moe, Tower
        from eng.ops.rope import TABLE, GeluAct, Rope, RotaryFn


        def _tower(model):
            for module in model.modules():
                if not isinstance(module, Tower):
                    continue
                return module
            return None


        def objects_warmup(model, x=0):
            tower = _tower(model)
            if tower is None:
                return
            attention = tower.blocks[0].attn
            attention.rope(x)
            attention.adapter.warm(x)
            tower.embed(x)
            rope = next((m for m in model.modules() if isinstance(m, Rope)), None)
            if rope is not None:
                rope(x)
            RotaryFn.apply(x)
            Derived().norm(x)
            GeluAct()(x)
            TABLE.fill(x)
            for layer in model.modules():
                if isinstance(layer, Legacy):  # skipped: its kernel never runs
                    continue
                if isinstance(layer, Dense):
                    layer.warm(x)
                elif isinstance(layer, Moe):
                    layer.warm(x)
        """,
    "eng/warmup/others.py": """
        import aiter
        from eng import jit
        from eng.eng_flash_attn.rotary import apply_rotary, flash_attn_func
        from eng.ops.owner import GEMM
        from eng.ops.platform import launch
        from eng.attention.decode import DecodeImpl
        from eng.utils.deep_gemm import has_deep_gemm
        from eng.utils.flashinfer import autotune_op, flashinfer_version, has_flashinfer
        from ext import Event


        @jit.jit
        def _plain_kernel(x):
            pass


        @jit.jit
        def _tuned_kernel(x):
            pass


        @jit.jit
        def _ipc_kernel(x):
            pass


        @jit.jit
        def _logged_kernel(x):
            pass


        def checked_warmup(x):
            if not has_flashinfer() or flashinfer_version() < (0, 3):
                return
            use_deep_gemm = has_deep_gemm()
            _plain_kernel[(1,)](x if use_deep_gemm else 0)


        def logged_warmup(x):
            clock = Event(enable_timing=True)  # timed once, to log it: no configuration is picked
            _logged_kernel[(1,)](x)
            return clock


        def wrapper_warmup(x):
            impl = DecodeImpl()
            impl.forward(x)


        def owner_warmup(x):
            GEMM.warmup(x)


        def platform_warmup(x):
            launch(x)


        def library_warmup(worker, x):
            autotune_op(x)
            aiter.tune(x)
            worker.model_runner._dummy_run(4)


        def tuned_warmup(x):
            for config in (1, 2):
                start = Event(enable_timing=True)
                _tuned_kernel[(config,)](x)


        def vendored_warmup(x):
            apply_rotary(x)
            flash_attn_func(x)


        def ipc_warmup(worker, x):
            comm = worker.pcie_ipc_comm
            comm.setup()
            _ipc_kernel[(1,)](x)


        def unseen_warmup(worker):
            worker.backend.run()
        """,
    "eng/warmup/kernel_warmup.py": """
        from eng.warmup.objects_warmup import objects_warmup
        from eng.warmup.others import (
            checked_warmup,
            ipc_warmup,
            library_warmup,
            logged_warmup,
            owner_warmup,
            platform_warmup,
            tuned_warmup,
            unseen_warmup,
            vendored_warmup,
            wrapper_warmup,
        )


        def kernel_warmup(worker):
            objects_warmup(worker.model)
            checked_warmup(0)
            library_warmup(worker, 0)
            tuned_warmup(0)
            vendored_warmup(0)
            ipc_warmup(worker, 0)
            unseen_warmup(worker)
            logged_warmup(0)
            wrapper_warmup(0)
            owner_warmup(0)
            platform_warmup(0)
        """,
}


@pytest.fixture(scope="module")
def surveyed(tmp_path_factory):
    root = write_tree(tmp_path_factory.mktemp("engine"), ENGINE)
    result = CliRunner().invoke(
        app, ["survey", "--repo", str(root), "--orchestrator", "eng.warmup.kernel_warmup", "--json"]
    )
    assert result.exit_code == 0, result.output
    return root, {w["function"]: w for w in json.loads(result.stdout)["warmups"]}


def _launched_by_objects_warmup(root) -> list[str]:
    """Run the engine's warmup on a model holding a Tower (and a Rope) and return the kernels it launched."""
    sys.path.insert(0, str(root))
    try:
        from eng import jit
        from eng.ops.attn import Dense, Legacy, Moe, Tower
        from eng.ops.rope import Rope
        from eng.warmup.objects_warmup import objects_warmup

        class Model:
            def modules(self):
                return [object(), Tower(2), Rope(), Legacy(), Dense(), Moe()]

        objects_warmup(Model())
        return list(jit.LAUNCHED)
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n.split(".")[0] in ("eng", "ext", "aiter", "flashinfer")]:
            del sys.modules[name]
        importlib.invalidate_caches()


def test_kernels_reached_through_engine_objects_are_the_ones_the_warmup_launches(surveyed):
    root, warmups = surveyed
    launched = _launched_by_objects_warmup(root)
    assert set(launched) == {
        "_rope_kernel",
        "_logits_kernel",
        "_attn_kernel",
        "_embed_kernel",
        "_rotary_kernel",
        "_late_kernel",  # a store of the base's constructor, a definition behind a placeholder
        "_act_kernel",  # an object called where it is built, its forward calling super().forward
        "_table_kernel",  # a module-level object's method
        "_dense_kernel",  # each branch's isinstance narrows the layer there
        "_moe_kernel",
    }
    warmup = warmups["objects_warmup"]
    assert {k["name"] for k in warmup["kernels"]} == set(launched)
    assert all(k["classification"] == "migratable" for k in warmup["kernels"])
    assert warmup["classification"] == "migratable" and warmup["stays"] == []


def _line(path: str, text: str) -> int:
    """The line of the engine's file that holds `text`."""
    lines = textwrap.dedent(ENGINE[path]).splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def _owners(warmup) -> set[str]:
    return {work["owner"] for work in warmup["stays"]}


def test_each_warmup_is_classified_with_the_owner_of_the_work_that_stays(surveyed):
    _, warmups = surveyed
    # A check that a library is installed is not its work.
    assert warmups["checked_warmup"]["classification"] == "migratable" and warmups["checked_warmup"]["stays"] == []
    library = warmups["library_warmup"]
    assert library["classification"] == "not compile keys"
    assert _owners(library) == {"FlashInfer", "AITER", "dummy run"}  # the engine's wrapper, a direct call, a step
    assert {w["where"] for w in library["stays"]} == {
        f"eng.warmup.others:{_line('eng/warmup/others.py', call)}"
        for call in ("autotune_op(x)", "aiter.tune(x)", "_dummy_run(4)")
    }
    ipc = warmups["ipc_warmup"]
    assert ipc["classification"] == "partly" and _owners(ipc) == {"IPC"}
    assert [k["name"] for k in ipc["kernels"]] == ["_ipc_kernel"] and ipc["kernels"][0][
        "classification"
    ] == "migratable"
    assert warmups["unseen_warmup"]["classification"] == "unseen" and warmups["unseen_warmup"]["stays"] == []
    owner = warmups["owner_warmup"]
    assert [(k["name"], k["kind"]) for k in owner["kernels"]] == [("GEMM", "GemmOwner object (its own warmup())")]
    # A library's object the constructor stores, in a module not named after it: its method calls are its work.
    wrapper = warmups["wrapper_warmup"]
    assert wrapper["classification"] == "not compile keys" and [(w["owner"], w["where"]) for w in wrapper["stays"]] == [
        ("FlashInfer", f"eng.attention.decode:{_line('eng/attention/decode.py', 'self._wrapper.run(x)')}")
    ]


def test_kernels_a_warmup_times_on_the_device_are_not_compile_keys(surveyed):
    logged = surveyed[1]["logged_warmup"]  # one launch timed to log it picks no configuration
    assert logged["classification"] == "migratable" and logged["stays"] == []
    tuned = surveyed[1]["tuned_warmup"]
    assert tuned["classification"] == "not compile keys" and _owners(tuned) == {"on-device tuning"}
    assert [(k["name"], k["classification"], k["moves_by"]) for k in tuned["kernels"]] == [
        ("_tuned_kernel", "not compile keys", None)
    ]


def test_a_vendored_librarys_call_that_launches_an_engine_kernel_is_that_kernels(surveyed):
    vendored = surveyed[1]["vendored_warmup"]
    assert [k["name"] for k in vendored["kernels"]] == ["_fa_rotary_kernel"]
    assert vendored["classification"] == "partly"
    (work,) = vendored["stays"]
    assert work["owner"] == "FlashAttention" and work["what"].startswith("flash_attn_func(")


def test_a_warmup_whose_work_stays_is_manual_and_says_so_first(surveyed):
    _, warmups = surveyed
    ipc, tuned = warmups["ipc_warmup"], warmups["tuned_warmup"]
    where = f"eng.warmup.others:{_line('eng/warmup/others.py', 'comm = worker.pcie_ipc_comm')}"
    assert ipc["verdict"] == "manual" and ipc["reasons"][0] == f"keeps work no compile key can take: IPC ({where})"
    timing = f"eng.warmup.others:{_line('eng/warmup/others.py', 'start = Event(enable_timing=True)')}"
    (kernel,) = tuned["kernels"]
    assert kernel["verdict"] == "manual" and kernel["reasons"] == [
        f"_tuned_kernel runs the configurations its warmup measures on the device ({timing}), not ones a compile "
        "key names"
    ]
    assert not any(reason.startswith("keeps work") for reason in warmups["checked_warmup"]["reasons"])


def test_a_function_each_platform_defines_its_own_way_lists_both_kernels(surveyed):
    # The module picks one `launch` at import by platform: either may be the one that runs.
    platform = surveyed[1]["platform_warmup"]
    assert {k["name"] for k in platform["kernels"]} == {"_rocm_kernel", "_cuda_kernel"}
