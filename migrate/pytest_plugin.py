"""pytest plugin (registered as `zerojit` through the pytest11 entry point).

An engine's own test suite asserts that its migrated kernels warm what the legacy
warmup did, in a few lines:

    def test_fa4_migration_keeps_keys(key_equivalence):
        key_equivalence("fa4-mla-prefill", samples=200)

    @pytest.mark.key_equivalence("rocm-nvfp4", grid="smoke")
    def test_rocm_keys():
        pass

Each fails with the table of configurations whose keys differ without an explanation.
A family is a built-in name or any object with the adapter interface of
zerojit.migrate.engine_trees.equivalence.EquivalenceAdapter (your own kernels).
"""

from __future__ import annotations

from typing import Any

import pytest

from zerojit.migrate.engine_trees.equivalence import EquivalenceReport, compare, sample_configs


def _check(family: Any, grid: str | None = "full", samples: int = 0, seed: int = 0) -> EquivalenceReport:
    if isinstance(family, str):
        from .families import key_equivalence

        report = key_equivalence(family, grid, samples, seed)
    else:
        configs = (family.grids[grid]() if grid else []) + (sample_configs(family, samples, seed) if samples else [])
        report = compare(family, configs)
    if not report.ok:
        from rich.console import Console

        from zerojit.migrate.cli.tables import equivalence_table  # the CLI's table, as `zerojit keys diff` prints it

        console = Console(record=True, width=160)
        console.print(equivalence_table(report))
        pytest.fail(f"key equivalence failed for {report.family}:\n{console.export_text()}", pytrace=False)
    return report


@pytest.fixture
def key_equivalence():
    """Call with a family (name or adapter) and optional grid / samples / seed; fails on unexplained diffs."""
    return _check


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "key_equivalence(family, grid='full', samples=0, seed=0): assert the "
        "family's migrated keys equal its legacy keys",
    )


def pytest_runtest_call(item: pytest.Item) -> None:
    marker = item.get_closest_marker("key_equivalence")
    if marker is not None:
        _check(*marker.args, **marker.kwargs)
