"""Scratch arrays beside a caller's array (NumPy, torch or CuPy): the partial products and row statistics that
a library kernel's passes hand one another, and the records of a profiled call."""

from __future__ import annotations

SCRATCH_BESIDE = ("numpy", "torch", "cupy")    # the modules of the arrays beside which scratch is made
_KEPT: dict = {}         # (purpose, device, shape) -> a torch buffer, reused call after call


def float32_like(x, shape: tuple[int, ...], purpose: str):
    """A float32 array of ``shape`` of ``x``'s kind and device (:data:`SCRATCH_BESIDE`), or None for other kinds.
    A torch buffer is kept for the next call with the same ``purpose`` and shape: the library's kernels run on one
    stream, in order, so the next call's kernels write it only after this call's have read it. Buffers of
    different purposes never alias."""
    return scratch_like(x, shape, purpose, "float32")


def scratch_like(x, shape: tuple[int, ...], purpose: str | None, dtype: str):
    """As :func:`float32_like`, of ``dtype`` (a name NumPy, torch and CuPy share: "float32", "int32"). With
    ``purpose=None``, a new zero-filled array that nothing else is handed (kept by its caller)."""
    module = type(x).__module__
    if module.startswith("numpy"):
        import numpy as np
        return np.zeros(shape, dtype) if purpose is None else np.empty(shape, dtype)
    if module.startswith("torch") and purpose is None:
        import torch
        return torch.zeros(shape, dtype=getattr(torch, dtype), device=x.device)
    if module.startswith("torch"):
        key = (purpose, x.device, shape, dtype)
        found = _KEPT.get(key)
        if found is None:
            import torch
            if len(_KEPT) >= 32:
                _KEPT.clear()
            found = _KEPT[key] = torch.empty(shape, dtype=getattr(torch, dtype), device=x.device)
        return found
    if module.startswith("cupy"):
        import cupy
        return cupy.zeros(shape, dtype) if purpose is None else cupy.empty(shape, dtype)
    return None
