"""Call arguments: what each one is (host array, device array, scalar) and how it reaches a kernel.

* NumPy arrays live on the host: they are copied to the device for the call,
  and copied back after it when the kernel writes them.
* Strided views (transposed, sliced, permuted: any positive element strides whose elements do not
  overlap) are taken as they are, their strides part of the call's signature: device arrays in place,
  NumPy views copied as the span of memory they cover (and only their own elements copied back).
* Device arrays are used in place, with no copy: anything with
  ``__cuda_array_interface__`` (CuPy, Numba, PyTorch) or ``__dlpack__`` (JAX, ...);
  PyTorch tensors take a faster path that reads ``data_ptr()`` directly.
* Python ``int``, ``float`` and ``bool`` become ``int32``, ``float32`` and
  ``bool`` scalars; NumPy scalars keep their dtype (``np.int64(n)`` for wide ints).
* ``bfloat16`` arrays come from NumPy through ``ml_dtypes``, or as torch tensors
  and DLPack device arrays; ``float8_*`` arrays have no NumPy dtype: they come as
  torch tensors or DLPack device arrays, never from NumPy (ml_dtypes included).
* PyTorch tensors on the CPU are host arrays for the interpreter (the back end without a GPU): it runs on the
  NumPy array that shares the tensor's memory (:func:`host_view`), so written results land in the tensor. The
  GPU back end refuses them (a kernel there reads device memory).
"""

from __future__ import annotations

import ctypes
import sys
from typing import NamedTuple

from . import dtypes as dt
from .errors import ArgumentError, SourceLocation
from .signature import ARRAY, SCALAR, ArgSpec, row_major_strides, span_elements
from .target import TMA_ADDRESS_BYTES

HOST = "host"
DEVICE = "device"


class _NumpyAtFirstUse:
    """This module's ``np`` until it is first used: then ``numpy``, imported, and the name ``np`` rebound to it, so
    that later uses find the module itself. Importing nvdsl does not import NumPy (more than half of its time); the
    first call does, by the time it asks whether an argument is a NumPy array."""

    def __getattr__(self, name):
        import numpy
        globals()["np"] = numpy
        return getattr(numpy, name)


np = _NumpyAtFirstUse()

_TORCH_DTYPES = {f"torch.{d.name}": d for d in dt.ARRAY_DTYPES}


def is_torch_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "data_ptr")


def is_cpu_tensor(value) -> bool:
    """Whether ``value`` is a PyTorch tensor in host memory."""
    return is_torch_tensor(value) and value.device.type == "cpu"


def is_cuda_tensor(value) -> bool:
    """Whether ``value`` is a PyTorch tensor in GPU memory."""
    return is_torch_tensor(value) and value.is_cuda


def tensor_guard(tensors):
    """``check(*tensors_of_a_call) -> bool``: one call into torch's C++ (the tensor guards ``torch.compile`` was
    built on) that says whether each tensor has the exact type, dtype, device, shape, strides, ``requires_grad``
    and dispatch keys of the matching one of ``tensors`` (where it lives and which autograd or inference mode the
    call is in among them). About 0.1 us a tensor, against 0.4 us for the attribute reads of the same checks in
    Python. It never reads a tensor's address: the caller checks the start's alignment. None where this torch has
    no such guards, or they do not behave as tested (they are torch's internals): callers check each tensor
    themselves."""
    make = _tested_tensor_guards()
    return None if make is None else make(tensors)


_TENSOR_GUARDS: list = []       # [the guards' maker, or None], known at the first use


def _tested_tensor_guards():
    if not _TENSOR_GUARDS:
        _TENSOR_GUARDS.append(_tensor_guards_if_they_work())
    return _TENSOR_GUARDS[0]


