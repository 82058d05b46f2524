"""`zerojit families`: the installed kernel families and their presets."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ..families import families
from .shared import JsonOption, out, print_json


def families_command(as_json: bool = JsonOption) -> None:
    """List kernel families (installed plug-ins of the `zerojit.families` entry-point group) and their presets."""
    known = families()
    if as_json:
        print_json(
            [
                {
                    "family": f.name,
                    "title": f.title,
                    "backend": f.backend_name,
                    "presets": [{"name": p.name, "description": p.description} for p in f.presets],
                    "specs": [spec.family for spec in f.specs],
                }
                for f in known.values()
            ]
        )
        return
    table = Table(title="families and presets")
    for column in ("family", "backend", "preset"):
        table.add_column(column, no_wrap=True)
    table.add_column("description")
    for family in known.values():
        for preset in family.presets:
            table.add_row(
                escape(family.name), escape(family.backend_name), escape(preset.name), escape(preset.description)
            )
    out.print(table)
