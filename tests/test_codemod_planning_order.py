"""The planner plans in groups (so the pool can start a group's files while the next is planned) but merges what
the steps find in the order operations run in a file: the same operations, warnings and refusals in the same
order as planning step by step."""

from zerojit.codemods import planner as planner_module
from zerojit.codemods import planning
from zerojit.codemods.findings import Findings
from zerojit.codemods.planner import Planner
from zerojit.codemods.transforms import RenameKernel


def step(name):
    def plan(planner):
        found = Findings()
        found.add("pkg.mod", RenameKernel(name, f"_{name}", frozenset({"pkg.mod"})))
        found.warnings.append(name)
        return found

    plan.__name__ = name
    return plan


def test_findings_are_merged_in_the_order_operations_run_whatever_order_the_groups_plan_in(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("A = B = C = 1\n")
    a, b, c = step("A"), step("B"), step("C")
    monkeypatch.setattr(planner_module, "STEPS", (a, b, c))
    monkeypatch.setattr(planner_module, "GROUPS", ((c, a), (b,)))
    planner = Planner(tmp_path, [])
    seen = []
    for _ in planner.steps():
        seen.append([op.old for op in planner.ops["pkg.mod"]])
    assert seen == [["A", "C"], ["A", "B", "C"]]
    assert planner.warnings == ["A", "B", "C"]


def test_every_step_is_planned_once_and_the_lift_that_amends_specs_first():
    planned = [step for group in planning.GROUPS for step in group]
    assert sorted(planned, key=planning.STEPS.index) == list(planning.STEPS)
    assert planned[0] is planning.lifts.plan