def _tensor_guards_if_they_work():
    """The maker of tensor guards, once they pass and refuse what they should on CPU tensors; else None."""
    torch = sys.modules.get("torch")
    try:
        from torch._C._dynamo.guards import TensorGuards

        def make(tensors):
            tensors = tuple(tensors)
            return TensorGuards(*tensors, dynamic_dims_sizes=[list(t.shape) for t in tensors],
                                dynamic_dims_strides=[list(t.stride()) for t in tensors]).check
        check = make((torch.empty(2, 3), torch.empty(4)))
        other = (torch.empty(3, 2), torch.empty(2, 3, dtype=torch.float64), torch.empty(3, 2).t(),
                 torch.empty(2, 6)[:, ::2], torch.empty(2, 3, requires_grad=True), "x")
        if check(torch.empty(2, 3), torch.empty(4)) and not any(check(x, torch.empty(4)) for x in other):
            return make
    except Exception:       # another torch's internals (no such module, another signature): check in Python
        pass
    return None


def host_view(tensor, name: str = "x", loc: SourceLocation | None = None) -> np.ndarray:
    """The NumPy array that shares a CPU tensor's memory, its strides kept (no copy): ``bfloat16`` as ml_dtypes'
    bfloat16 over the same bits. Refused: dtypes NumPy cannot hold (float8: the interpreter takes them only as
    raw bits) and bfloat16 without ml_dtypes."""
    return host_viewer(tensor, name, loc)(tensor)


def host_viewer(tensor, name: str = "x", loc: SourceLocation | None = None):
    """``view(t)``: :func:`host_view` for CPU tensors of ``tensor``'s dtype, with its checks done (once per dtype)."""
    view = _VIEWERS.get(tensor.dtype)
    if view is None:
        view = _VIEWERS[tensor.dtype] = _viewer(tensor, name, loc)
    return view


_VIEWERS: dict = {}         # torch dtype -> its host_view


def _viewer(tensor, name: str, loc):
    dtype_text = str(tensor.dtype)
    dtype = _TORCH_DTYPES.get(dtype_text)
    if dtype is dt.bfloat16:
        numpy_bf16 = dt.numpy_dtype(dt.bfloat16)
        if numpy_bf16 is not None:
            int16 = sys.modules["torch"].int16
            return lambda t: _detached(t).view(int16).numpy().view(numpy_bf16)
        raise ArgumentError(f"argument '{name}' is a bfloat16 CPU tensor, which the interpreter reads through "
                            "ml_dtypes, not installed here", code="bad-dtype",
                            hint="pip install ml_dtypes, or pass a float32 tensor", loc=loc)
    if dtype is None or dtype in dt.NOT_IN_NUMPY:
        raise ArgumentError(f"argument '{name}' is a CPU tensor of {dtype_text}, which the interpreter cannot "
                            "hold as a NumPy array", code="bad-dtype",
                            hint=f"pass t.view(torch.uint{tensor.element_size() * 8}) to move the raw bits, or a "
                                 "CUDA tensor on a GPU", loc=loc)
    return lambda t: _detached(t).numpy()


def _detached(tensor):
    """The tensor, or where it requires grad (which has no .numpy()) its detached self (the same memory)."""
    return tensor.detach() if tensor.requires_grad else tensor


def cpu_tensor_on_gpu(name: str) -> ArgumentError:
    """The GPU back end's refusal of a CPU tensor."""
    return ArgumentError(f"argument '{name}' is a PyTorch tensor on the CPU, but the kernel runs on the GPU",
                         code="bad-device", hint="pass t.cuda() (used in place), or run in the interpreter on CPU "
                                                 "tensors (NVDSL_BACKEND=interpret)")


class OnHostViews:
    """A program run on the interpreter's NumPy arrays, called with CPU tensors: each call hands it
    :func:`host_view`'s arrays in their place (written results land in the tensors: they share memory)."""

    def __init__(self, program, sample_args):
        self.program = program
        # per tensor: its position, type and dtype, and how it is viewed
        self.tensors = tuple((i, type(a), a.dtype, host_viewer(a)) for i, a in enumerate(sample_args)
                             if is_torch_tensor(a))

    @property
    def written(self) -> frozenset[int]:
        return self.program.written

    def run(self, args, constants_key, stream: int = 0) -> bool:
        if len(args) != len(self.program.specs):
            return False
        args = list(args)
        for i, kind, dtype, view in self.tensors:
            tensor = args[i]
            # A CUDA tensor is the GPU's program's (the interpreter's refuses it); another dtype another signature's
            if type(tensor) is not kind or tensor.dtype is not dtype or not tensor.is_cpu:
                return False
            args[i] = view(tensor)
        return self.program.run(args, constants_key, stream)


