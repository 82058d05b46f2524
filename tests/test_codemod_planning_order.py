"""The planner plans in groups (so the pool can start a group's files while the next is planned) but merges what
the steps find in the order operations run in a file: the same operations, warnings and refusals in the same
order as planning step by step."""

import ast
import textwrap

import pytest

from zerojit.codemods import planner as planner_module
from zerojit.codemods import planning
from zerojit.codemods.findings import Findings
from zerojit.codemods.planner import Planner
from zerojit.codemods.planning.removals import _Idle, _inert, _vanishes
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
    verdicts = [_Idle(helpers, {"_warm_decode"}).statement(s) for s in helpers["entry"].body]
    assert verdicts == [True, True, True, True, True, False]


def test_a_search_loop_over_reads_and_a_default_device_are_idle_but_a_loop_that_calls_or_stores_is_not():
    """0.29.0's Qwen entry finds the model type with a `for` loop (reads, an `if`, a `break`) and reads the device
    with `torch.device("cuda")` as the default: neither does anything once the steps go. A loop whose body calls
    anything else, whose iterable is computed by a call, or whose target stores into an object does."""
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
    assert [_Idle({"entry": entry}, set()).statement(s) for s in entry.body] == [True, True, False, False, False, False]


HELPERS = (
    "def _install_hooks(runner):\n    runner.model.register_forward_pre_hook(print)\n    return True\n"
    "def _mark(layer):\n    layer.warm = True\n    return layer\n"
    "def _prime_layers(layers):\n    for layer in layers:\n        layer.prime()\n        yield layer\n"
    "def _layers(context):\n    for layer in context.values():\n        if hasattr(layer, 'kv_cache'):\n"
    "            yield layer\n"
    "def _config(context):\n    for layer in _layers(context):\n        state = layer.kv_cache[0].transpose(-1, -2)\n"
    "        return Config(heads=int(layer.num_heads), state=state)\n    logger.info('no layer')\n    return None\n"
)


@pytest.mark.parametrize(
    "statement, idle",
    [
        ("installed = _install_hooks(runner)", False),  # a helper that acts, called for a value
        ("for layer in _prime_layers(runner.layers):\n    pass", False),  # a generator that acts
        ("marked = [_mark(layer) for layer in runner.layers]", False),  # a helper that stores into an object
        ("config = _config(runner.context)", True),  # a helper that only reads (its values may call anything)
        ("logger.info('primed %d', runner.prepare())", False),  # a log line whose argument acts
        ("runner.kv_connector.synchronize()", False),  # not a torch device
        ("torch.cuda.synchronize(runner.device)", True),
        ("logger.addHandler(runner.handler)", False),  # not a log line
        ("if not runner.prepare():\n    return", False),  # an `if` whose test acts
        ("if current_platform.is_rocm() and runner.has_spec():\n    return", True),  # predicates
        ("return None", True),
        ("device: torch.device = getattr(runner, 'device', torch.device('cuda'))", True),
        ("hf_text, hf = (getattr(model, 'hf_text_config', None), getattr(model, 'hf_config', None))", True),
        ("if runner.x:\n    kind = 'a'\nelse:\n    logger.debug('b')", True),
        ("assert runner is not None", True),
        ("with torch.cuda.device(runner.device), torch.inference_mode():\n    logger.info('x')", True),
        ("with torch.cuda.device(runner.pick()):\n    pass", False),  # its device comes from a call that acts
        ("with open(runner.trace, 'w'):\n    logger.info('x')", False),  # opening the file acts
    ],
)
def test_what_is_idle_once_the_steps_go(statement, idle):
    """Read by hand: a statement of the entry is idle only where nothing it runs acts (a call made for its effect,
    a store into an object), through the helpers it calls, their values and its arguments included."""
    module = ast.parse(HELPERS)
    helpers = {n.name: n for n in module.body}
    [parsed] = ast.parse("def entry():\n" + textwrap.indent(statement, "    ")).body[0].body
    assert _Idle(helpers, set()).statement(parsed) is idle


@pytest.mark.parametrize(
    "statement, goes",
    [
        ("with open(runner.trace, 'w'):\n    n = max(1, int(runner.n))\n    _warm(n)", True),
        ("with open(runner.trace, 'w'):\n    n = runner.pick()\n    _warm(n)", False),  # the local's value acts
        ("with open(runner.trace, 'w'):\n    n = 1\n    _warm(n)\nlogger.info('%d', n)", False),  # read below
        ("with open(runner.trace, 'w'):\n    _warm(1)\n    logger.info('warm')", False),  # the log line stays
        ("if runner.prepare():\n    _warm(1)", True),
        ("if runner.prepare():\n    _warm(1)\nelif runner.other():\n    _warm(2)", False),  # refused: elif
        ("for n in runner.sizes():\n    _warm(n)\nelse:\n    _warm(0)", False),  # refused: a loop's else
        ("try:\n    _warm(1)\nfinally:\n    runner.close()", False),  # refused: the finally stays
        ("try:\n    _warm(1)\nexcept RuntimeError:\n    logger.info('no')", True),
    ],
)
def test_what_the_removal_takes_out_whole_whatever_its_header_does(statement, goes):
    """Read by hand against transforms/removal.py: a block that empties takes the statement that exists only for
    it, and a local nothing else reads goes first (the dead-local pass), where its value is pure."""
    entry = ast.parse("def entry(runner):\n" + textwrap.indent(statement, "    ")).body[0]
    assert _vanishes(entry.body[0], entry, {"_warm"}) is goes


@pytest.mark.parametrize(
    "statement, inert",
    [
        ("import os", True),
        ("logger = init_logger(__name__)", True),
        ("@dataclass(frozen=True)\nclass Config:\n    heads: int", True),
        ("@torch.inference_mode()\ndef warm():\n    pass", True),
        ("if TYPE_CHECKING:\n    from vllm.config import VllmConfig", True),
        ("os.environ.setdefault('TRITON_CACHE_AUTOTUNING', '1')", False),  # its import sets the environment
        ("@CustomOp.register('probe')\nclass Probe(CustomOp):\n    pass", False),  # its import registers
        ("_SEEN['qwen'] = True", False),
    ],
)
def test_what_a_deleted_legacy_module_may_hold_at_its_top_level(statement, inert):
    assert _inert(ast.parse(statement).body[0]) is inert
