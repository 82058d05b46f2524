"""What zerojit knows about an engine's source tree, in one place: vLLM's today.

The codemods, the survey, the JIT map, the guards and the lift are written against this record, never
against an engine's names: the repo model (`RepoModules.engine`) carries it to each of them. Another engine is
another `Engine`. tests/test_engine_knowledge.py fails when any other codemods module names a vLLM module or
attribute.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Engine:
    package: str  # the engine's top-level import package
    orchestrator: str  # the legacy warmups' orchestrator module ...
    orchestrator_entry: str  # ... and the function in it that the engine calls at init
    registry_holder: str  # the model runner's attribute holding the JIT warmup registry ...
    registry_warmup: str  # ... and the registry's method the orchestrator calls to compile every registration
    jit_module: str  # the contract: WarmupChoices, WarmupIntRange, _when, the JIT kernel base classes
    triton_helper: str  # the Triton dispatcher decorator (triton_kernel_dispatcher_with_warmup) and its tensors
    triton_reexport: str  # the engine's module that re-exports `triton` and `tl`
    config_parameter: str  # the name a constructor takes the engine config by (what specs call it)
    config_class: str  # its class ("module:Class"): a constructor may take it under another name, annotated so
    config_module: str  # the module that holds the config accessors
    config_names: tuple[str, ...]  # names a construction site may hold the engine config in
    config_accessors: tuple[str, str]  # the accessor that raises without a config, and the one that returns None
    runner: str  # what the orchestrator's worker holds the model runner in
    # The model runners it may hold ("module:Class"): the guards read which config each holds as `self.<x>_config`
    runner_classes: tuple[str, ...]
    model_state: tuple[str, ...]  # what a worker holds that is the model, not config
    model_steps: tuple[str, ...]  # the runner's methods that run a step of the model (a dummy run warms it whole)
    # What calling an object of a class without its own `__call__` runs (a torch module's forward, a CustomOp's
    # per-platform forward), and what a class's call that it does not define runs (an autograd Function's apply).
    object_call: tuple[str, ...]
    class_calls: tuple[tuple[str, str], ...]
    # Layer attributes the engine binds after it builds the layer, each with the method that binds it: a search
    # of the built model read them bound; a constructor cannot.
    bound_later: tuple[tuple[str, str], ...]
    device_queries: tuple[str, ...]  # device facts a launcher may compute that a dispatcher may compute too
    # What the engine sets on a parameter for its weight loader to read (`set_weight_attrs`): a store of one
    # (`self.router.weight.weight_loader = ...`) changes no dtype, shape or device of the parameter.
    loader_attributes: frozenset[str]
    ceil_division: str  # the helper a written gate calls for `(a + b - 1) // b` where the site imports it
    # Device checks of which at most one holds (vLLM's Platform compares one enum): a gate that requires one
    # does not also write `not` another.
    exclusive_checks: frozenset[str]
    traced_operators: frozenset[str]  # the `ast` operators the contract's dispatch tracer evaluates

    def binding_target(self, input_name: str, kernel_parameters: set[str]) -> str | None:
        """The kernel parameter the engine's Triton helper binds a dispatcher input to (`x`, `x_ptr`, `X`, `X_PTR`)."""
        pointer = f"{input_name}_ptr"
        candidates = (input_name, pointer, input_name.upper(), pointer.upper())
        return next((c for c in candidates if c in kernel_parameters), None)


VLLM = Engine(
    package="vllm",
    orchestrator="vllm.model_executor.warmup.kernel_warmup",
    orchestrator_entry="kernel_warmup",
    registry_holder="jit_warmup_registry",
    registry_warmup="warmup",
    jit_module="vllm.model_executor.warmup.jit_warmup",
    triton_helper="vllm.model_executor.warmup.jit_warmup_triton_helper",
    triton_reexport="triton_utils",
    config_parameter="vllm_config",
    config_class="vllm.config:VllmConfig",
    config_module="vllm.config",
    config_names=("vllm_config", "config"),
    config_accessors=("get_current_vllm_config", "get_current_vllm_config_or_none"),
    runner="model_runner",
    runner_classes=("vllm.v1.worker.gpu_model_runner:GPUModelRunner", "vllm.v1.worker.gpu.model_runner:GPUModelRunner"),
    model_state=("model_runner", "get_model", "model"),
    model_steps=("_dummy_run", "_dummy_sampler_run", "execute_model", "execute_dummy_batch"),
    object_call=("forward", "forward_cuda", "forward_hip"),
    class_calls=(("apply", "forward"),),
    bound_later=(("kv_cache", "bind_kv_cache"),),
    device_queries=("is_arch_support_pdl",),
    loader_attributes=frozenset(("weight_loader", "output_dim", "input_dim", "dummy_weight_value")),
    ceil_division="vllm.utils.math_utils.cdiv",
    exclusive_checks=frozenset(
        f"vllm.platforms.current_platform.is_{kind}()" for kind in ("cuda", "rocm", "tpu", "xpu", "cpu", "out_of_tree")
    ),
    # jit_warmup's _BIN_OPS, _CMP_OPS and the unary operators of _DispatchExprEvaluator (0.29.0 to 0.33.0)
    traced_operators=frozenset(
        ("Add", "Sub", "Mult", "FloorDiv", "Mod", "Pow", "Not", "USub")
        + ("Eq", "NotEq", "Lt", "LtE", "Gt", "GtE", "In", "NotIn", "Is", "IsNot")
    ),
)

DEFAULT_ENGINE = VLLM  # what the CLI, the planner and the survey read a repo as unless told otherwise
