"""Where zerojit keeps its files, and the two ways it changes them safely: under a lock, and atomically.

Every folder zerojit owns (backend caches, engine release trees, migration journals, the
ROCm toolkit root) lives under one root, `$ZEROJIT_CACHE` (default `~/.cache/zerojit`),
read when asked for so that a process that sets it late still gets its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

PROBE_PREFIX = ".zerojit-probe-"  # the files `can_write` makes and removes at once


def cache_root() -> Path:
    """$ZEROJIT_CACHE, else ~/.cache/zerojit."""
    return Path(os.environ.get("ZEROJIT_CACHE", Path.home() / ".cache" / "zerojit"))


@contextlib.contextmanager
def file_lock(path: Path, *, shared: bool = False, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an flock on `path` (created if missing): exclusive, or `shared` for readers.

    `on_wait` runs once if another process holds the lock and this one has to wait for it.
    """
    kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, kind | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(handle, kind)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def can_write(folder: Path) -> bool:
    """Try it: permission bits say nothing for root, and a read-only mount or an immutable folder says no."""
    try:
        handle, name = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=folder)
    except OSError:
        return False
    os.close(handle)
    os.unlink(name)
    return True


def atomic_write(path: Path, data: bytes, *, mode: int | None = None, temp: Path | None = None) -> None:
    """Replace `path` with `data` in one step: readers see the old file or the new one, never a part.

    The bytes go to `temp` (by default a fresh name beside `path`), which is renamed over
    `path`; a write that fails removes its temporary file and leaves `path` as it was.
    """
    if temp is None:
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(handle)
        temp = Path(name)
    try:
        with open(temp, "wb") as out:
            out.write(data)
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
