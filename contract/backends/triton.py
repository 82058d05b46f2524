"""Triton as a compile-only backend on a machine with no GPU.

A `@triton.jit` kernel compiles the first time a launch brings a new specialization
(argument types, integer value classes, pointer alignment, constexprs, options). With no
driver Triton cannot even look that up, so this backend makes Triton's active driver a
compile-only one: it names the target GPU (`GPUTarget("cuda", 90, 32)` for sm90,
`GPUTarget("hip", "gfx950", 64)` for gfx950) and nothing else. Then a kernel's own
`warmup(...)` (Triton's launch path with `warmup=True`) binds the arguments, computes the
specialization with Triton's own code, and compiles a real cubin (or hsaco) for the target
without launching it. Compiles are told apart from disk-cache
loads by Triton's compilation listener; the variant of a launch is Triton's own JIT cache
key, read through `knobs.runtime.jit_cache_hook` without compiling.

Triton's stock file cache writes each variant's group file (`__grp__<kernel>.json`, which
names the variant's files) with absolute paths: a cache copied elsewhere reads the original
folder's files, and a cache moved away from its original recompiles everything. The
backend installs `triton_cache.RelocatableCacheManager` instead (`TRITON_CACHE_MANAGER`, inherited by
worker processes; a serving process needs it too to read a bake, see `SERVING_ENV`): group
files name their files relative to the variant's folder and are resolved against the folder
they are read from, so a bake works wherever it is copied or mounted, read-only included.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..cache import claim, default_cache_dir, record_artifact
from ..kernel import BackendConfigError, Outcome, Parallelism
from ..limits import device_capability

NAME = "triton"
DSL_MODULE = "triton"  # loaded in a process when this module is in sys.modules
# What a kernel's cache entry holds: its metadata and group JSON, the binary and the stages (never the launcher .so).
LOADS = (".json", ".cubin", ".hsaco", ".ptx", ".amdgcn", ".llir", ".ttir", ".ttgir", ".source")
PARALLELISM = Parallelism.SERIAL  # about 1.5 s a compile, a few variants a kernel: less than workers cost to start

CACHE_MANAGER = "zerojit.contract.backends.triton_cache:RelocatableCacheManager"
SERVING_ENV = {"TRITON_CACHE_MANAGER": CACHE_MANAGER}  # what a serving process needs to load a Triton bake
GROUP_PREFIX = "__grp__"  # Triton's name for a variant's group file: __grp__<kernel>.json

_counts = threading.local()
_lock = threading.Lock()
_configured: str | None = None


# One integer per Triton value class: it specializes 1 as a constant and multiples of 16 as divisible.
VALUE_CLASS_REPRESENTATIVE = {"one": 1, "div16": 16, "any": 17}


def value_class(value: int) -> str:
    """How Triton specializes a plain integer argument (not constexpr, not do_not_specialize)."""
    if value == 1:
        return "one"
    return "div16" if value % 16 == 0 else "any"


class CompileOnlyDriver:
    """Triton's active driver for a process that compiles and never launches: it only names the target."""

    def __init__(self, target: Any):
        self.target = target

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def is_active(self) -> bool:
        return True


class Pointer:
    """A tensor argument as Triton's specialization sees it: an element type, whether its address is 16-byte
    aligned, and (on AMD, where Triton uses buffer loads for them) whether its storage spans at most 2 GB."""

    def __init__(self, dtype: Any, aligned: bool = True, within_2gb: bool = True):
        self.dtype, self.aligned, self.within_2gb = dtype, aligned, within_2gb

    def data_ptr(self) -> int:
        return 0 if self.aligned else 1

    def ptr_range(self) -> int:
        """Bytes the storage spans, as Triton's HIP backend asks: past 2**31 - 1 when not within 2 GB."""
        return 0 if self.within_2gb else 1 << 31


