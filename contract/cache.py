"""A warmup cache directory: trust, writability, the timing history and the artifact manifest.

The backends' disk caches hold pickles and shared objects that the warmup *loads*, so a
cache directory must be one only its owner can write. Beside the backend's own files it
holds two files of zerojit's, both rewritten atomically under one lock so that
concurrent warmups on one cache merge instead of overwriting each other:

  zerojit-timings.json   {key digest: seconds its last real compile took}, to run long keys first;
  zerojit-manifest.json  the artifact manifest, format "zerojit-cache/1":
      {"format": "zerojit-cache/1",
       "fingerprint": {what the artifacts are only valid for: Python minor, DSL versions, their
                       source fingerprints, target arch, SM count, zerojit's version},
       "keys": {key digest: {"kernel": name, "key": canonical key JSON,
                             "artifacts": {path relative to the cache dir: sha256 of the file}}}}

A key's artifacts are the backend files its compile wrote or its load read (backends report
them through `record_artifact`). A warmup holds the cache from its check to its record
(`warming`, the `zerojit.warming` lock): a second warmup of the cache waits, then loads what
the first compiled, so none ever judges a peer's compile in flight. Before a warmup loads
anything, each planned key's artifacts are checked against the manifest: a swapped, altered or
foreign file is removed so that its key recompiles, and the warmup reports it; so is every
backend file with content that no manifest entry names (what a killed run left, or a file put
there: a FlyDSL pickle is code), since a compile may load a file of its key that is there.
The manifest is data from elsewhere (a bake is a folder received from another machine): a
path in it that resolves outside the cache folder, or is not a plain relative path, refuses
its entry and touches nothing; a manifest that is missing or unreadable while backend files
are there vouches for nothing, so those files are removed (or, read-only, refused) rather
than loaded and blessed. A read-only cache (a baked cache mounted read-only) is fine as long
as the manifest covers every planned key. A cache baked elsewhere
applies only where its fingerprint matches (`fingerprint_mismatch` names the first field
that differs, instead of letting the DSL recompile everything silently).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import stat
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .storage import PROBE_PREFIX, atomic_write, cache_root, can_write, file_lock

if TYPE_CHECKING:
    from .plan import WarmupPlan
    from .report import WarmupReport

HISTORY_FILE = "zerojit-timings.json"
MANIFEST_FILE = "zerojit-manifest.json"
LOCK_FILE = "zerojit.lock"
WARMING_FILE = "zerojit.warming"  # held by the warmup that has the cache, from its trust check to its record
MANIFEST_FORMAT = "zerojit-cache/1"
OWN_FILES = {
    HISTORY_FILE: "timing history",
    MANIFEST_FILE: "artifact manifest",
    LOCK_FILE: "lock",
    WARMING_FILE: "warmup lock",
}


def default_cache_dir(backend: str) -> Path:
    """Where a backend's cache lives unless told otherwise: <cache root>/<backend> (contract.storage)."""
    return cache_root() / backend


class CacheDirError(ValueError):
    """The cache directory cannot be used as asked (one line: what and why)."""


class CacheWarning(UserWarning):
    """Something in the cache was ignored or repaired; the warmup goes on."""


@dataclasses.dataclass(frozen=True)
class CacheDir:
    path: Path
    writable: bool


