"""Planning a migration, one step per kind of operation: each reads the planner (the run's modules and specs)
and returns what it found (`codemods.findings.Findings`); the planner merges them in `STEPS` order, which is
the order the operations run in a file that gets several.

They are planned in `GROUPS`, and the files each group plans start transforming while the next is planned
(codemods.pool): first the steps whose files no later step edits (a launcher's lift, the legacy calls' removal
and the legacy modules' deletion), then owners, renames and registrations together, since they edit the files
that define and use the kernel. Only a lift amends specs (the parameters a registration passes), so it is
planned first."""

from . import lifts, owners, registrations, removals, renames

STEPS = (lifts.plan, owners.plan, renames.plan, registrations.plan, removals.plan)
GROUPS = ((lifts.plan, removals.plan), (owners.plan, renames.plan, registrations.plan))
