"""The construction site as the guards read it: its names for the object under construction and the engine
config, the conditions the spec's registration code and gate hold there, and what holds wherever it runs.
"""

from __future__ import annotations

import ast
import dataclasses

from .guards import CONFIG, SELF, Atom, Frame, canonical, gate_atoms
from .repo import Gate, RepoModules, call_sites
from .syntax import enclosing_class, expression_or_none, local_names, parameters, self_stores, stores


def site_frame(
    modules: RepoModules,
    module: str,
    init: ast.FunctionDef,
    extra_imports: dict[str, tuple[str, str | None]] | None = None,
) -> Frame:
    """The construction site's names: `self`, its config (the engine's config parameter, a parameter annotated
    with the config's class, or a local assigned from the accessor). Where the constructor holds the config under
    another name and binds no `vllm_config` of its own, the spec's `vllm_config` is that config too."""
    arguments: dict[str, tuple[ast.expr, Frame | None]] = {"self": (ast.Name(SELF), None)}
    signature = init.args
    arguments.update(
        (a.arg, (ast.Name(CONFIG), None))
        for a in (*signature.posonlyargs, *signature.args, *signature.kwonlyargs)
        if _is_config(modules, module, a)
    )
    owner = enclosing_class(modules.tree(module), init.lineno)
    classes = tuple(modules.lineage(module, owner)) if owner else ()
    held = _built_with(modules, classes)
    frame = Frame(module, init, _site_locals(init), arguments, dict(extra_imports or {}), classes, held)
    spec_name = modules.engine.config_parameter
    if spec_name not in parameters(init) and spec_name not in local_names(init) and config_name(modules, frame):
        arguments[spec_name] = (ast.Name(CONFIG), None)
    return frame


def _built_with(modules: RepoModules, classes: tuple[str, ...]) -> frozenset[str]:
    """The attributes every built layer of the site's class has: those its class bodies bind, those each
    `__init__` of the class's chain sets at its own top level (down the chain while each runs its base's at its
    top level), and those the engine binds on every layer before a legacy warmup ran (the KV cache)."""
    held = {attribute for attribute, _ in modules.engine.bound_later}
    running = True
    for qualified in classes:
        module, name = qualified.rsplit(".", 1)
        node = modules.definition(module, name)
        if not isinstance(node, ast.ClassDef):
            break
        held |= {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        held |= {name for statement in _assignments(node.body) for name in stores(statement)}
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is None or not running:
            continue
        held |= {attribute for statement in _assignments(init.body) for attribute, _ in self_stores(statement)}
        running = any(
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Attribute)
            and s.value.func.attr == "__init__"
            for s in init.body
        )
    return frozenset(held)


def _assignments(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a body that assign a value (`x: int` alone declares, it sets nothing)."""
    return [s for s in body if isinstance(s, ast.Assign) or (isinstance(s, ast.AnnAssign) and s.value is not None)]


def _is_config(modules: RepoModules, module: str, argument: ast.arg) -> bool:
    """The parameter is the engine config: it has the engine's name for it, or its class as its annotation
    (`engine_config: VllmConfig` or `"VllmConfig"`; `VllmConfig | None` may be no config at all)."""
    if argument.arg == modules.engine.config_parameter:
        return True
    annotation = argument.annotation
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = expression_or_none(annotation.value)
        if annotation is None:
            return False
    home, name = modules.engine.config_class.split(":")
    spelled = annotation.id if isinstance(annotation, ast.Name) else getattr(annotation, "attr", None)
    if spelled != name:
        return False  # only a name spelled as the class's is looked up (that may parse the config's own module)
    imported = modules.imports(module).get(spelled) if isinstance(annotation, ast.Name) else None
    return imported == (home, name) or modules.reference(module, annotation) == modules.resolve(home, name)


def _site_locals(init: ast.FunctionDef) -> dict[str, ast.expr]:
    """`name = value` statements of the constructor's own body (not its branches), the first per name."""
    found: dict[str, ast.expr] = {}
    for statement in init.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            found.setdefault(statement.targets[0].id, statement.value)
    return found


def config_name(modules: RepoModules, frame: Frame) -> str | None:
    """The constructor's own name for the engine config (a parameter, or a local assigned from an accessor): the
    engine's usual names first."""
    own = [n for n in parameters(frame.function) if n in frame.arguments] if frame.function else []
    # a local that can be the config: a name's alias, or a call without arguments (an accessor)
    aliases = [
        name
        for name, value in frame.assigned.items()
        if isinstance(value, ast.Name) or (isinstance(value, ast.Call) and not value.args and not value.keywords)
    ]
    for name in dict.fromkeys((*modules.engine.config_names, *own, *aliases)):
        if name in own or name in frame.assigned:
            if ast.unparse(canonical(modules, ast.Name(name), frame)) == CONFIG:
                return name
    return None


def registration_guards(modules: RepoModules, frame: Frame, registration: str) -> list[Atom]:
    """The conditions inside the spec's registration around its `register_warmup` call, in canonical terms."""
    tree = ast.parse(registration)
    imports = {**frame.imports}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imports.update({a.asname or a.name: (node.module, a.name) for a in node.names})
    function = ast.FunctionDef("registration", ast.arguments([], [], None, [], [], None, []), tree.body, [])
    inner = Frame(frame.module, frame.function, {}, frame.arguments, imports)
    sites = call_sites(
        ast.Module([function], []),
        lambda call, assigned: isinstance(call.func, ast.Attribute) and call.func.attr == "register_warmup",
        functions=[function],
    )
    found = []
    for site in sites[:1]:
        found = gate_atoms(
            modules, site.gates, Frame(inner.module, inner.function, dict(site.assigned), inner.arguments, imports)
        )
    return [dataclasses.replace(a, where="registration") for a in found]


def spec_gate_atoms(modules: RepoModules, frame: Frame, gate: str) -> list[Atom]:
    if not gate.strip():
        return []
    test = ast.parse(gate, mode="eval").body
    return [dataclasses.replace(a, where="spec gate") for a in gate_atoms(modules, (Gate(test, True),), frame)]


def holds_at_site(frame: Frame) -> set[str]:
    """Conditions true wherever the site's constructor runs (canonical): its own module is loaded, (as the legacy
    call always had one) the engine has a config, the layer is an instance of its class, and it has what every
    built layer of its class has."""
    return (
        {f"{frame.module!r} in sys.modules", f"{CONFIG} is not None"}
        | {f"isinstance({SELF}, {cls})" for cls in frame.classes}
        | {f"hasattr({SELF}, {attribute!r})" for attribute in sorted(frame.held)}
    )
