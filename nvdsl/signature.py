"""Small typed records that pass between the layers: argument specs and the launch plan.

The frontend describes each argument (:class:`ArgSpec`), the compiler reads
the launches out of the outlined MLIR module (:class:`ProgramPlan`), and the
runtime executes the plan. None of them holds MLIR objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from . import dtypes as dt

ARRAY = "array"
SCALAR = "scalar"


@dataclass(frozen=True)
class ArgSpec:
    """One positional argument of a traced function, as the trace saw it.

    ``strides``: an array's element strides, outermost first, where it is not laid out row-major (a
    transposed, sliced or permuted view); None for a row-major (C-contiguous) array and for scalars.
    ``unaligned``: a device array whose first element is not on a 16-byte boundary (a view starting a few
    elements in), which no TMA descriptor can address.
    """

    name: str
    kind: str                 # ARRAY or SCALAR
    dtype: dt.DType
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] | None = None
    unaligned: bool = False

    @property
    def element_strides(self) -> tuple[int, ...]:
        """The array's element strides, outermost first (row-major ones where ``strides`` is None)."""
        return self.strides if self.strides is not None else row_major_strides(self.shape)


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides of a C-contiguous array of ``shape``, outermost first."""
    strides, n = [], 1
    for extent in reversed(shape):
        strides.append(n)
        n *= extent
    return tuple(reversed(strides))


def span_elements(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """How many elements a view of ``shape`` and (non-negative) ``strides`` spans, from its first element to
    its last: the size of the buffer that holds it (0 for an empty view)."""
    if any(extent == 0 for extent in shape):
        return 0
    return 1 + sum((extent - 1) * stride for extent, stride in zip(shape, strides))


@dataclass(frozen=True)
class TensorMapSpec:
    """A TMA descriptor the runtime encodes for a host argument's buffer at call time.

    ``box`` is the tile TMA moves, outermost dimension first (as the array's shape);
    ``swizzle`` and ``interleave`` are in bytes (0 for none), ``l2_promotion`` in bytes
    (0 for none), ``oob_nan`` fills out-of-bounds elements with NaN instead of zero.
    ``ragged``: a 2-D array of row segments, viewed in 3-D so that a box is clipped at a
    segment's end (see :meth:`view`); ``box`` is then (1, rows, cols).
    """

    arg: int
    box: tuple[int, ...]
    swizzle: int = 0
    l2_promotion: int = 0
    oob_nan: bool = False
    interleave: int = 0
    ragged: bool = False

    def view(self, shape: tuple[int, ...], itemsize: int,
             strides: tuple[int, ...] | None = None) -> tuple[tuple, tuple, int]:
        """What the descriptor spans of an array of ``shape`` and element ``strides`` (None: row-major): its
        extents and byte strides (outermost first) and the byte offset of its element 0 from the array's start.

        A plain descriptor spans the array with its strides; an axis of extent 1 gets a stride rounded up to
        TMA's 16 bytes, since no in-bounds box reaches past its only element (so a (1, 999) array's rows need
        no 16-byte stride). A ragged one spans a 2-D array (M, N) as
        V[e, j, n] = A[e - R + j, n] for e in 0..M, j in 0..R-1 (R the box's rows): the box at
        (e, R - rows, col) holds the ``rows`` rows that end at row ``e``, and TMA clips the rest, so a
        store of rows [r, r + R) of a segment that ends at e <= r + R writes only the segment's rows.
        (Axes e and j overlap, both stepping one row; element 0 lies R rows before the array, where no
        in-bounds element reaches.)
        """
        strides = row_major_strides(shape) if strides is None else strides
        if self.ragged:
            rows, cols = shape
            box_rows, row = self.box[-2], strides[0] * itemsize
            return (rows + 1, box_rows, cols), (row, row, strides[1] * itemsize), -box_rows * row
        in_bytes = tuple(s * itemsize if extent != 1 else -(-s * itemsize // 16) * 16 or 16
                         for extent, s in zip(shape, strides))
        return tuple(shape), in_bytes, 0

    def to_json(self) -> dict:
        return {"tensormap": {"arg": self.arg, "box": list(self.box), "swizzle": self.swizzle,
                              "l2_promotion": self.l2_promotion, "oob_nan": self.oob_nan,
                              "interleave": self.interleave, "ragged": self.ragged}}

    @classmethod
    def from_json(cls, d: dict) -> "TensorMapSpec":
        d = dict(d["tensormap"])
        d["box"] = tuple(d["box"])
        return cls(**d)


@dataclass(frozen=True)
class ScratchSpec:
    """Device memory the runtime allocates for the duration of one call (``nvdsl.empty``/``nvdsl.zeros``);
    ``zero`` fills it with zero bytes first. ``strides``: element strides where the array is a strided view
    of its memory (rows padded to a 16-byte multiple), None for a row-major one."""

    dtype: dt.DType
    shape: tuple[int, ...]
    zero: bool = False
    strides: tuple[int, ...] | None = None

    @property
    def nbytes(self) -> int:
        return span_elements(self.shape, self.strides or row_major_strides(self.shape)) * self.dtype.itemsize

    def to_json(self) -> dict:
        found = {"dtype": self.dtype.name, "shape": list(self.shape), "zero": self.zero}
        if self.strides is not None:
            found["strides"] = list(self.strides)
        return found

    @classmethod
    def from_json(cls, d: dict) -> "ScratchSpec":
        strides = d.get("strides")
        return cls(dt.BY_NAME[d["dtype"]], tuple(d["shape"]), d["zero"], None if strides is None else tuple(strides))


# A kernel parameter comes from a host argument (its index) or is a TMA descriptor of one. Scratch
# arrays count as arguments after the call's own: index len(args) + j is scratch array j.
ParamSource = Union[int, TensorMapSpec]


def _param_to_json(p):
    return p if isinstance(p, int) else p.to_json()


def _param_from_json(p):
    return p if isinstance(p, int) else TensorMapSpec.from_json(p)


@dataclass(frozen=True)
class LaunchSpec:
    """One kernel launch: which kernel, its fixed configuration, and where its parameters come from."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    params: tuple[ParamSource, ...]  # for each kernel parameter, its host argument or TMA descriptor
    overlaps_previous: bool = False  # a programmatic dependent launch (gpu_launch(..., overlap_previous=True))

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "grid": list(self.grid), "block": list(self.block),
                "smem": self.smem, "params": [_param_to_json(p) for p in self.params],
                "overlaps_previous": self.overlaps_previous}

    @classmethod
    def from_json(cls, d: dict) -> "LaunchSpec":
        return cls(d["kernel"], tuple(d["grid"]), tuple(d["block"]), d["smem"],
                   tuple(_param_from_json(p) for p in d["params"]), d["overlaps_previous"])


@dataclass(frozen=True)
class ProgramPlan:
    """The launches a traced host function performs, in order (on one stream, so each kernel sees
    the writes of those before it), and the scratch arrays they share."""

    launches: tuple[LaunchSpec, ...]
    scratch: tuple[ScratchSpec, ...] = ()

    def to_json(self) -> dict:
        return {"launches": [launch.to_json() for launch in self.launches],
                "scratch": [s.to_json() for s in self.scratch]}

    @classmethod
    def from_json(cls, data: dict) -> "ProgramPlan":
        return cls(tuple(LaunchSpec.from_json(d) for d in data["launches"]),
                   tuple(ScratchSpec.from_json(d) for d in data["scratch"]))
