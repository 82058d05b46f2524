"""Built-in migrations of vLLM 0.33.0 legacy warmups whose kernels have no zerojit family room.

The kernel keeps vLLM's own keys and compile; the migration moves where it is warmed: the
legacy step goes, the layer that selects the kernel registers it. `zerojit migrate NAME` runs
one by its family name (`zerojit families` lists the rooms; these are specs only).
"""

from zerojit.codemods.engines import VLLM
from zerojit.codemods.spec import Adoption, Kernel, Legacy, MigrationSpec, Owner, Registration

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

# `_warmup_gemm_rs_ar`, an inline step of 0.33.0's orchestrator: when a model built the GEMM-RS/AR workspace, it
# compiles `Sm100GemmRsAr.compile` (a cached CuTe DSL compile) for each dtype `GemmRsAr.can_run` accepted, both CTA
# groups, through the module's `warmup_gemm_rs_ar`. No contract object owns that compile: the migration writes one
# into the module (after the compile unit), and `can_run` registers each dtype it accepts, where it records it;
# a `return False` above that point is a projection the kernel never serves, so it registers nothing. The runtime
# keeps calling the cached compile, which the owner's compile filled.
GEMM_RS_AR = MigrationSpec(
    family="gemm-rs-ar",
    legacy=Legacy(orchestrator_module=VLLM.orchestrator, orchestrator_step="_warmup_gemm_rs_ar"),
    kernel=Kernel(module="vllm.model_executor.kernels.linear.cute_dsl.gemm_rs_ar", name="GEMM_RS_AR_KERNEL"),
    owner=Owner(
        code="""class GemmRsArKernel(VllmJitKernel["GemmRsArKernel.CompileKey"]):
    @dataclass(frozen=True)
    class CompileKey:
        rank: int
        world_size: int
        cta_group: int
        all_reduce: bool
        dtype: str

    def get_warmup_keys(
        self, *, rank: int, world_size: int, all_reduce: bool, dtype: str
    ) -> list[CompileKey]:
        # GemmRsAr.apply picks the CTA group from M.
        return [
            self.CompileKey(rank, world_size, cta_group, all_reduce, dtype)
            for cta_group in (1, 2)
        ]

    def compile(self, compile_key: CompileKey) -> None:
        Sm100GemmRsAr.compile(
            compile_key.rank,
            compile_key.world_size,
            compile_key.cta_group,
            compile_key.all_reduce,
            dtype=compile_key.dtype,
        )


GEMM_RS_AR_KERNEL = GemmRsArKernel()""",
        after="class Sm100GemmRsAr",
        imports=(
            "from dataclasses import dataclass",
            "from vllm.model_executor.warmup.jit_warmup import VllmJitKernel",
        ),
    ),
    registration=Registration(
        module="vllm.model_executor.kernels.linear.cute_dsl.gemm_rs_ar",
        classes="GemmRsAr",
        method="can_run",
        insert_after="self.dtypes.add(dtype)",
        early_returns="skip",
        code="""GEMM_RS_AR_KERNEL.register_warmup(
    rank=self.rank,
    world_size=self.world_size,
    all_reduce=self.all_reduce,
    dtype=dtype,
)""",
    ),
)

SPECS = (LL_BF16_ROUTER_GEMM, GEMM_RS_AR)
# Each spec's key-equivalence adapter (`zerojit keys diff`, `migrate --verify-keys`), as "module:class".
EQUIVALENCES = {
    LL_BF16_ROUTER_GEMM.family: "zerojit.migrate.ll_bf16_router_gemm.equivalence:RouterGemmEquivalence",
    GEMM_RS_AR.family: "zerojit.migrate.gemm_rs_ar.equivalence:GemmRsArEquivalence",
}
