"""The key checks' stand-in for GPU memory: engine code's CUDA tensors made on the meta device, as CUDA would
lay them out (Triton's key reads a tensor's dtype, shape, strides and alignment, never its data)."""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode


class MetaAllocations(TorchFunctionMode):
    """Tensors engine code allocates on the GPU are allocated on the meta device instead: shapes, dtypes and
    strides only, which is all Triton's key reads of a tensor (a meta tensor's address is 0, so aligned). A
    tensor made from data (`torch.tensor([0, 1])`, a batch's start offsets) stays on the CPU with its values,
    which engine code may read on the host (a launcher's grid from the sequence lengths). `torch.empty_like` of a
    dense meta tensor keeps its strides as CUDA does (meta's own lays a dimension of size 1 out compact: `x.t()`
    of a `(1, n)` tensor gives `(1, 1)` there, `(1, n)` on the GPU, and Triton keys the two apart). A launcher's
    `with torch.cuda.device(x.device):` around its launch selects no GPU for a meta tensor's device."""

    def __enter__(self):
        entered = super().__enter__()
        self._device_context, torch.cuda.device = torch.cuda.device, _DeviceContext
        return entered

    def __exit__(self, *exc):
        torch.cuda.device = self._device_context
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        device = kwargs.get("device")
        if device is not None and torch.device(device).type == "cuda":
            kwargs["device"] = "cpu" if func is torch.tensor else "meta"
        if (
            func in _LIKE
            and args
            and _dense_meta(args[0])
            and kwargs.get("memory_format", torch.preserve_format) == torch.preserve_format
        ):
            model = args[0]
            return torch.empty_strided(
                model.shape, model.stride(), dtype=kwargs.get("dtype") or model.dtype, device="meta"
            )
        return func(*args, **kwargs)


class _DeviceContext(torch.cuda.device):
    """`torch.cuda.device`, for which a meta device is no device (as -1 is): nothing to select."""

    def __init__(self, device: Any):
        meta = isinstance(device, (torch.device, str)) and torch.device(device).type == "meta"
        super().__init__(-1 if meta else device)


_LIKE = {torch.empty_like, torch.zeros_like, torch.ones_like, torch.full_like, torch.rand_like, torch.randn_like}


def _dense_meta(tensor: Any) -> bool:
    """A meta tensor whose elements fill its extent exactly (c10's test: dimensions of one element skipped)."""
    if not (isinstance(tensor, torch.Tensor) and tensor.is_meta):
        return False
    required = 1
    for stride, size in sorted((tensor.stride(i), tensor.shape[i]) for i in range(tensor.dim()) if tensor.shape[i] > 1):
        if stride != required:
            return False
        required *= size
    return True
