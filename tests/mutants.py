"""Curated mutants: break the product on purpose, one change at a time, and see the tests that should fail, fail.

The mutants (tests/curated_mutants.py) run in a git worktree of this checkout (HEAD plus the checkout's
uncommitted changes and new files), never in the checkout itself, so a killed run leaves no mutant behind: the
worktree's code is imported ahead of the installed one (its `zerojit/` folder, on PYTHONPATH), and it is removed at
the end. Each mutant's tests run against a fresh cache ($ZEROJIT_CACHE) whose engine trees are the worktree's private
copy of the cached ones: the codemod tests hard-link those trees, and a mutant that writes in place would write through
to the cache. The copy is made again only after a run that changed it. Exit 1 if any mutant survives.

    make mutants                        # all of them, as many at once as the machine has cores
    .venv/bin/python tests/mutants.py --list
    .venv/bin/python tests/mutants.py -k topk   # those whose name contains "topk"
    .venv/bin/python tests/mutants.py --under codemods/   # those of the codemods
    .venv/bin/python tests/mutants.py -j 4      # four at once, each in a worktree of its own
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from curated_mutants import MUTANTS, Mutant

from zerojit.contract.storage import cache_root

ROOT = Path(__file__).resolve().parents[1]
CACHE = cache_root()
PACKAGE_FOLDERS = {"contract": "contract", "migrate": "migrate", "codemods": "codemods"}  # pyproject's package-dir


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@contextlib.contextmanager
def worktree() -> Iterator[Path]:
    """A detached worktree holding what the checkout holds now, whose `zerojit/` folder imports its own code."""
    with tempfile.TemporaryDirectory(prefix="zerojit-mutants-") as scratch:
        tree = Path(scratch, "tree")
        _git("worktree", "add", "--detach", "--quiet", str(tree), "HEAD")
        try:
            diff = _git("diff", "--binary", "HEAD")
            if diff:
                subprocess.run(["git", "apply", "--whitespace=nowarn"], cwd=tree, input=diff, text=True, check=True)
            for name in _git("ls-files", "--others", "--exclude-standard", "-z").split("\0"):
                if name:
                    (tree / name).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(ROOT / name, tree / name)
            # pyproject's package-dir, laid out as a plain package: `zerojit.contract` is the worktree's contract/.
            for package, folder in PACKAGE_FOLDERS.items():
                (tree / "zerojit" / package).symlink_to(tree / folder)
            yield tree
        finally:
            _git("worktree", "remove", "--force", str(tree))


class Trees:
    """A private copy of the cached engine trees, checked after every run and copied again if a run changed it."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._copy()

    def _copy(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        if (CACHE / "trees").is_dir():
            shutil.copytree(CACHE / "trees", self.folder, symlinks=True)
        self.folder.mkdir(exist_ok=True)
        self.signature = self._signature()

    def _signature(self) -> dict[str, tuple[int, int, int]]:
        found = {}
        for folder, _, files in os.walk(self.folder):
            for name in files:
                info = os.lstat(os.path.join(folder, name))
                found[os.path.join(folder, name)] = (info.st_ino, info.st_size, info.st_mtime_ns)
        return found

    def cache(self, folder: Path) -> Path:
        """`folder` as a cache holding these trees (and the real cache's wheels, which are only read)."""
        if (CACHE / "wheels").is_dir():
            (folder / "wheels").symlink_to(CACHE / "wheels")
        (folder / "trees").symlink_to(self.folder)
        return folder

    def restore(self) -> None:
        if self._signature() != self.signature:
            self._copy()


def run(mutant: Mutant, tree: Path, trees: Trees, timeout: int) -> tuple[str, float, str]:
    path = tree / mutant.file
    original = path.read_text(encoding="utf-8")
    if original.count(mutant.old) != 1:
        return "STALE", 0.0, f"the text to mutate occurs {original.count(mutant.old)} times in {mutant.file}"
    mutated = original.replace(mutant.old, mutant.new)
    compile(mutated, str(path), "exec")  # a mutant must be valid code, or "killed" means nothing
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="zerojit-mutant-cache-") as cache:
            path.write_text(mutated, encoding="utf-8")
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant.tests],
                cwd=tree,
                capture_output=True,
                text=True,
                timeout=timeout,
                env={
                    **os.environ,
                    "ZEROJIT_CACHE": str(trees.cache(Path(cache))),
                    "PYTHONPATH": os.pathsep.join(filter(None, (str(tree), os.environ.get("PYTHONPATH")))),
                    "ZEROJIT_SOURCE": str(tree),  # tests/conftest.py's CLI subprocesses keep it on their path
                },
            )
        verdict = "killed" if result.returncode == 1 else ("SURVIVED" if result.returncode == 0 else "ERROR")
        tail = result.stdout.strip().splitlines()[-1:] if result.stdout.strip() else [result.stderr[-200:]]
    except subprocess.TimeoutExpired:
        verdict, tail = "ERROR", [f"timed out after {timeout} s"]
    finally:
        path.write_text(original, encoding="utf-8")
        trees.restore()
    return verdict, time.perf_counter() - start, tail[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="match", default="", help="Only mutants whose name contains this text.")
    parser.add_argument("--under", default="", help="Only mutants of files under this path (e.g. codemods/).")
    parser.add_argument("--list", action="store_true", help="List the mutants and their tests, run nothing.")
    parser.add_argument("--timeout", type=int, default=900, help="Seconds per mutant's test run.")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="Mutants run at once, each in its own worktree.")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error(f"-j must be at least 1, not {args.jobs}")
    chosen = [m for m in MUTANTS if args.match.lower() in m.name.lower() and m.file.startswith(args.under)]
    if args.list:
        for mutant in chosen:
            print(f"{mutant.name:55} {mutant.file:42} pytest {' '.join(mutant.tests)}")
        return
    if not chosen:
        sys.exit(f"no mutant matches {args.match!r}")
    with contextlib.ExitStack() as stack:
        slots: queue.Queue[tuple[Path, Trees]] = queue.Queue()
        for _ in range(min(args.jobs, len(chosen))):
            tree = stack.enter_context(worktree())
            slots.put((tree, Trees(tree.parent / "trees")))
        done = iter(range(1, len(chosen) + 1))

        def one(mutant: Mutant) -> str:
            """Run `mutant` in a free worktree (a mutant edits its tree's file, so no two share one)."""
            slot = slots.get()
            try:
                verdict, seconds, tail = run(mutant, *slot, args.timeout)
            finally:
                slots.put(slot)
            print(f"[{next(done)}/{len(chosen)}] {verdict:8} {seconds:6.1f} s  {mutant.name}  ({tail})", flush=True)
            return verdict

        with ThreadPoolExecutor(max_workers=slots.qsize()) as pool:
            verdicts = list(pool.map(one, chosen))
    killed = verdicts.count("killed")
    print(f"{killed}/{len(chosen)} killed" + ("" if killed == len(chosen) else f"; not killed: {len(chosen) - killed}"))
    sys.exit(0 if killed == len(chosen) else 1)


if __name__ == "__main__":
    main()
