"""CuTe DSL / FlashAttention-4 as a compile-only backend on a machine with no GPU.

FA4 compiles a variant the first time its Python API sees a new specialization. Called
under `FakeTensorMode` with fake `device="cuda"` tensors, it selects and compiles the
kernel for the arch named by FLASH_ATTENTION_ARCH / CUTE_DSL_ARCH and never launches.
On sm_100a FA4 also asks the driver for the SM count (cutlass.utils.HardwareInfo); here
that answer comes from FLASH_ATTENTION_NUM_SMS. Real compiles are counted by wrapping
`cutlass.cute.compile`, so a call can say whether it compiled or hit FA4's caches.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..cache import claim, default_cache_dir, record_artifact
from ..kernel import BackendConfigError, Outcome, Parallelism

NAME = "cutedsl"
DSL_MODULE = "cutlass"  # loaded in a process when this module is in sys.modules
LOADS = (".o",)  # FA4's compiled objects
PARALLELISM = Parallelism.PROCESSES  # seconds per compile repay a worker process's start-up

TARGETS = {"sm90": ("sm_90a", 132), "sm100": ("sm_100a", 148)}  # H100/H200, B200


def arch_family(arch: str) -> str:
    """sm100/sm103/sm110 are one FA4 family, sm120/sm121 another."""
    return {"sm103": "sm100", "sm110": "sm100", "sm121": "sm120"}.get(arch, arch)


_counts = threading.local()
_lock = threading.Lock()
_configured: tuple[str, str] | None = None


class _TargetHardware:
    """Stands in for cutlass.utils.HardwareInfo: answers from the target SKU, not a driver."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.num_sms = int(os.environ["FLASH_ATTENTION_NUM_SMS"])

    def get_device_multiprocessor_count(self) -> int:
        return self.num_sms

    def get_max_active_clusters(self, cluster_size: int = 1) -> int:
        return self.num_sms // cluster_size


def configure(arch: str, cache_dir: Path | None = None) -> Path:
    """Target `arch` ("sm90" or "sm100") with FA4's disk cache under `cache_dir`.

    FA4 reads its cache settings when imported, so one process serves one target and
    one cache directory; asking for another afterwards is an error, not a silent no-op.
    """
    global _configured
    if arch not in TARGETS:
        raise BackendConfigError(f"CuTe DSL backend targets {', '.join(TARGETS)}; not {arch!r}")
    target, num_sms = TARGETS[arch]
    cache = Path(cache_dir) if cache_dir else default_cache_dir("cutedsl")
    with _lock:
        if _configured is not None:
            if _configured != (target, str(cache)):
                raise BackendConfigError(f"this process already targets {_configured[0]} with cache {_configured[1]}")
            return cache
        if "flash_attn.cute" in sys.modules:
            raise BackendConfigError("flash_attn.cute was imported before the backend was configured")
        if "flydsl" in sys.modules:
            raise BackendConfigError(
                "CuTe DSL cannot load in a process that already loaded FlyDSL (their MLIR "
                "runtimes collide and the process aborts); compile each backend in its own process"
            )
        cache.mkdir(parents=True, exist_ok=True)
        claim(cache)
        os.environ.update(
            {
                "FLASH_ATTENTION_ARCH": target,
                "CUTE_DSL_ARCH": target,
                "FLASH_ATTENTION_NUM_SMS": str(num_sms),
                "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED": "1",
                "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR": str(cache),
            }
        )
        import cutlass.utils
        import flash_attn.cute.tile_scheduler as tile_scheduler

        cutlass.utils.HardwareInfo = _TargetHardware
        tile_scheduler.HardwareInfo = _TargetHardware
        _install_compile_hook()
        _configured = (target, str(cache))
    return cache


_hooked = False


def install_compile_hook() -> None:
    """Wrap `cutlass.cute.compile` once: count real compiles per thread, report them to monitors."""
    with _lock:
        _install_compile_hook()


def _install_compile_hook() -> None:
    global _hooked
    if _hooked:
        return
    import cutlass.cute

    from ..monitor import describe, report_compile

    original = cutlass.cute.compile

    def counted(kernel: Any, *args: Any, **kwargs: Any) -> Any:
        report_compile("cutedsl", getattr(kernel, "__name__", type(kernel).__name__), describe(kernel))
        result = original(kernel, *args, **kwargs)
        _counts.value = getattr(_counts, "value", 0) + 1
        return result

    cutlass.cute.compile = counted
    _hooked = True


