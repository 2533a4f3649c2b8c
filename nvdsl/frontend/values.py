"""Traced scalar values and the Python operators they overload.

Signedness is explicit: a :class:`Value` carries an nvdsl dtype, and the dtype
decides the MLIR operation, never a guess:

========  ===========================  ===========================  ===================
operator  signed int (int*, index)     unsigned int (uint*)         float
========  ===========================  ===========================  ===================
``//``    ``arith.floordivsi`` (floor)  ``arith.divui``              ``floor(a / b)``
``%``     Python modulo (sign of b)     ``arith.remui``              ``a - floor(a/b)*b``
``/``     error: use ``//``             error: use ``//``            ``arith.divf``
``>>``    ``arith.shrsi`` (arithmetic)  ``arith.shrui`` (logical)    error
``<``     ``slt``                       ``ult``                      ordered ``olt``
``!=``    ``ne``                        ``ne``                       unordered ``une``
========  ===========================  ===========================  ===================

``//`` and ``%`` follow Python, so ``-7 // 2 == -4`` on the GPU too.

Promotion: a Python number takes the other operand's dtype (an int that does
not fit is an error); a Python float meets an integer value only through an
explicit ``.to(...)``. Two values of different dtypes combine only when one is
a wider integer of the same signedness (``int32`` with ``index`` gives
``index``); every other mix is a :class:`~nvdsl.errors.TraceError` that names
both dtypes. Shifts by at least the bit width give an undefined result, as in
MLIR and PTX.
"""

from __future__ import annotations

import dis
import sys

import numpy as np
from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mlir_math

from .. import dtypes as dt
from ..errors import TraceError, user_location
from .context import _CURRENT, at_user_line, check_scope, current_kernel, current_scope
from .ranges import Affine, comparison, fitting


def _error(message: str, hint: str | None = None, code: str = "type-mismatch") -> TraceError:
    return TraceError(message, code=code, hint=hint, loc=user_location())


def python_number(x):
    """``x`` as a Python number if it is a NumPy scalar (``np.float16(2)``), else ``x`` unchanged."""
    if isinstance(x, np.generic):
        return x.item()
    return x


def constant(value, dtype: dt.DType) -> "Value":
    """A constant of ``dtype`` inside a kernel body; the value must fit the dtype."""
    current_kernel("nvdsl.constant")
    with at_user_line():
        return _constant(python_number(value), dtype)


def _constant(value, dtype: dt.DType) -> "Value":
    if isinstance(value, bool) and not dtype.is_bool:
        value = int(value)
    exact = None
    if dtype.is_float:
        if not isinstance(value, (int, float)):
            raise _error(f"cannot make a {dtype.name} constant from {value!r}",
                         hint=f"use a Python int or float for a {dtype.name} constant")
        attr = ir.FloatAttr.get(dtype.mlir_type(), float(value))
    else:
        if not isinstance(value, (int, bool)):
            raise _error(f"cannot make a {dtype.name} constant from {value!r}",
                         hint="a float needs an explicit conversion, e.g. x.to(nvdsl.float32)")
        lo, hi = dtype.int_range()
        if not lo <= int(value) <= hi:
            raise _error(f"the constant {value} does not fit {dtype.name} (range {lo}..{hi})",
                         code="out-of-range", hint=f"use a value in {lo}..{hi}, or a wider dtype such as nvdsl.int64")
        value = int(value)
        exact = None if dtype.is_bool else Affine(value)
        if dtype.kind == "u" and value >= 1 << (dtype.bits - 1):
            value -= 1 << dtype.bits  # MLIR stores signless bits; keep the same bit pattern
        attr = ir.IntegerAttr.get(dtype.mlir_type(), value)
    return Value(arith.constant(dtype.mlir_type(), attr), dtype, exact=exact)


