"""The lift's source: the provider, the dispatcher's head and return, written as a reviewer of the engine reads them."""

from __future__ import annotations

import ast

from .. import simplify
from ..engines import Engine
from ..syntax import Place, loads, source_segment
from . import polynomials
from .tables import EXPANDABLE
from .values import LiftError, parse_expr


def read_by(statements: list[str], used: str) -> list[str]:
    """The provider's statements that its return reads, directly or through a later statement (`_when` stays)."""
    kept: list[str] = []
    for statement in reversed(statements):
        target = statement.split(" = ", 1)[0] if " = " in statement and not statement.startswith("_when(") else None
        reads = "\n".join([used, *kept])
        if target is None or target in {n.id for n in ast.walk(ast.parse(reads)) if isinstance(n, ast.Name)}:
            kept.insert(0, statement)
    return kept


def provider_reads(where: Place, statements: list[str], values: list[str]) -> set[str]:
    """The names the provider's body reads; refused where it needs an expression vLLM's helper does not expand."""
    written = ast.parse("\n".join([*statements, *values]))  # the provider's body: assignments and `_when`s
    odd = next(
        (n for n in ast.walk(written) if not isinstance(n, (*EXPANDABLE, ast.Module, ast.Expr, ast.Assign))), None
    )
    if odd is not None:
        raise LiftError(
            where,
            f"the provider would need `{ast.unparse(odd)}` ({type(odd).__name__}), which vLLM's helper does not expand",
        )
    return loads(written)


def provider(
    name: str,
    parameters: tuple[str, ...],
    statements: list[str],
    values: list[str],
    launcher_names: dict[str, str] | None = None,
) -> str:
    """The provider: keyword-only parameters (what the registration passes), its statements, one `dict` return
    (an exact division written as its quotient: lift.polynomials; a value two inputs share computed once, named:
    simplify.bound_once, by the launcher's name for it where it had one: `launcher_names`, code -> name). No
    docstring: upstream's have none."""
    header = f"def {name}(*, {', '.join(parameters)}):" if parameters else f"def {name}():"
    call = ast.parse(f"dict({', '.join(values)})", mode="eval").body
    # Names the provider reads or binds (a value's keyword is not one: `a=a` reads as upstream writes it).
    taken = set(parameters) | {n.id for n in ast.walk(ast.parse("\n".join(statements))) if isinstance(n, ast.Name)}
    taken |= loads(call)
    definitions = {
        s.targets[0].id: s.value
        for s in ast.parse("\n".join(statements)).body
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
    }
    returned = [k.value for k in call.keywords]
    written = polynomials.quotients(returned, definitions, returned)
    hinted = polynomials.quotients([parse_expr(code) for code in launcher_names or {}], definitions, returned)
    hints = {ast.dump(e): local for e, local in zip(hinted, (launcher_names or {}).values())}
    total = polynomials.total(definitions)
    shared, inputs = simplify.bound_once(written, taken, [k.arg for k in call.keywords], hints, total)
    statements = [*statements, *shared]
    values = [
        text if ast.dump(v) == ast.dump(k.value) else f"{k.arg}={ast.unparse(v)}"
        for text, k, v in zip(values, call.keywords, inputs)
    ]
    return header + "\n" + "".join(f"    {s}\n" for s in statements) + f"    return dict({', '.join(values)})\n"


def dispatcher(
    name: str,
    provider: str,
    kernel: str,
    launcher_def: ast.FunctionDef,
    inputs: list[str],
    source: str,
    tensors: dict[str, bool],
) -> str:
    """The dispatcher's decorator and signature (no docstring: upstream's have none). The launcher's annotations
    are kept; an input the launcher made itself (no annotation) that is a tensor (`tensors`: name -> may be None)
    is annotated as the launcher annotates its tensor parameters, so the signature reads alike throughout."""
    annotations = {
        a.arg: source_segment(source, a.annotation)
        for a in launcher_def.args.args + launcher_def.args.kwonlyargs
        if a.annotation is not None
    }
    # The launcher's own spelling (the most used, then the first), unless quoted: `"T" | None` would not run.
    spelled = [annotations[n] for n, optional in tensors.items() if n in annotations and not optional]
    spelled = [a for a in spelled if not a.startswith(("'", '"'))]
    if spelled:
        tensor = max(dict.fromkeys(spelled), key=spelled.count)
        annotations |= {
            n: f"{tensor} | None" if optional else tensor for n, optional in tensors.items() if n not in annotations
        }
    signature = ", ".join(f"{n}: {annotations[n]}" if n in annotations else n for n in inputs)
    return (
        f"@triton_kernel_dispatcher_with_warmup(kernel={kernel}, warmup_inputs={provider})\n"
        f"def {name}({signature}) -> DispatchSpec:\n"
    )


def returned(grid: str, launch_kwargs: list[str]) -> str:
    """The dispatcher's last statement: `return <grid>, dict(<launch arguments>)`."""
    return f"return {grid}, " + (f"dict({', '.join(launch_kwargs)})" if launch_kwargs else "{}")


def dispatcher_helpers(engine: Engine) -> tuple[tuple[str, str], ...]:
    """(module, name) of what every lifted dispatcher uses: a contract without them takes no lift."""
    return tuple((engine.triton_helper, n) for n in ("DispatchSpec", "triton_kernel_dispatcher_with_warmup"))


def helper_names(provider: str, dispatcher: str, engine: Engine) -> tuple[tuple[str, str], ...]:
    """(module, name) of the engine's warmup helpers that the new code uses, which the kernel's module imports."""
    used = [
        (engine.triton_helper, n)
        for n in ("DispatchSpec", "TritonWarmupTensor", "triton_kernel_dispatcher_with_warmup")
        if n in provider + dispatcher
    ]
    return tuple(
        used + [(engine.jit_module, n) for n in ("WarmupChoices", "WarmupIntRange", "_when") if f"{n}(" in provider]
    )
