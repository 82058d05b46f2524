"""How vLLM moved FA4 MLA prefill warmup onto the contract (0.29.0 -> 0.30.0), as a spec.

The backend constructor registers when JIT warmup is on and it selected FA version 4,
right after it decides the version; the legacy step `_warm_fa4_mla_prefill` leaves the
shared `fa4_cutedsl_warmup` module.
"""

from zerojit.codemods.engines import VLLM
from zerojit.codemods.spec import Kernel, Legacy, MigrationSpec, Registration

SPEC = MigrationSpec(
    family="fa4-mla-prefill",
    legacy=Legacy(
        module="vllm.model_executor.warmup.fa4_cutedsl_warmup",
        function="fa4_cutedsl_warmup",
        step="_warm_fa4_mla_prefill",
        orchestrator_module=VLLM.orchestrator,
    ),
    kernel=Kernel(
        module="vllm.v1.attention.backends.mla.prefill.flash_attn",
        name="FA4_MLA_PREFILL_KERNEL",
        private_name="_FA4_MLA_PREFILL_KERNEL",
    ),
    registration=Registration(
        module="vllm.v1.attention.backends.mla.prefill.flash_attn",
        classes="FlashAttnPrefillBackend",
        code="_FA4_MLA_PREFILL_KERNEL.register_warmup()",
        gate="(\n    vllm_config.kernel_config.enable_jit_warmup\n    and self.vllm_flash_attn_version == 4\n)",
        insert_after="if self.vllm_flash_attn_version is not None:",
        # The step's early returns ask which prefill backend an MLA model would build; the registration sits in
        # that backend's own constructor, so each is true wherever it runs (upstream's 0.30.0 dropped them too).
        intended_differences=[
            ("runner.is_pooling_model", "pooling models prefill without this backend, so they never build it"),
            ("not vllm_config.model_config.use_mla", "this is an MLA prefill backend: only MLA models build it"),
            ('backend_cls.get_name() != "FLASH_ATTN"', "the registration is in FlashAttnPrefillBackend itself"),
        ],
    ),
)
