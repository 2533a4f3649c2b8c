"""Shape:stride layouts and their algebra (CuTe's, as Graphene writes them), in plain Python.

A layout maps the coordinates of a (possibly nested) shape to integers: the dot product of the
coordinate with the strides. ``(4,8):(1,4)`` is a 4 x 8 column-major layout, ``(4,8):(8,1)`` a
row-major one, and a mode may itself be a tuple: ``(4,(2,4)):(2,(1,8))`` keeps two adjacent columns
together, then moves down the rows (Graphene, Fig. 3c).

Coordinates are colexicographic: the linear index ``i`` of a shape ``(s0, s1, ...)`` is the
coordinate ``(i % s0, i // s0 % s1, ...)``, the last mode taking what is left. A layout can be
called with a linear index, a flat coordinate per top-level mode, or a nested coordinate; the
coordinates may be Python ints or any objects with ``+ * // %`` (traced kernel values), so a layout
evaluates the same index arithmetic on the GPU as on the host.

The algebra (``coalesce``, ``composition``, ``complement``, ``logical_divide``, ``zipped_divide``,
``logical_product``) follows CuTe's definitions. Tiling by a layout reproduces Graphene's
examples: dividing ``(4,8):(1,4)`` by ``(2:1, 4:1)`` gives tiles ``(2,4):(1,4)`` arranged as
``(2,2):(2,16)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

IntTuple = Union[int, tuple]


def is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def flatten(t: IntTuple) -> tuple[int, ...]:
    """The integers of a nested tuple, in order."""
    if is_int(t):
        return (t,)
    return tuple(x for sub in t for x in flatten(sub))


def product(t: IntTuple) -> int:
    """The product of the integers of a nested tuple."""
    n = 1
    for x in flatten(t):
        n *= x
    return n


def _congruent(a: IntTuple, b: IntTuple) -> bool:
    if is_int(a) or is_int(b):
        return is_int(a) and is_int(b)
    return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))


def _text(t: IntTuple) -> str:
    return str(t) if is_int(t) else "(" + ",".join(_text(x) for x in t) + ")"


def _normalize(t) -> IntTuple:
    if is_int(t):
        return t
    if isinstance(t, (tuple, list)):
        return tuple(_normalize(x) for x in t)
    raise TypeError(f"a layout's shape and stride are ints or tuples of them, got {t!r}")


def _add(total, term):
    """``total + term``, skipping zeros so that traced values get no needless additions."""
    if is_int(term) and term == 0:
        return total
    if is_int(total) and total == 0:
        return term
    return total + term


def _scale(coord, stride: int):
    if stride == 0:
        return 0
    if stride == 1:
        return coord
    return coord * stride


def _crd2idx(coord, shape: IntTuple, stride: IntTuple):
    if is_int(shape):
        if isinstance(coord, tuple):
            raise ValueError(f"coordinate {coord!r} is nested deeper than the shape {shape}")
        return _scale(coord, stride)
    if isinstance(coord, tuple):
        if len(coord) != len(shape):
            raise ValueError(f"coordinate {coord!r} does not match the shape {_text(shape)}")
        total = 0
        for c, s, d in zip(coord, shape, stride):
            total = _add(total, _crd2idx(c, s, d))
        return total
    # A linear index into a tuple mode: split it colexicographically, the last mode takes the rest.
    total, rest = 0, coord
    for i, (s, d) in enumerate(zip(shape, stride)):
        n = product(s)
        last = i == len(shape) - 1
        if any(flatten(d)):  # a mode with only zero strides adds nothing: skip its index arithmetic
            part = rest if last else 0 if n == 1 else rest % n
            total = _add(total, _crd2idx(part, s, d))
        if not last and n != 1:
            rest = rest // n
    return total


def idx2crd(index: int, shape: IntTuple) -> IntTuple:
    """The (nested) coordinate of a linear index in ``shape`` (Python ints only)."""
    if is_int(shape):
        return index
    coord = []
    for i, s in enumerate(shape):
        n = product(s)
        last = i == len(shape) - 1
        coord.append(idx2crd(index if last else index % n, s))
        index //= n
    return tuple(coord)


@dataclass(frozen=True)
class Layout:
    """A shape and congruent strides; calling it maps a coordinate to an integer offset.

    ``Layout((4, 8), (1, 4))`` is ``(4,8):(1,4)``; ``Layout.parse("(4,(2,4)):(2,(1,8))")`` reads
    the notation back. Layouts are immutable and compare by shape and stride.
    """

    shape: IntTuple
    stride: IntTuple

    def __post_init__(self):
        shape, stride = _normalize(self.shape), _normalize(self.stride)
        if not _congruent(shape, stride):
            raise ValueError(f"shape {_text(shape)} and stride {_text(stride)} are not congruent")
        if not all(s > 0 for s in flatten(shape)):
            raise ValueError(f"shape {_text(shape)} has an extent below 1")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)

    @classmethod
    def parse(cls, text: str) -> "Layout":
        """A layout from its notation, e.g. ``"(4,8):(1,4)"`` or ``"8:1"``."""
        shape_text, sep, stride_text = text.replace(" ", "").partition(":")
        if not sep:
            raise ValueError(f"{text!r} is not shape:stride")
        return cls(_parse_int_tuple(shape_text, text), _parse_int_tuple(stride_text, text))

    @property
    def rank(self) -> int:
        """The number of top-level modes."""
        return 1 if is_int(self.shape) else len(self.shape)

    @property
    def size(self) -> int:
        """The number of coordinates."""
        return product(self.shape)

    @property
    def cosize(self) -> int:
        """One more than the largest offset (for non-negative strides)."""
        return 1 + sum((s - 1) * d for s, d in zip(flatten(self.shape), flatten(self.stride)) if d > 0)

    def modes(self) -> tuple["Layout", ...]:
        """The top-level modes, each a layout."""
        if is_int(self.shape):
            return (self,)
        return tuple(Layout(s, d) for s, d in zip(self.shape, self.stride))

    def __getitem__(self, mode: int) -> "Layout":
        return self.modes()[mode]

    def __call__(self, *coord):
        """The offset of a coordinate: a linear index, one coordinate per mode, or a nested one."""
        if len(coord) == 1:
            coord = coord[0]
        return _crd2idx(coord, self.shape, self.stride)

    def flat(self) -> "Layout":
        """The same map with every mode at the top level."""
        shape, stride = flatten(self.shape), flatten(self.stride)
        return Layout(shape[0], stride[0]) if len(shape) == 1 else Layout(shape, stride)

    def __str__(self) -> str:
        return f"{_text(self.shape)}:{_text(self.stride)}"

    def __repr__(self) -> str:
        return f"Layout({str(self)!r})"


def _parse_int_tuple(text: str, whole: str) -> IntTuple:
    tokens = re.findall(r"\(|\)|,|-?\d+|\S", text)
    position = 0

    def parse():
        nonlocal position
        if position >= len(tokens):
            raise ValueError(f"{whole!r} ends early")
        token = tokens[position]
        position += 1
        if token == "(":
            items = [parse()]
            while position < len(tokens) and tokens[position] == ",":
                position += 1
                items.append(parse())
            if position >= len(tokens) or tokens[position] != ")":
                raise ValueError(f"{whole!r} has an unclosed '('")
            position += 1
            return tuple(items)
        if re.fullmatch(r"-?\d+", token):
            return int(token)
        raise ValueError(f"unexpected {token!r} in {whole!r}")

    result = parse()
    if position != len(tokens):
        raise ValueError(f"unexpected {tokens[position]!r} in {whole!r}")
    return result


def make_layout(*layouts: Layout) -> Layout:
    """The layout whose modes are ``layouts``, in order (CuTe's ``make_layout``)."""
    return Layout(tuple(l.shape for l in layouts), tuple(l.stride for l in layouts))


def _from_modes(modes: list[tuple[int, int]]) -> Layout:
    if not modes:
        return Layout(1, 0)
    if len(modes) == 1:
        return Layout(*modes[0])
    return Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes))