def target(arch: str) -> Any:
    """The GPUTarget Triton compiles for: an NVIDIA `arch` ("sm90" -> cuda 90, warp size 32) or an AMD one
    ("gfx950" -> hip gfx950, wave size 64; Triton links the code object with its own LLD, no ROCm needed)."""
    from triton.backends.compiler import GPUTarget

    if arch.startswith("gfx"):
        return GPUTarget("hip", arch, 64)
    if not arch.startswith("sm"):
        raise BackendConfigError(f"the Triton backend compiles for NVIDIA (sm*) or AMD (gfx*) targets, not {arch!r}")
    major, minor = device_capability(arch)
    return GPUTarget("cuda", major * 10 + minor, 32)


def configure(arch: str, cache_dir: Path | None = None) -> Path:
    """Compile for `arch` with Triton's disk cache under `cache_dir`; one target per process."""
    global _configured
    import triton
    from triton.runtime import driver

    compile_target = target(arch)
    cache = Path(cache_dir) if cache_dir else default_cache_dir("triton")
    cache.mkdir(parents=True, exist_ok=True)
    claim(cache)
    with _lock:
        if _configured not in (None, arch):
            raise BackendConfigError(
                f"this process compiles Triton kernels for {_configured}; {arch} needs a process "
                "of its own (a kernel's in-memory variants are per target)"
            )
        driver.set_active(CompileOnlyDriver(compile_target))
        triton.knobs.cache.dir = os.fspath(cache)
        os.environ.update(SERVING_ENV)  # read by Triton on each lookup, and by every worker process started after
        triton.knobs.compilation.listener = _listen
        _configured = arch
    install_compile_hook()  # compiles after warmup reach the JIT monitors
    # Triton 3.9 warns once that its FP-fusion default will change; the default is what a server runs.
    warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION is unset")
    return cache


def _listen(*, src: Any, metadata: Any, metadata_group: dict[str, str], times: Any, cache_hit: bool) -> None:
    """Triton's compilation listener: count real compiles on this thread, report the cache files behind each
    (the variant's group file too: it decides which files a lookup loads)."""
    if not cache_hit:
        _counts.value = getattr(_counts, "value", 0) + 1
    for name, path in metadata_group.items():
        record_artifact(path)
        group = Path(path).with_name(GROUP_PREFIX + name)
        if group.is_file():
            record_artifact(group)


def compiles_in_this_thread() -> int:
    """Real compiles (not disk-cache loads) this thread has made since the backend was configured."""
    return getattr(_counts, "value", 0)


def compiled_during(jit_fn: Any, *args: Any, **kwargs: Any) -> Outcome:
    """`jit_fn.warmup(*args, **kwargs)`, compile-only; say whether Triton compiled or found the variant cached.

    The compiled kernel must hold machine code (an empty cubin or code object would pass silently otherwise).
    """
    if _configured is None:
        raise BackendConfigError(
            "Triton backend not configured: call zerojit.contract.backends.triton.configure() first"
        )
    before = compiles_in_this_thread()
    compiled = jit_fn.warmup(*args, **kwargs)
    if compiled is None or not (compiled.asm.get("cubin") or compiled.asm.get("hsaco")):
        raise BackendConfigError(
            f"{getattr(jit_fn, '__name__', jit_fn)}: Triton returned no machine code for this variant"
        )
    return Outcome.CACHED if compiles_in_this_thread() == before else Outcome.COMPILED


@contextlib.contextmanager
def jit_keys_recorded() -> Iterator[list[tuple[str, str]]]:
    """While open, JIT'd kernels compile nothing: each would-be compile is recorded as (kernel, Triton's key).

    This is Triton's own view of a variant (what its in-memory cache is keyed by), taken
    through `knobs.runtime.jit_cache_hook`; a hook returning True makes Triton skip the compile.
    """
    import triton

    recorded: list[tuple[str, str]] = []

    def record(*, key: Any, fn: Any, **_: Any) -> bool:
        recorded.append((fn.name, str(key)))
        return True

    with _lock:
        saved = triton.knobs.runtime.jit_cache_hook
        triton.knobs.runtime.jit_cache_hook = record
        try:
            yield recorded
        finally:
            triton.knobs.runtime.jit_cache_hook = saved


