"""A traced signature bound to the interpreter, called like the GPU runtime's ``LoadedProgram``."""

from __future__ import annotations

from mlir import ir

from ..errors import ArgumentError
from ..arguments import DEVICE, HOST, check_writable, signature_key
from ..signature import ARRAY, ArgSpec
from .program import Program


class InterpretedProgram:
    """Runs one traced signature in the interpreter: NumPy arrays in, written arrays copied back.

    ``module`` is the traced module before outlining (the interpreter keeps a reference, so it must
    not be compiled in place afterwards). ``sample_args`` are the first call's arguments: a later
    call runs here only when its arguments have the same signature.
    """

    def __init__(self, module: ir.Module, specs: tuple[ArgSpec, ...], locations, written: frozenset[int],
                 seed: int | None, sample_args, constants_key, disjoint=None):
        self.specs = specs
        self.locations = locations
        self.written = written
        self.seed = seed
        self.constants_key = constants_key
        self.disjoint = disjoint          # arguments.DisjointOutputs, or None where outputs may overlap inputs
        self.keys = tuple(signature_key(a) for a in sample_args)
        self.program = Program(module, fuzz=seed is not None)

    def run(self, args, constants_key, stream: int = 0) -> bool:
        """Run on these arguments, or return False (running nothing) when they have another signature."""
        if len(args) != len(self.specs) or constants_key != self.constants_key or \
                tuple(signature_key(a) for a in args) != self.keys:
            return False
        for i, (spec, where) in enumerate(zip(self.specs, self.locations)):
            if where == DEVICE:
                raise ArgumentError(f"argument '{spec.name}' is a device array; the interpreter (the backend "
                                    "without a GPU) runs on NumPy arrays only", code="device-array-needs-gpu",
                                    hint="pass a NumPy array, or run on a GPU (Options(backend='gpu'))")
            if where == HOST:
                if i in self.written:
                    check_writable(args[i], spec.name, None)
            elif spec.kind != ARRAY and spec.dtype.is_int:
                lo, hi = spec.dtype.int_range()
                if not lo <= args[i] <= hi:
                    raise ArgumentError(f"argument '{spec.name}'={args[i]} does not fit {spec.dtype.name}",
                                        code="out-of-range", hint="pass a NumPy scalar of a wider type")
        if self.disjoint is not None:
            self.disjoint.check_host(args)
        self.program.run(self.specs, args, self.written, seed=self.seed)
        return True