def coalesce(layout: Layout) -> Layout:
    """The same map with the fewest flat modes: size-1 modes dropped, contiguous neighbours merged."""
    modes: list[tuple[int, int]] = []
    for s, d in zip(flatten(layout.shape), flatten(layout.stride)):
        if s == 1:
            continue
        if modes and modes[-1][0] * modes[-1][1] == d:
            modes[-1] = (modes[-1][0] * s, modes[-1][1])
        else:
            modes.append((s, d))
    return _from_modes(modes)


def _as_layout(x) -> Layout:
    if isinstance(x, Layout):
        return x
    if is_int(x):
        return Layout(x, 1)
    raise TypeError(f"expected a Layout or an int, got {x!r}")


def _by_mode(operation, a: Layout, tiler: tuple) -> Layout:
    """``operation`` applied to each mode of ``a`` with its entry of ``tiler`` (None keeps the mode)."""
    modes = a.modes()
    if len(tiler) > len(modes):
        raise ValueError(f"a tiler of {len(tiler)} modes for a layout of rank {len(modes)}")
    return make_layout(*[operation(m, t) if t is not None else m for m, t in zip(modes, tiler)],
                       *modes[len(tiler):])


def composition(a: Layout, b) -> Layout:
    """``a ∘ b``: the layout ``i -> a(b(i))`` with the shape of ``b``.

    ``b`` may be a layout, an int ``n`` (meaning ``n:1``), or a tuple of those applied to the
    modes of ``a`` one by one (a tiler; missing or ``None`` entries keep the mode).
    """
    if isinstance(b, tuple):
        return _by_mode(composition, a, b)
    b = _as_layout(b)
    if not is_int(b.shape):
        return make_layout(*[composition(a, mode) for mode in b.modes()])
    size, step = b.shape, b.stride
    if step == 0:
        return Layout(size, 0)
    flat = coalesce(a)
    shapes, strides = flatten(flat.shape), flatten(flat.stride)
    modes = []
    for s, d in zip(shapes[:-1], strides[:-1]):
        if s % step and step % s:
            raise ValueError(f"{b} does not divide the layout {a} evenly (mode {s}:{d})")
        taken = min(max(1, s // step), size)
        if taken != 1:
            modes.append((taken, step * d))
        if size % taken:
            raise ValueError(f"{b} does not divide the layout {a} evenly (mode {s}:{d})")
        size //= taken
        step = -(-step // s)
    if size != 1 or not modes:
        modes.append((size, step * strides[-1]))
    return _from_modes(modes)


def complement(a: Layout, cotarget: int) -> Layout:
    """The layout of the offsets below ``cotarget`` that ``a`` does not reach, ordered so that
    ``make_layout(a, complement(a, cotarget))`` covers them all exactly once."""
    modes = sorted((d, s) for s, d in zip(flatten(a.shape), flatten(a.stride)) if d != 0 and s != 1)
    result, current = [], 1
    for d, s in modes:
        if d % current:
            raise ValueError(f"{a} has no complement: its modes overlap")
        result.append((d // current, current))
        current = s * d
    result.append((-(-cotarget // current), current))
    return coalesce(_from_modes(result))


def logical_divide(a: Layout, tiler) -> Layout:
    """``a`` split into (tile, rest): mode 0 walks one tile (``tiler``'s elements), mode 1 the tiles.

    A tuple tiler divides the modes of ``a`` one by one (each result mode is (tile, rest)).
    """
    if isinstance(tiler, tuple):
        return _by_mode(logical_divide, a, tiler)
    tiler = _as_layout(tiler)
    return composition(a, make_layout(tiler, complement(tiler, a.size)))


def zipped_divide(a: Layout, tiler) -> Layout:
    """As :func:`logical_divide`, with all tile modes gathered in mode 0 and all rest modes in mode 1:
    ``((tile modes...), (rest modes...))``. Graphene writes this ``rest.tile``."""
    if not isinstance(tiler, tuple):
        return logical_divide(a, tiler)
    divided = logical_divide(a, tiler).modes()
    tiles = [divided[i][0] for i in range(len(tiler))]
    rests = [divided[i][1] for i in range(len(tiler))] + list(divided[len(tiler):])
    return make_layout(make_layout(*tiles), make_layout(*rests))


def logical_product(a: Layout, b: Layout) -> Layout:
    """``a`` repeated in the pattern of ``b``: mode 0 is ``a``, mode 1 places its copies."""
    return make_layout(a, composition(complement(a, a.size * b.cosize), b))
