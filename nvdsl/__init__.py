"""nvdsl: a Python-embedded kernel language for NVIDIA Hopper GPUs, built on MLIR.

Write a host function with ``@mlir_func`` and kernel bodies with
``@gpu_launch``; call it on NumPy or device arrays. The first call per
signature traces to MLIR and compiles to PTX and a cubin; later calls launch
the cached kernels through the CUDA driver.
"""

__version__ = "0.1.0"

from .dtypes import (DType, bfloat16, bool_, float8_e4m3fn, float8_e5m2, float16, float32, float64, index,
                     int8, int16, int32, int64, uint8, uint16, uint32, uint64)
from .errors import (ArgumentError, CompileError, CudaError, InternalError, LaunchConfigError, MappingError,
                     NoDeviceError, NvdslError, TaskError, TraceError, UserError)
from .frontend.control import cond, for_range, fori, when
from .frontend.control import print_ as print  # noqa: A001 - device-side printf, used as nvdsl.print
from .frontend.launch import Dim3, Kernel, LaunchContext, gpu_launch
from .frontend.math import abs, erf, exp, exp2, log, log2, rsqrt, sqrt, tanh, where  # noqa: A004
from .frontend.memory import Array
from .frontend.trace import Compiled, Trace, TracedFunction, mlir_func
from .frontend.values import Value, constant, maximum, minimum, select
from .hopper.aref import Aref
from .hopper.mbarrier import Mbarrier, Mbarriers
from .hopper.tile import ColumnVector, RegisterTile, RowVector
from .hopper.tma import TMA, fence_shared_to_async, tma_store_wait
from .hopper.warpgroup import Warpgroup
from .hopper.wgmma import WGMMAAccumulator, WGMMAMatrix, wgmma_group, wgmma_wait
from . import layouts
from .layouts import FragmentLayout, Layout
from .options import Options
from .runtime.device import device_count, synchronize

__all__ = [
    "__version__",
    # decorators and what they return
    "mlir_func", "gpu_launch", "TracedFunction", "Kernel", "Trace", "Compiled",
    # inside kernels
    "LaunchContext", "Dim3", "Array", "Value", "constant", "select", "minimum", "maximum",
    "for_range", "fori", "when", "cond", "print",
    # math on traced floats and register tiles
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "erf", "abs", "where",
    # Hopper primitives
    "Aref", "Mbarriers", "Mbarrier", "TMA", "fence_shared_to_async", "Warpgroup", "WGMMAMatrix", "WGMMAAccumulator",
    "wgmma_wait", "wgmma_group", "tma_store_wait",
    # register tiles and their layouts
    "RegisterTile", "RowVector", "ColumnVector", "layouts", "Layout", "FragmentLayout",
    # dtypes
    "DType", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2", "index",
    # configuration and errors
    "Options", "device_count", "synchronize",
    "NvdslError", "UserError", "TraceError", "ArgumentError", "LaunchConfigError", "TaskError", "MappingError",
    "CompileError",
    "CudaError", "NoDeviceError", "InternalError",
]