def convert(v: "Value", to: dt.DType) -> "Value":
    """``v`` as a Value of dtype ``to``: the conversion ``Value.to`` makes, without its checks of the caller."""
    src = v.dtype
    if src == to:
        return v
    t = to.mlir_type()
    x = v.ir
    if to.is_bool:
        zero = _constant(0, src)
        return v.ne(zero)
    if src.is_bool:
        return Value(arith.extui(t, x) if to.is_int and to.kind != "index"
                     else arith.index_castui(t, x) if to.kind == "index" else arith.uitofp(t, x), to)
    if src.is_int and to.is_int:
        exact = fitting(v.exact, to)  # then no value changes in the conversion
        if src.kind == "index" or to.kind == "index":
            op = arith.index_cast if src.is_signed else arith.index_castui
            return Value(op(t, x), to, exact=exact)
        if to.bits > src.bits:
            return Value((arith.extsi if src.is_signed else arith.extui)(t, x), to, exact=exact)
        if to.bits < src.bits:
            return Value(arith.trunci(t, x), to, exact=exact)
        return Value(x, to, exact=exact)  # same width, other signedness: the same bits reinterpreted
    if src.is_int and to.is_float:
        if src.kind == "index":
            x = arith.index_cast(ir.IntegerType.get_signless(64), x)
        return Value((arith.sitofp if src.is_signed else arith.uitofp)(t, x), to)
    if src.is_float and to.is_int:
        if to.kind == "index":
            i64 = ir.IntegerType.get_signless(64)
            return Value(arith.index_cast(t, arith.fptosi(i64, x)), to)
        return Value((arith.fptosi if to.is_signed else arith.fptoui)(t, x), to)
    if src.is_float and to.is_float:
        if to.bits > src.bits:
            return Value(arith.extf(t, x), to)
        if to.bits < src.bits or src != to:
            if to.bits == src.bits:  # float16 <-> bfloat16 goes through float32
                x = arith.extf(ir.F32Type.get(), x)
            return Value(arith.truncf(t, x), to)
    raise _error(f"no conversion from {src.name} to {to.name}",
                 hint=f"convert in two steps through float32: x.to(nvdsl.float32).to(nvdsl.{to.name})")


def _common_int(a: dt.DType, b: dt.DType) -> dt.DType | None:
    """The wider of two integer dtypes of the same signedness, or None."""
    if not (a.is_int and b.is_int) or a.is_signed != b.is_signed:
        return None
    if a.kind == "index" or b.kind == "index":
        return dt.index
    return a if a.bits >= b.bits else b


def unify(a, b, op: str) -> tuple["Value", "Value"]:
    """Both operands as Values of one dtype, by the promotion rules above (``op`` names the operation in errors)."""
    a, b = python_number(a), python_number(b)
    if isinstance(a, Value) and isinstance(b, Value):
        if a.dtype == b.dtype:
            return a, b
        common = _common_int(a.dtype, b.dtype)
        if common is None:
            raise _error(f"cannot combine {a.dtype.name} and {b.dtype.name} with '{op}'" + _origins(a, b),
                         hint=_mismatch_hint(a, b))
        return convert(a, common), convert(b, common)
    if not isinstance(a, Value) and not isinstance(b, Value):
        raise _error(f"'{op}' of the Python values {a!r} and {b!r}: their dtype is unknown",
                     hint="make one a traced value, e.g. nvdsl.constant(1, nvdsl.int32)")
    value, number, value_first = (a, b, True) if isinstance(a, Value) else (b, a, False)
    if not isinstance(number, (bool, int, float)):
        raise _error(f"cannot combine a traced {value.dtype.name} with {type(number).__name__} "
                     f"{number!r} using '{op}'",
                     hint="use a traced value or a Python int, float or bool as the other operand")
    if isinstance(number, float) and not value.dtype.is_float:
        raise _error(f"cannot combine {value.dtype.name} with the Python float {number!r} using '{op}'"
                     + _origins(value), hint=_mismatch_hint(value, None))
    if value.dtype.is_bool and not isinstance(number, bool):
        raise _error(f"cannot combine bool with the Python number {number!r} using '{op}'",
                     hint="convert the bool first, e.g. b.to(nvdsl.int32)")
    other = _constant(number, value.dtype)
    return (value, other) if value_first else (other, value)


_INT_OPS = {"+": arith.addi, "-": arith.subi, "*": arith.muli,
            "&": arith.andi, "|": arith.ori, "^": arith.xori, "<<": arith.shli}
_FLOAT_OPS = {"+": arith.addf, "-": arith.subf, "*": arith.mulf, "/": arith.divf}


def _CONTRACT():
    return ir.Attribute.parse("#arith.fastmath<contract>")


