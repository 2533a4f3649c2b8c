"""nvdsl: a Python-embedded kernel language for NVIDIA Hopper GPUs, built on MLIR.

Write a host function with ``@mlir_func`` and kernel bodies with
``@gpu_launch``; call it on NumPy or device arrays. The first call per
signature traces to MLIR and compiles to PTX and a cubin; later calls launch
the cached kernels through the CUDA driver. A new process whose disk cache
holds the kernels runs them without tracing.

Importing nvdsl does not import MLIR, nor the CUDA driver's bindings, nor
NumPy: the names used while tracing (kernel bodies, values, Hopper primitives)
load MLIR on first use, and a function's first call loads what it needs.
"""

import importlib

from .dtypes import (DType, bfloat16, bool_, float8_e4m3fn, float8_e5m2, float16, float32, float64, index,
                     int8, int16, int32, int64, uint8, uint16, uint32, uint64)
from .errors import (ArgumentError, CaptureError, CompileError, CudaError, InternalError, KernelFault,
                     LaunchConfigError, MappingError, NoDeviceError, NvdslError, ProtocolCheckWarning, ProtocolError,
                     PtxasWarning, TaskError, TraceError, UserError)
from .frontend.trace import Trace
from .jit import Compiled, TracedFunction, mlir_func
from .options import Options
from .version import __version__

# Public names loaded on first access, by the module that defines them: those whose modules import MLIR, the
# CUDA driver (cuda.bindings, imported by a call's first launch) or the layout algebra (used while tracing).
_LAZY_NAMES = {
    "nvdsl.runtime.device": ("device_count", "synchronize"),
    "nvdsl.layouts": ("FragmentLayout", "Layout"),
    "nvdsl.frontend.control": ("cond", "for_range", "fori", "when", ("print", "print_")),
    "nvdsl.frontend.launch": ("Dim3", "Kernel", "LaunchContext", "gpu_launch"),
    "nvdsl.frontend.math": ("abs", "erf", "exp", "exp2", "log", "log2", "rsqrt", "sqrt", "tanh", "where"),
    "nvdsl.frontend.memory": ("Array", "empty", "zeros", "wrap"),
    "nvdsl.frontend.values": ("Value", "constant", "maximum", "minimum", "select"),
    "nvdsl.hopper.aref": ("Aref",),
    "nvdsl.hopper.mbarrier": ("Mbarrier", "Mbarriers"),
    "nvdsl.hopper.tile": ("ColumnVector", "RegisterTile", "RowVector"),
    "nvdsl.hopper.tma": ("TMA", "fence_shared_to_async", "tma_store_wait"),
    "nvdsl.hopper.warpgroup": ("Warpgroup",),
    "nvdsl.hopper.wgmma": ("WGMMAAccumulator", "WGMMAMatrix", "wgmma_group", "wgmma_wait"),
    "nvdsl.interpreter.fuzz": ("fuzz", "FuzzReport"),
    "nvdsl.tasks.profile": ("profile", "Profile"),
}
_LAZY = {(n if isinstance(n, str) else n[0]): (module, n if isinstance(n, str) else n[1])
         for module, names in _LAZY_NAMES.items() for n in names}
_LAZY["layouts"] = ("nvdsl.layouts", None)       # the subpackage itself


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'nvdsl' has no attribute '{name}'")
    module, attribute = _LAZY[name]
    value = importlib.import_module(module) if attribute is None else getattr(importlib.import_module(module),
                                                                              attribute)
    globals()[name] = value  # later lookups find it directly
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "__version__",
    # decorators and what they return
    "mlir_func", "gpu_launch", "TracedFunction", "Kernel", "Trace", "Compiled",
    # inside kernels
    "LaunchContext", "Dim3", "Array", "Value", "constant", "select", "minimum", "maximum",
    "for_range", "fori", "when", "cond", "print", "wrap",
    # math on traced floats and register tiles
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "erf", "abs", "where",
    # in host code
    "empty", "zeros",
    # Hopper primitives
    "Aref", "Mbarriers", "Mbarrier", "TMA", "fence_shared_to_async", "Warpgroup", "WGMMAMatrix", "WGMMAAccumulator",
    "wgmma_wait", "wgmma_group", "tma_store_wait",
    # register tiles and their layouts
    "RegisterTile", "RowVector", "ColumnVector", "layouts", "Layout", "FragmentLayout",
    # dtypes
    "DType", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2", "index",
    # configuration, the interpreter's schedule fuzzing, timelines of generated pipelines, errors
    "Options", "device_count", "synchronize", "fuzz", "FuzzReport", "profile", "Profile",
    "NvdslError", "UserError", "TraceError", "ArgumentError", "CaptureError", "LaunchConfigError", "TaskError",
    "MappingError",
    "CompileError", "CudaError", "NoDeviceError", "InternalError", "PtxasWarning", "KernelFault", "ProtocolError",
    "ProtocolCheckWarning",
]
