"""Planning a migration, one step per kind of operation: each reads the planner (the run's modules and specs)
and returns what it found (`codemods.findings.Findings`); the planner merges them in `STEPS` order, which is
the order the operations run in a file that gets several.

They are planned in `GROUPS`, and the files each group plans start transforming while the next is planned
(codemods.pool): first the steps whose files no later step edits (a launcher's lift, the legacy calls' removal
and the legacy modules' deletion), then renames and registrations together, since both edit the files that
use the kernel. Only a lift amends specs (the parameters a registration passes), so it is planned first."""

from . import lifts, registrations, removals, renames

STEPS = (lifts.plan, renames.plan, registrations.plan, removals.plan)
GROUPS = ((lifts.plan, removals.plan), (renames.plan, registrations.plan))
