"""Lifting a plain Triton kernel onto the contract: the dispatcher and provider, read from the launcher and the
legacy warmup step.

vLLM's pattern (`triton_kernel_dispatcher_with_warmup`, in the engine's Triton warmup helper) is what
this writes:
  * the launcher's `kernel[grid](...)` becomes a call to a *dispatcher*: a function of the values the
    launch reads that the launcher does not compute purely (its tensors, its runtime arguments), which
    computes the rest (grid, constexprs, strides: the launcher's own statements, copied) and returns
    `(grid, launch_kwargs)`. The decorated dispatcher binds an input to the kernel parameter `x`, `x_ptr`,
    `X` or `X_PTR` of its name, so `launch_kwargs` holds every argument that is not such an input;
  * the *provider* returns the dispatcher inputs to warm. It is the legacy step run symbolically: its
    loops become `WarmupChoices`/`WarmupIntRange` domains, its conditions `_when(...)`, its tensors
    `TritonWarmupTensor(dtype, shape=...)`, then the launcher's own statements up to the launch, with the
    step's arguments, give each dispatcher input. What the step reads from outside (its parameters, their
    attributes) become the provider's keyword parameters: the registration passes them, in the
    construction site's names (what the tool cannot know: `confirm` items until a spec answers them).

Everything is read with `ast`; nothing is imported. A step or launcher the translation does not cover is
refused with the line and why (`LiftError`), never approximated.

The package, one concern a module: `tables` (the names it knows), `values` (symbolic values), `layout` (stride
algebra), `evaluator` (expressions), `provider` (the step's statements), `dispatcher` (the launch), `emit` (the
source it writes), `polynomials` (its integer sizes written as what they are) and `plan` (the pipeline,
`plan_lift`).
"""

from .dispatcher import launched_kernels
from .plan import LiftPlan, missing_helpers, plan_lift
from .values import LiftError

__all__ = ["LiftError", "LiftPlan", "launched_kernels", "missing_helpers", "plan_lift"]
