"""The built-in lifts of vLLM 0.33.0's plain Triton kernels (codemods.lift writes their dispatcher and provider).

Each registers from the layer that launches the kernel, passing the provider what the legacy step read
from the first layer's warmup config, in the layer's own names (`self.num_k_heads // self.tp_size` for
the config's `h`; the KV cache's dtype is the layer's `get_state_dtype()`).
"""

from zerojit.codemods.engines import VLLM
from zerojit.codemods.spec import Kernel, Legacy, Lift, MigrationSpec, Registration

_QWEN_WARMUP = "vllm.model_executor.warmup.qwen_triton_warmup"
_QWEN_GDN = "vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn"


def _qwen_step(step: str) -> Legacy:
    """A step of the standalone Qwen GDN warmup."""
    return Legacy(module=_QWEN_WARMUP, function="qwen_triton_warmup", step=step, orchestrator_module=VLLM.orchestrator)


_MODEL_TYPES = (
    "model_type not in _QWEN_MODEL_TYPES",
    "every model that builds a QwenGatedDeltaNetAttention layer launches this kernel, so each layer "
    "registers it; the model-type list named only the Qwen models",
)
# The legacy search (`_qwen_gdn_warmup_config`) kept the first layer that has every GDN attribute (each one the
# layer's constructor sets: codemods.model_search reads `_is_qwen_gdn_layer`) and a bound KV cache.
QWEN_GDN_SEARCH = (
    (
        "cache_tensors is None",
        "the layer registers when it is built, before the engine binds its KV cache; the search skipped layers "
        "without one, and every layer that serves has one bound",
    ),
)
# A layer that registers in bind_kv_cache holds the cache the search looked for.
QWEN_GDN_SEARCH_AT_BIND = (
    ("cache_tensors is None", "the layer registers in bind_kv_cache, with the cache the search looked for"),
)

# How the legacy search reads off the first Qwen GDN layer the facts each Qwen registration passes in the layer's own
# names: its config's construction and what that is computed from (0.29.0's, without the output norm's fields;
# 0.30.0's; 0.33.0's, which adds the fused spec-decode switch). A fork that computes them otherwise is refused
# there, as the registrations were written from this code; a filter the fork adds to the search is the gate's
# (codemods.planning.pins).
QWEN_GDN_CONFIG_PINS = (
    ("_qwen_gdn_warmup_config(_QwenGDNWarmupConfig)", "957baee5a0f4a506"),
    ("_qwen_gdn_warmup_config(_QwenGDNWarmupConfig)", "7ba25ae713ba6af6"),
    ("_qwen_gdn_warmup_config(_QwenGDNWarmupConfig)", "9460be6987b9f337"),
)

FUSED_POST_CONV = MigrationSpec(
    family="fla-fused-post-conv",
    legacy=_qwen_step("_warm_fused_post_conv_kernel"),
    kernel=Kernel(
        module="vllm.third_party.flash_linear_attention.ops.fused_gdn_prefill_post_conv", name="_fused_post_conv_kernel"
    ),
    registration=Registration(
        module=_QWEN_GDN,
        written_for=QWEN_GDN_CONFIG_PINS,
        classes="QwenGatedDeltaNetAttention",
        insert_after="self.norm = RMSNormGated(",
        code="""fused_post_conv_prep_dispatch.register_warmup(
    h=self.num_k_heads // self.tp_size,
    k=self.head_k_dim,
    hv=self.num_v_heads // self.tp_size,
    v=self.head_v_dim,
    conv_dtype=self.get_state_dtype()[0],
    a_log=self.A_log,
    dt_bias=self.dt_bias,
)""",
        intended_differences=[_MODEL_TYPES, *QWEN_GDN_SEARCH],
        import_style="module",
    ),
    lift=Lift(launcher="fused_post_conv_prep"),
)

