"""Semantics of the ``arith``, ``math`` and ``index`` dialects on lane arrays.

MLIR integers are signless two's complement: the operation picks signed or unsigned meaning.
Values wrap at their width (NumPy integer arrays do the same). Division by zero and shifts by the
width or more are undefined in MLIR; here they give 0 (shifts) or NumPy's result, never an error.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from . import values as V
from .core import PLAIN, handles

_CMPI = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge", 6: "ult", 7: "ule", 8: "ugt", 9: "uge"}
_CMPF = {0: "false", 1: "oeq", 2: "ogt", 3: "oge", 4: "olt", 5: "ole", 6: "one", 7: "ord", 8: "ueq",
         9: "ugt", 10: "uge", 11: "ult", 12: "ule", 13: "une", 14: "uno", 15: "true"}
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal}


def scalar_type(t: ir.Type) -> ir.Type:
    return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t


def kind_of(value: ir.Value):
    return V.element_kind(scalar_type(value.type))


def _unary(op, c, info, compute):
    a, r = c.slot(op.operands[0]), c.slot(op.result)

    def fn(w):
        env = w.env
        env[r] = compute(env[a])
    return PLAIN, fn


def _binary(op, c, info, compute):
    a, b, r = c.slot(op.operands[0]), c.slot(op.operands[1]), c.slot(op.result)

    def fn(w):
        env = w.env
        env[r] = compute(env[a], env[b])
    return PLAIN, fn


# --- constants -------------------------------------------------------------------------------------

def constant_value(attr: ir.Attribute, t: ir.Type) -> np.ndarray:
    if isinstance(t, ir.VectorType):
        dtype, bits, kind = V.element_kind(t.element_type)
        values = np.array(attr).astype(np.float32 if kind == V.BF16 else dtype).reshape(1, -1)
        return V.bf16_round(values) if kind == V.BF16 else values
    dtype, bits, kind = V.element_kind(t)
    if isinstance(attr, ir.BoolAttr):
        return V.lane_array(attr.value, np.bool_)
    if isinstance(attr, ir.IntegerAttr):
        value = attr.value
        if kind == "b":
            return V.lane_array(value != 0, np.bool_)
        return V.lane_array(value, np.int64).astype(dtype)
    if isinstance(attr, ir.FloatAttr):
        return V.convert_float(V.lane_array(attr.value, np.float64), t)
    raise V.Unsupported(f"the constant {attr}")


@handles("arith.constant", "index.constant", "index.bool.constant", "llvm.mlir.constant")
def _constant(op, c, info):
    value = constant_value(op.attributes["value"], op.result.type)
    value.setflags(write=False)
    c.constants[c.slot(op.result)] = value


@handles("llvm.mlir.undef", "llvm.mlir.poison", "ub.poison")
def _undef(op, c, info):
    t = op.result.type
    r = c.slot(op.result)
    if isinstance(t, ir.VectorType):
        value = np.zeros((1, *t.shape), V.register_dtype(t.element_type))
    elif str(t).startswith("!llvm.struct"):
        shape, element = V.struct_shape(t)
        value = np.zeros((32, *shape), V.register_dtype(element))
    else:
        value = np.zeros(1, V.register_dtype(t))

    def fn(w):
        w.env[r] = value
    return PLAIN, fn


# --- integer arithmetic -----------------------------------------------------------------------------

def _int_binary(numpy_op, bool_op=None):
    def compile_fn(op, c, info):
        dtype, bits, kind = kind_of(op.result)
        return _binary(op, c, info, bool_op if kind == "b" and bool_op is not None else numpy_op)
    return compile_fn


handles("arith.addi", "index.add", "llvm.add")(_int_binary(np.add, np.logical_xor))
handles("arith.subi", "index.sub", "llvm.sub")(_int_binary(np.subtract, np.logical_xor))
handles("arith.muli", "index.mul", "llvm.mul")(_int_binary(np.multiply, np.logical_and))
handles("arith.andi", "index.and", "llvm.and")(_int_binary(np.bitwise_and))
handles("arith.ori", "index.or", "llvm.or")(_int_binary(np.bitwise_or))
handles("arith.xori", "index.xor", "llvm.xor")(_int_binary(np.bitwise_xor))


def _unsigned_op(compute):
    def compile_fn(op, c, info):
        dtype, bits, kind = kind_of(op.result)

        def f(x, y):
            return compute(V.unsigned(x, bits), V.unsigned(y, bits)).astype(dtype)
        return _binary(op, c, info, f)
    return compile_fn


def _safe(y):
    return np.where(y == 0, 1, y)


def _div_trunc(x, y):
    y = _safe(y)
    return (x - np.fmod(x, y)) // y


def _ceildiv(x, y):
    y = _safe(y)
    q = np.floor_divide(x, y)
    return q + ((q * y) != x)


def _ceildiv_unsigned(x, y):
    y = _safe(y)
    return x // y + (x % y != 0)


handles("arith.divsi", "index.divs", "llvm.sdiv")(_int_binary(_div_trunc))
handles("arith.remsi", "index.rems", "llvm.srem")(_int_binary(lambda x, y: np.fmod(x, _safe(y))))
handles("arith.floordivsi", "index.floordivs")(_int_binary(lambda x, y: np.floor_divide(x, _safe(y))))
handles("arith.ceildivsi", "index.ceildivs")(_int_binary(_ceildiv))
handles("arith.divui", "index.divu", "llvm.udiv")(_unsigned_op(lambda x, y: x // _safe(y)))
handles("arith.remui", "index.remu", "llvm.urem")(_unsigned_op(lambda x, y: x % _safe(y)))
handles("arith.ceildivui", "index.ceildivu")(_unsigned_op(_ceildiv_unsigned))
handles("arith.maxsi", "index.maxs")(_int_binary(np.maximum))
handles("arith.minsi", "index.mins")(_int_binary(np.minimum))
handles("arith.maxui", "index.maxu")(_unsigned_op(np.maximum))
handles("arith.minui", "index.minu")(_unsigned_op(np.minimum))


def _shift(kind_name):
    def compile_fn(op, c, info):
        dtype, bits, kind = kind_of(op.result)

        def f(x, y):
            amount = V.unsigned(y, bits)
            too_far = amount >= bits
            amount = np.where(too_far, 0, amount).astype(dtype)
            if kind_name == "shl":
                result = np.left_shift(x, amount)
            elif kind_name == "shrs":
                result = np.right_shift(x, amount)
            else:
                result = np.right_shift(V.unsigned(x, bits), amount.astype(V.unsigned(x, bits).dtype)).astype(dtype)
            return np.where(too_far, 0, result).astype(dtype)
        return _binary(op, c, info, f)
    return compile_fn


handles("arith.shli", "index.shl", "llvm.shl")(_shift("shl"))
handles("arith.shrsi", "index.shrs", "llvm.ashr")(_shift("shrs"))
handles("arith.shrui", "index.shru", "llvm.lshr")(_shift("shru"))


@handles("arith.cmpi", "index.cmp")
def _cmpi(op, c, info):
    if op.name == "index.cmp":      # #index<cmp_predicate slt>
        name = str(op.attributes["pred"]).rstrip(">").split()[-1]
    else:
        name = _CMPI[ir.IntegerAttr(op.attributes["predicate"]).value]
    dtype, bits, kind = kind_of(op.operands[0])
    compare = _COMPARE[name.lstrip("su")] if name not in ("eq", "ne") else _COMPARE[name]
    if name.startswith("u"):
        return _binary(op, c, info, lambda x, y: compare(V.unsigned(x, bits), V.unsigned(y, bits)))
    return _binary(op, c, info, compare)


@handles("arith.select", "llvm.select")
def _select(op, c, info):
    p, a, b, r = (c.slot(v) for v in (*op.operands, op.result))

    def fn(w):
        env = w.env
        cond = env[p]
        x, y = env[a], env[b]
        if isinstance(x, np.ndarray) and x.ndim > cond.ndim:
            cond = cond.reshape(cond.shape + (1,) * (x.ndim - cond.ndim))
        env[r] = np.where(cond, x, y)
    return PLAIN, fn


# --- integer conversions ------------------------------------------------------------------------------

def _int_cast(op, c, info, source_unsigned: bool):
    src_dtype, src_bits, src_kind = kind_of(op.operands[0])
    dst_dtype, dst_bits, dst_kind = kind_of(op.result)

    def compute(x):
        if src_kind == "b":
            return x.astype(dst_dtype) if dst_kind != "b" else x
        if dst_kind == "b":
            return (x & 1).astype(np.bool_)
        if source_unsigned and dst_bits > src_bits:
            return V.unsigned(x, src_bits).astype(dst_dtype)
        return x.astype(dst_dtype)
    return _unary(op, c, info, compute)


handles("arith.extsi", "arith.trunci", "arith.index_cast", "index.casts", "llvm.sext", "llvm.trunc")(
    lambda op, c, info: _int_cast(op, c, info, source_unsigned=False))
handles("arith.extui", "arith.index_castui", "index.castu", "llvm.zext")(
    lambda op, c, info: _int_cast(op, c, info, source_unsigned=True))


@handles("arith.sitofp", "arith.uitofp")
def _int_to_float(op, c, info):
    dtype, bits, kind = kind_of(op.operands[0])
    to = scalar_type(op.result.type)
    unsigned_source = op.name == "arith.uitofp"

    def compute(x):
        if unsigned_source and kind != "b":
            x = V.unsigned(x, bits)
        return V.convert_float(x.astype(np.float64), to)
    return _unary(op, c, info, compute)


@handles("arith.fptosi", "arith.fptoui")
def _float_to_int(op, c, info):
    dtype, bits, kind = kind_of(op.result)
    to_unsigned = op.name == "arith.fptoui"

    def compute(x):
        x = np.trunc(x.astype(np.float64))
        x = np.nan_to_num(x, nan=0.0)
        if to_unsigned:
            return np.clip(x, 0, 2.0 ** bits - 1).astype(np.uint64).astype(V.UNSIGNED[bits]).astype(dtype)
        lo, hi = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1) - 1
        return np.clip(x, lo, hi).astype(dtype)
    return _unary(op, c, info, compute)


@handles("arith.extf", "arith.truncf")
def _float_convert(op, c, info):
    to = scalar_type(op.result.type)
    return _unary(op, c, info, lambda x: V.convert_float(x, to))


@handles("arith.bitcast", "llvm.bitcast")
def _bitcast(op, c, info):
    src = scalar_type(op.operands[0].type)
    to = scalar_type(op.result.type)

    vector_result = isinstance(op.result.type, ir.VectorType)

    def compute(x):
        lanes = x.shape[0]
        raw = np.ascontiguousarray(V.to_memory(x, src)).reshape(lanes, -1).view(V.memory_dtype(to))
        return V.from_memory(raw if vector_result else raw.reshape(lanes), to)
    return _unary(op, c, info, compute)


# --- floating point -----------------------------------------------------------------------------------

def _float_op(compute):
    def compile_fn(op, c, info):
        t = scalar_type(op.result.type)
        dtype, bits, kind = V.element_kind(t)
        if kind == V.BF16:
            return _binary(op, c, info, lambda x, y: V.bf16_round(compute(x, y)))
        return _binary(op, c, info, compute)
    return compile_fn


def _float_unary(compute):
    def compile_fn(op, c, info):
        t = scalar_type(op.result.type)
        dtype, bits, kind = V.element_kind(t)
        if kind == V.BF16:
            return _unary(op, c, info, lambda x: V.bf16_round(compute(x)))
        return _unary(op, c, info, lambda x: compute(x).astype(dtype, copy=False))
    return compile_fn


def _contracts(op) -> bool:
    flags = op.attributes["fastmath"] if "fastmath" in op.attributes else \
        op.attributes["fastmathFlags"] if "fastmathFlags" in op.attributes else None
    return flags is not None and ("contract" in str(flags) or "fast" in str(flags).replace("fastmath", ""))


_MULTIPLIES = ("arith.mulf", "llvm.fmul")


def contracted_multiply(op):
    """The operand (0 or 1) of an add or subtract that LLVM's NVPTX back end fuses with its multiply into
    one ``fma`` (rounded once), or None. It does so when both allow contraction (nvdsl's float operations
    carry ``fastmath<contract>``, like nvcc's -fmad=true) and they are in one block, even where the product
    has other uses (NVPTX fuses aggressively); of two products it takes the one with fewer uses."""
    if not _contracts(op):
        return None
    candidates = []
    for i, value in enumerate(list(op.operands)[:2]):
        if isinstance(value, ir.OpResult):
            producer = value.owner
            if producer.name in _MULTIPLIES and _contracts(producer) and producer.parent == op.parent:
                candidates.append((len(list(value.uses)), i))
    return min(candidates)[1] if candidates else None


def _fused(subtract: bool):
    """``fadd``/``fsub`` of a product, as the ``fma`` the GPU executes (rounded once; for float64 the sum
    is rounded twice here, which differs from the GPU in rare halfway cases)."""
    plain = _float_op(np.subtract if subtract else np.add)

    def compile_fn(op, c, info):
        i = contracted_multiply(op)
        if i is None:
            return plain(op, c, info)
        product = op.operands[i].owner
        a, b = (c.slot(v) for v in product.operands)
        addend, r = c.slot(op.operands[1 - i]), c.slot(op.result)
        t = scalar_type(op.result.type)
        sign = -1.0 if subtract and i == 1 else 1.0        # c - a * b = fma(-a, b, c)
        negate_addend = subtract and i == 0                  # a * b - c = fma(a, b, -c)

        def fn(w):
            env = w.env
            exact = sign * env[a].astype(np.float64) * env[b]
            env[r] = V.convert_float(exact - env[addend] if negate_addend else exact + env[addend], t)
        return PLAIN, fn
    return compile_fn


handles("arith.addf", "llvm.fadd")(_fused(subtract=False))
handles("arith.subf", "llvm.fsub")(_fused(subtract=True))
handles("arith.mulf", "llvm.fmul")(_float_op(np.multiply))
handles("arith.divf", "llvm.fdiv")(_float_op(np.divide))
handles("arith.remf")(_float_op(np.fmod))
handles("arith.maximumf")(_float_op(np.maximum))
handles("arith.minimumf")(_float_op(np.minimum))
handles("arith.maxnumf")(_float_op(np.fmax))
handles("arith.minnumf")(_float_op(np.fmin))
handles("arith.negf", "llvm.fneg")(_float_unary(np.negative))


@handles("arith.cmpf")
def _cmpf(op, c, info):
    name = _CMPF[ir.IntegerAttr(op.attributes["predicate"]).value]
    if name in ("false", "true"):
        value = name == "true"
        return _binary(op, c, info, lambda x, y: np.full(np.broadcast(x, y).shape, value))
    if name == "ord":
        return _binary(op, c, info, lambda x, y: ~(np.isnan(x) | np.isnan(y)))
    if name == "uno":
        return _binary(op, c, info, lambda x, y: np.isnan(x) | np.isnan(y))
    compare = _COMPARE[name[1:]]
    if name[0] == "o":
        if name == "one":
            return _binary(op, c, info, lambda x, y: np.not_equal(x, y) & ~(np.isnan(x) | np.isnan(y)))
        return _binary(op, c, info, compare)
    # unordered: true when either is NaN
    return _binary(op, c, info, lambda x, y: compare(x, y) | np.isnan(x) | np.isnan(y))


# --- math ---------------------------------------------------------------------------------------------

def _math(compute):
    """A math function, computed in float64 and rounded once: within the error bound CUDA documents."""
    return _float_unary(lambda x: compute(x.astype(np.float64)))


for _name, _fn in {"floor": np.floor, "ceil": np.ceil, "absf": np.abs, "sqrt": np.sqrt, "exp": np.exp,
                   "exp2": np.exp2, "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
                   "expm1": np.expm1, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
                   "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos, "sinh": np.sinh, "cosh": np.cosh,
                   "erf": None, "rsqrt": lambda x: 1 / np.sqrt(x), "trunc": np.trunc,
                   "round": lambda x: np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5)),
                   "roundeven": np.rint}.items():
    if _fn is not None:
        handles(f"math.{_name}")(_math(_fn))


@handles("math.erf")
def _erf(op, c, info):
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return _math(erf)(op, c, info)


handles("math.powf")(_float_op(lambda x, y: np.power(x.astype(np.float64), y).astype(x.dtype)))
handles("math.atan2")(_float_op(lambda x, y: np.arctan2(x.astype(np.float64), y).astype(x.dtype)))
handles("math.copysign")(_float_op(np.copysign))


@handles("math.fma")
def _fma(op, c, info):
    a, b, d, r = (c.slot(v) for v in (*op.operands, op.result))
    t = scalar_type(op.result.type)

    def fn(w):
        env = w.env
        exact = env[a].astype(np.float64) * env[b] + env[d]
        env[r] = V.convert_float(exact, t)
    return PLAIN, fn


@handles("math.absi")
def _absi(op, c, info):
    return _unary(op, c, info, np.abs)


@handles("math.ctpop", "llvm.intr.ctpop")
def _ctpop(op, c, info):
    dtype, bits, kind = kind_of(op.result)

    def compute(x):
        u = V.unsigned(x, bits).astype(np.uint64)
        count = np.zeros(u.shape, np.int64)
        for _ in range(bits):
            count += (u & np.uint64(1)).astype(np.int64)
            u = u >> np.uint64(1)
        return count.astype(dtype)
    return _unary(op, c, info, compute)


def _flush_subnormals(x: np.ndarray) -> np.ndarray:
    """``.ftz``: float32 subnormals as zero (of the same sign)."""
    tiny = np.finfo(np.float32).tiny
    return np.where(np.abs(x) < tiny, np.copysign(np.float32(0), x), x).astype(np.float32)


def _approximate(compute, ftz: bool = True):
    """A PTX ``.approx`` instruction: here the float32 rounding of the exact result (within every bound
    the PTX ISA gives), with subnormal inputs and results flushed to zero where the instruction is ``.ftz``."""
    def apply(x):
        x = _flush_subnormals(x) if ftz else x
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            y = compute(x.astype(np.float64)).astype(np.float32)
        return _flush_subnormals(y) if ftz else y
    return apply


_INTRINSICS = {
    "llvm.nvvm.ex2.approx.ftz.f32": _approximate(np.exp2),
    "llvm.nvvm.lg2.approx.ftz.f": _approximate(np.log2),
    "llvm.nvvm.sqrt.approx.ftz.f": _approximate(np.sqrt),
    "llvm.nvvm.rsqrt.approx.ftz.f": _approximate(lambda x: 1 / np.sqrt(x)),
    "llvm.tanh.f32": _approximate(np.tanh, ftz=False),
    "llvm.sqrt.f32": lambda x: np.sqrt(x.astype(np.float64)).astype(np.float32),   # correctly rounded
    "llvm.sqrt.f64": np.sqrt,
}


@handles("llvm.call_intrinsic")
def _call_intrinsic(op, c, info):
    name = ir.StringAttr(op.attributes["intrin"]).value
    compute = _INTRINSICS.get(name)
    if compute is None or len(op.operands) != 1 or len(op.results) != 1:
        raise V.Unsupported(f"the intrinsic {name}")
    return _unary(op, c, info, compute)
