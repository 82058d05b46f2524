"""A warmup timeline: one lane per worker, one bar per key (compiled, cached or failed)."""

from __future__ import annotations

from pathlib import Path

from .report import WarmupReport

COLORS = {"compiled": "tab:orange", "cached": "tab:green", "failed": "tab:red"}


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
        axes.broken_barh([(r.started - origin, max(r.seconds, 1e-3)) for r in mine], (lane - 0.4, 0.8),
                         facecolors=[COLORS[r.outcome] for r in mine], edgecolor="black", linewidth=0.3)
    axes.set_yticks(range(len(workers)), workers)
    axes.set_xlabel("seconds since warmup start")
    counts = ", ".join(f"{report.count(o)} {o}" for o in COLORS)
    axes.set_title(f"warmup timeline: {len(report.results)} keys ({counts}), {report.wall_s:.2f} s")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return Path(path)