# `mamba_triton_warmup` warms the prefix-cache state copy whenever the runner holds a Mamba-style KV cache, which
# it does exactly when the model builds one of the engine's MambaBase layers: each registers the copy (one key,
# the registry keeps one registration). The launch's owner (MambaCopyBuffers) is built lazily at the first copy,
# outside every capture window, so it cannot be where the kernel registers.
_MAMBA_LAYERS = (
    "vllm.model_executor.layers.mamba.mamba_mixer:MambaMixer",
    "vllm.model_executor.layers.mamba.mamba_mixer2:MambaMixer2",
    "vllm.model_executor.layers.mamba.linear.base:LinearAttention",
    "vllm.model_executor.layers.mamba.gdn.base:GatedDeltaNetAttention",
    "vllm.model_executor.layers.mamba.short_conv:ShortConv",
    "vllm.model_executor.models.bailing_moe_v3:BailingMoeV3KimiDeltaAttention",
    "vllm.models.qwen4_exp.amd.ple_layer:Qwen4ExpPLELayer",
    "vllm.models.qwen4_exp.nvidia.ple_layer:Qwen4ExpPLELayer",
)

BATCH_MEMCPY = MigrationSpec(
    family="mamba-batch-memcpy",
    legacy=Legacy(
        module="vllm.model_executor.warmup.mamba_triton_warmup",
        function="mamba_triton_warmup",
        step="_warm_batch_memcpy_kernel",
        orchestrator_module=VLLM.orchestrator,
    ),
    kernel=Kernel(module="vllm.v1.worker.mamba_utils", name="batch_memcpy_kernel"),
    registration=Registration(
        module=_MAMBA_LAYERS[0].split(":")[0],
        classes=_MAMBA_LAYERS,
        subclasses_of="vllm.model_executor.layers.mamba.abstract:MambaBase",
        # Every MambaBase layer registers: what the step's cache test says, as 0.33.0 writes it.
        written_for=(("_has_mamba_style_cache", "1921ec7a7fb878b1"),),
        insert_after="super().__init__(",
        code="batch_memcpy_dispatch.register_warmup()",
        intended_differences=[
            (
                "device.type != 'cuda'",
                "the prefix-cache copy launches this Triton kernel on every device the engine runs Triton on; skipping "
                "non-CUDA runners only moved its compile into a request",
            )
        ],
        import_style="lazy",
    ),
    lift=Lift(launcher="batch_memcpy"),
)

# The decode update reads the SSM state's per-block stride, which the KV-cache allocator decides (a state page is
# padded to the attention page): the layer registers once its cache is bound (`bind_kv_cache`, which the engine
# calls inside the capture window for registrations that depend on KV-cache strides), with the bound state's facts.
SIGMOID_GATING = MigrationSpec(
    family="fla-sigmoid-gating",
    legacy=_qwen_step("_warm_fused_sigmoid_gating_delta_rule_update_kernel"),
    kernel=Kernel(
        module="vllm.third_party.flash_linear_attention.ops.fused_sigmoid_gating",
        name="fused_sigmoid_gating_delta_rule_update_kernel",
    ),
    registration=Registration(
        module=_QWEN_GDN,
        written_for=QWEN_GDN_CONFIG_PINS,
        classes="QwenGatedDeltaNetAttention",
        method="bind_kv_cache",
        code="""ssm_state = self.kv_cache[1]
fused_sigmoid_gating_delta_rule_update_dispatch.register_warmup(
    conv_dtype=self.kv_cache[0].dtype,
    h=self.num_k_heads // self.tp_size,
    k=self.head_k_dim,
    hv=self.num_v_heads // self.tp_size,
    v=self.head_v_dim,
    state_dtype=ssm_state.dtype,
    state_stride_token=ssm_state.stride(0),
    a_log=self.A_log,
    dt_bias=self.dt_bias,
)""",
        intended_differences=[
            _MODEL_TYPES,
            *QWEN_GDN_SEARCH_AT_BIND,
            (
                "not runner.is_pooling_model",
                "pooling models run only full prefills and never launch this decode kernel; the layer registers it "
                "whatever the model serves (one compile a pooling model does not need)",
            ),
        ],
        import_style="module",
    ),
    lift=Lift(launcher="fused_sigmoid_gating_delta_rule_update"),
)