_CMP_SIGNED = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}
_CMP_UNSIGNED = {"<": "ult", "<=": "ule", ">": "ugt", ">=": "uge", "==": "eq", "!=": "ne"}
_CMP_FLOAT = {"<": "OLT", "<=": "OLE", ">": "OGT", ">=": "OGE", "==": "OEQ", "!=": "UNE"}


def _origins(*values) -> str:
    """`` ('alpha' is ...)`` for the operands whose origin is known."""
    known = [f"{v.origin} is {v.dtype.name}" for v in values if isinstance(v, Value) and v.origin]
    return f" ({'; '.join(known)})" if known else ""


def _mismatch_hint(a: "Value", b: "Value | None") -> str:
    arguments = [v for v in (a, b) if isinstance(v, Value) and v.origin and v.origin.startswith("the scalar")]
    if arguments:
        return ("a Python int argument is passed as int32 and a Python float as float32: pass the type the "
                "kernel computes in (e.g. 2.0, or np.float16(2)), or convert inside with .to(...)")
    other = b.dtype.name if b is not None else "float32"
    return f"convert one side explicitly, e.g. x.to(nvdsl.{other})"


def _in_kernel(what: str, *operands) -> None:
    """Like current_kernel, but an operand that is a runtime scalar argument says how to make it a constant."""
    trace = _CURRENT.get()
    if trace is not None and trace.kernel is None:
        for v in operands:
            hint = v._host_hint() if isinstance(v, Value) else None
            if hint:
                raise TraceError(f"{what} in host code: {v.origin} is only known on the GPU",
                                 code="runtime-scalar", hint=hint, loc=user_location())
    current_kernel(what)


def _truth_use(frame) -> str | None:
    """Which of 'and', 'or', 'not' asked the frame's current instruction for a truth value, if one did."""
    instructions = list(dis.get_instructions(frame.f_code))
    at = next((k for k, ins in enumerate(instructions) if ins.offset == frame.f_lasti), None)
    if at is None:
        return None
    names = [ins.opname for ins in instructions[max(0, at - 1):at + 3]]
    here = instructions[at].opname
    if here == "JUMP_IF_FALSE_OR_POP":                                  # Python 3.10, 3.11
        return "and"
    if here == "JUMP_IF_TRUE_OR_POP":
        return "or"
    if here == "UNARY_NOT" or (here == "TO_BOOL" and "UNARY_NOT" in names[2:3]):
        return "not"
    if at and instructions[at - 1].opname == "COPY":                   # 3.12+: COPY 1, [TO_BOOL], jump
        jump = next((n for n in names[1:] if n.startswith("POP_JUMP")), "")
        return "and" if "FALSE" in jump else "or" if "TRUE" in jump else None
    return None


def binary(op: str, a, b) -> "Value":
    """``a op b`` for the arithmetic or bitwise operator ``op`` (``"+"``, ``"//"``, ``"<<"``, ...), with the
    promotion rules of the module docstring; one operand may be a Python number."""
    _in_kernel(f"the operator '{op}' on traced values", a, b)
    with at_user_line():
        a, b = unify(a, b, op)
        d = a.dtype
        if op in ("&", "|", "^"):
            if not (d.is_int or d.is_bool):
                raise _error(f"'{op}' needs integers or bools, not {d.name}",
                             hint="use integer or bool operands: convert with .to(nvdsl.int32), or combine comparisons")
            both = op == "&" and d.is_bool and a.exact is not None and b.exact is not None
            return Value(_INT_OPS[op](a.ir, b.ir), d, exact=a.exact + b.exact if both else None)
        if op in ("<<", ">>"):
            if not d.is_int:
                raise _error(f"'{op}' needs integers, not {d.name}",
                             hint="shift integers: convert first with .to(nvdsl.int32); scale floats with * or / "
                                  "instead")
            if op == "<<":
                return Value(arith.shli(a.ir, b.ir), d)
            return Value((arith.shrsi if d.is_signed else arith.shrui)(a.ir, b.ir), d)
        if d.is_bool:
            raise _error(f"'{op}' is not defined on bool values",
                         hint="use & | ^ ~ on bools, or convert with .to(nvdsl.int32)")
        if op == "/":
            if not d.is_float:
                raise _error(f"'/' on {d.name} values: true division of integers is not defined here",
                             hint="use '//' for integer (floor) division, or convert to a float type first")
            return Value(arith.divf(a.ir, b.ir), d)
        if op == "//":
            if d.is_float:
                return Value(mlir_math.floor(arith.divf(a.ir, b.ir)), d)
            return Value((arith.floordivsi if d.is_signed else arith.divui)(a.ir, b.ir), d)
        if op == "%":
            return _modulo(a, b)
        if d.is_float:
            # Like nvcc's default (-fmad=true): let a multiply and an add contract into an FMA.
            return Value(_FLOAT_OPS[op](a.ir, b.ir, fastmath=_CONTRACT()), d)
        return Value(_INT_OPS[op](a.ir, b.ir), d, exact=_exact_arithmetic(op, a.exact, b.exact, d))