def arrays_device(args, default: int) -> int:
    """The GPU a call runs on: that of its first argument in GPU memory which says where it lives (a CUDA tensor,
    a DLPack array), else ``default`` (``Options.device``)."""
    found = {}
    for i, value in enumerate(args):
        if is_torch_tensor(value):
            if value.is_cuda:
                found.setdefault(value.get_device(), i)
        elif hasattr(value, "__dlpack_device__") and not isinstance(value, np.ndarray):
            kind, ordinal = value.__dlpack_device__()
            if kind in (_DL_CUDA, _DL_CUDA_MANAGED):
                found.setdefault(ordinal, i)
    if len(found) > 1:
        raise ArgumentError("arguments " + ", ".join(f"{i} on GPU {d}" for d, i in found.items()) + ": a call's "
                            "arrays live on one GPU", code="bad-device", hint="move them to one device (t.to(...))")
    return next(iter(found), default)


def host_views(args) -> tuple:
    """``args`` with each CPU tensor as its :func:`host_view` (the interpreter's arrays)."""
    return tuple(host_view(a) if is_cpu_tensor(a) else a for a in args)


class ArrayInfo(NamedTuple):
    """A device array's address and layout, read from its producer (a named tuple: made on every call of a device
    array's binder and description, 0.35 us against 1.35 for a frozen dataclass)."""

    pointer: int
    dtype: dt.DType | None
    dtype_text: str
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None      # element strides of a view that is not row-major (see view_strides)
    device_ordinal: int | None
    readonly: bool = False
    keepalive: object = None
    odd_strides: bool = False            # byte strides that are not whole elements


