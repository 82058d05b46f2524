"""A warmup timeline as data: when each key (compiled, cached or failed) ran, on which worker.

The drawing of it, one lane per worker and one bar per key, is the CLI's (migrate/cli/plots.py).
"""

from __future__ import annotations

import json

from .report import WarmupReport

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


def timeline_json(report: WarmupReport) -> bytes:
    """The timeline's data as a JSON document (`FORMAT`)."""
    return (json.dumps(timeline_data(report), indent=1) + "\n").encode("utf-8")