def _exact_arithmetic(op: str, a: Affine | None, b: Affine | None, dtype: dt.DType) -> Affine | None:
    """The form of ``a op b`` (``+ - *``) where both forms are known and the result's stays affine and fits."""
    if a is None or b is None:
        return None
    return fitting(a + b if op == "+" else a - b if op == "-" else a.times(b), dtype)


def _modulo(a: "Value", b: "Value") -> "Value":
    d = a.dtype
    if d.is_int and not d.is_signed:
        return Value(arith.remui(a.ir, b.ir), d)
    if d.is_float:
        # a - floor(a / b) * b has the divisor's sign, as in Python (NVVM has no lowering for arith.remf).
        quotient = Value(mlir_math.floor(arith.divf(a.ir, b.ir)), d)
        return a - quotient * b
    rem = Value(arith.remsi(a.ir, b.ir), d)
    zero = _constant(0, d)
    # Python's result takes the divisor's sign: fix up a non-zero remainder of the other sign.
    needs_fix = rem.ne(zero) & (rem < zero).ne(b < zero)
    return select(needs_fix, rem + b, rem)


def compare(op: str, a, b) -> "Value":
    """``a op b`` for the comparison ``op`` (``"<"``, ``"=="``, ...) as a bool Value, signed, unsigned or
    float by the operands' dtype; one operand may be a Python number."""
    _in_kernel(f"the comparison '{op}' on traced values", a, b)
    with at_user_line():
        a, b = unify(a, b, op)
        d = a.dtype
        if d.is_float:
            pred = getattr(arith.CmpFPredicate, _CMP_FLOAT[op])
            return Value(arith.cmpf(pred, a.ir, b.ir), dt.bool_)
        table = _CMP_SIGNED if d.is_signed else _CMP_UNSIGNED
        pred = getattr(arith.CmpIPredicate, table[op])
        # Exact forms fit the dtype, so a signed or unsigned comparison compares their values.
        known = a.exact is not None and b.exact is not None and not d.is_bool
        return Value(arith.cmpi(pred, a.ir, b.ir), dt.bool_, exact=comparison(op, a.exact, b.exact) if known else None)


def _power(base, exponent) -> "Value":
    _in_kernel("the operator '**' on traced values", base, exponent)
    exponent = python_number(exponent)
    if isinstance(base, Value) and isinstance(exponent, int) and not isinstance(exponent, bool):
        if exponent < 0:
            raise _error("'**' with a negative integer exponent", hint="use 1 / x**n on floats")
        with at_user_line():
            result, square, n = None, base, exponent
            while n:
                if n & 1:
                    result = square if result is None else result * square
                n >>= 1
                if n:
                    square = square * square
            return result if result is not None else _constant(1, base.dtype)
    with at_user_line():
        a, b = unify(base, exponent, "**")
        if not a.dtype.is_float:
            raise _error(f"'**' on {a.dtype.name} needs a non-negative Python int exponent",
                         hint="use a non-negative Python int exponent (x ** 2), or convert the base with "
                              ".to(nvdsl.float32)")
        return Value(mlir_math.powf(a.ir, b.ir), a.dtype)


