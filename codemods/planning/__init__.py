"""Planning a migration, one step per kind of operation: each reads the planner (the run's modules and specs)
and returns what it found (`codemods.findings.Findings`); the planner merges them in `STEPS` order, which is
the order the operations run in a file that gets several."""

from . import lifts, registrations, removals, renames

STEPS = (lifts.plan, renames.plan, registrations.plan, removals.plan)
