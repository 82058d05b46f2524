"""Built-in lifts: plain Triton kernels of vLLM 0.33.0's legacy warmups, put on the contract by `codemods.lift`.

Each is a migration spec (specs.py) whose kernel has no zerojit family room: the kernel stays vLLM's,
its launch becomes a `triton_kernel_dispatcher_with_warmup` dispatcher, the legacy step becomes the
dispatcher's provider, and the layer that launches it registers it. Their proof is in Triton's own
keys (equivalence.py): what the release's legacy step makes Triton compile against what the migrated
tree's registrations make it compile, through Triton's JIT hook, per serving configuration.
"""