class Value:
    """A scalar computed on the GPU while tracing: an MLIR value plus its nvdsl dtype.

    Values overload the arithmetic, bitwise and comparison operators (see the
    module docstring for the exact MLIR operation each one becomes). A Value
    has no Python truth value: branch with :func:`nvdsl.when` or :func:`nvdsl.cond`.

    ``v.ir`` is the MLIR value, for ``mlir.dialects`` ops of your own inside a kernel
    (:func:`nvdsl.wrap` turns their results back into Values). A Value belongs to the
    kernel (or host function) that made it, and only exists while its trace runs.
    """

    __slots__ = ("_ir", "dtype", "scope", "origin", "exact")
    __array_ufunc__ = None  # make NumPy scalars defer to our reflected operators

    def __init__(self, ir_value: ir.Value, dtype: dt.DType, *, scope=None, origin: str | None = None,
                 exact=None):
        self._ir = ir_value
        self.dtype = dtype
        self.scope = scope if scope is not None else current_scope()
        #: what this value is, for error messages (e.g. "the scalar argument 'alpha'"), where known
        self.origin = origin
        #: what tracing knows exactly of it (see ``ranges``): an integer's ``Affine`` form over thread and block
        #: ids and loop trips, a bool's condition (forms that must be <= 0); else None
        self.exact = exact

    @property
    def ir(self) -> ir.Value:
        """The MLIR value (only inside the kernel, or host function, that made it)."""
        check_scope(self.scope, self)
        return self._ir

    def __repr__(self) -> str:
        return f"<nvdsl.Value {self.dtype.name}{': ' + self.origin if self.origin else ''}>"

    __hash__ = object.__hash__

    def __bool__(self):
        word = _truth_use(sys._getframe(1))
        if word is not None:
            raise _error(f"'{word}' on a traced value needs a Python truth value, which a traced value does not "
                         "have (it is only known on the GPU)",
                         hint="combine traced bools with '&' (and), '|' (or) and '~' (not), with parentheses "
                              "around comparisons: (i < n) & (j < m)", code="traced-and-or")
        raise _error("a traced value has no Python truth value (it is only known on the GPU)",
                     hint=self._host_hint() or "branch with 'with nvdsl.when(cond):', pick values with nvdsl.cond "
                          "or nvdsl.select, loop with nvdsl.for_range; combine conditions with & | ~",
                     code="traced-bool")

    def __index__(self):
        raise _error("a traced value cannot be used as a Python integer (it is only known on the GPU)",
                     hint=self._host_hint() or "loop with nvdsl.for_range instead of range(), index arrays "
                                               "with x[i] directly",
                     code="traced-int")

    __int__ = __float__ = __index__

    def _host_hint(self) -> str | None:
        """For a runtime scalar argument used while tracing host code: how to make it a constant."""
        if self.origin and self.origin.startswith("the scalar argument"):
            name = self.origin.split("'")[1]
            return (f"'{name}' is passed positionally, so it is a runtime scalar whose value only the GPU "
                    f"knows; to use it while tracing (sizes, grids, loop counts), pass it by keyword "
                    f"({name}=...), which makes it a compile-time constant")
        return None

    # An array's attributes and indexing, on a scalar: say so instead of an AttributeError or TypeError.
    _ARRAY_ATTRIBUTES = frozenset({"shape", "ndim", "size", "nbytes", "view", "space", "offset", "name",
                                   "atomic_add", "atomic_min", "atomic_max", "atomic_exchange", "atomic_cas"})

    def __getattr__(self, name):
        if name in Value._ARRAY_ATTRIBUTES:
            raise self._not_an_array(f"has no '.{name}'")
        raise AttributeError(f"'Value' object has no attribute '{name}'")

    def __getitem__(self, key):
        raise self._not_an_array("cannot be indexed")

    def __setitem__(self, key, value):
        raise TraceError(f"{self._what()} cannot be assigned into: scalars are passed to kernels by value",
                         code="scalar-write", hint="write results into an array argument, e.g. out[0] = value",
                         loc=user_location())

    def __len__(self):
        raise self._not_an_array("has no len()")

    def __iter__(self):
        raise self._not_an_array("cannot be iterated")

    def _what(self) -> str:
        return f"{self.origin or 'a traced value'} ({self.dtype.name} scalar)"

    def _not_an_array(self, problem: str) -> TraceError:
        return TraceError(f"{self._what()} {problem}: it is a scalar, not an array", code="not-an-array",
                          hint="pass a NumPy or device array where the function expects an array",
                          loc=user_location())

    def _rebuild(self, ir_value: ir.Value) -> "Value":
        """The same kind of value over another MLIR value (loop carries, branch results)."""
        return Value(ir_value, self.dtype)

    def to(self, dtype: dt.DType) -> "Value":
        """Convert to ``dtype``: int widening by the source's signedness, float<->int rounding toward zero."""
        current_kernel("Value.to")
        if not isinstance(dtype, dt.DType):
            raise _error(f"Value.to expects an nvdsl dtype such as nvdsl.float32, got {dtype!r}",
                         hint="pass an nvdsl dtype, e.g. x.to(nvdsl.float32); NumPy and torch dtypes are not accepted")
        with at_user_line():
            return convert(self, dtype)

    def eq(self, other) -> "Value":
        return compare("==", self, other)

    def ne(self, other) -> "Value":
        return compare("!=", self, other)

    def __add__(self, o): return binary("+", self, o)
    def __radd__(self, o): return binary("+", o, self)
    def __sub__(self, o): return binary("-", self, o)
    def __rsub__(self, o): return binary("-", o, self)
    def __mul__(self, o): return binary("*", self, o)
    def __rmul__(self, o): return binary("*", o, self)
    def __truediv__(self, o): return binary("/", self, o)
    def __rtruediv__(self, o): return binary("/", o, self)
    def __floordiv__(self, o): return binary("//", self, o)
    def __rfloordiv__(self, o): return binary("//", o, self)
    def __mod__(self, o): return binary("%", self, o)
    def __rmod__(self, o): return binary("%", o, self)
    def __and__(self, o): return binary("&", self, o)
    def __rand__(self, o): return binary("&", o, self)
    def __or__(self, o): return binary("|", self, o)
    def __ror__(self, o): return binary("|", o, self)
    def __xor__(self, o): return binary("^", self, o)
    def __rxor__(self, o): return binary("^", o, self)
    def __lshift__(self, o): return binary("<<", self, o)
    def __rlshift__(self, o): return binary("<<", o, self)
    def __rshift__(self, o): return binary(">>", self, o)
    def __rrshift__(self, o): return binary(">>", o, self)
    def __pow__(self, o): return _power(self, o)
    def __rpow__(self, o): return _power(o, self)
    def __lt__(self, o): return compare("<", self, o)
    def __le__(self, o): return compare("<=", self, o)
    def __gt__(self, o): return compare(">", self, o)
    def __ge__(self, o): return compare(">=", self, o)
    def __eq__(self, o): return compare("==", self, o)  # builds arith.cmp; Values hash by identity
    def __ne__(self, o): return compare("!=", self, o)

    def __neg__(self):
        current_kernel("unary '-' on traced values")
        with at_user_line():
            if self.dtype.is_float:
                return Value(arith.negf(self.ir), self.dtype)
            if self.dtype.kind == "u" or self.dtype.is_bool:
                raise _error(f"unary '-' on {self.dtype.name} would wrap around",
                             hint="convert to a signed type first, e.g. x.to(nvdsl.int32)")
            return Value(arith.subi(_constant(0, self.dtype).ir, self.ir), self.dtype,
                         exact=fitting(-self.exact if self.exact is not None else None, self.dtype))

    def __pos__(self):
        return self

    def __invert__(self):
        current_kernel("'~' on traced values")
        with at_user_line():
            if self.dtype.is_float:
                raise _error(f"'~' needs an integer or bool, not {self.dtype.name}",
                             hint="use '~' on integers or bools (comparisons), and -x to negate a float")
            # all ones: -1 for signed types, the maximum for unsigned ones, True for bool
            all_ones = -1 if self.dtype.is_signed else True if self.dtype.is_bool else self.dtype.int_range()[1]
            return Value(arith.xori(self.ir, _constant(all_ones, self.dtype).ir), self.dtype)

    def __abs__(self):
        current_kernel("abs() on traced values")
        with at_user_line():
            if self.dtype.is_float:
                return Value(mlir_math.absf(self.ir), self.dtype)
            if self.dtype.kind == "u":
                return self
            return Value(mlir_math.absi(self.ir), self.dtype)


