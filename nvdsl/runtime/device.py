"""The CUDA device, its primary context, and checked driver calls (``cuda.bindings.driver``)."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

from ..errors import CudaError, NoDeviceError

_NO_DEVICE_HINT = ("compiling still works without a GPU: use fn.compile(...) to get the PTX and "
                   "cubin, or NVDSL_DUMP_DIR to write them out")
# Errors of a kernel that died on the GPU: they stick to the context, so every later call fails too.
_KERNEL_DIED = {"CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_ILLEGAL_ADDRESS",
                "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
                "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT"}
_KERNEL_DIED_HINT = ("a kernel stopped on the GPU: it trapped (an Mbarrier.try_wait(timeout_ns=...) that "
                     "timed out prints its report first) or faulted (compute-sanitizer locates it); the CUDA "
                     "context is now unusable, so restart the process")


# Imported with this module, which `import nvdsl` leaves to the first call (it is about a third of the import):
# every call that looks for a GPU needs it; a process that calls nothing, or runs NVDSL_BACKEND=interpret, does not.
try:
    from cuda.bindings import driver as _driver
    _DRIVER_MISSING = None
except ImportError as e:
    _driver, _DRIVER_MISSING = None, str(e)


def driver():
    """The cuda-python driver module, or NoDeviceError when cuda-python is missing."""
    if _driver is None:
        raise NoDeviceError("import cuda.bindings.driver", "ModuleNotFoundError", _DRIVER_MISSING,
                            hint="pip install cuda-python; " + _NO_DEVICE_HINT)
    return _driver


def result_name(result) -> str:
    try:
        return result.name
    except AttributeError:
        return f"CUresult({int(result)})"


def check(result_tuple, call: str, error=CudaError, hint: str | None = None):
    """Unpack a cuda-python ``(CUresult, values...)`` tuple, raising a named CudaError on failure."""
    result = result_tuple[0]
    if int(result) != 0:
        cu = driver()
        description = ""
        try:
            err, text = cu.cuGetErrorString(result)
            if int(err) == 0 and text:
                description = text.decode() if isinstance(text, bytes) else str(text)
        except Exception:  # the description is a courtesy; the name says it all
            pass
        name = result_name(result)
        if name in _KERNEL_DIED:
            flush_device_output()
            if hint is None:
                hint = _KERNEL_DIED_HINT
        raise error(call, name, description, hint=hint)
    if len(result_tuple) == 1:
        return None
    if len(result_tuple) == 2:
        return result_tuple[1]
    return result_tuple[1:]


def flush_device_output() -> None:
    """Write out what kernels printed before the host goes on.

    The driver hands device ``printf`` output (a bounded wait's report, then its trap) to the C library's
    ``stdout``, which buffers it when stdout is not a terminal, apart from Python's own buffer; it came out
    whenever the C buffer filled and at exit, so a report could end up after, or in the middle of, what the
    process printed about the error. Flushing the C streams when a kernel is known to have died puts the
    report first, whole.
    """
    try:
        libc = ctypes.CDLL(None)
        libc.fflush(None)
    except (OSError, AttributeError):  # no C library to flush (not a POSIX process): nothing was buffered there
        pass


@dataclass(frozen=True)
class DeviceInfo:
    ordinal: int
    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int
    max_smem_per_block_optin: int
    l2_bytes: int


class Device:
    """One GPU with its retained primary context (the one PyTorch and CuPy use too)."""

    def __init__(self, ordinal: int):
        cu = driver()
        try:
            init = cu.cuInit(0)
        except Exception as e:  # libcuda.so absent: cuda-python raises instead of returning
            raise NoDeviceError("cuInit", "CUDA_ERROR_NO_DEVICE",
                                f"no CUDA driver could be loaded ({e})", hint=_NO_DEVICE_HINT) from None
        check(init, "cuInit", NoDeviceError, hint=_NO_DEVICE_HINT)
        count = check(cu.cuDeviceGetCount(), "cuDeviceGetCount", NoDeviceError, hint=_NO_DEVICE_HINT)
        if count == 0:
            raise NoDeviceError("cuDeviceGetCount", "CUDA_ERROR_NO_DEVICE", "the driver sees no GPU",
                                hint=_NO_DEVICE_HINT)
        if not 0 <= ordinal < count:
            raise NoDeviceError("cuDeviceGet", "CUDA_ERROR_INVALID_DEVICE",
                                f"device {ordinal} asked for, but only {count} present",
                                hint="set Options(device=...) or NVDSL_DEVICE to an existing ordinal")
        self.handle = check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        self.context = check(cu.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self.make_current()
        attr = cu.CUdevice_attribute
        get = lambda a: check(cu.cuDeviceGetAttribute(a, self.handle), "cuDeviceGetAttribute")
        name = check(cu.cuDeviceGetName(256, self.handle), "cuDeviceGetName")
        self.info = DeviceInfo(
            ordinal=ordinal,
            name=name.split(b"\0", 1)[0].decode(),
            compute_capability=(get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
            multiprocessors=get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            max_smem_per_block_optin=get(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            l2_bytes=get(attr.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
        )

    def make_current(self) -> None:
        """Make the primary context current on this thread, where another device's was made current after it (a
        thread's current context is one for all devices). With one device, what this thread made current last
        stays current; with several, torch (cudaSetDevice) may have made another current since, so the driver is
        asked."""
        if len(_DEVICES) <= 1 and getattr(_THREAD, "device", None) is self:
            return
        cu = driver()
        if len(_DEVICES) <= 1 or int(check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")) != int(self.context):
            check(cu.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        _THREAD.device = self

    def synchronize(self) -> None:
        self.make_current()
        check(driver().cuCtxSynchronize(), "cuCtxSynchronize")


_DEVICES: dict[int, Device] = {}
_LOCK = threading.Lock()
_THREAD = threading.local()         # .device: the Device whose context this thread made current last


def device_table() -> dict[int, Device]:
    """The process's Devices by ordinal (more than one: each launch makes its device's context current)."""
    return _DEVICES


def get_device(ordinal: int = 0) -> Device:
    """The process's Device for ``ordinal``, initialising the driver on first use."""
    device = _DEVICES.get(ordinal)
    if device is None:
        with _LOCK:
            device = _DEVICES.get(ordinal)
            if device is None:
                device = _DEVICES[ordinal] = Device(ordinal)
    device.make_current()
    return device


def device_count() -> int:
    """How many GPUs the driver sees; 0 without a driver."""
    try:
        cu = driver()
        if int(cu.cuInit(0)[0]) != 0:
            return 0
        err, count = cu.cuDeviceGetCount()
        return count if int(err) == 0 else 0
    except Exception:
        return 0


def synchronize(device: int = 0) -> None:
    """Wait until all work queued on ``device`` is done (device-side prints appear then)."""
    get_device(device).synchronize()
