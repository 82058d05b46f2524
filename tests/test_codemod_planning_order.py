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


def test_an_entry_whose_steps_all_go_has_nothing_left_but_reads_logs_and_a_synchronizing_helper():
    """What keeps a legacy module (and its orchestrator call) once its steps are migrated: a synchronization
    helper (docstring and all), builtin reads, an `if` around a step and a log line do not; any other call does."""
    import ast

    from zerojit.codemods.planning.removals import _idle

    module = ast.parse(
        "def _sync(device):\n"
        '    """Wait for the warmup launches."""\n'
        "    if device.type == 'cuda':\n"
        "        torch.accelerator.synchronize(device)\n"
        "def entry(runner):\n"
        "    kind = getattr(runner.config, 'model_type', '') or ''\n"
        "    tokens = max(1, int(runner.max_num_tokens))\n"
        "    logger.info('warming %s', kind)\n"
        "    if not runner.is_pooling_model:\n"
        "        _warm_decode(runner)\n"
        "    _sync(runner.device)\n"
        "    prepare(runner)\n"
    )
    helpers = {n.name: n for n in module.body}
    verdicts = [_idle(s, helpers, {"_warm_decode"}) for s in helpers["entry"].body]
    assert verdicts == [True, True, True, True, True, False]


def test_a_search_loop_over_reads_and_a_default_device_are_idle_but_a_loop_that_calls_or_stores_is_not():
    """0.29.0's Qwen entry finds the model type with a `for` loop (reads, an `if`, a `break`) and reads the device
    with `torch.device("cuda")` as the default: neither does anything once the steps go. A loop whose body calls
    anything else, whose iterable is computed by a call, or whose target stores into an object does."""
    import ast

    from zerojit.codemods.planning.removals import _idle

    module = ast.parse(
        "def entry(runner, model_config):\n"
        "    for config in (model_config.hf_text_config, model_config.hf_config):\n"
        "        model_type = getattr(config, 'model_type', None)\n"
        "        if model_type is not None:\n"
        "            model_type = str(model_type)\n"
        "            break\n"
        "    device = getattr(runner, 'device', torch.device('cuda'))\n"
        "    for layer in runner.layers:\n"
        "        layer.prepare()\n"
        "    for layer in runner.layers():\n"
        "        pass\n"
        "    for runner.current in runner.layers:\n"
        "        continue\n"
        "    device = torch.empty(1)\n"
    )
    entry = module.body[0]
    assert [_idle(s, {"entry": entry}, set()) for s in entry.body] == [True, True, False, False, False, False]
