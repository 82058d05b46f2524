"""The zerojit CLI without compiling: families, plan JSON schema, help, and refused input."""

import json

from typer.testing import CliRunner

from zerojit.migrate.cli import app

runner = CliRunner()


def test_families_lists_presets():
    result = runner.invoke(app, ["families", "--json"])
    assert result.exit_code == 0
    families = json.loads(result.stdout)
    names = {preset["name"] for family in families for preset in family["presets"]}
    assert "minimax-m3-nvfp4-mi355x-tp4" in names and len(names) >= 2


def test_plan_json_schema():
    result = runner.invoke(app, ["plan", "--preset", "minimax-m3-nvfp4-mi355x-tp4", "--json"])
    assert result.exit_code == 0
    plan = json.loads(result.stdout)
    assert plan["total_keys"] == sum(k["keys"] for k in plan["kernels"]) == 20
    assert all(set(k) == {"kernel", "family", "backend", "keys", "empty"} for k in plan["kernels"])
    with_keys = json.loads(runner.invoke(app, ["plan", "-p", "minimax-m3-nvfp4-mi355x-tp4", "--json", "--keys"]).stdout)
    assert sum(len(k["compile_keys"]) for k in with_keys["kernels"]) == 20


def test_unknown_preset_is_refused_with_the_known_ones():
    result = runner.invoke(app, ["plan", "--preset", "no-such-server"])
    assert result.exit_code == 2
    assert "unknown preset 'no-such-server'" in result.output
    assert "minimax-m3-nvfp4-mi355x-tp4" in result.output


def test_every_command_has_help():
    for command in ("families", "plan", "warmup", "verify", "demo"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output, command
    assert runner.invoke(app, ["warmup", "-p", "minimax-m3-nvfp4-mi355x-tp4", "--jobs", "0"]).exit_code == 2
