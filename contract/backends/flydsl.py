"""FlyDSL (ROCm) as a compile-only backend on a machine with no GPU.

FlyDSL compiles a variant when a `@flyc.jit` function is called; with COMPILE_ONLY=1 the
call compiles, persists the artifact to its disk cache and returns without launching.
This module sets that environment up (target arch, disk cache, an AMDGPU-capable
`ld.lld` under $ROCM_PATH/llvm/bin), counts real compiles by hooking FlyDSL's compiler
entry point, and checks that a compiled code object really contains machine code.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import sys
import threading
from pathlib import Path
from typing import Any

from ..cache import CacheDirError, claim, default_cache_dir, record_artifact
from ..kernel import Outcome, Parallelism
from ..storage import can_write

NAME = "flydsl"
DSL_MODULE = "flydsl"  # loaded in a process when this module is in sys.modules
LOADS = (".pkl",)  # a compiled kernel, pickled: code, unpickled as it loads
PARALLELISM = Parallelism.SERIAL  # a compile takes 0.07-0.17 s: less than a worker process costs to start

# A gfx950 kernel that does any work is far longer than its `s_endpgm`; FlyDSL's tanh
# lowering, for one, silently yields a kernel of nothing but that (4 bytes).
MIN_KERNEL_BYTES = 16

_counts = threading.local()
_hook_lock = threading.Lock()
_hooked = False


class EmptyKernelError(RuntimeError):
    """FlyDSL reported success but the code object holds no real machine code."""


def _zig_lld_wrapper(root: Path) -> None:
    """Put `ld.lld` (the LLD inside the ziglang wheel) where FlyDSL's link step looks."""
    import ziglang

    zig = Path(ziglang.__file__).with_name("zig")
    wrapper = root / "llvm" / "bin" / "ld.lld"
    text = f'#!/bin/sh\nexec "{zig}" ld.lld "$@"\n'
    if wrapper.is_file() and wrapper.read_text() == text:
        return
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    tmp = wrapper.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.chmod(0o755)
    tmp.replace(wrapper)


def configure(arch: str = "gfx950", cache_dir: Path | None = None) -> Path:
    """Point FlyDSL at `arch`, compile-only, with its disk cache under `cache_dir`.

    Returns the cache directory. An existing $ROCM_PATH that already holds ld.lld is
    respected; otherwise a toolkit root with the ziglang LLD is laid out and used.
    """
    if "cutlass" in sys.modules:
        raise RuntimeError(
            "FlyDSL cannot load in a process that already loaded CuTe DSL (their MLIR "
            "runtimes collide and the process aborts); compile each backend in its own process"
        )
    cache = Path(cache_dir) if cache_dir else default_cache_dir("flydsl")
    cache.mkdir(parents=True, exist_ok=True)
    claim(cache)
    if not can_write(cache):
        raise CacheDirError(
            f"cache dir {cache} is read-only, and FlyDSL takes a write lock on an artifact to load "
            "it (flydsl 0.5): give it a writable copy of the cache"
        )
    os.environ["COMPILE_ONLY"] = "1"
    os.environ["FLYDSL_GPU_ARCH"] = arch
    os.environ["FLYDSL_RUNTIME_CACHE_DIR"] = str(cache)
    os.environ["FLYDSL_RUNTIME_ENABLE_CACHE"] = "1"
    rocm = os.environ.get("ROCM_PATH")
    if not (rocm and (Path(rocm) / "llvm" / "bin" / "ld.lld").exists()):
        toolkit = default_cache_dir("rocm-toolkit")
        _zig_lld_wrapper(toolkit)
        os.environ["ROCM_PATH"] = str(toolkit)
    install_compile_hook()
    return cache


def install_compile_hook() -> None:
    """Wrap FlyDSL's MLIR compile entry once: count real compiles per thread, report them to monitors."""
    global _hooked
    with _hook_lock:
        if _hooked:
            return
        from flydsl.compiler.jit_function import MlirCompiler

        from ..monitor import report_compile

        original = MlirCompiler.compile.__func__

        def counted(cls: Any, asm: str, *args: Any, **kwargs: Any) -> Any:
            digest = hashlib.sha256(asm.encode()).hexdigest()[:16]
            report_compile("flydsl", kwargs.get("func_name", "?"), f"module {digest}")
            result = original(cls, asm, *args, **kwargs)
            _counts.value = getattr(_counts, "value", 0) + 1
            return result

        MlirCompiler.compile = classmethod(counted)
        _hooked = True