@contextlib.contextmanager
def fake_cuda() -> Iterator[None]:
    """Tensors made inside are fake `cuda` tensors: shapes and dtypes only, no device."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        yield


@contextlib.contextmanager
def _quiet_fake_tensors() -> Iterator[None]:
    """Silence two warnings harmless under fake tensors: FA4 reads data pointers and passes a Python aux object."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Accessing the data pointer of FakeTensor")
        warnings.filterwarnings("ignore", message=".*cannot be converted to a JitArgument")
        yield


def _fa4_cache() -> dict:
    from flash_attn.cute.interface import _flash_attn_fwd

    return _flash_attn_fwd.compile_cache.cache


def _record_disk_artifacts(fa4_keys: set) -> None:
    """Report the disk-cache objects behind FA4 variants a call compiled or loaded (FA4's own naming)."""
    from flash_attn.cute.interface import _flash_attn_fwd

    persistent = _flash_attn_fwd.compile_cache
    if hasattr(persistent, "cache_path"):
        for key in fa4_keys:
            record_artifact(persistent.cache_path / f"{persistent._key_to_hash(key)}.o")


_variants_by_owner: dict[str, set] = {}


def compiled_during(owner: str, fn: Any, *args: Any, **kwargs: Any) -> Outcome:
    """Run `fn` (an FA4 call under fake_cuda) for kernel `owner`; say whether it compiled.

    The FA4 forward variants the call adds (compiled, or loaded from the disk cache) are
    booked to `owner`, so kernels sharing FA4 each count only their own variants.
    """
    if _configured is None:
        raise BackendConfigError(
            "CuTe DSL backend not configured: call zerojit.contract.backends.cutedsl.configure() first"
        )
    before_count = getattr(_counts, "value", 0)
    before_keys = set(_fa4_cache())
    with _quiet_fake_tensors():
        fn(*args, **kwargs)
    added = set(_fa4_cache()) - before_keys
    _variants_by_owner.setdefault(owner, set()).update(added)
    _record_disk_artifacts(added)
    return Outcome.CACHED if getattr(_counts, "value", 0) == before_count else Outcome.COMPILED


def fingerprint() -> dict[str, str]:
    """What a baked FA4 cache is only valid for (FA4 puts its objects under a hash of the same facts).

    The target arch and SM count are not here: they are part of every compile key.
    """
    import cutlass
    import tvm_ffi
    from flash_attn.cute.cache_utils import _compute_source_fingerprint

    from ..cache import environment

    return {
        **environment(),
        "nvidia-cutlass-dsl": cutlass.__version__,
        "apache-tvm-ffi": tvm_ffi.__version__,
        "flash-attn-4 sources": _compute_source_fingerprint()[:16],
    }


class _VariantProbe:
    """Stands in for FA4's forward compile cache for one call: the first lookup hands back FA4's compile key."""

    class Found(Exception):
        pass

    def __contains__(self, key: Any) -> bool:
        raise self.Found(key)


def variant_of(fn: Any, *args: Any) -> str:
    """FA4's own identity (its disk-cache file name) of the forward variant `fn(*args)` would compile.

    Runs FA4's Python front-end under fake tensors up to its compile-cache lookup, then stops:
    nothing compiles. Two serving keys with the same identity are one compile.
    """
    from flash_attn.cute.interface import _flash_attn_fwd

    with _lock:
        real = _flash_attn_fwd.compile_cache
        _flash_attn_fwd.compile_cache = _VariantProbe()
        try:
            with _quiet_fake_tensors():
                fn(*args)
        except _VariantProbe.Found as found:
            return real._key_to_hash(found.args[0])  # configure() turns FA4's persistent cache on
        finally:
            _flash_attn_fwd.compile_cache = real
    raise BackendConfigError("FA4 returned without looking up a forward variant")


def variant_on_disk(variant: str) -> bool:
    from flash_attn.cute.interface import _flash_attn_fwd

    cache = _flash_attn_fwd.compile_cache
    return hasattr(cache, "cache_path") and (cache.cache_path / f"{variant}.o").is_file()


class FA4Variants:
    """For kernels that compile through FA4's forward (`self._call_fa4(key)`): FA4's compile key is the variant."""

    def variant(self, key: Any) -> str:
        return variant_of(self._call_fa4, key)

    def variant_cached(self, variant: str) -> bool:
        return variant_on_disk(variant)


def variant_count(owner: str) -> int:
    """FA4 forward variants this process holds for kernel `owner`."""
    if _configured is None:
        return 0
    return len(_variants_by_owner.get(owner, set()) & set(_fa4_cache()))