def on_task_tiles(name: str, operands, options: dict):
    """``nvdsl.<name>(*operands, **options)`` where an operand is a task program's tile (``nvdsl.tanh(score / cap)``
    in an attention ``score_mod``): the task layer's tile math of that name, which the tile's class gives as
    ``_nvdsl_math(name, operands, options)``; None where no operand is such a tile."""
    for x in operands:
        math = getattr(type(x), "_nvdsl_math", None)
        if math is not None:
            return math(name, operands, options)
    return None


def elementwise(fn, operands, what: str):
    """``fn`` (on Values) applied to ``operands``: register tiles and vectors among them apply it to each
    element, broadcasting scalars and vectors (they define ``_elementwise``); else ``fn(*operands)``."""
    for x in operands:
        hook = getattr(type(x), "_elementwise", None)
        if hook is not None:
            return hook(fn, list(operands), what)
    return fn(*operands)


def select(condition, if_true, if_false) -> Value:
    """``if_true`` where ``condition`` holds, else ``if_false`` (``arith.select``, no branch).

    On register tiles it selects element by element, as :func:`nvdsl.where`.
    """
    current_kernel("nvdsl.select")
    return elementwise(_select, (condition, if_true, if_false), "nvdsl.select")


def _select(condition, if_true, if_false) -> Value:
    with at_user_line():
        if not (isinstance(condition, Value) and condition.dtype.is_bool):
            raise _error("nvdsl.select needs a traced bool condition (a comparison)",
                         hint="pass a comparison such as ctx.thread_id.x < n; for a Python bool, choose with an "
                              "ordinary if")
        a, b = unify(if_true, if_false, "select")
        return Value(arith.select(condition.ir, a.ir, b.ir), a.dtype)


