"""docs/spec-reference.md's field tables, generated from the spec's parts and their fields' own documentation."""

from __future__ import annotations

import dataclasses
from typing import Any

from .spec import PARTS, MigrationSpec

REFERENCE_START = "<!-- The field tables below are generated from codemods/spec.py: `make spec-reference`. -->"
REFERENCE_END = "<!-- End of the generated field tables. -->"


def reference_tables() -> str:
    """docs/spec-reference.md's field tables (the spec's own keys, then one table per part), from the parts' and
    fields' own documentation."""
    out = [REFERENCE_START, ""]
    for name, kind in {"spec": MigrationSpec, **PARTS}.items():
        out += [f"### `{name}`", "", " ".join(kind.__doc__.split()), ""]
        out += ["| key | default | meaning |", "|---|---|---|"]
        for f in (f for f in dataclasses.fields(kind) if "key" in f.metadata):
            default = "required" if f.default is dataclasses.MISSING else f"`{_toml(f.default)}`"
            out.append(f"| `{f.metadata['key']}` | {default} | {f.metadata['doc']} |")
        out.append("")
    return "\n".join([*out, REFERENCE_END])


def with_reference_tables(document: str) -> str:
    """`document` (docs/spec-reference.md) with its generated field tables brought up to date."""
    before, start, rest = document.partition(REFERENCE_START)
    _, end, after = rest.partition(REFERENCE_END)
    if not (start and end):
        raise ValueError("the document lacks the generated field tables' start and end lines")
    return before + reference_tables() + after


def _toml(value: Any) -> str:
    return '""' if value == "" else "[]" if value == () else f'"{value}"'