# The GDN layer's causal conv1d prefill (`causal_conv1d_fn`, which every Mamba-style layer calls; the legacy step
# warmed it only for Qwen GDN layers). Its compile key reads the conv state's strides, which the KV-cache allocator
# decides: the layer registers in bind_kv_cache with the bound state as the kernel sees it (token-major unless
# the engine lays conv states dim-first). The launcher computes its grid with a function of its own that fills
# the per-program batch buffers as Triton calls it: the dispatcher takes that grid from the launcher.
CAUSAL_CONV1D = MigrationSpec(
    family="mamba-causal-conv1d",
    legacy=_qwen_step("_warm_causal_conv1d_fwd_kernel"),
    kernel=Kernel(module="vllm.model_executor.layers.mamba.ops.causal_conv1d", name="_causal_conv1d_fwd_kernel"),
    registration=Registration(
        module=_QWEN_GDN,
        written_for=QWEN_GDN_CONFIG_PINS,
        classes="QwenGatedDeltaNetAttention",
        method="bind_kv_cache",
        code="""conv_state = self.kv_cache[0]
if not is_conv_state_dim_first():
    conv_state = conv_state.transpose(-1, -2)
causal_conv1d_fn_dispatch.register_warmup(
    conv_dim=self.conv_dim // self.tp_size,
    conv_dtype=conv_state.dtype,
    conv_kernel_size=self.conv_kernel_size,
    conv_state=conv_state,
)""",
        intended_differences=[_MODEL_TYPES, *QWEN_GDN_SEARCH_AT_BIND],
        import_style="module",
    ),
    lift=Lift(launcher="causal_conv1d_fn"),
)

# Kimi-K3's attention residual: the model (KimiLinearModel) launches it from every decoder layer when its
# config sets `attn_res_block_size`; the step's own early returns (no block size, fewer than two blocks) gate the
# registration and the platform checks of `kimi_k3_triton_warmup` come with it. The provider's profiles read the
# block count, which the model holds (`num_attn_res_blocks`, the second dimension of the block residual it
# launches with): the step computed it from the whole model's layers, the model from this pipeline rank's. The
# registration was written for how the step computes the block count it passes the profiles (every release's).
ATTN_RES = MigrationSpec(
    family="kimi-k3-attn-res",
    legacy=Legacy(
        module="vllm.model_executor.warmup.kimi_k3_triton_warmup",
        function="kimi_k3_triton_warmup",
        step="_warm_attn_res",
        orchestrator_module=VLLM.orchestrator,
    ),
    kernel=Kernel(module="vllm.models.kimi_k3.nvidia.ops.attn_res", name="_attn_res_kernel"),
    registration=Registration(
        module="vllm.models.kimi_k3.nvidia.model",
        written_for=(
            ("_warm_attn_res(get_attn_res_triton_warmup_profiles)", "efc598de149239fe"),
            # The model registers wherever the step found a KDA layer: the search as 0.29.0-0.30.0 and 0.33.0 write it.
            ("_get_kda_layer", "05958c82917ac45a"),
            ("_get_kda_layer", "824ee0e38b4e0ef7"),
        ),
        classes="KimiLinearModel",
        code="""attn_res_dispatch.register_warmup(
    model_config=vllm_config.model_config, max_blocks=self.num_attn_res_blocks
)""",
        intended_differences=[
            (
                "layer is not None",
                "the legacy warmup found the Kimi-K3 model through one of its KDA layers; every KimiLinearModel whose "
                "config sets attn_res_block_size launches attn_res, KDA layers or not, so the model registers it",
            )
        ],
    ),
    lift=Lift(launcher="attn_res"),
)

