"""How the interpreter holds MLIR values: NumPy arrays with a leading lane axis.

A scalar value of a warp is an array of shape ``(1,)`` when every lane holds the same
value (constants, block ids, loop counters) or ``(32,)`` when lanes differ (thread ids
and what is computed from them); NumPy broadcasting combines the two. Vectors add a
trailing axis, ``(1, n)`` or ``(32, n)``; LLVM structs of floats (wgmma accumulators)
are ``(32, chunks, n)``.

Integers are held in the signed NumPy type of their width (MLIR integers are
signless: the operation decides the signedness), ``i1`` as ``bool``, ``index`` as
``int64``. ``bf16`` has no NumPy type: its values are ``float32`` arrays rounded to
bf16 precision, and memory holds their upper 16 bits.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

LANES = 32

_SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
BF16 = "bf16"


class Unsupported(Exception):
    """A type or operation the interpreter does not handle (turned into a user-facing error with the op)."""


def element_kind(t: ir.Type):
    """``(numpy dtype of registers, bits, kind)`` for a scalar MLIR type; kind is 'i', 'f', 'b', 'bf16'."""
    if isinstance(t, ir.IndexType):
        return np.dtype(np.int64), 64, "i"
    if isinstance(t, ir.IntegerType):
        if t.width == 1:
            return np.dtype(np.bool_), 1, "b"
        if t.width in _SIGNED:
            return np.dtype(_SIGNED[t.width]), t.width, "i"
        raise Unsupported(f"{t} integers")
    if isinstance(t, ir.F16Type):
        return np.dtype(np.float16), 16, "f"
    if isinstance(t, ir.F32Type):
        return np.dtype(np.float32), 32, "f"
    if isinstance(t, ir.F64Type):
        return np.dtype(np.float64), 64, "f"
    if isinstance(t, ir.BF16Type):
        return np.dtype(np.float32), 16, BF16
    if isinstance(t, (ir.Float8E4M3FNType, ir.Float8E5M2Type)):
        return np.dtype(np.uint8), 8, "f8"
    raise Unsupported(f"values of type {t}")


def register_dtype(t: ir.Type) -> np.dtype:
    return element_kind(t)[0]


def memory_dtype(t: ir.Type) -> np.dtype:
    """The NumPy dtype of an element in memory (bf16 as its 16 bits, i1 as a byte)."""
    dtype, bits, kind = element_kind(t)
    if kind == BF16:
        return np.dtype(np.uint16)
    if kind == "b":
        return np.dtype(np.uint8)
    return dtype


def item_bytes(t: ir.Type) -> int:
    return memory_dtype(t).itemsize


def unsigned(x: np.ndarray, bits: int) -> np.ndarray:
    """The same bits as an unsigned array (for unsigned comparisons, division, shifts)."""
    return x.astype(UNSIGNED[bits], copy=False) if bits in UNSIGNED else x


def signed(x: np.ndarray, bits: int) -> np.ndarray:
    return x.astype(_SIGNED[bits], copy=False)


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bf16 (ties to even), still as float32; NaN stays NaN."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    rounded = np.where(np.isnan(x), bits | np.uint32(0x00400000), rounded)
    return rounded.astype(np.uint32).view(np.float32)


def bf16_to_bits(x: np.ndarray) -> np.ndarray:
    return (bf16_round(x).view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def bf16_from_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_memory(values: np.ndarray, t: ir.Type) -> np.ndarray:
    """Register values of type ``t`` as the array to write into memory."""
    dtype, bits, kind = element_kind(t)
    if kind == BF16:
        return bf16_to_bits(values)
    if kind == "b":
        return values.astype(np.uint8)
    return values.astype(dtype, copy=False)


def from_memory(raw: np.ndarray, t: ir.Type) -> np.ndarray:
    """Memory contents (as ``memory_dtype(t)``) as register values of type ``t``."""
    dtype, bits, kind = element_kind(t)
    if kind == BF16:
        return bf16_from_bits(raw)
    if kind == "b":
        return raw != 0
    return raw


def as_float32(raw: np.ndarray, t: ir.Type) -> np.ndarray:
    """Memory contents of a float type (float8 included) as float32 values, as the tensor cores read them."""
    if isinstance(t, ir.Float8E4M3FNType):
        return float8_values(raw, "e4m3")
    if isinstance(t, ir.Float8E5M2Type):
        return float8_values(raw, "e5m2")
    return from_memory(raw, t).astype(np.float32)


def convert_float(values: np.ndarray, t: ir.Type) -> np.ndarray:
    """Float values rounded to the float type ``t`` (nearest even), as registers of ``t``."""
    dtype, bits, kind = element_kind(t)
    if kind == BF16:
        return bf16_round(values.astype(np.float32))
    return values.astype(dtype)


def lane_array(value, dtype) -> np.ndarray:
    """A uniform value as a ``(1,)`` lane array."""
    return np.array([value], dtype=dtype)


def first_active(x: np.ndarray, mask: np.ndarray):
    """The value of the first active lane (uniform values: their only lane)."""
    if x.shape[0] == 1:
        return x[0]
    return x[int(np.argmax(mask))]


def active_values(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The values of the active lanes, one per active lane."""
    if x.shape[0] == 1:
        return np.repeat(x, int(mask.sum()), axis=0)
    return x[mask]