def variant_of(jit_fn: Any, *args: Any, **kwargs: Any) -> str:
    """Triton's identity of the variant `jit_fn.warmup(*args, **kwargs)` would compile, found without compiling:
    its JIT cache key (looked up in the kernel's in-memory cache when the process already holds the variant)."""
    with jit_keys_recorded() as recorded:
        held = jit_fn.warmup(*args, **kwargs)
    if held is not None:
        keys = [key for key, kernel in _jit_function(jit_fn).device_caches[0][0].items() if kernel is held]
    else:
        keys = [key for _, key in recorded]
    if len(keys) != 1:
        raise BackendConfigError(f"expected one Triton specialization, saw {len(keys)}")
    return hashlib.sha256(f"{_configured}:{keys[0]}".encode()).hexdigest()[:32]


def _jit_function(jit_fn: Any) -> Any:
    """The JITFunction under @triton.heuristics / autotune wrappers."""
    function = jit_fn
    while not hasattr(function, "device_caches"):
        function = function.fn
    return function


def variant_count(jit_fn: Any) -> int:
    """Variants this process holds for one JIT'd kernel (compiled or loaded from the disk cache)."""
    return sum(len(caches[0]) for caches in _jit_function(jit_fn).device_caches.values())


def fingerprint() -> dict[str, str]:
    """What a baked Triton cache is only valid for: Triton keys every artifact with its version, the backend's
    toolchain and the kernel source; the target is part of every key."""
    import triton

    from ..cache import environment

    return {**environment(), "triton": triton.__version__}


_hooked = False
_jit_compiling = threading.local()
_hook_lock = threading.Lock()


def _specialization(names: list[str], signature: Any, constants: dict) -> str:
    """A Triton specialization as its argument types and constexpr values (constexprs keyed by argument name)."""
    named = {
        names[k[0]] if isinstance(k, tuple) and len(k) == 1 and k[0] < len(names) else k: v
        for k, v in constants.items()
    }
    return f"signature={signature!r}, constexprs={named!r}"


def install_compile_hook() -> None:
    """Report Triton compiles: JIT'd kernels via knobs.runtime.jit_cache_hook, direct calls to triton.compile."""
    global _hooked
    with _hook_lock:
        if _hooked:
            return
        import triton
        import triton.compiler
        import triton.compiler.compiler as compiler_module

        from ..monitor import report_compile

        def before_jit_compile(*, fn: Any = None, compile: Any = None, **_: Any) -> bool:  # noqa: A002 - Triton's names
            jit_function = getattr(fn, "jit_function", None)
            _jit_compiling.function = jit_function  # the compile that follows is this one: report it once
            report_compile(
                "triton",
                getattr(fn, "name", "?"),
                _specialization(
                    getattr(jit_function, "arg_names", []),
                    (compile or {}).get("signature"),
                    (compile or {}).get("constants", {}),
                ),
            )
            return False  # a true value would make Triton skip the compile: the monitor only watches

        triton.knobs.runtime.jit_cache_hook = before_jit_compile
        original = compiler_module.compile

        def compile_and_report(src: Any, *args: Any, **kwargs: Any) -> Any:
            jit_function = getattr(src, "fn", None)
            if jit_function is not None and getattr(_jit_compiling, "function", None) is jit_function:
                _jit_compiling.function = None  # reported by the JIT hook just before
            else:
                report_compile(
                    "triton",
                    getattr(src, "name", type(src).__name__),
                    _specialization(
                        getattr(jit_function, "arg_names", []),
                        getattr(src, "signature", None),
                        getattr(src, "constants", {}),
                    ),
                )
            return original(src, *args, **kwargs)

        compiler_module.compile = triton.compiler.compile = triton.compile = compile_and_report
        _hooked = True