def minimum(a, b) -> Value:
    """The smaller of two values (signed or unsigned by dtype; NaN-propagating for floats); exact.

    Register tiles and vectors compare element by element, broadcasting as arithmetic does.
    """
    tiles = on_task_tiles("minimum", (a, b), {})
    if tiles is not None:
        return tiles
    current_kernel("nvdsl.minimum")
    return elementwise(lambda x, y: _min_max(x, y, arith.minsi, arith.minui, arith.minimumf, "minimum"),
                       (a, b), "nvdsl.minimum")


def maximum(a, b) -> Value:
    """The larger of two values (signed or unsigned by dtype; NaN-propagating for floats); exact.

    Register tiles and vectors compare element by element, broadcasting as arithmetic does.
    """
    tiles = on_task_tiles("maximum", (a, b), {})
    if tiles is not None:
        return tiles
    current_kernel("nvdsl.maximum")
    return elementwise(lambda x, y: _min_max(x, y, arith.maxsi, arith.maxui, arith.maximumf, "maximum"),
                       (a, b), "nvdsl.maximum")


def _min_max(a, b, signed, unsigned, floating, name) -> Value:
    with at_user_line():
        a, b = unify(a, b, name)
        d = a.dtype
        op = floating if d.is_float else signed if d.is_signed else unsigned
        if d.is_bool:
            raise _error(f"nvdsl.{name} is not defined on bool",
                         hint="use & (min) or | (max) on bools, or convert them first with .to(nvdsl.int32)")
        return Value(op(a.ir, b.ir), d)


def as_value(x, dtype: dt.DType, what: str) -> Value:
    """``x`` (a Value or a Python number) as a Value of exactly ``dtype``."""
    x = python_number(x)
    if isinstance(x, Value):
        if x.dtype != dtype:
            raise _error(f"{what} expects {dtype.name}, got {x.dtype.name}" + _origins(x),
                         hint=_mismatch_hint(x, None) if x.origin else f"convert explicitly with .to(nvdsl.{dtype.name})")
        return x
    if isinstance(x, float) and not dtype.is_float:
        raise _error(f"{what} expects {dtype.name}, got the Python float {x!r}",
                     hint=f"pass a Python int (e.g. int(x)) where {dtype.name} is expected")
    if not isinstance(x, (bool, int, float)):
        raise _error(f"{what} expects a traced value or a Python number, got {type(x).__name__}",
                     hint="pass a traced value or a Python int, float or bool; convert other numbers with int(x) or "
                          "float(x)")
    return _constant(x, dtype)


def index_value(x, what: str) -> ir.Value:
    """``x`` (a Python int or a traced integer of any width) as an ``index`` MLIR value."""
    x = python_number(x)
    if isinstance(x, Value):
        if not x.dtype.is_int:
            raise _error(f"{what} must be an integer, got {x.dtype.name}",
                         hint="convert it to an integer first, e.g. x.to(nvdsl.int32)")
        return convert(x, dt.index).ir
    return as_value(x, dt.index, what).ir