def struct_shape(t: ir.Type) -> tuple[tuple[int, ...], ir.Type]:
    """The array shape and element type of a homogeneous (nested) LLVM struct, e.g. the wgmma
    accumulator ``!llvm.struct<(struct<(f32, ...)>, ...)>`` as ``((chunks, n), f32)``."""
    text = str(t)
    if not text.startswith("!llvm.struct<("):
        raise Unsupported(f"values of type {t}")
    shape, element = _parse_struct(text[len("!llvm.struct<("):-2])
    return shape, ir.Type.parse(element, t.context)


def _parse_struct(body: str):
    """``f32, f32`` -> ((2,), 'f32'); ``struct<(f32, f32)>, struct<(f32, f32)>`` -> ((2, 2), 'f32')."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
    parts.append(body[start:].strip())
    if len(set(parts)) != 1:
        raise Unsupported(f"a struct of mixed members ({body})")
    member = parts[0]
    if member.startswith("struct<("):
        inner, element = _parse_struct(member[len("struct<("):-2])
        return (len(parts), *inner), element
    return (len(parts),), member


def loader(t: ir.Type):
    """A function turning memory contents into register values of type ``t`` (identity where they agree)."""
    dtype, bits, kind = element_kind(t)
    if kind in (BF16, "b"):
        return lambda raw: from_memory(raw, t)
    return lambda raw: raw


def storer(t: ir.Type):
    """A function turning register values of type ``t`` into what memory holds."""
    dtype, bits, kind = element_kind(t)
    if kind in (BF16, "b"):
        return lambda values: to_memory(values, t)
    return lambda values: values.astype(dtype, copy=False)


class Struct:
    """An LLVM struct of differently typed fields (``llvm.cmpxchg``'s ``(old, success)``), indexed as
    ``llvm.extractvalue`` indexes lane arrays: ``struct[:, i]``."""

    __slots__ = ("fields",)

    def __init__(self, fields: tuple):
        self.fields = fields

    def __getitem__(self, key):
        return self.fields[key[1]]


# float8 formats: (exponent bits, mantissa bits, exponent bias, whether the top exponent is IEEE inf/NaN)
FLOAT8_FORMATS = {"e4m3": (4, 3, 7, False), "e5m2": (5, 2, 15, True)}


def float8_values(bits: np.ndarray, name: str) -> np.ndarray:
    """float8 bit patterns (uint8) as float32 values: e4m3 (OCP FN: no infinities, S.1111.111 is NaN) or
    e5m2 (IEEE-like)."""
    exponent_bits, mantissa_bits, bias, ieee = FLOAT8_FORMATS[name]
    b = bits.astype(np.int32)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exponent = (b >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = b & ((1 << mantissa_bits) - 1)
    normal = np.ldexp(1.0 + mantissa / (1 << mantissa_bits), exponent - bias)
    subnormal = np.ldexp(mantissa / (1 << mantissa_bits), 1 - bias)
    values = sign * np.where(exponent == 0, subnormal, normal)
    top = exponent == (1 << exponent_bits) - 1
    if ieee:
        values = np.where(top, np.where(mantissa == 0, sign * np.inf, np.nan), values)
    else:
        values = np.where(top & (mantissa == (1 << mantissa_bits) - 1), np.nan, values)
    return values.astype(np.float32)
