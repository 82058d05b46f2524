"""Built-in migrations of vLLM 0.33.0 legacy warmups whose kernels have no zerojit family room.

The kernel keeps vLLM's own keys and compile; the migration moves where it is warmed: the
legacy step goes, the layer that selects the kernel registers it. `zerojit migrate NAME` runs
one by its family name (`zerojit families` lists the rooms; these are specs only).
"""

from zerojit.codemods.engines import VLLM
from zerojit.codemods.spec import Adoption, Kernel, Legacy, MigrationSpec, Registration

# `_warmup_ll_bf16_router_gemm`, an inline step of 0.33.0's orchestrator: on sm90+, when the ll_bf16 CuTe DSL
# GEMM is available, it warms M = 1..16 for every bf16 `GateLinear` weight whose K is a multiple of 8.
# `LLBf16Gemm` already owns its keys and compile but is no VllmJitKernel: it adopts the contract's base, all of it
# (codemods/transforms/adopt_contract.py). The release's dispatch (a tuple assignment, two returns, `{}`) is one the
# tree's own VllmJitKernel.__init__ cannot trace: it is rewritten into the traced form, proven equal first.
# Each GateLinear registers its own shape, with the M bound its forward uses, on the kernel object its forward
# runs (`ll_bf16_gemm` sends one token to `ll_bf16_gemm_c1_pdl_kernel`, which the step never warmed: its first
# one-token request compiled while serving; the step's M = 1 on the plain kernel is one no forward reaches),
# under the step's own guards: the orchestrator's capability check is read from the tree (codemods.guards), the
# availability check and the weight's facts are the registration's own.
LL_BF16_ROUTER_GEMM = MigrationSpec(
    family="ll-bf16-router-gemm",
    legacy=Legacy(orchestrator_module=VLLM.orchestrator, orchestrator_step="_warmup_ll_bf16_router_gemm"),
    kernel=Kernel(module="vllm.model_executor.kernels.linear.cute_dsl.ll_bf16", name="ll_bf16_gemm_kernel"),
    registration=Registration(
        module="vllm.model_executor.layers.fused_moe.router.gate_linear",
        classes="GateLinear",
        code="""from vllm.model_executor.kernels.linear.cute_dsl.ll_bf16 import (
    is_available as is_ll_bf16_gemm_available,
)
from vllm.model_executor.kernels.linear.cute_dsl.ll_bf16 import (
    ll_bf16_gemm_c1_pdl_kernel,
)

weight = getattr(self, "weight", None)
if (
    is_ll_bf16_gemm_available()
    and isinstance(weight, torch.Tensor)
    and weight.dim() == 2
    and weight.dtype == torch.bfloat16
    and weight.shape[1] % 8 == 0
):
    # ll_bf16_gemm runs one token on c1_pdl, more on the plain kernel.
    shapes = ((weight.shape[1], weight.shape[0]),)
    ll_bf16_gemm_c1_pdl_kernel.register_warmup(shapes=shapes, m_values=(1,))
    ll_bf16_gemm_kernel.register_warmup(
        shapes=shapes, m_values=range(2, self.LL_BF16_MAX_TOKENS + 1)
    )""",
        import_style="lazy",
    ),
    adoption=Adoption(contract_base="vllm.model_executor.warmup.jit_warmup:VllmJitKernel"),
)

SPECS = (LL_BF16_ROUTER_GEMM,)
# Each spec's key-equivalence adapter (`zerojit keys diff`, `migrate --verify-keys`), as "module:class".
EQUIVALENCES = {
    LL_BF16_ROUTER_GEMM.family: "zerojit.migrate.ll_bf16_router_gemm.equivalence:RouterGemmEquivalence",
}