def view_strides(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """The element strides that key a view of ``shape``: None where it is row-major (C-contiguous), else
    ``strides`` with the stride of each axis of extent 1 (never stepped) replaced by the row-major one, so
    that views laid out alike key alike."""
    canonical = row_major_strides(shape)
    if all(extent == 1 or s == c for extent, s, c in zip(shape, strides, canonical)):
        return None
    return tuple(c if extent == 1 else s for extent, s, c in zip(shape, strides, canonical))


def _torch_info(t) -> ArrayInfo:
    dtype_text = str(t.dtype)
    shape = tuple(t.shape)
    return ArrayInfo(t.data_ptr(), _TORCH_DTYPES.get(dtype_text), dtype_text, shape,
                     None if t.is_contiguous() else view_strides(shape, tuple(t.stride())),
                     t.get_device() if t.is_cuda else None)


def _cai_info(value) -> ArrayInfo:
    cai = value.__cuda_array_interface__
    pointer, readonly = cai["data"]
    shape = tuple(cai["shape"])
    typestr = cai["typestr"]
    dtype = dt.from_typestr(typestr)
    strides = cai.get("strides")
    odd = strides is not None and dtype is not None and any(s % dtype.itemsize for s in strides)
    element_strides = None
    if strides is not None and dtype is not None and not odd:
        element_strides = view_strides(shape, tuple(s // dtype.itemsize for s in strides))
    return ArrayInfo(pointer or 0, dtype, typestr, shape, element_strides, None, bool(readonly), odd_strides=odd)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DL_CUDA, _DL_CUDA_MANAGED = 2, 13
_DL_CODES = {0: "i", 1: "u", 2: "f", 4: "bf"}
# DLPack 1.1's float8 codes (kDLFloat8_e4m3fn, kDLFloat8_e5m2): the code names the format, bits are 8.
_DL_FLOAT8 = {10: dt.float8_e4m3fn, 12: dt.float8_e5m2}
_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_info(value) -> ArrayInfo:
    capsule = value.__dlpack__()
    tensor = _DLTensor.from_address(_PyCapsule_GetPointer(capsule, b"dltensor"))
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    code, bits = tensor.dtype.code, tensor.dtype.bits
    if code in _DL_FLOAT8 and bits == 8:
        name = _DL_FLOAT8[code].name
    elif code in _DL_CODES:
        name = {"i": "int", "u": "uint", "f": "float", "bf": "bfloat"}[_DL_CODES[code]] + str(bits)
    else:
        name = f"type code {code} of {bits} bits"
    dtype = dt.BY_NAME.get(name) if tensor.dtype.lanes == 1 else None
    strides = view_strides(shape, tuple(tensor.strides[i] for i in range(tensor.ndim))) if tensor.strides else None
    on_gpu = tensor.device.device_type in (_DL_CUDA, _DL_CUDA_MANAGED)
    return ArrayInfo((tensor.data or 0) + tensor.byte_offset, dtype, f"DLPack {name}", shape, strides,
                     tensor.device.device_id if on_gpu else -1, keepalive=capsule)


def device_array_info(value) -> ArrayInfo | None:
    """Address and layout of a device array, or None when ``value`` is not one."""
    if is_torch_tensor(value):
        return _torch_info(value)
    if hasattr(value, "__cuda_array_interface__"):
        return _cai_info(value)
    if hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray):
        return _dlpack_info(value)
    return None


def array_strides(value) -> tuple[int, ...] | None:
    """The element strides of an array argument that is a strided view (as :func:`view_strides` keys them);
    None for a row-major array and for anything that is not an array (its call then says what is wrong)."""
    if isinstance(value, np.ndarray):
        strides = _numpy_strides(value)
        return None if strides == _ODD else strides
    if is_torch_tensor(value):
        return None if value.is_contiguous() else view_strides(tuple(value.shape), tuple(value.stride()))
    info = device_array_info(value) if hasattr(value, "__cuda_array_interface__") else None
    return None if info is None else info.strides


def _keyer(kind: type):
    """How to key values of one Python type (chosen once per type: this runs on every call)."""
    # A read-only array keys apart from a writeable one, so that a library call's own checks (which name the
    # caller's arrays) see it rather than a plan made for writeable ones.
    if kind is np.ndarray:
        def numpy_key(v):
            flags = v.flags
            return (np.ndarray, v.dtype, v.shape, flags.writeable) if flags.c_contiguous else \
                (np.ndarray, v.dtype, v.shape, flags.writeable, v.strides)
        return numpy_key
    if kind in (int, float, bool):
        return lambda v: kind
    if issubclass(kind, np.generic):
        return lambda v: kind
    if kind.__module__.startswith("torch") and hasattr(kind, "data_ptr"):
        # Where it lives keys it: CPU tensors run in the interpreter, CUDA tensors on their own GPU.
        return lambda v: (kind, v.dtype, v.shape, v.get_device(), v.data_ptr() % TMA_ADDRESS_BYTES != 0) \
            if v.is_contiguous() else (kind, v.dtype, v.shape, v.get_device(), v.stride(),
                                       v.data_ptr() % TMA_ADDRESS_BYTES != 0)

    def generic(v):
        info = device_array_info(v)
        return (kind, info.dtype_text, info.shape, info.strides, info.pointer % TMA_ADDRESS_BYTES != 0,
                info.readonly) if info is not None else (kind, id(v))
    return generic


_KEYERS: dict[type, object] = {}


def signature_key(value):
    """A cheap hashable key: equal keys mean the same trace (kind, dtype, shape, and a view's strides)."""
    kind = type(value)
    keyer = _KEYERS.get(kind)
    if keyer is None:
        keyer = _KEYERS[kind] = _keyer(kind)
    return keyer(value)


_PYTHON_SCALARS = {bool: dt.bool_, int: dt.int32, float: dt.float32}


def describe(value, name: str, loc: SourceLocation | None) -> tuple[ArgSpec, str | None]:
    """The ArgSpec of an argument, and where it lives (HOST, DEVICE, or None for scalars). A torch tensor's is
    found by its signature key where one keyed alike was described before (the library describes its arguments on
    every call: 4.6 -> 0.8 us a tensor)."""
    if is_torch_tensor(value):
        key = (signature_key(value), name)
        found = _DESCRIBED.get(key)
        if found is None:
            found = _described(value, name, loc)
            if len(_DESCRIBED) >= _DESCRIBED_LIMIT:
                _DESCRIBED.clear()
            _DESCRIBED[key] = found
        return found
    return _described(value, name, loc)


# A torch tensor's description by its signature key and name: what the key holds (type, dtype, shape, the strides
# of a view, the device, the start's alignment to 16 bytes) is all describe reads of a tensor (its start is always
# on an element), so a tensor keyed alike is described alike, checks included.
_DESCRIBED: dict = {}
_DESCRIBED_LIMIT = 4096


def _described(value, name: str, loc: SourceLocation | None) -> tuple[ArgSpec, str | None]:
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        dtype = _PYTHON_SCALARS[type(value)] if type(value) in _PYTHON_SCALARS else dt.int32
        if dtype is dt.int32:
            _check_int_fits(value, dtype, name, loc)
        return ArgSpec(name, SCALAR, dtype), None
    if isinstance(value, np.generic):
        dtype = dt.bool_ if isinstance(value, np.bool_) else dt.from_numpy(value.dtype)
        if dtype is None:
            raise _bad_dtype(name, str(value.dtype), loc)
        return ArgSpec(name, SCALAR, dtype), None
    if isinstance(value, np.ndarray):
        dtype = dt.from_numpy(value.dtype)
        if dtype is None and value.dtype.name in {d.name for d in dt.NOT_IN_NUMPY}:  # ml_dtypes' types
            raise ArgumentError(f"argument '{name}' is a NumPy array of {value.dtype.name}; nvdsl takes "
                                f"{value.dtype.name} arrays only from torch or DLPack, never from NumPy",
                                code="bad-dtype", hint=f"pass a torch.{value.dtype.name} tensor on the GPU, or "
                                f"x.view(np.uint{value.dtype.itemsize * 8}) to move the raw bits", loc=loc)
        if dtype is None:
            raise _bad_dtype(name, str(value.dtype), loc)
        if value.ndim == 0:
            raise ArgumentError(f"argument '{name}' is a 0-d array", code="bad-rank",
                                hint="pass a scalar (e.g. x.item() or np.float32(x)) or an array of rank >= 1",
                                loc=loc)
        return ArgSpec(name, ARRAY, dtype, tuple(value.shape), host_strides(value, name, loc)), HOST
    if is_cpu_tensor(value):    # a host array, as its NumPy view (the GPU back end refuses it when it binds it)
        return describe(host_view(value, name, loc), name, loc)
    info = device_array_info(value)
    if info is None:
        raise ArgumentError(f"argument '{name}' is a {type(value).__name__}, which nvdsl cannot pass to a kernel",
                            code="bad-argument",
                            hint="pass a NumPy array, a device array (CuPy, PyTorch, anything with "
                                 "__cuda_array_interface__ or __dlpack__), or a Python/NumPy scalar", loc=loc)
    if info.device_ordinal == -1:
        raise ArgumentError(f"argument '{name}' is a DLPack array that is not in GPU memory",
                            code="bad-device", hint="convert it to a NumPy array, or move it to the GPU",
                            loc=loc)
    if info.dtype is None:
        raise _bad_dtype(name, info.dtype_text, loc)
    if not info.shape:
        raise ArgumentError(f"argument '{name}' is a 0-d array", code="bad-rank",
                            hint="pass a scalar or an array of rank >= 1", loc=loc)
    check_device_layout(info, name, loc)
    return ArgSpec(name, ARRAY, info.dtype, info.shape, info.strides,
                   unaligned=info.pointer % TMA_ADDRESS_BYTES != 0), DEVICE


def _bad_dtype(name, found, loc) -> ArgumentError:
    return ArgumentError(f"argument '{name}' has dtype {found}, which kernels cannot take",
                         code="bad-dtype",
                         hint="supported: " + ", ".join(d.name for d in dt.ARRAY_DTYPES) +
                              " (bool arrays: pass them as uint8; float8 arrays: as torch "
                              "tensors or DLPack device arrays, since NumPy has no such dtype; bfloat16 also "
                              "as a NumPy array of ml_dtypes.bfloat16)", loc=loc)


def _check_int_fits(value, dtype, name, loc):
    lo, hi = dtype.int_range()
    if not lo <= value <= hi:
        raise ArgumentError(f"argument '{name}'={value} does not fit {dtype.name}, the type of Python ints",
                            code="out-of-range", hint="pass np.int64(value) (or np.uint64) for a wider scalar",
                            loc=loc)


_ODD = "odd"          # byte strides that are not whole elements


def _numpy_strides(value: np.ndarray):
    """A NumPy array's element strides as :func:`view_strides` keys them (None when C-contiguous), or _ODD."""
    if value.flags.c_contiguous:
        return None
    if any(s % value.itemsize for s in value.strides):
        return _ODD
    return view_strides(value.shape, tuple(s // value.itemsize for s in value.strides))


def host_strides(value: np.ndarray, name: str, loc) -> tuple[int, ...] | None:
    """The element strides of a NumPy argument that is a strided view (None when C-contiguous), once they pass
    :func:`check_strides`."""
    strides = _numpy_strides(value)
    if strides == _ODD:
        raise ArgumentError(f"argument '{name}' has byte strides {value.strides}, not whole {value.itemsize}-byte "
                            "elements", code="bad-strides", hint="pass np.ascontiguousarray(x)", loc=loc)
    check_strides(value.shape, strides, name, loc, "np.ascontiguousarray(x)")
    return strides


def check_strides(shape, strides, name: str, loc, copy: str) -> None:
    """Refuse a view whose strides kernels cannot take: a negative stride (a reversed view), or elements
    that overlap (a broadcast, stride 0, or an ``as_strided`` trick), which a kernel's writes would race on."""
    if strides is None:
        return
    stepped = sorted((s, extent) for extent, s in zip(shape, strides) if extent > 1)
    if any(s < 0 for s, _ in stepped):
        raise ArgumentError(f"argument '{name}' has a negative stride (element strides {list(strides)})",
                            code="bad-strides", hint=f"pass a copy ({copy}) or the view before it was flipped",
                            loc=loc)
    reach = 1
    for s, extent in stepped:
        if s < reach:
            raise ArgumentError(f"argument '{name}' is a view whose elements overlap (shape {list(shape)}, element "
                                f"strides {list(strides)}): a broadcast or as_strided view", code="bad-strides",
                                hint=f"pass a copy ({copy}); for attention's shared K/V heads, pass k and v with "
                                     "their own Hkv heads (grouped-query attention)", loc=loc)
        reach += s * (extent - 1)


def check_device_layout(info: ArrayInfo, name: str, loc) -> None:
    if info.odd_strides:
        raise ArgumentError(f"argument '{name}' has byte strides that are not whole {info.dtype.itemsize}-byte "
                            "elements", code="bad-strides",
                            hint="pass x.contiguous() (PyTorch) or cupy.ascontiguousarray(x)", loc=loc)
    check_strides(info.shape, info.strides, name, loc, "x.contiguous() (PyTorch) or cupy.ascontiguousarray(x)")
    if info.pointer % info.dtype.itemsize:
        raise ArgumentError(f"argument '{name}' starts at address {info.pointer:#x}, not aligned to its "
                            f"{info.dtype.itemsize}-byte elements", code="misaligned",
                            hint="pass an array that starts on an element boundary (e.g. a fresh copy)",
                            loc=loc)


def is_read_only(array) -> bool:
    """Whether ``array`` may not be written: a NumPy array that is not writeable, or a device array (or its
    :class:`ArrayInfo`) whose producer marked it read-only (``readonly`` in its CUDA array interface)."""
    if is_torch_tensor(array):         # torch has no read-only tensors
        return False
    if isinstance(array, np.ndarray):
        return not array.flags.writeable
    info = array if isinstance(array, ArrayInfo) else device_array_info(array)
    return info is not None and info.readonly


def check_writable(array, name: str, loc) -> None:
    """Refuse a read-only argument (:func:`is_read_only`) that a kernel writes, naming it ``name``."""
    if is_read_only(array):
        raise ArgumentError(f"argument '{name}' is read-only, but a kernel writes it", code="read-only",
                            hint="pass a writeable array (e.g. a copy)", loc=loc)


def check_outputs_writable(outputs: dict, loc) -> None:
    """:func:`check_writable` on each of a library call's outputs by the caller's name (None: an optional output
    not given): the kernels' own checks know only their programs' names, and some outputs are reached through
    scratch arrays."""
    for name, array in outputs.items():
        if array is not None:
            check_writable(array, name, loc)


class DisjointOutputs:
    """The check, per call, that each argument a program writes shares no memory with any other array argument
    (a task kernel's blocks read and write in no set order, so an output over an input, or over another output,
    would make the result depend on that order). ``pairs`` are the (written, other) argument indices to test: both
    host arrays (tested by NumPy) or both device arrays (tested by their addresses). Where two device arrays' spans
    of memory meet, NumPy's exact test decides, on arrays made from the addresses alone (no memory is read): views
    that interleave without a common element (slices of one packed buffer) pass."""

    def __init__(self, specs: tuple[ArgSpec, ...], locations, written):
        self.specs = specs
        self.pairs = tuple((i, j) for i in sorted(written) for j, spec in enumerate(specs)
                           if j != i and spec.kind == ARRAY and locations[i] is not None and
                           locations[i] == locations[j] and not (j in written and j < i))
        self.locations = locations
        #: per argument, the bytes its elements reach from its first element's address (0 when it has none)
        self.spans = tuple(_span_bytes(s) if s.kind == ARRAY else 0 for s in specs)
        self._apart: dict[tuple, bool] = {}     # (i, j, address i, address j) -> no common element

    def check_host(self, args) -> None:
        """Refuse a call whose written host (NumPy) array shares memory with another of its host arrays."""
        for i, j in self.pairs:
            if self.locations[i] == HOST and np.may_share_memory(args[i], args[j]) and \
                    np.shares_memory(args[i], args[j]):
                raise self.error(i, j)

    def check_device(self, addresses) -> None:
        """Refuse a call whose written device array (``addresses``: each argument's, by index) shares memory with
        another of its device arrays."""
        spans = self.spans
        for i, j in self.pairs:
            if self.locations[i] != HOST:
                a, b = addresses[i], addresses[j]
                if a < b + spans[j] and b < a + spans[i]:
                    self.refuse_if_shared(i, j, a, b)

    def refuse_if_shared(self, i: int, j: int, a: int, b: int) -> None:
        """Device arrays ``i`` at ``a`` and ``j`` at ``b``, whose spans meet: refused if they share an element."""
        key = (i, j, a, b)
        apart = self._apart.get(key)
        if apart is None:
            apart = not np.shares_memory(_at_address(self.specs[i], a), _at_address(self.specs[j], b))
            if len(self._apart) >= 256:
                self._apart.clear()
            self._apart[key] = apart
        if not apart:
            raise self.error(i, j)

    def error(self, i: int, j: int) -> ArgumentError:
        return overlapping_arrays(self.specs[i].name, self.specs[j].name)


def overlapping_arrays(written: str, other: str, loc=None) -> ArgumentError:
    """The refusal of a call whose array ``written`` shares memory with its array ``other``; ``arrays`` holds
    both names (a library function renames them to its own parameters': ``kernels.checks.by_callers_names``)."""
    error = ArgumentError(f"argument '{written}' shares memory with argument '{other}'; the kernel writes "
                          f"'{written}' while its blocks, in no set order, read or write '{other}', so the "
                          "result would depend on that order", code="overlapping-arrays",
                          hint=f"write '{written}' into an array of its own (torch.empty_like, np.empty_like) "
                               "and copy it over after the call", loc=loc)
    error.arrays = (written, other)
    return error


def _span_bytes(spec: ArgSpec) -> int:
    return span_elements(spec.shape, spec.element_strides) * spec.dtype.itemsize


class _AddressOnly:
    """An ``__array_interface__`` over memory at an address that NumPy never reads (its overlap tests use the
    address, shape and strides alone)."""

    def __init__(self, spec: ArgSpec, address: int):
        itemsize = spec.dtype.itemsize
        self.__array_interface__ = {"data": (address, True), "shape": tuple(spec.shape), "typestr": f"|V{itemsize}",
                                    "strides": tuple(s * itemsize for s in spec.element_strides), "version": 3}


def _at_address(spec: ArgSpec, address: int):
    return np.asarray(_AddressOnly(spec, address))
