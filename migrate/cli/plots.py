"""Drawings the CLI writes with matplotlib (the `plots` extra): a warmup's timeline, an engine's JIT map.

The runtime and the codemods keep their data (contract/timeline.py, codemods/jit_map.py) and never import
matplotlib; each drawing is written where the file's suffix says, with no display needed.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zerojit.codemods.jit_map import STATUSES
from zerojit.contract.cache import CacheDirError
from zerojit.contract.timeline import timeline_json

if TYPE_CHECKING:
    from zerojit.contract.report import WarmupReport

DRAWING_FORMATS = (".png", ".svg", ".pdf")  # what matplotlib draws, by the file's suffix
TIMELINE_FORMATS = (*DRAWING_FORMATS, ".json")  # a warmup timeline: a drawing, or its data (contract.timeline)
OUTCOME_COLORS = {"compiled": "tab:orange", "cached": "tab:green", "failed": "tab:red"}
STATUS_COLORS = {"registered": "tab:green", "unregistered": "tab:olive", "legacy": "tab:orange", "unwarmed": "tab:red"}


def check_timeline(path: Path) -> None:
    """Refuse a `--timeline` file of a kind the warmup cannot write (before anything compiles)."""
    if path.suffix.lower() not in TIMELINE_FORMATS:
        raise CacheDirError(f"--timeline {path}: name a {', '.join(TIMELINE_FORMATS)} file")
    if path.suffix.lower() != ".json" and importlib.util.find_spec("matplotlib") is None:
        raise CacheDirError(
            "--timeline needs matplotlib to draw: pip install 'zerojit[plots]' (or name a .json file for the data)"
        )


def timeline_file(report: WarmupReport, suffix: str) -> bytes:
    """The timeline as a file of this suffix: `.json` the data, otherwise a drawing (PNG, SVG or PDF)."""
    return timeline_json(report) if suffix.lower() == ".json" else plot_timeline(report, suffix)


def plot_timeline(report: WarmupReport, suffix: str) -> bytes:
    """When each key ran on which worker: one lane per worker, one bar per key, colored by its outcome."""
    plt = _pyplot()
    results = [r for r in report.results if r.started]
    if not results:
        raise ValueError("the report has no timed keys to plot")
    origin = min(r.started for r in results)
    workers = sorted({r.worker for r in results})
    figure, axes = plt.subplots(figsize=(10, 1 + 0.5 * len(workers)))
    for lane, worker in enumerate(workers):
        mine = [r for r in results if r.worker == worker]
        axes.broken_barh(
            [(r.started - origin, max(r.seconds, 1e-3)) for r in mine],
            (lane - 0.4, 0.8),
            facecolors=[OUTCOME_COLORS[r.outcome] for r in mine],
            edgecolor="black",
            linewidth=0.3,
        )
    axes.set_yticks(range(len(workers)), workers)
    axes.set_xlabel("seconds since warmup start")
    counts = ", ".join(f"{report.count(o)} {o}" for o in OUTCOME_COLORS)
    axes.set_title(f"warmup timeline: {len(report.results)} keys ({counts}), {report.wall_s:.2f} s")
    return _drawn(plt, figure, suffix)


def plot_jit_map(report: dict[str, Any], suffix: str) -> bytes:
    """A stacked bar per backend (its kernels by status) of a JIT map's JSON form (`jit_map_report`)."""
    plt = _pyplot()
    rows = {backend: row for backend, row in report["counts"]["by_backend"].items() if row["total"]}
    figure, axes = plt.subplots(figsize=(10, 1.2 + 0.45 * len(rows)))
    left = [0] * len(rows)
    for status, color in STATUS_COLORS.items():
        widths = [row[status] for row in rows.values()]
        axes.barh(list(rows), widths, left=left, color=color, label=f"{STATUSES[status]} ({sum(widths)})")
        left = [a + b for a, b in zip(left, widths)]
    axes.invert_yaxis()
    axes.set_xlabel("JIT kernels (entry points; device helpers not counted)")
    axes.set_title(f"JIT map of {Path(report['repo']).name}: {report['counts']['kernels']} kernels")
    axes.legend(loc="lower right", fontsize="small")
    return _drawn(plt, figure, suffix)


def _drawn(plt: Any, figure: Any, suffix: str) -> bytes:
    """The figure as a file of this suffix (.png, .svg, .pdf)."""
    figure.tight_layout()
    drawing = io.BytesIO()
    figure.savefig(drawing, format=suffix.lower().lstrip("."), dpi=100)
    plt.close(figure)
    return drawing.getvalue()


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only), imported when a drawing is asked for: an optional extra."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
