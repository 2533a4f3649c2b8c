"""Element types: the bridge between NumPy/DLPack dtypes, MLIR types and kernel parameters.

MLIR integers are signless; an nvdsl dtype carries the signedness that decides
which operation a Python operator becomes (``//`` is ``arith.floordivsi`` on
``int32`` but ``arith.divui`` on ``uint32``). ``index`` is a signed 64-bit
integer used for thread ids, loop counters and memory indices.

``bfloat16`` comes from NumPy through ``ml_dtypes`` (``np.zeros(n, ml_dtypes.bfloat16)``)
as well as from torch and DLPack. ``float8_e4m3fn`` and ``float8_e5m2`` (torch's
names; MLIR ``f8E4M3FN`` and ``f8E5M2``) come as torch tensors or through DLPack
only, and kernels move them as bytes (TMA) rather than compute on them.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    """An element type. ``kind`` is 'i' (signed), 'u' (unsigned), 'f' (float), 'b' (bool) or 'index'."""

    name: str
    kind: str
    bits: int

    @property
    def is_int(self) -> bool:
        return self.kind in ("i", "u", "index")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("i", "index")

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    def mlir_type(self):
        """The MLIR type (an ``ir.Type``); needs an active ``ir.Context``."""
        from mlir import ir  # imported on first use: a cached call never needs MLIR
        if self.kind == "index":
            return ir.IndexType.get()
        if self.kind == "f":
            return {"float16": ir.F16Type, "bfloat16": ir.BF16Type, "float32": ir.F32Type,
                    "float64": ir.F64Type, "float8_e4m3fn": ir.Float8E4M3FNType,
                    "float8_e5m2": ir.Float8E5M2Type}[self.name].get()
        return ir.IntegerType.get_signless(self.bits)

    def int_range(self) -> tuple[int, int]:
        if self.kind == "u":
            return 0, (1 << self.bits) - 1
        if self.kind == "b":
            return 0, 1
        return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1

    def __repr__(self) -> str:
        return f"nvdsl.{self.name}"


bool_ = DType("bool", "b", 1)
int8 = DType("int8", "i", 8)
int16 = DType("int16", "i", 16)
int32 = DType("int32", "i", 32)
int64 = DType("int64", "i", 64)
uint8 = DType("uint8", "u", 8)
uint16 = DType("uint16", "u", 16)
uint32 = DType("uint32", "u", 32)
uint64 = DType("uint64", "u", 64)
float16 = DType("float16", "f", 16)
bfloat16 = DType("bfloat16", "f", 16)
float32 = DType("float32", "f", 32)
float64 = DType("float64", "f", 64)
float8_e4m3fn = DType("float8_e4m3fn", "f", 8)   # 4 exponent bits, 3 mantissa bits, no infinities
float8_e5m2 = DType("float8_e5m2", "f", 8)       # 5 exponent bits, 2 mantissa bits, IEEE-like
index = DType("index", "index", 64)

ALL = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
       float16, bfloat16, float32, float64, float8_e4m3fn, float8_e5m2, index)
BY_NAME = {d.name: d for d in ALL}

# Element types an array argument may have (bool arrays are bytes in memory
# but i1 in MLIR, so they are refused rather than silently reinterpreted).
ARRAY_DTYPES = (int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                float16, bfloat16, float32, float64, float8_e4m3fn, float8_e5m2)
# Element types NumPy lacks: they arrive only via DLPack or torch, never from a NumPy array (nor
# from an ml_dtypes one: kernels only move float8 bytes, and torch is where float8 data comes from).
NOT_IN_NUMPY = (float8_e4m3fn, float8_e5m2)
# bfloat16 is not a NumPy dtype either, but ml_dtypes adds one with the same bits.
_ML_DTYPES = (bfloat16,)

_NATIVE = [d for d in ARRAY_DTYPES if d not in NOT_IN_NUMPY and d not in _ML_DTYPES]
# NumPy type strings of the array interface ('<f4', '|u1', ...; NumPy's ``dtype.str``), written out here: importing
# nvdsl does not import NumPy (a call on NumPy arrays has imported it).
_TYPESTR_TO_DTYPE = {("|" if d.bits == 8 else "<" if sys.byteorder == "little" else ">") + d.kind + str(d.itemsize): d
                     for d in _NATIVE}

_CTYPES = {
    bool_: ctypes.c_uint8, int8: ctypes.c_int8, int16: ctypes.c_int16,
    int32: ctypes.c_int32, int64: ctypes.c_int64, uint8: ctypes.c_uint8,
    uint16: ctypes.c_uint16, uint32: ctypes.c_uint32, uint64: ctypes.c_uint64,
    float32: ctypes.c_float, float64: ctypes.c_double, index: ctypes.c_int64,
    float16: ctypes.c_uint16, bfloat16: ctypes.c_uint16,
}


def from_numpy(dtype) -> DType | None:
    """The nvdsl dtype of a NumPy dtype (ml_dtypes' bfloat16 included), or None where there is none."""
    import numpy as np
    dtype = np.dtype(dtype)
    found = _TYPESTR_TO_DTYPE.get(dtype.str)
    if found is None and dtype.type.__module__ == "ml_dtypes" and dtype.name in ("bfloat16",):
        return bfloat16
    return found


def from_typestr(typestr: str) -> DType | None:
    return _TYPESTR_TO_DTYPE.get(typestr)


def numpy_dtype(dtype: DType) -> np.dtype | None:
    """The NumPy dtype of ``dtype`` (bfloat16's from ml_dtypes, when installed), or None."""
    import numpy as np
    if dtype in NOT_IN_NUMPY or dtype is index:
        return None
    if dtype in _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError:
            return None
        return np.dtype(getattr(ml_dtypes, dtype.name))
    if dtype is bool_:
        return np.dtype(np.bool_)
    return np.dtype(dtype.name)


def ctype(dtype: DType):
    """The ctypes type a kernel parameter of this dtype is passed as."""
    return _CTYPES[dtype]


def to_bits(dtype: DType, value) -> int | float:
    """A Python number as the value stored in the parameter's ctypes slot."""
    import numpy as np
    if dtype is float16:
        return int(np.array(value, dtype=np.float16).view(np.uint16))
    if dtype is bfloat16:  # round to nearest even, as the hardware converts
        bits = int(np.array(value, dtype=np.float32).view(np.uint32))
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    return value