def fingerprint() -> dict[str, str]:
    """What a baked FlyDSL cache is only valid for (FlyDSL keys artifacts with a hash of its sources and toolkit;
    the target arch is part of every compile key)."""
    from importlib.metadata import version

    from flydsl.compiler.jit_function import _flydsl_key

    from ..cache import environment

    digest = hashlib.sha256(_flydsl_key().encode()).hexdigest()[:16]
    return {**environment(), "flydsl": version("flydsl"), "flydsl sources and toolkit": digest}


def compiles_in_this_thread() -> int:
    return getattr(_counts, "value", 0)


def compiled_during(jit_fn: Any, *args: Any, **kwargs: Any) -> Outcome:
    """Call a FlyDSL jit function compile-only; say whether FlyDSL compiled or found it cached.

    The variant must carry real machine code in every kernel (see MIN_KERNEL_BYTES).
    """
    if os.environ.get("COMPILE_ONLY") != "1":
        raise RuntimeError("FlyDSL backend not configured: call zerojit.contract.backends.flydsl.configure() first")
    before = compiles_in_this_thread()
    jit_fn(*args, **kwargs)
    outcome = Outcome.CACHED if compiles_in_this_thread() == before else Outcome.COMPILED
    _record_disk_artifact(jit_fn)
    # Checked on cache hits too: an empty artifact persisted once must not pass later.
    sizes = kernel_code_bytes(jit_fn._last_compiled[1])
    if not sizes or min(sizes.values()) < MIN_KERNEL_BYTES:
        raise EmptyKernelError(f"{jit_fn.func.__name__}: compiled kernels are empty (machine-code bytes: {sizes})")
    return outcome


def _record_disk_artifact(jit_fn: Any) -> None:
    """Report the disk-cache file behind the variant this call compiled or loaded (FlyDSL's own naming)."""
    from flydsl.compiler.jit_function import _disk_cache_key

    if jit_fn.cache_manager is not None:
        record_artifact(jit_fn.cache_manager.cache_dir / f"{_disk_cache_key(jit_fn._last_compiled[0])}.pkl")


def variant_count(jit_fn: Any) -> int:
    """Variants this process holds for one jit function (compiled or loaded from disk)."""
    return len(jit_fn._mem_cache)


_SHT_SYMTAB = 2
_STT_FUNC = 2
_SYMBOL = struct.Struct("<IBBHQQ")
_BIN = re.compile(r'bin = "((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(rb"\\(\\|[0-9A-Fa-f]{2})")


def code_object(artifact: Any) -> bytes:
    """The HSA code object (ELF) embedded in a compiled FlyDSL artifact's MLIR."""
    match = _BIN.search(artifact._ir_text)
    if match is None:
        raise EmptyKernelError("compiled artifact carries no gpu.binary")
    # MLIR prints a backslash as \\ and every other non-printable byte (and the quote) as \XX.
    return _ESCAPE.sub(_unescape, match.group(1).encode("latin-1"))


def _unescape(match: re.Match[bytes]) -> bytes:
    text = match.group(1)
    return b"\\" if text == b"\\" else bytes([int(text, 16)])


def kernel_code_bytes(artifact: Any) -> dict[str, int]:
    """Machine-code size of each kernel function (ELF64 STT_FUNC symbol) in the code object."""
    elf = code_object(artifact)
    if elf[:4] != b"\x7fELF":
        raise EmptyKernelError("gpu.binary is not an ELF code object")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQII", elf, shoff + i * shentsize) for i in range(shnum)]
    sizes: dict[str, int] = {}
    for _name, kind, _flags, _addr, offset, size, link, _info in sections:
        if kind != _SHT_SYMTAB:
            continue
        strings = sections[link][4]
        for entry in range(offset, offset + size, _SYMBOL.size):
            name, info, _other, _shndx, _value, symbol_size = _SYMBOL.unpack_from(elf, entry)
            if info & 0xF == _STT_FUNC:
                sizes[elf[strings + name : elf.index(b"\0", strings + name)].decode()] = symbol_size
    return sizes