# Kimi-K3's recurrent KDA kernel runs only under speculative decoding. Each KDA layer registers once its KV cache
# is bound, checking that cache as the step did; the step's other checks are the provider's `_when`. The
# registration passes the layer's own facts and the model's dtype, what the warmup passes the step with its first
# KDA layer (0.29.0's and 0.30.0's warmup, then 0.33.0's, which finds the ROCm layer too).
_ON_ITS_CACHE = "checked where the layer registers, on its own bound KV cache (num_spec: the provider's _when)"
RECURRENT_KDA = MigrationSpec(
    family="kimi-k3-recurrent-kda",
    legacy=Legacy(
        module="vllm.model_executor.warmup.kimi_k3_triton_warmup",
        function="kimi_k3_triton_warmup",
        step="_warm_recurrent_kda",
        orchestrator_module=VLLM.orchestrator,
    ),
    kernel=Kernel(
        module="vllm.models.kimi_k3.nvidia.ops.third_party.kda.fused_recurrent", name="fused_recurrent_kda_fwd_kernel"
    ),
    registration=Registration(
        module="vllm.models.kimi_k3.nvidia.kda",
        written_for=(
            ("kimi_k3_triton_warmup(_warm_recurrent_kda)", "5ca0dcd556052e9f"),
            ("kimi_k3_triton_warmup(_warm_recurrent_kda)", "d087e487d75a82fd"),
        ),
        classes="KimiK3DeltaAttention",
        method="bind_kv_cache",
        code="""state = self.kv_cache[1] if len(self.kv_cache) >= 2 else None
if isinstance(state, torch.Tensor) and state.numel():
    fused_recurrent_kda_fwd_dispatch.register_warmup(
        num_spec=self.num_spec,
        kv_cache=self.kv_cache,
        local_num_heads=self.local_num_heads,
        head_dim=self.head_dim,
        input_dtype=self.model_config.dtype,
        A_log=self.A_log,
        dt_bias=self.dt_bias,
        gate_lower_bound=self.gate_lower_bound,
    )""",
        intended_differences=[
            ("layer is not None", "each KDA layer registers itself; the legacy warmup found the first"),
            *(
                (condition, _ON_ITS_CACHE)
                for condition in (
                    "not num_speculative_tokens <= 0",
                    "isinstance(kv_cache, (list, tuple))",
                    "not len(kv_cache) < 2",
                    "isinstance(state, torch.Tensor)",
                    "state.numel()",
                )
            ),
        ],
    ),
    lift=Lift(launcher="fused_recurrent_kda_fwd"),
)

# ROCm's fused MTP decode of the GDN layer: one launcher (`fused_gdn_decode_post_conv_mtp_triton`) launches the
# delta-rule update and then the gated RMSNorm epilogue, one dispatcher each; both must move in one run. The layer
# registers once its KV cache is bound (the update reads the SSM state's block stride), under its own spec-decode
# switch; CUDA runs vLLM's own op instead of these kernels.
_MTP_MODULE = "vllm.third_party.flash_linear_attention.ops.fused_gdn_decode_post_conv_mtp"
_MTP_SHARED = """if current_platform.is_rocm() and self.enable_fused_gdn_spec_decode:
    ssm_state = self.kv_cache[1]
    num_compute_units = current_platform.num_compute_units(ssm_state.device.index)
    hv = self.num_v_heads // self.tp_size
    max_num_reqs = self.vllm_config.scheduler_config.max_num_seqs
    conv_dim = self.conv_dim // self.tp_size
"""
_MTP_DIFFERENCES = [
    (
        "gdn_config.fused_spec_decode",
        "the layer's own enable_fused_gdn_spec_decode, checked where it registers (the legacy config read it from "
        "the first layer)",
    ),
    (
        "spec_config is not None",
        "the layer's enable_fused_gdn_spec_decode holds only with a speculative config",
    ),
    (
        "model_type not in _QWEN_MODEL_TYPES",
        "every model that builds a QwenGatedDeltaNetAttention layer with the fused MTP decode launches these kernels",
    ),
    *QWEN_GDN_SEARCH_AT_BIND,
]


