"""Put the ROCm legacy layout into a real vLLM tree, as a fork that shipped it would have it.

Copies the bundled legacy module, launchers module and model into the tree and wires the
legacy call into vLLM's own `kernel_warmup.py` (import beside the other warmup imports,
call behind a `sys.modules` check next to MiniMax's own warmup). Returns the orchestrator's
original text, which a correct migration restores byte for byte.
"""

from __future__ import annotations

import shutil
from pathlib import Path

EXAMPLE_TREE = Path(__file__).with_name("example_tree")
LEGACY_FILES = (
    "vllm/model_executor/warmup/rocm_nvfp4_kv_warmup.py",
    "vllm/v1/attention/ops/rocm_nvfp4_kv.py",
    "vllm/model_executor/models/minimax_m3.py",
)
ORCHESTRATOR = "vllm/model_executor/warmup/kernel_warmup.py"
_IMPORT_ANCHOR = "from vllm.model_executor.warmup.watermark_sample_warmup import ("
_CALL_ANCHOR = "    minimax_m3_msa_warmup(worker)\n"


def add_legacy_layout(repo: Path) -> str:
    for rel in LEGACY_FILES:
        if (repo / rel).exists():
            raise FileExistsError(f"{repo / rel} already exists; the legacy layout needs a tree without it")
        shutil.copy(EXAMPLE_TREE / rel, repo / rel)
    orchestrator = repo / ORCHESTRATOR
    original = orchestrator.read_text()
    if _IMPORT_ANCHOR not in original or _CALL_ANCHOR not in original:
        raise ValueError(f"{orchestrator} lacks the anchors this wiring expects (vLLM 0.30-0.33 layout)")
    wired = original.replace(
        _IMPORT_ANCHOR,
        "from vllm.model_executor.warmup.rocm_nvfp4_kv_warmup import rocm_nvfp4_kv_warmup\n" + _IMPORT_ANCHOR,
        1,
    ).replace(
        _CALL_ANCHOR,
        _CALL_ANCHOR + '\n    if "vllm.model_executor.models.minimax_m3" in sys.modules:\n'
        "        rocm_nvfp4_kv_warmup(worker.vllm_config)\n",
        1,
    )
    orchestrator.unlink()  # a new file, not a write through: the tree may be a hard-linked copy of a cached one
    orchestrator.write_text(wired)
    return original
