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
    kernel=Kernel(module="vllm.model_executor.kernels.linear.cute_dsl.gemm_rs_ar", name="_GEMM_RS_AR_KERNEL"),
    owner=Owner(
        code="""class GemmRsArKernel(VllmJitKernel["GemmRsArKernel.CompileKey"]):
    \"\"\"Owns Sm100GemmRsAr's compile keys for the dtypes GemmRsAr.can_run accepts.\"\"\"

    @dataclass(frozen=True, slots=True)
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


_GEMM_RS_AR_KERNEL = GemmRsArKernel()""",
        after="class Sm100GemmRsAr",
        # The owner translates the step's compile loop and calls the unit's compile as 0.33.0 writes them.
        written_for=(("warmup_gemm_rs_ar", "5247539240d6cab5"), ("Sm100GemmRsAr.compile", "0b5dd906bd68f56d")),
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
        code="""_GEMM_RS_AR_KERNEL.register_warmup(
    rank=self.rank,
    world_size=self.world_size,
    all_reduce=self.all_reduce,
    dtype=dtype,
)""",
    ),
)

# `_warmup_bf16x3_router_gemm`, an inline step of 0.33.0's orchestrator: on SM100-family devices with JIT warmup on,
# it finds the first `GateLinear` that allows the BF16x3 router GEMM and runs `warmup_bf16x3_router_gemm` for its
# shape over the token counts that tier serves (above the fp32 kernel's, where that one runs, up to the batch
# budget): the CuTe DSL GEMM per tile width and the Triton split-K reduction per configuration, both chosen from the
# device's SM count. No contract object owned that warmup: the migration writes one, keyed by a gate's shape and
# token range (its compile runs the module's own warmup, which reads the SM count on the device the registry warms
# on), and each GateLinear that allows the tier registers its own, as `_register_ll_fp32w_warmup` does for its sibling.
BF16X3_ROUTER_GEMM = MigrationSpec(
    family="bf16x3-router-gemm",
    legacy=Legacy(orchestrator_module=VLLM.orchestrator, orchestrator_step="_warmup_bf16x3_router_gemm"),
    kernel=Kernel(
        module="vllm.model_executor.layers.fused_moe.router.bf16x3_router_gemm_cutedsl",
        name="BF16X3_ROUTER_GEMM_KERNEL",
    ),
    owner=Owner(
        code="""class BF16x3RouterGemmKernel(VllmJitKernel["BF16x3RouterGemmKernel.CompileKey"]):
    \"\"\"Owns the BF16x3 router GEMM's warmup for one gate shape over the token
    counts its tier serves: the GEMM's tile widths and the split-K reductions are
    chosen per token count from the SM count.\"\"\"

    @dataclass(frozen=True, slots=True)
    class CompileKey:
        K: int
        M: int
        min_num_tokens: int
        max_num_tokens: int

    def get_warmup_keys(
        self, *, K: int, M: int, min_num_tokens: int, max_num_tokens: int
    ) -> list[CompileKey]:
        return [self.CompileKey(K, M, min_num_tokens, max_num_tokens)]

    def compile(self, compile_key: CompileKey) -> None:
        warmup_bf16x3_router_gemm(
            compile_key.K,
            compile_key.M,
            compile_key.min_num_tokens,
            compile_key.max_num_tokens,
        )


BF16X3_ROUTER_GEMM_KERNEL = BF16x3RouterGemmKernel()""",
        after="def warmup_bf16x3_router_gemm",
        # The registration translates the step and the orchestrator's call of it (its shape and token range: the
        # batch budget it passes); the owner calls the warmup.
        written_for=(
            (f"{VLLM.orchestrator}:_warmup_bf16x3_router_gemm", "e59de5120d47ca86"),
            (f"{VLLM.orchestrator}:kernel_warmup(_warmup_bf16x3_router_gemm)", "4ab0c5ef534a872f"),
            ("warmup_bf16x3_router_gemm()", "ffd3dd1519cc2942"),
        ),
        imports=(
            "from dataclasses import dataclass",
            "from vllm.model_executor.warmup.jit_warmup import VllmJitKernel",
        ),
    ),
    registration=Registration(
        module="vllm.model_executor.layers.fused_moe.router.gate_linear",
        classes="GateLinear",
        insert_after="self.allow_bf16x3_router_gemm = (",
        code="""if self.allow_bf16x3_router_gemm:
    from vllm.model_executor.layers.fused_moe.router.bf16x3_router_gemm_cutedsl import (  # noqa: E501
        BF16X3_ROUTER_GEMM_KERNEL,
    )

    # Where it is allowed, the fp32 kernel serves up to FP32_MAX_TOKENS.
    min_num_tokens = self.FP32_MAX_TOKENS + 1 if self.allow_fp32_router_gemm else 1
    if (vllm_config := get_current_vllm_config_or_none()) is not None:
        BF16X3_ROUTER_GEMM_KERNEL.register_warmup(
            K=self.input_size,
            M=self.output_size,
            min_num_tokens=min_num_tokens,
            max_num_tokens=vllm_config.scheduler_config.max_num_batched_tokens,
        )""",
        gate_imports=("from vllm.config import get_current_vllm_config_or_none",),
        intended_differences=[
            (
                "current_platform.is_device_capability_family(100)",
                "allow_bf16x3_router_gemm holds only there: GateLinear computes it from `is_blackwell`, that check",
            )
        ],
        import_style="lazy",
    ),
)

SPECS = (LL_BF16_ROUTER_GEMM, GEMM_RS_AR, BF16X3_ROUTER_GEMM)
# Each spec's key-equivalence adapter (`zerojit keys diff`, `migrate --verify-keys`), as "module:class".
EQUIVALENCES = {
    LL_BF16_ROUTER_GEMM.family: "zerojit.migrate.ll_bf16_router_gemm.equivalence:RouterGemmEquivalence",
    GEMM_RS_AR.family: "zerojit.migrate.gemm_rs_ar.equivalence:GemmRsArEquivalence",
    BF16X3_ROUTER_GEMM.family: "zerojit.migrate.bf16x3_router_gemm.equivalence:Bf16x3RouterGemmEquivalence",
}
