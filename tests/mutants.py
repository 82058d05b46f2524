"""Curated mutants: break the product on purpose, one change at a time, and see the tests that should fail, fail.

The mutants (tests/curated_mutants.py) run in a git worktree of this checkout (HEAD plus the checkout's
uncommitted changes and new files), never in the checkout itself, so a killed run leaves no mutant behind: the
worktree's code is imported ahead of the installed one (its `zerojit/` folder, on PYTHONPATH), and it is removed at the end. Each mutant's
tests run against a private copy of the cached engine trees ($ZEROJIT_CACHE): the codemod tests hard-link those
trees, and a mutant that writes in place would write through to the cache. Exit 1 if any mutant survives.

    make mutants                        # all of them
    .venv/bin/python tests/mutants.py --list
    .venv/bin/python tests/mutants.py -k topk   # those whose name contains "topk"
    .venv/bin/python tests/mutants.py --under codemods/   # those of the codemods
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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


def _private_cache(folder: Path) -> Path:
    """A cache whose engine trees are real copies (wheels are only read, so they are linked)."""
    for part in ("wheels", "trees"):
        if (CACHE / part).is_dir():
            if part == "wheels":
                (folder / part).symlink_to(CACHE / part)
            else:
                shutil.copytree(CACHE / part, folder / part, symlinks=True)
    return folder


def run(mutant: Mutant, tree: Path, timeout: int) -> tuple[str, float, str]:
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
                    "ZEROJIT_CACHE": str(_private_cache(Path(cache))),
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
    return verdict, time.perf_counter() - start, tail[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="match", default="", help="Only mutants whose name contains this text.")
    parser.add_argument("--under", default="", help="Only mutants of files under this path (e.g. codemods/).")
    parser.add_argument("--list", action="store_true", help="List the mutants and their tests, run nothing.")
    parser.add_argument("--timeout", type=int, default=900, help="Seconds per mutant's test run.")
    args = parser.parse_args()
    chosen = [m for m in MUTANTS if args.match.lower() in m.name.lower() and m.file.startswith(args.under)]
    if args.list:
        for mutant in chosen:
            print(f"{mutant.name:55} {mutant.file:42} pytest {' '.join(mutant.tests)}")
        return
    if not chosen:
        sys.exit(f"no mutant matches {args.match!r}")
    verdicts = []
    with worktree() as tree:
        for index, mutant in enumerate(chosen, 1):
            verdict, seconds, tail = run(mutant, tree, args.timeout)
            verdicts.append(verdict)
            print(f"[{index}/{len(chosen)}] {verdict:8} {seconds:6.1f} s  {mutant.name}  ({tail})", flush=True)
    killed = verdicts.count("killed")
    print(f"{killed}/{len(chosen)} killed" + ("" if killed == len(chosen) else f"; not killed: {len(chosen) - killed}"))
    sys.exit(0 if killed == len(chosen) else 1)


if __name__ == "__main__":
    main()
