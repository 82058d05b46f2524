"""The files a command writes for its user (--report, --pr-body, --timeline, --plot, --draft-specs), under one rule.

Each is claimed before any work: refused when something is already there (zerojit never writes over a file),
when the run writes it twice (`--report X --pr-body X`), or when it lies in a cache folder (a file there is the
cache's: `--timeline CACHE/zerojit-manifest.json` would replace the manifest). At the end its bytes are staged
under a temporary name beside it, and only once every output of the run is staged are they linked into place
(a link never replaces a file, so one made meanwhile is not lost either): a full disk is one `error:` line and
leaves nothing half-written, and a command that also changes something else (`migrate --write`) stages its
outputs before it does.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from zerojit.contract.cache import MANIFEST_FILE, CacheDirError, check_output_file


class Outputs:
    def __init__(self, *caches: Path | None):
        """`caches`: the cache folders of the run (an output is never written into one)."""
        self._caches = [Path(cache).expanduser().resolve() for cache in caches if cache is not None]
        self._claimed: dict[Path, str] = {}  # resolved path -> the option that names it
        self._staged: list[tuple[Path, Path, str]] = []  # (temporary file, path, option)

    def claim(self, path: Path, option: str) -> Path:
        """Check `path` can be written at the end: a new file, in a folder that exists and is writable."""
        given = Path(path).expanduser()
        path = check_output_file(path, option)
        if os.path.lexists(given) or os.path.lexists(path):  # a link too, dangling or not: what is there is not ours
            raise CacheDirError(
                f"{option} {given} exists; zerojit never writes over a file (remove it or name another)"
            )
        resolved = path.resolve()
        if resolved in self._claimed:
            raise CacheDirError(f"{option} {path} is the {self._claimed[resolved]} file too: name two files")
        folder = resolved.parent
        if (folder / MANIFEST_FILE).exists() or any(folder.is_relative_to(cache) for cache in self._caches):
            raise CacheDirError(f"{option} {path} lies in a cache folder, whose files are the cache's: name another")
        self._claimed[resolved] = option
        return path

    def stage(self, path: Path, data: bytes) -> None:
        """Write a claimed output's bytes under a temporary name beside it."""
        option, name = self._claimed[Path(path).resolve()], None
        try:
            handle, name = tempfile.mkstemp(prefix=f".{Path(path).name}.", dir=Path(path).parent)
            with os.fdopen(handle, "wb") as out:
                out.write(data)
        except BaseException as exc:  # a full disk, a folder gone meanwhile, an interrupt: nothing half-written
            if name is not None:
                Path(name).unlink(missing_ok=True)
            self.discard()
            if not isinstance(exc, OSError):
                raise
            raise CacheDirError(f"{option} {path}: {exc.strerror or exc}; it was not written") from None
        self._staged.append((Path(name), Path(path), option))

    def publish(self) -> list[Path]:
        """Link every staged output into place (the paths written), all or none: one that appeared meanwhile, or a
        link that fails, leaves none of them."""
        written: list[Path] = []
        try:
            for temp, path, option in self._staged:
                try:
                    os.link(temp, path)
                except FileExistsError:
                    raise CacheDirError(
                        f"{option} {path} appeared while the command ran; it was left as it is"
                    ) from None
                except OSError as exc:
                    raise CacheDirError(f"{option} {path}: {exc.strerror or exc}") from None
                written.append(path)
        except BaseException:
            for path in written:
                path.unlink(missing_ok=True)
            raise
        finally:
            self.discard()
        return written

    def discard(self) -> None:
        """Remove the staged temporary files (what `publish` linked stays)."""
        for temp, _, _ in self._staged:
            temp.unlink(missing_ok=True)
        self._staged = []

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, *exc_info) -> None:
        self.discard()

    def write(self, path: Path, data: bytes) -> Path:
        """Stage and publish one output (a command with nothing else to write)."""
        self.stage(path, data)
        return self.publish()[0]
