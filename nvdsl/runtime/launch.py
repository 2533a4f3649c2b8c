"""Loading a compiled module and running its launch plan with the driver.

A :class:`LoadedProgram` is built once per traced signature. Its per-call path
fills pre-built ``ctypes`` parameter slots in place and calls
``cuLaunchKernel`` with the address of a pre-built pointer array, so a call on
device arrays costs a few Python attribute reads and one driver call per kernel.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading

import numpy as np

from .. import dtypes as dt
from ..errors import ArgumentError, CaptureError, CudaError, LaunchConfigError
from ..signature import ARRAY, ArgSpec, ProgramPlan, TensorMapSpec, span_elements
from ..arguments import (HOST, ArrayInfo, DisjointOutputs, check_device_layout, check_writable, cpu_tensor_on_gpu,
                         device_array_info, is_cuda_tensor, is_torch_tensor, tensor_guard, view_strides)
from ..target import TMA_ADDRESS_BYTES
from .device import Device, check, device_table, driver
from .tensormap import DeviceTensorMaps, is_capturing

_DEFAULT_STATIC_SMEM_LIMIT = 48 * 1024
_DESCRIPTOR_SETS = 256          # sets of descriptors a program keeps by their arrays' addresses
_CUBIN_REJECTED = {"CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_NO_BINARY_FOR_GPU",
                   "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "CUDA_ERROR_INVALID_SOURCE"}


class LaunchError(CudaError):
    """The driver refused or failed a kernel launch."""


def stream_handle(stream) -> int:
    """A raw CUstream handle from None, an int, a CUstream, a torch or CuPy stream."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr", "handle"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise ArgumentError(f"stream={stream!r} is not a CUDA stream", code="bad-stream",
                            hint="pass a torch.cuda.Stream, a CuPy stream, a cuda-python CUstream or an int handle"
                            ) from None


def torch_current_stream(ordinal: int):
    """``current()``: the raw handle of torch's current stream on GPU ``ordinal`` (torch is imported: its tensors
    were passed)."""
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)      # what torch's compiled code reads: ~0.1 us
    if raw is not None:
        return functools.partial(raw, ordinal)                      # no Python frame between
    return lambda: torch.cuda.current_stream(ordinal).cuda_stream


def torch_capturing():
    """``capturing()``: whether torch's current stream is being captured into a CUDA graph (its C function where
    this torch has it, without the Python function around it)."""
    torch = sys.modules["torch"]
    return getattr(torch._C, "_cuda_isCurrentStreamCapturing", None) or torch.cuda.is_current_stream_capturing


def _uses_torch_gpu(args) -> int | None:
    """The GPU of the call's first CUDA torch tensor, or None."""
    for value in args:
        if is_cuda_tensor(value):
            return value.get_device()
    return None


def call_stream(args, stream: int) -> int:
    """The stream a call launches on: ``stream``, or torch's current stream where none was given (0) and torch
    tensors on a GPU were passed."""
    if stream:
        return stream
    ordinal = _uses_torch_gpu(args)
    return stream if ordinal is None else torch_current_stream(ordinal)()


def refuse_while_capturing(args, stream: int, name: str) -> None:
    """Refuse to compile or load a program while the call's stream is being captured into a CUDA graph: loading
    allocates and copies, which a capture forbids (a global capture would be invalidated; a relaxed one would
    record a graph without them)."""
    if is_capturing(call_stream(args, stream)):
        raise CaptureError(f"'{name}' is called with a new signature while its stream is being captured into a "
                           "CUDA graph; compiling and loading its kernels cannot be captured", code="capture-miss",
                           hint="call it once before capture with the same shapes, dtypes and devices (a warm-up "
                                "iteration), then capture")


