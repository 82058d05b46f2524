"""What a migration run gives back: every file's change and the run's report, or why it refused."""

from __future__ import annotations

import dataclasses
import difflib
from collections import Counter
from pathlib import Path

from .files import SourceFile
from .site_gate import GatePlan
from .syntax import source_lines
from .transaction import Write


@dataclasses.dataclass
class FileChange:
    source: SourceFile  # the file as read: its encoding, BOM and mode are kept
    after: str | None  # None: deleted

    @property
    def path(self) -> Path:
        return self.source.path

    @property
    def before(self) -> str:
        return self.source.text

    def write(self) -> Write:
        """The change as bytes in the file's own encoding (decoding then encoding gives back the bytes read)."""
        return Write(
            self.path,
            self.source.encode(self.source.text),
            None if self.after is None else self.source.encode(self.after),
            self.source.mode,
        )

    def diff(self, repo: Path) -> str:
        """A unified diff; line endings are the file's own, so a CRLF file's diff shows only the changed lines."""
        rel = self.path.relative_to(repo).as_posix()
        return "".join(
            difflib.unified_diff(
                source_lines(self.before, keepends=True),
                source_lines(self.after or "", keepends=True),
                fromfile=f"a/{rel}",
                tofile=f"b/{rel}" if self.after is not None else "/dev/null",
            )
        )


@dataclasses.dataclass
class MigrationResult:
    repo: Path
    families: list[str]
    changes: list[FileChange]
    transforms: Counter
    files_scanned: int
    files_parsed: int  # with `ast`, for planning; only the files that passed the text prefilter
    seconds: float
    warnings: list[str] = dataclasses.field(default_factory=list)  # path:line: what a human should check
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)  # path -> why it was not read
    gates: list[GatePlan] = dataclasses.field(default_factory=list)  # each registration's gate vs the legacy call's
    leftovers: list[str] = dataclasses.field(default_factory=list)  # path:line: legacy code left in place, and why
    lifts: list[str] = dataclasses.field(default_factory=list)  # what each lift wrote, in words (codemods.lift)

    def differences(self) -> list[str]:
        """Every intended difference between a legacy call's guards and its registration's gate, in words."""
        return list(dict.fromkeys(f"{plan.family}: {d.render()}" for plan in self.gates for d in plan.differences))

    def report(self) -> dict:
        rel = lambda c: c.path.relative_to(self.repo).as_posix()  # noqa: E731
        return {
            "repo": str(self.repo),
            "families": self.families,
            "changed": sorted(rel(c) for c in self.changes if c.after is not None),
            "deleted": sorted(rel(c) for c in self.changes if c.after is None),
            "skipped": self.skipped,
            "transforms": dict(sorted(self.transforms.items())),
            "files_scanned": self.files_scanned,
            "files_parsed": self.files_parsed,
            "seconds": round(self.seconds, 3),
            "warnings": self.warnings,
            "gates": [plan.report() for plan in self.gates],
            "intended_differences": self.differences(),
            "leftovers": self.leftovers,
            "lifts": self.lifts,
        }
