"""The reports as rich tables: a warmup's, a zero-JIT verification's and a key-equivalence check's.

The reports themselves (contract/, migrate/engine_trees/) hold data and JSON only, so the runtime an
engine imports never imports rich. Every text from a kernel, a config or an engine tree is escaped.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from zerojit.contract.coverage import CoverageReport
    from zerojit.contract.report import WarmupReport
    from zerojit.migrate.engine_trees.equivalence import EquivalenceReport


def warmup_table(report: WarmupReport) -> Table:
    table = Table(title=f"warmup: {len(report.results)} keys in {report.wall_s:.2f} s")
    table.add_column("kernel", no_wrap=True)
    for column in ("keys", "compiled", "cached", "failed", "seconds", "variants"):
        table.add_column(column, justify="right")
    for row in report.per_kernel():
        name = escape(row["kernel"]) + (" [red](registered, 0 keys)[/]" if row["empty"] else "")
        failed = f"[red]{row['failed']}[/]" if row["failed"] else "0"
        table.add_row(
            name,
            str(row["keys"]),
            str(row["compiled"]),
            str(row["cached"]),
            failed,
            f"{row['seconds']:.2f}",
            str(row["variants"]),
        )
    return table


def coverage_table(report: CoverageReport) -> Table:
    verdict = "[green]zero JIT[/]" if report.ok else f"[red]{report.cache_growth} compiles after warmup[/]"
    table = Table(title=f"verify: {report.launches} launches, {verdict}")
    for column in ("launcher", "launches", "variants", "grew"):
        table.add_column(column, justify="left" if column == "launcher" else "right")
    for k in report.kernels:
        table.add_row(escape(k.name), str(k.launches), str(k.variants_after), "[red]yes[/]" if k.grew else "no")
    return table


def equivalence_table(report: EquivalenceReport, limit: int = 20) -> Table:
    """The mismatching configs first, then the intended differences, `limit` rows in all (the rest: --json)."""
    verdict = "[green]equivalent[/]" if report.ok else f"[red]{len(report.mismatches)} mismatching[/]"
    table = Table(
        title=f"keys diff {report.family}: {report.configs} configs, {verdict}",
        show_lines=True,
        caption=f"legacy: {escape(report.legacy_source)}\nmigrated: {escape(report.migrated_source)}\n"
        f"covered: {escape(report.covered())}",
    )
    for column in ("config", "keys (legacy/migrated)", "only legacy", "only migrated", "verdict"):
        table.add_column(column, overflow="fold")
    for diff in (report.mismatches + [d for d in report.diffs if d.intended])[:limit]:
        table.add_row(
            escape(_brief(diff.config)),
            f"{diff.legacy}/{diff.migrated}",
            escape(_first(diff.only_legacy)),
            escape(_first(diff.only_migrated)),
            f"intended: {escape(diff.intended)}"
            if diff.intended
            else "[red]MISMATCH[/]" + (f": {escape(diff.broken)}" if diff.broken else ""),
        )
    if len(report.diffs) > limit:
        table.caption += f"\n{len(report.diffs) - limit} more differing configs in --json"
    return table


def _brief(config: Any) -> str:
    """A config as the fields that differ from its defaults (all fields when it has none)."""
    if not dataclasses.is_dataclass(config):
        return str(config)
    parts = [
        f"{f.name}={getattr(config, f.name)!r}"
        for f in dataclasses.fields(config)
        if f.default is dataclasses.MISSING or getattr(config, f.name) != f.default
    ]
    return ", ".join(parts)


def _first(keys: list[str], width: int = 90) -> str:
    if not keys:
        return "-"
    text = keys[0] if len(keys[0]) <= width else keys[0][: width - 1] + "…"
    return text + (f"\n(+{len(keys) - 1} more)" if len(keys) > 1 else "")
