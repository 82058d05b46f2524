"""A warmup timeline: one lane per worker, one bar per key (compiled, cached or failed), drawn or as data."""

from __future__ import annotations

import json
from pathlib import Path

from .report import WarmupReport

COLORS = {"compiled": "tab:orange", "cached": "tab:green", "failed": "tab:red"}


FORMAT = "zerojit-timeline/1"


def timeline_data(report: WarmupReport) -> dict:
    """The timeline as data: the phases, then each key's start (seconds after the first key's, whose wall-clock
    time is `origin`), wall and CPU seconds, outcome and worker, in start order."""
    results = sorted((r for r in report.results if r.started), key=lambda r: r.started)
    origin = results[0].started if results else 0.0
    return {
        "format": FORMAT,
        "origin": origin,
        "wall_s": round(report.wall_s, 4),
        "phases": {name: round(seconds, 4) for name, seconds in report.phases.items()},
        "keys": [
            {
                "kernel": r.kernel,
                "key": r.key.digest(),
                "outcome": r.outcome,
                "worker": r.worker,
                "start_s": round(r.started - origin, 4),
                "seconds": round(r.seconds, 4),
                "cpu_s": round(r.cpu_s, 4),
            }
            for r in results
        ],
    }


def write_timeline(report: WarmupReport, path: Path) -> Path:
    """The timeline as `path`'s suffix asks: `.json` the data, otherwise a drawing (PNG, SVG or PDF)."""
    if Path(path).suffix.lower() == ".json":
        Path(path).write_text(json.dumps(timeline_data(report), indent=1) + "\n", encoding="utf-8")
        return Path(path)
    return plot_timeline(report, path)


def plot_timeline(report: WarmupReport, path: Path) -> Path:
    """Write a PNG of when each key ran on which worker (matplotlib, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
            facecolors=[COLORS[r.outcome] for r in mine],
            edgecolor="black",
            linewidth=0.3,
        )
    axes.set_yticks(range(len(workers)), workers)
    axes.set_xlabel("seconds since warmup start")
    counts = ", ".join(f"{report.count(o)} {o}" for o in COLORS)
    axes.set_title(f"warmup timeline: {len(report.results)} keys ({counts}), {report.wall_s:.2f} s")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return Path(path)
