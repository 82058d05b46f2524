"""What the model runner holds, over the engine's config: a runner attribute that a gate reads is proven from the
tree to be computed from the config (`is_pooling_model` as `model_config.runner_type == "pooling"`), so a
registration outside the runner can read the config instead."""

from __future__ import annotations

import ast

from .repo import RepoModules
from .syntax import local_names, parameters, self_stores


def runner_config_value(modules: RepoModules, attribute: str, config: str, depth: int = 0) -> ast.expr | None:
    """What the model runner holds as `attribute`, over the config (named `config`: `@config.model_config`,
    `@config.model_config.runner_type == 'pooling'`), proven from the tree: every runner class of the engine that
    the tree has sets it once, at its constructor's top level, from the config parameter, from locals and `self.`
    attributes the constructor set that way, with attribute reads, comparisons and boolean operators, and all of
    them say the same (None: the tree does not say so)."""
    parameter, values = modules.engine.config_parameter, {}
    for runner in modules.engine.runner_classes:
        node = modules.definition(*runner.split(":"))
        init = next(
            (n for n in getattr(node, "body", ()) if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
        )
        if init is None:
            continue
        stores = _self_stores_of(modules, runner, node).get(attribute, [])
        if len(stores) != 1 or stores[0] not in init.body or not isinstance(stores[0], ast.Assign | ast.AnnAssign):
            return None
        if parameter in _locals_of(modules, runner, init) or parameter not in parameters(init) or depth > 4:
            return None
        value = _from_config(modules, init, stores[0], stores[0].value, config, depth)
        if value is None:
            return None
        values[ast.dump(value)] = value
    return next(iter(values.values())) if len(values) == 1 else None


def _from_config(
    modules: RepoModules, init: ast.FunctionDef, store: ast.stmt, node: ast.expr | None, config: str, depth: int
) -> ast.expr | None:
    """`node`, read in the runner's constructor at `store`, over the config; None where it reads anything else."""
    parameter = modules.engine.config_parameter
    match node:
        case ast.Name(id=name) if name == parameter:
            return ast.Name(config)
        case ast.Name(id=name):  # a local the constructor binds once, by a statement of its own above the store
            stores = [
                n for n in ast.walk(init) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            ]
            bound = next((s for s in init.body if isinstance(s, ast.Assign) and s.targets == stores), None)
            if bound is None or bound.lineno >= store.lineno:
                return None
            return _from_config(modules, init, bound, bound.value, config, depth)
        case ast.Attribute(value=ast.Name(id="self"), attr=attr):
            return runner_config_value(modules, attr, config, depth + 1)
        case ast.Attribute(value=value, attr=attr):
            inner = _from_config(modules, init, store, value, config, depth)
            return None if inner is None else ast.Attribute(inner, attr)
        case ast.Constant():
            return node
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            parts = [_from_config(modules, init, store, n, config, depth) for n in (left, *comparators)]
            return None if None in parts else ast.Compare(parts[0], ops, parts[1:])
        case ast.BoolOp(op=op, values=operands):
            parts = [_from_config(modules, init, store, n, config, depth) for n in operands]
            return None if None in parts else ast.BoolOp(op, parts)
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            inner = _from_config(modules, init, store, operand, config, depth)
            return None if inner is None else ast.UnaryOp(ast.Not(), inner)
    return None


def _self_stores_of(modules: RepoModules, cls: str, node: ast.ClassDef) -> dict[str, list[ast.stmt]]:
    """The statements of the class that store each `self.x`, by `x`: one walk of a runner class (the engine's is
    thousands of lines) per run, however many of its attributes the gates read."""
    key = ("self stores", cls)
    if key not in modules.memo:
        found: dict[str, list[ast.stmt]] = {}
        for name, statement in self_stores(node):
            found.setdefault(name, []).append(statement)
        modules.memo[key] = found
    return modules.memo[key]


def _locals_of(modules: RepoModules, cls: str, init: ast.FunctionDef) -> set[str]:
    """The names a runner class's constructor binds, walked once per run however many attributes the gates read."""
    key = ("constructor locals", cls)
    if key not in modules.memo:
        modules.memo[key] = local_names(init)
    return modules.memo[key]