def load_module(device: Device, cubin: bytes | None, ptx: str, chip: str):
    """Load the cubin (or, where there is none or the driver rejects it, JIT the PTX)."""
    cu = driver()
    major, minor = device.info.compute_capability
    wanted = int("".join(ch for ch in chip if ch.isdigit()))
    if wanted != major * 10 + minor:
        raise CudaError("cuModuleLoadData", "CUDA_ERROR_NO_BINARY_FOR_GPU",
                        f"the kernels were compiled for {chip}, but {device.info.name} is sm_{major}{minor}",
                        hint=f"compile with Options(chip='sm_{major}{minor}') (Hopper-only features need sm_90a)")
    if cubin is not None:
        result = cu.cuModuleLoadData(cubin)
        if int(result[0]) == 0:
            return result[1]
        if result[0].name not in _CUBIN_REJECTED:
            check(result, "cuModuleLoadData (cubin)")
    return check(cu.cuModuleLoadData(ptx.encode() + b"\0"), "cuModuleLoadData (PTX)")


class LoadedProgram:
    """A compiled plan bound to a device and to one call signature.

    :meth:`run` checks that a call has this signature while it fills the parameter slots: one small
    function per argument does both, so the path from a call to ``cuLaunchKernel`` reads each
    argument once.
    """

    def __init__(self, device: Device, plan: ProgramPlan, module, specs: tuple[ArgSpec, ...],
                 locations: tuple[str | None, ...], written: frozenset[int], name: str, sample_args,
                 constants_key=(), disjoint: DisjointOutputs | None = None):
        """``sample_args`` are the first call's arguments: their types (part of the signature) pick the
        binders; ``constants_key`` is the keyed form of its compile-time constants; ``disjoint``, where given,
        refuses calls whose written arrays share memory with other arrays."""
        cu = driver()
        self._cu = cu
        self.device = device
        self.name = name
        self.specs = specs
        self.module = module
        self.constants_key = constants_key
        self._disjoint = disjoint
        self._lock = threading.Lock()
        self._slots = [dt.ctype(dt.uint64 if s.kind == ARRAY else s.dtype)() for s in specs]
        # Scratch arrays (nvdsl.empty / zeros) are parameters after the arguments, allocated per call.
        self._scratch = plan.scratch
        self._all_specs = specs + tuple(ArgSpec(f"scratch{j}", ARRAY, s.dtype, s.shape, s.strides)
                                        for j, s in enumerate(plan.scratch))
        self._slots += [ctypes.c_uint64() for _ in plan.scratch]
        self._host = [i for i, where in enumerate(locations) if where == HOST]
        self._written = written
        self._written_host = [i for i in self._host if i in written]
        self._binders = [self._binder(i, spec, locations[i], sample_args[i]) for i, spec in enumerate(specs)]
        # Torch tensors' calls launch on torch's current stream when given none.
        self._current_stream = torch_current_stream(device.info.ordinal) \
            if _uses_torch_gpu(sample_args) is not None else None
        self._torch_capturing = torch_capturing() if self._current_stream is not None else None
        # TMA descriptors: one slot each, filled after the arrays' pointers are known.
        self._tensormaps: dict[TensorMapSpec, tuple] = {}
        # the descriptors of all of them by their arrays' addresses (the generated run's one lookup per call)
        self.descriptor_sets: dict[tuple, tuple] = {}
        self._launches, self._launch_calls = [], []
        for launch in plan.launches:
            func = check(cu.cuModuleGetFunction(module, launch.kernel.encode()), "cuModuleGetFunction")
            self._prepare_shared_memory(func, launch)
            params = (ctypes.c_void_p * max(1, len(launch.params)))(
                *[ctypes.addressof(self._param_slot(p)) for p in launch.params])
            config = _dependent_launch_config(cu, launch) if launch.overlaps_previous else None
            self._launches.append((func, params, config))  # params: kept alive for the driver's reads
            self._launch_calls.append((_launcher(cu, func, launch, ctypes.addressof(params), config),
                                       launch.kernel))
        if not (self._host or self._scratch):    # the common case: one function from the call to the driver
            self.run = _fused_run(self, plan, locations, sample_args)

    def _param_slot(self, source):
        if isinstance(source, int):
            return self._slots[source]
        if source not in self._tensormaps:
            array = self._all_specs[source.arg]
            self._tensormaps[source] = (ctypes.c_uint64(), self._slots[source.arg],
                                        DeviceTensorMaps(self.device, source, array.dtype, array.shape, array.name,
                                                         array.strides))
        return self._tensormaps[source][0]

    def _prepare_shared_memory(self, func, launch) -> None:
        cu = self._cu
        attribute = cu.CUfunction_attribute
        static = check(cu.cuFuncGetAttribute(attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func),
                       "cuFuncGetAttribute")
        limit = self.device.info.max_smem_per_block_optin
        if static + launch.smem > limit:
            raise LaunchConfigError(
                f"kernel '{launch.kernel}' needs {static + launch.smem} bytes of shared memory per block "
                f"({static} static + {launch.smem} dynamic), but {self.device.info.name} allows at most "
                f"{limit}", code="smem-too-large", hint="use smaller tiles or fewer pipeline stages")
        if launch.smem > _DEFAULT_STATIC_SMEM_LIMIT - static:
            check(cu.cuFuncSetAttribute(func, attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        launch.smem), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")

    def _binder(self, i: int, spec: ArgSpec, where: str | None, sample):
        """A function of the call's arguments: False when argument ``i`` does not have this signature's
        kind, dtype and shape; else True, with its parameter slot filled (device arrays and scalars)."""
        kind = type(sample)
        if spec.kind != ARRAY:
            return _scalar_binder(i, spec, kind, self._slots[i])
        if where == HOST:
            if is_torch_tensor(sample):
                raise cpu_tensor_on_gpu(spec.name)
            dtype, shape = sample.dtype, sample.shape
            if spec.strides is None:
                return lambda args: type(args[i]) is kind and args[i].dtype == dtype and args[i].shape == shape and \
                    args[i].flags.c_contiguous
            byte_strides = sample.strides
            return lambda args: type(args[i]) is kind and args[i].dtype == dtype and args[i].shape == shape and \
                args[i].strides == byte_strides
        slot, name, shape, strides, unaligned = self._slots[i], spec.name, spec.shape, spec.strides, spec.unaligned
        itemsize, ordinal, written = spec.dtype.itemsize, self.device.info.ordinal, i in self._written
        if is_torch_tensor(sample):
            torch_dtype = sample.dtype
            sample_stride = sample.stride()

            def bind_tensor(args):
                value = args[i]
                if type(value) is not kind or value.dtype is not torch_dtype or value.shape != shape:
                    return False
                if strides is None:
                    if not value.is_contiguous():
                        return False
                elif value.stride() != sample_stride and view_strides(shape, tuple(value.stride())) != strides:
                    return False
                pointer = value.data_ptr()
                if (pointer % TMA_ADDRESS_BYTES != 0) is not unaligned:    # traced for the other alignment
                    return False
                device = value.get_device()
                if device != ordinal:       # a CPU tensor (the interpreter's) or another GPU's: another program
                    return False
                if not pointer % itemsize:
                    slot.value = pointer
                    return True
                info = ArrayInfo(pointer, spec.dtype, str(value.dtype), tuple(value.shape), strides, device)
                slot.value = _checked_pointer(info, name, ordinal, written)
                return True
            return bind_tensor
        dtype_text = device_array_info(sample).dtype_text

        def bind_device_array(args):
            value = args[i]
            if type(value) is not kind:
                return False
            info = device_array_info(value)
            if info is None or info.dtype_text != dtype_text or info.shape != shape or info.strides != strides or \
                    (info.pointer % TMA_ADDRESS_BYTES != 0) is not unaligned:
                return False
            slot.value = _checked_pointer(info, name, ordinal, written)
            return True
        return bind_device_array

    def run(self, args, constants_key, stream: int) -> bool:
        """Launch the plan on these arguments, or return False (launching nothing) when they do not
        have this program's signature."""
        if len(args) != len(self._binders) or constants_key != self.constants_key:
            return False
        if not stream and self._current_stream is not None:
            stream = self._current_stream()
        if len(device_table()) > 1:     # the context of this program's device, where another's was made current
            self.device.make_current()
        self._lock.acquire()  # the slots are shared: bind and launch as one step (`with` costs twice as much)
        try:
            for bind in self._binders:
                if not bind(args):
                    return False
            if self._disjoint is not None:
                self._disjoint.check_host(args)
                self._disjoint.check_device([slot.value for slot in self._slots])
            if self._host or self._scratch:
                self._run_with_memory(args, stream)
            elif self._tensormaps:
                self._launch_all(stream)
            else:  # the common case, inlined: device arrays and scalars straight to the driver
                for launch, kernel in self._launch_calls:
                    result = launch(stream)[0]
                    if result:
                        check((result,), f"cuLaunchKernel({kernel})", LaunchError)
        finally:
            self._lock.release()
        return True

    def capturing(self, stream: int) -> bool:
        """Whether ``stream`` is being captured, so that the descriptors a capture reads are kept. With one device,
        torch's own check of its current stream (a fraction of a driver call); with several, the driver's: torch's
        reads its current device's stream and may make that device's context current. Other captures are seen
        when a new address needs a descriptor."""
        if self._current_stream is None:
            return False
        if len(device_table()) > 1:
            return is_capturing(stream)
        return self._torch_capturing()

    def descriptors(self, addresses: tuple, stream: int, captured: bool) -> tuple:
        """The device addresses of the program's descriptors (in order) for arrays at ``addresses`` (one per
        descriptor), from each one's :class:`DeviceTensorMaps`; kept in :attr:`descriptor_sets` for the next call
        with the same addresses unless one was written in a capture (it holds the descriptor only once the graph
        runs) or any made room by freeing the ones it had (which the sets may hold)."""
        maps = [maps for _, _, maps in self._tensormaps.values()]
        freed = [m.freed for m in maps]
        found = tuple(m.pointer_for(address, stream, captured) for m, address in zip(maps, addresses))
        if [m.freed for m in maps] != freed or len(self.descriptor_sets) >= _DESCRIPTOR_SETS:
            self.descriptor_sets.clear()
        if all(m.known.get(address) == pointer for m, address, pointer in zip(maps, addresses, found)):
            self.descriptor_sets[addresses] = found
        return found

    def _launch_all(self, stream: int) -> None:
        captured = self.capturing(stream)
        for slot, array_slot, maps in self._tensormaps.values():
            slot.value = maps.pointer_for(array_slot.value, stream, captured)
        for launch, kernel in self._launch_calls:
            result = launch(stream)[0]
            if result:
                check((result,), f"cuLaunchKernel({kernel})", LaunchError)

    def _run_with_memory(self, args, stream: int) -> None:
        """Launch with device memory of the call's own: copies of NumPy arguments (copied back when
        written; the call then waits for the GPU) and scratch arrays, all freed stream-ordered."""
        cu = self._cu
        if self._host and is_capturing(stream):
            raise CaptureError(f"'{self.name}' copies its NumPy arguments to and from the GPU, which a CUDA graph "
                               "cannot capture", code="capture-host-array",
                               hint="pass device arrays (torch CUDA tensors) to a call that is captured")
        allocations = []
        try:
            for j, scratch in enumerate(self._scratch):
                pointer = check(cu.cuMemAllocAsync(max(1, scratch.nbytes), stream), "cuMemAllocAsync")
                allocations.append(pointer)
                self._slots[len(self.specs) + j].value = int(pointer)
                if scratch.zero:
                    check(cu.cuMemsetD8Async(pointer, 0, scratch.nbytes, stream), "cuMemsetD8Async")
            spans = {}
            for i in self._host:
                array, spec = args[i], self.specs[i]
                if i in self._written:
                    check_writable(array, spec.name, None)
                # A strided view goes over as the span of memory from its first element to its last (gaps too:
                # they belong to the array it views); a row-major array's span is the array.
                nbytes = spans[i] = array.nbytes if spec.strides is None else \
                    span_elements(spec.shape, spec.strides) * array.dtype.itemsize
                if nbytes == 0:
                    self._slots[i].value = 0
                    continue
                pointer = check(cu.cuMemAllocAsync(nbytes, stream), "cuMemAllocAsync")
                allocations.append(pointer)
                self._slots[i].value = int(pointer)
                check(cu.cuMemcpyHtoDAsync(pointer, array.ctypes.data, nbytes, stream), "cuMemcpyHtoDAsync")
            self._launch_all(stream)
            staged = []
            for i in self._written_host:
                array, nbytes = args[i], spans[i]
                if not nbytes:
                    continue
                if self.specs[i].strides is None:
                    check(cu.cuMemcpyDtoHAsync(array.ctypes.data, self._slots[i].value, nbytes, stream),
                          "cuMemcpyDtoHAsync")
                else:       # only the view's own elements come back: the gaps may be another argument's
                    staging = np.empty(nbytes, np.uint8)
                    check(cu.cuMemcpyDtoHAsync(staging.ctypes.data, self._slots[i].value, nbytes, stream),
                          "cuMemcpyDtoHAsync")
                    staged.append((array, staging))
            if staged:
                check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize", LaunchError)
                for array, staging in staged:
                    np.copyto(array, np.lib.stride_tricks.as_strided(staging.view(array.dtype), array.shape,
                                                                     array.strides))
        finally:
            for pointer in allocations:
                cu.cuMemFreeAsync(pointer, stream)
            if self._host:
                check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize", LaunchError)


def _fused_run(program: LoadedProgram, plan: ProgramPlan, locations, sample_args):
    """:meth:`LoadedProgram.run` for a program of device arrays and scalars, as one generated function: the checks
    of its aligned torch tensors in one call of a tensor guard (see ``arguments.tensor_guard``) and one test of
    their addresses' alignment, the checks of float scalars inlined, then the descriptors' pointers (one dictionary
    read by the arrays' addresses, where they came together before) and each ``cuLaunchKernel`` with its
    arguments bound. A tensor the guard refuses (another ``requires_grad`` or inference mode than the first
    call's, a view laid out alike with other strides, or a signature of its own) is checked alone, as where this
    torch has no guards (contiguous aligned tensors inlined), and anything else goes to its binder, which decides;
    a call whose tensors pass that way teaches the guard their flavour (up to :data:`_GUARD_FLAVOURS`). Per call
    it saves a Python call per argument and per launch, the attribute reads of the general method and 0.3 us per
    tensor (0.6 us with a descriptor) on a 2-core CI host."""
    names = {"acquire": program._lock.acquire, "release": program._lock.release, "CK": program.constants_key,
             "check": check, "LaunchError": LaunchError, "launch_kernel": program._cu.cuLaunchKernel,
             "ordinal": program.device.info.ordinal}
    count = len(program._binders)
    lines = ["def run(args, constants_key, stream):",
             f"    if len(args) != {count} or constants_key != CK:",
             "        return False",
             f"    {''.join(f'a{i}, ' for i in range(count))}= args" if count else ""]
    torch_tensors = program._current_stream is not None
    if torch_tensors:           # torch's current stream when none is given (see LoadedProgram.run)
        names.update({"current_stream": program._current_stream, "capturing": program.capturing,
                      "torch_capturing": program._torch_capturing})
        lines += ["    if not stream:", "        stream = current_stream()"]
    names.update({"DEVICES": device_table(), "make_current": program.device.make_current})
    lines += ["    if len(DEVICES) > 1:", "        make_current()",
              "    acquire()",
              "    try:"]
    guarded = [i for i, (spec, where, sample) in enumerate(zip(program.specs, locations, sample_args))
               if spec.kind == ARRAY and where != HOST and is_torch_tensor(sample) and not spec.unaligned]
    guard = _Guard.of(names, [sample_args[i] for i in guarded]) if guarded else None
    addressed = {spec.arg for spec in program._tensormaps}     # arguments whose address picks a descriptor
    one_by_one = [_bound_alone(program, i, names, spec, where, sample, i in addressed)
                  for i, (spec, where, sample) in enumerate(zip(program.specs, locations, sample_args))]
    if guard is not None:
        tensors = ", ".join(f"a{i}" for i in guarded)
        pointers = " | ".join(f"(p{i} := a{i}.data_ptr())" for i in guarded)
        lines += [f"        if guard({tensors}) and not ({pointers}) & {TMA_ADDRESS_BYTES - 1}:"]
        lines += [f"            slot{i}.value = p{i}" for i in guarded]
        lines += ["        else:"]
        lines += ["    " + line for i in guarded for line in one_by_one[i]]
        lines += [f"            learn({tensors})"]
        names["learn"] = guard.learn
    for i in range(count):
        if guard is None or i not in guarded:
            lines += one_by_one[i]
    lines += _disjoint_lines(program, names)
    if program._tensormaps:
        # LoadedProgram.capturing, its common case (one device) inlined
        lines.append("        captured = (torch_capturing() if len(DEVICES) <= 1 else capturing(stream))"
                     if torch_tensors else "        captured = False")
        addresses = "(" + "".join(f"p{spec.arg}, " for spec in program._tensormaps) + ")"
        names.update({"descriptor_sets": program.descriptor_sets.get, "descriptors": program.descriptors})
        lines += [f"        if captured or (found := descriptor_sets({addresses})) is None:",
                  f"            found = descriptors({addresses}, stream, captured)",
                  "        " + "".join(f"map{j}.value, " for j in range(len(program._tensormaps))) + "= found"]
        names.update({f"map{j}": slot for j, (slot, _, _) in enumerate(program._tensormaps.values())})
    for k, (launch, (func, address, config)) in enumerate(zip(plan.launches, program._launches)):
        (gx, gy, gz), (bx, by, bz) = launch.grid, launch.block
        names.update({f"F{k}": func, f"kernel{k}": f"cuLaunchKernel({launch.kernel})"})
        if config is None:
            lines += [f"        result = launch_kernel(F{k}, {gx}, {gy}, {gz}, {bx}, {by}, {bz}, {launch.smem}, "
                      f"stream, {ctypes.addressof(address)}, 0)[0]"]
        else:
            names.update({f"config{k}": config, "launch_kernel_ex": program._cu.cuLaunchKernelEx})
            lines += [f"        config{k}.hStream = stream",
                      f"        result = launch_kernel_ex(config{k}, F{k}, {ctypes.addressof(address)}, 0)[0]"]
        lines += ["        if result:",
                  f"            check((result,), kernel{k}, LaunchError)"]
    lines += ["    finally:", "        release()", "    return True"]
    source = "\n".join(lines)
    exec(compile(source, f"<nvdsl run of {program.name}>", "exec"), names)
    names["run"].source = source       # what ran, for a reader (tools/launch_probe.py times it piece by piece)
    return names["run"]


def _disjoint_lines(program: LoadedProgram, names: dict) -> list[str]:
    """The lines of the generated run that test, once the slots hold the call's addresses, whether a written array
    and another array's spans of memory meet (``DisjointOutputs.check_device`` inlined): where they do,
    ``refuse_if_shared`` decides."""
    disjoint = program._disjoint
    if disjoint is None:
        return []
    spans = disjoint.spans
    pairs = [(i, j) for i, j in disjoint.pairs if spans[i] and spans[j]]
    involved = sorted({k for pair in pairs for k in pair})
    names["refuse_if_shared"] = disjoint.refuse_if_shared
    lines = [f"        q{k} = slot{k}.value" for k in involved]
    for i, j in pairs:
        lines += [f"        if q{i} < q{j} + {spans[j]} and q{j} < q{i} + {spans[i]}:",
                  f"            refuse_if_shared({i}, {j}, q{i}, q{j})"]
    return lines


def _bound_alone(program: LoadedProgram, i: int, names: dict, spec: ArgSpec, where, sample, addressed: bool
                 ) -> list[str]:
    """The lines of the generated run that check argument ``i`` and fill its slot by itself: a contiguous aligned
    torch tensor's and a float scalar's checks inlined, anything else (or anything that fails them) handed to its
    binder; ``addressed``: the array's address is left in ``p{i}`` (a descriptor's lookup reads it)."""
    names.update({f"bind{i}": program._binders[i], f"slot{i}": program._slots[i]})
    inlined = []
    if spec.kind == ARRAY and where != HOST and is_torch_tensor(sample) and spec.strides is None and \
            not spec.unaligned:
        names.update({f"K{i}": type(sample), f"D{i}": sample.dtype, f"S{i}": spec.shape})
        inlined = [f"        if type(a{i}) is K{i} and a{i}.dtype is D{i} and a{i}.shape == S{i} and "
                   f"a{i}.is_contiguous() and not (p{i} := a{i}.data_ptr()) & {TMA_ADDRESS_BYTES - 1} and "
                   f"a{i}.get_device() == ordinal:",
                   f"            slot{i}.value = p{i}"]
    elif spec.kind != ARRAY and type(sample) is float and spec.dtype.is_float and spec.dtype.bits >= 32:
        inlined = [f"        if type(a{i}) is float:", f"            slot{i}.value = a{i}"]
    branch = "        elif" if inlined else "        if"
    if addressed:
        return inlined + [f"{branch} bind{i}(args):", f"            p{i} = slot{i}.value", "        else:",
                          "            return False"]
    return inlined + [f"{branch} not bind{i}(args):", "            return False"]


#: How many flavours of a program's tensors (``requires_grad``, inference mode, ...) its guard learns.
_GUARD_FLAVOURS = 4


class _Guard:
    """The tensor guard of a generated run (``names["guard"]``): one check per flavour of the tensors seen, the
    first call's, then those of calls that passed the one-by-one checks."""

    def __init__(self, names: dict, check):
        self.names, self.checks = names, [check]
        names["guard"] = check

    @classmethod
    def of(cls, names: dict, samples) -> "_Guard | None":
        check = tensor_guard(samples)
        return None if check is None else cls(names, check)

    def learn(self, *tensors) -> None:
        if len(self.checks) >= _GUARD_FLAVOURS:
            return
        checks = self.checks = self.checks + [tensor_guard(tensors)]

        def guard(*tensors):
            for check in checks:
                if check(*tensors):
                    return True
            return False
        self.names["guard"] = guard


def _launcher(cu, func, launch, params_address: int, config=None):
    """``launch(stream)``: ``cuLaunchKernel`` of one planned launch, its other arguments bound; with ``config``
    (:func:`_dependent_launch_config`), ``cuLaunchKernelEx`` under it."""
    if config is not None:
        launch_kernel_ex = cu.cuLaunchKernelEx

        def launch_dependent(stream):
            config.hStream = stream
            return launch_kernel_ex(config, func, params_address, 0)
        return launch_dependent
    (gx, gy, gz), (bx, by, bz), smem = launch.grid, launch.block, launch.smem
    launch_kernel = cu.cuLaunchKernel
    return lambda stream: launch_kernel(func, gx, gy, gz, bx, by, bz, smem, stream, params_address, 0)


def _dependent_launch_config(cu, launch):
    """The ``CUlaunchConfig`` of a launch that overlaps the kernel before it (``LaunchSpec.overlaps_previous``):
    programmatic stream serialization, its stream set per call (the program's lock is held)."""
    config = cu.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = launch.grid
    config.blockDimX, config.blockDimY, config.blockDimZ = launch.block
    config.sharedMemBytes = launch.smem
    attribute = cu.CUlaunchAttribute()
    attribute.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attribute.value.programmaticStreamSerializationAllowed = 1
    config.attrs = [attribute]
    config.numAttrs = 1
    return config


def _checked_pointer(info: ArrayInfo, name: str, ordinal: int, written: bool) -> int:
    """A device array's address once its layout, device and (when the kernels write it) writability pass."""
    check_device_layout(info, name, None)
    if info.device_ordinal not in (None, ordinal):
        raise ArgumentError(f"argument '{name}' lives on device {info.device_ordinal}, but the kernel "
                            f"runs on GPU {ordinal}", code="bad-device",
                            hint="move it to that GPU, or set Options(device=...)")
    if written:
        check_writable(info, name, None)
    return info.pointer


def _scalar_binder(i: int, spec: ArgSpec, kind: type, slot):
    dtype = spec.dtype
    if dtype.is_int:
        lo, hi = dtype.int_range()

        def bind(args):
            value = args[i]
            if type(value) is not kind:
                return False
            if not lo <= value <= hi:
                raise ArgumentError(f"argument '{spec.name}'={value} does not fit {dtype.name}",
                                    code="out-of-range", hint="pass a NumPy scalar of a wider type")
            slot.value = int(value)
            return True
    elif dtype.is_float and dtype.bits == 16:
        def bind(args):
            if type(args[i]) is not kind:
                return False
            slot.value = dt.to_bits(dtype, args[i])
            return True
    elif dtype.is_float:
        def bind(args):
            if type(args[i]) is not kind:
                return False
            slot.value = float(args[i])
            return True
    else:
        def bind(args):
            if type(args[i]) is not kind:
                return False
            slot.value = bool(args[i])
            return True
    return bind
