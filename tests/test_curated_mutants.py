"""Every curated mutant still applies: its text occurs exactly once in its file, and the mutated file compiles
(a mutant that no longer applies would otherwise show up only when `make mutants` runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from curated_mutants import MUTANTS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_the_mutant_applies_and_compiles(mutant):
    source = (ROOT / mutant.file).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1
    compile(source.replace(mutant.old, mutant.new), mutant.file, "exec")


def test_names_are_unique():
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_the_tests_meant_to_kill_it_exist(mutant):
    files = [arg.split("::")[0] for arg in mutant.tests if arg.startswith("tests/")]
    assert files and all((ROOT / name).is_file() for name in files)