def open_cache_dir(path: Path, backend: str | None = None) -> CacheDir:
    """Create (if needed) and vet a cache directory: a folder, trusted (every folder in it), writable or not.

    With `backend`, a bake root (the folder `zerojit bake --out` wrote: one folder per backend)
    stands for its `backend` folder, as `ZEROJIT_CACHE` does; a bake root without one is refused.
    """
    path = Path(path).expanduser()
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            what = "is a file" if parent == path else f"is under {parent}, which is a file"
            raise CacheDirError(f"cache dir {path} {what}, not a folder")
    if backend is not None:
        path = _backend_folder(path, backend)
    if not path.exists():
        try:  # a peer (another rank of this host) may create it between the check and here
            path.mkdir(parents=True, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise CacheDirError(f"cannot create cache dir {path}: {exc.strerror or exc}") from None
    _check_trusted(path, path)
    for folder, subfolders, files in os.walk(path):  # anything others can write, or that leads out, could be swapped
        for name in (*subfolders, *files):
            # Gone since the folder was listed: a peer's write probe or temporary file (ranks share a cache).
            with contextlib.suppress(FileNotFoundError):
                _check_entry(Path(folder, name), path)
    for name, what in OWN_FILES.items():
        own = path / name
        if (own.exists() or own.is_symlink()) and not (own.is_file() and not own.is_symlink()):
            raise CacheDirError(
                f"cache dir {path}: {own} is not a regular file, where zerojit keeps its {what}: remove it"
            )
    return CacheDir(path, can_write(path))


def _backend_folder(path: Path, backend: str) -> Path:
    """`path` itself, or its `backend` folder when `path` is a bake root."""
    if path.name == backend and (path.parent / MANIFEST_FILE).is_file():
        raise CacheDirError(
            f"cache dir {path} would sit inside {path.parent}, which is itself a {backend} cache: "
            f"point at {path.parent} itself (or set ZEROJIT_CACHE to the folder above it)"
        )
    if (path / MANIFEST_FILE).exists() or not path.is_dir():
        return path
    if (path / backend / MANIFEST_FILE).is_file():
        return path / backend
    baked = sorted(child.name for child in path.iterdir() if (child / MANIFEST_FILE).is_file())
    if baked:
        raise CacheDirError(
            f"cache dir {path} is a bake root holding {', '.join(baked)}, with no {backend} folder for "
            f"this preset's backend: bake the preset into it, or give a {backend} cache folder"
        )
    return path


def _check_entry(entry: Path, cache: Path) -> None:
    """A cache holds its own plain files and folders: no symlink (it would load or write outside), no FIFO or
    device (opening one hangs), nothing others can write."""
    info = entry.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise CacheDirError(
            f"cache dir {cache} holds a symlink, {entry}: a cache must hold its own files (what a "
            "link points to lies outside it); remove the link"
        )
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        raise CacheDirError(f"cache dir {cache} holds {entry}, which is not a regular file or folder: remove it")
    _check_trusted(entry, cache)


def _check_trusted(folder: Path, cache: Path) -> None:
    """Refuse a folder of the cache that another user could write or owns (it holds code the warmup loads)."""
    info = folder.lstat()
    name = "cache dir" if folder == cache else f"cache dir {cache}: its {'folder' if folder.is_dir() else 'file'}"
    if stat.S_ISLNK(info.st_mode):
        info = folder.stat()
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        fix = f"chmod go-w {folder}" if folder == cache else f"chmod -R go-w {cache}"
        raise CacheDirError(
            f"{name} {folder} is writable by other users (mode {stat.S_IMODE(info.st_mode):o}); "
            f"it holds compiled code the warmup loads: use a folder only you can write ({fix})"
        )
    if info.st_uid not in (os.getuid(), 0):
        raise CacheDirError(
            f"{name} {folder} belongs to another user (uid {info.st_uid}); it holds compiled code "
            "the warmup loads: use a folder you or root own"
        )


def claim(folder: Path) -> None:
    """Mark a folder a backend compiles into as zerojit's (its lock file): a warmup may then judge, and remove,
    what it holds; a folder without the mark or a manifest is never emptied. A read-only one stays as it is."""
    with contextlib.suppress(OSError):
        (Path(folder) / LOCK_FILE).touch()


def check_output_file(path: Path, what: str) -> Path:
    """Refuse, before any work, an output file that could not be written at the end."""
    path = Path(path).expanduser()
    if path.is_symlink():  # judged by where it writes
        path = path.resolve()
    if path.exists() and not path.is_file():
        raise CacheDirError(f"{what} {path} is {'a folder' if path.is_dir() else 'not a regular file'}, not a file")
    if not path.parent.is_dir():
        raise CacheDirError(f"{what} {path}: folder {path.parent} does not exist")
    if (path.exists() and not os.access(path, os.W_OK)) or not can_write(path.parent):
        raise CacheDirError(f"{what} {path} is not writable")
    return path


@contextlib.contextmanager
def warming(cache: CacheDir, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the cache for one warmup, from its trust check to its record: a second warmup of the cache (a TP rank
    of the same host, a bake) waits, then finds the first's compiles recorded and loads them. So no warmup ever
    judges a peer's compile in flight, and a backend file that no manifest entry vouches for is what a run that
    died (or someone) left: `check_artifacts` removes it before anything can load it. A read-only cache changes
    under nobody: nothing to hold."""
    if not cache.writable:
        yield
        return
    _check_ours(cache, backend_files(cache))  # before the lock file is made in a folder that is not zerojit's
    with file_lock(cache.path / WARMING_FILE, on_wait=on_wait):
        yield


def _check_ours(cache: CacheDir, files: list[Path]) -> None:
    """Refuse a folder holding files but none of zerojit's own: whatever it is, it is not a zerojit cache."""
    if files and not any((cache.path / name).exists() for name in OWN_FILES):
        raise CacheDirError(
            f"cache dir {cache.path} holds {len(files)} files and no zerojit manifest or lock: "
            "it is not a zerojit cache (give an empty folder, a cache zerojit made, or a bake)"
        )


@contextlib.contextmanager
def locked(cache: CacheDir) -> Iterator[None]:
    """Hold the cache's lock (other warmups on this cache wait) while its zerojit files change."""
    with file_lock(cache.path / LOCK_FILE):
        yield


def _read_json(path: Path, what: str, valid: Any, warn: bool) -> dict:
    """A zerojit file of the cache, or {} when it is missing, corrupt or of the wrong shape (a warning if `warn`)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        if not valid(data):
            raise ValueError("unexpected content")
    except (OSError, ValueError, RecursionError) as exc:
        if warn:
            warnings.warn(
                f"ignoring {what} {path} ({type(exc).__name__}: {exc}); it is rebuilt", CacheWarning, stacklevel=3
            )
        return {}
    return data


def _write_json(path: Path, data: dict) -> None:
    atomic_write(path, json.dumps(data, sort_keys=True).encode())


def _valid_history(data: Any) -> bool:
    return isinstance(data, dict) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in data.values()
    )


def _strings(value: Any) -> bool:
    """A JSON object of strings to strings."""
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _valid_manifest(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("format") == MANIFEST_FORMAT
        and isinstance(data.get("keys"), dict)
        and _strings(data.get("fingerprint", {}))
        and all(isinstance(entry, dict) and _strings(entry.get("artifacts")) for entry in data["keys"].values())
    )


def read_history(cache: CacheDir, warn: bool = True) -> dict[str, float]:
    return _read_json(cache.path / HISTORY_FILE, "timing history", _valid_history, warn)


def read_manifest(cache: CacheDir, warn: bool = True) -> dict[str, Any]:
    return _read_json(cache.path / MANIFEST_FILE, "artifact manifest", _valid_manifest, warn).get("keys", {})


def read_fingerprint(cache: CacheDir) -> dict[str, str]:
    return _read_json(cache.path / MANIFEST_FILE, "artifact manifest", _valid_manifest, False).get("fingerprint", {})


def environment() -> dict[str, str]:
    """The fingerprint fields every backend shares."""
    import sys
    from importlib.metadata import PackageNotFoundError, version

    try:
        zerojit = version("zerojit")
    except PackageNotFoundError:
        zerojit = "unknown"
    return {"Python": f"{sys.version_info.major}.{sys.version_info.minor}", "zerojit": zerojit}


def fingerprint_mismatch(baked: dict[str, str], here: dict[str, str]) -> str | None:
    """One line naming the first fingerprint field that differs (None when the bake applies here)."""
    for field, value in baked.items():
        if here.get(field) != value:
            return f"baked for {field} {value}, this is {here.get(field, 'not set')}"
    return None


def file_digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@dataclasses.dataclass(frozen=True)
class ArtifactProblem:
    kernel: str | None  # None: the problem is the whole cache's (its manifest, files no entry names)
    key_digest: str
    artifact: str
    why: str
    outcome: str = "recompiled"  # what the warmup does about it

    def __str__(self) -> str:
        subject = f"{self.kernel}: cached artifact {self.artifact}" if self.kernel else self.artifact
        return f"{subject} {self.why}; {self.outcome}"


def inside(cache: CacheDir, relative: Any) -> Path | None:
    """The file a manifest path names, if it is a plain relative path that stays in the cache (symlinks resolved)."""
    if not isinstance(relative, str) or not relative or Path(relative).is_absolute():
        return None
    try:
        path = cache.path / relative
        root = cache.path.resolve()
        resolved = path.resolve()
        path.exists()  # a name the system refuses (a NUL, too long) raises here, not later
    except (OSError, ValueError):
        return None
    return path if resolved != root and resolved.is_relative_to(root) else None


def backend_files(cache: CacheDir) -> list[Path]:
    """Every file in the cache that is not zerojit's own (what the backend wrote, or someone put there)."""
    found = []
    for folder, _, names in os.walk(cache.path):
        for name in names:
            path = Path(folder, name)
            if not (path.parent == cache.path and (name in OWN_FILES or name.startswith(PROBE_PREFIX))):
                found.append(path)
    return found


def check_artifacts(
    cache: CacheDir, plan: WarmupPlan, remove: bool = True, loads: tuple[str, ...] = ()
) -> tuple[list[ArtifactProblem], int]:
    """Check every planned key's artifacts against the manifest; remove the bad ones so their keys recompile.

    Returns the problems found and how many planned keys the manifest does not cover (they
    will compile). Raises CacheDirError when the cache is read-only and something must change.
    An entry naming a path outside the cache (or a folder) is refused and nothing it names is
    touched; the key's files inside the cache go, so it recompiles. A missing or unreadable
    manifest in a cache holding backend files vouches for none of them: they all go.
    `remove=False` only checks (a warmup that will refuse to compile keeps the cache as it is). `loads`: the
    suffixes of the files the backend's compiles load (`Backend.LOADS`): one that no manifest entry names goes
    too, before a compile could load it (what the backend writes for other uses, Triton's launcher `.so`, stays).
    """
    manifest_path = cache.path / MANIFEST_FILE
    manifest = _read_json(manifest_path, "artifact manifest", _valid_manifest, warn=False)
    if not manifest and (untrusted := backend_files(cache)):
        _check_ours(cache, untrusted)
        state = "unreadable or corrupt" if manifest_path.exists() else "missing"
        problem = ArtifactProblem(
            None,
            "",
            f"the artifact manifest {manifest_path}",
            f"is {state}, so none of the cache's {len(untrusted)} backend files can be trusted",
        )
        if not cache.writable and remove:
            raise _needs_writing(cache, str(problem))
        for path in untrusted if remove else ():
            path.unlink(missing_ok=True)
        return [problem], sum(1 for _ in plan.work())
    entries = manifest.get("keys", {})
    problems: list[ArtifactProblem] = []
    doomed: list[Path] = []
    uncovered = 0
    for kernel, key in plan.work():
        entry = entries.get(key.digest())
        if entry is None:
            uncovered += 1
            continue
        found = {relative: inside(cache, relative) for relative in entry["artifacts"]}
        refused = [
            relative for relative, path in found.items() if path is None or (path.exists() and not path.is_file())
        ]
        if refused:
            why = "is not a regular file" if found[refused[0]] is not None else "lies outside the cache folder"
            problems.append(
                ArtifactProblem(
                    kernel.name, key.digest(), refused[0], f"{why}: the manifest's entry for this key is refused"
                )
            )
            doomed += [path for path in found.values() if path is not None and path.is_file()]
            continue
        for relative, digest in entry["artifacts"].items():
            path = found[relative]
            if not path.is_file():
                problems.append(ArtifactProblem(kernel.name, key.digest(), relative, "is missing"))
            elif file_digest(path) != digest:
                problems.append(
                    ArtifactProblem(kernel.name, key.digest(), relative, "does not match the key it was stored for")
                )
                doomed.append(path)
    # A planned key the manifest lacks compiles, and a compile may load a file of its key that is already there.
    stray = _unvouched(cache, entries, loads) if remove and cache.writable else []
    if stray:
        problems.append(
            ArtifactProblem(
                None,
                "",
                f"{len(stray)} backend files ({', '.join(p.relative_to(cache.path).as_posix() for p in stray[:3])})",
                "that no manifest entry vouches for (a run that died left them, or they were put there)",
                "removed before anything could load them",
            )
        )
    if (problems or uncovered) and not cache.writable and remove:
        raise _needs_writing(
            cache, str(problems[0]) if problems else f"{uncovered} planned keys are not in its manifest"
        )
    for path in [*doomed, *stray] if remove else ():
        path.unlink(missing_ok=True)
    if remove and cache.writable:
        claim(cache.path)  # the folder is zerojit's before the backend writes into it
    return problems, uncovered


def _unvouched(cache: CacheDir, entries: dict[str, Any], loads: tuple[str, ...]) -> list[Path]:
    """Files of the kinds a compile loads (`loads`, suffixes) with content that no manifest entry names (an empty
    file holds no code to load)."""
    vouched = {
        path for entry in entries.values() for relative in entry["artifacts"] if (path := inside(cache, relative))
    }
    return sorted(
        path
        for path in backend_files(cache)
        if path.name.endswith(loads) and path not in vouched and _holds_bytes(path)
    )


def _holds_bytes(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:  # a dangling link: nothing to load, but nothing of the cache's either
        return True


def _needs_writing(cache: CacheDir, what: str) -> CacheDirError:
    return CacheDirError(
        f"cache dir {cache.path} is read-only and would need writing: {what.removesuffix('; recompiled')}"
    )


def record_results(
    cache: CacheDir, report: WarmupReport, fingerprint: dict[str, str] | None = None, peers_compile: bool = False
) -> None:
    """Merge this warmup's compile times and artifacts into the cache's history and manifest, under the lock.

    `fingerprint`: what the artifacts compiled here are valid for; recorded when something compiled.
    A key loaded from files nothing vouches for is not recorded (and the files go), unless
    `peers_compile`: cooperative ranks load what their peers compiled in the same run.
    """
    if not cache.writable:
        return
    try:
        _record(cache, report, fingerprint, peers_compile)
    except OSError as exc:
        raise CacheDirError(
            f"cannot record the warmup in cache dir {cache.path}: {exc.strerror or exc} (its compiled "
            "files are there, but no manifest vouches for them)"
        ) from None


def _record(cache: CacheDir, report: WarmupReport, fingerprint: dict[str, str] | None, peers_compile: bool) -> None:
    root = cache.path.resolve()
    with locked(cache):  # re-read under the lock: another warmup may have written since; it warned already
        history = read_history(cache, warn=False)
        history.update({r.key.digest(): round(r.seconds, 4) for r in report.results if r.outcome == "compiled"})
        _write_json(cache.path / HISTORY_FILE, history)
        keys = read_manifest(cache, warn=False)
        found = [
            {
                str(path.relative_to(root)): file_digest(path)
                for path in map(_resolved, result.artifacts)
                if path.is_relative_to(root) and path.is_file()
            }
            for result in report.results
        ]
        vouched = {item for entry in keys.values() for item in entry["artifacts"].items()} | {
            item
            for result, artifacts in zip(report.results, found)
            if result.outcome == "compiled"
            for item in artifacts.items()
        }
        unvouched: set[str] = set()
        for result, artifacts in zip(report.results, found):
            if result.outcome == "failed":
                continue
            if result.outcome == "cached" and not peers_compile and not set(artifacts.items()) <= vouched:
                unvouched |= {relative for relative, digest in artifacts.items() if (relative, digest) not in vouched}
                continue  # loaded from a file no manifest entry vouched for: never blessed
            previous = keys.get(result.key.digest(), {}).get("artifacts", {})
            if artifacts or not previous:
                keys[result.key.digest()] = {
                    "kernel": result.kernel,
                    "key": json.loads(result.key.to_json()),
                    "artifacts": artifacts or previous,
                }
        manifest = {"format": MANIFEST_FORMAT, "keys": keys, "fingerprint": read_fingerprint(cache)}
        if fingerprint and report.count("compiled"):
            manifest["fingerprint"] = fingerprint
        _write_json(cache.path / MANIFEST_FILE, manifest)
        for relative in sorted(unvouched):
            (cache.path / relative).unlink(missing_ok=True)
    if unvouched:
        warnings.warn(
            f"cache dir {cache.path}: {len(unvouched)} files were loaded that no manifest entry vouched for "
            f"({', '.join(sorted(unvouched)[:3])}); they were removed, not recorded, and their keys "
            "recompile next time",
            CacheWarning,
            stacklevel=3,
        )


def _resolved(path: str) -> Path:
    return Path(path).resolve()


_recording = threading.local()


def record_artifact(path: str | os.PathLike) -> None:
    """Backends call this for each cache file a compile wrote or a load read (this thread's current key)."""
    paths = getattr(_recording, "paths", None)
    if paths is not None:
        paths.append(os.fspath(path))


@contextlib.contextmanager
def recording_artifacts() -> Iterator[list[str]]:
    """Collect the artifact paths the backend reports while this block compiles one key."""
    _recording.paths = paths = []
    try:
        yield paths
    finally:
        _recording.paths = None