def _mtp(family: str, kernel: str, dispatcher: str, keywords: str) -> MigrationSpec:
    return MigrationSpec(
        family=family,
        legacy=_qwen_step("_warm_fused_gdn_decode_post_conv_mtp_kernel"),
        kernel=Kernel(module=_MTP_MODULE, name=kernel),
        registration=Registration(
            module=_QWEN_GDN,
            written_for=QWEN_GDN_CONFIG_PINS,
            classes="QwenGatedDeltaNetAttention",
            method="bind_kv_cache",
            code=f"{_MTP_SHARED}    {dispatcher}.register_warmup({keywords}\n    )",
            intended_differences=_MTP_DIFFERENCES,
            gate_imports=("from vllm.platforms import current_platform",),  # what the gate's platform is
            import_style="module",
        ),
        lift=Lift(launcher="fused_gdn_decode_post_conv_mtp_triton", dispatcher=dispatcher),
    )


MTP_UPDATE = _mtp(
    "fla-gdn-mtp-update",
    "_gdn_mtp_update_kernel",
    "gdn_mtp_update_dispatch",
    """
        num_compute_units=num_compute_units,
        hv=hv,
        num_spec_tokens=self.num_spec,
        v=self.head_v_dim,
        state_dtype=ssm_state.dtype,
        state_stride_token=ssm_state.stride(0),
        k=self.head_k_dim,
        max_num_reqs=max_num_reqs,
        x_dtype=self.model_config.dtype,
        conv_dim=conv_dim,
        a_log=self.A_log,
        dt_bias=self.dt_bias,""",
)
MTP_NORM = _mtp(
    "fla-gdn-mtp-rmsnorm",
    "_gdn_mtp_gated_rmsnorm_kernel",
    "gdn_mtp_gated_rmsnorm_dispatch",
    """
        num_compute_units=num_compute_units,
        hv=hv,
        num_spec_tokens=self.num_spec,
        norm_weight_dtype=self.norm.weight.dtype,
        v=self.head_v_dim,
        max_num_reqs=max_num_reqs,
        x_dtype=self.model_config.dtype,
        conv_dim=conv_dim,
        norm_activation=self.norm.activation,""",
)

SPECS = (
    FUSED_POST_CONV,
    BATCH_MEMCPY,
    SIGMOID_GATING,
    CAUSAL_CONV1D,
    ATTN_RES,
    RECURRENT_KDA,
    MTP_UPDATE,
    MTP_NORM,
)
EQUIVALENCES = {
    FUSED_POST_CONV.family: "zerojit.migrate.triton_lifts.equivalence:FusedPostConvEquivalence",
    BATCH_MEMCPY.family: "zerojit.migrate.triton_lifts.equivalence:BatchMemcpyEquivalence",
    SIGMOID_GATING.family: "zerojit.migrate.triton_lifts.equivalence:SigmoidGatingEquivalence",
    CAUSAL_CONV1D.family: "zerojit.migrate.triton_lifts.equivalence:CausalConv1dEquivalence",
    ATTN_RES.family: "zerojit.migrate.triton_lifts.equivalence:AttnResEquivalence",
    RECURRENT_KDA.family: "zerojit.migrate.triton_lifts.equivalence:RecurrentKdaEquivalence",
    MTP_UPDATE.family: "zerojit.migrate.triton_lifts.equivalence:MtpUpdateEquivalence",
    MTP_NORM.family: "zerojit.migrate.triton_lifts.equivalence:MtpNormEquivalence",
}
