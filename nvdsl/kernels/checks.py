"""Argument checks the library's GEMM family shares: each array described by the caller's name, its rank and
extents bound to the problem's letters (``"MK"``: an (M, K) array), its dtype among those the kernel takes.

The kernels' own calls check layouts, alignment and devices, but know only their programs' argument names
('C', 'A', 'B'), and a task program reads past a shorter operand as zeros: a B with fewer rows than A has
columns, or a C with fewer rows than A, would give a wrong answer instead of an error. These checks run
where a library function plans a call (once per signature where it keeps plans).
"""

from __future__ import annotations

from .. import dtypes as dt
from ..arguments import check_outputs_writable, describe, overlapping_arrays
from ..errors import ArgumentError, UserError
from ..signature import ARRAY, ArgSpec
from ..tasks import Mapping

HALVES = (dt.float16, dt.bfloat16)
OUTPUTS = (dt.float16, dt.bfloat16, dt.float32)
FLOAT8 = (dt.float8_e4m3fn, dt.float8_e5m2)
PLANS_LIMIT = 1024


class CallPlans(dict):
    """What a library function's checks and planning decided for a call, by the call's signature (the kinds,
    dtypes, shapes and strides of its arrays, its options and mods): a call like an earlier one skips them and goes
    straight to the kernels, whose own calls still check each array's layout, alignment and device. At most
    :data:`PLANS_LIMIT` are kept (past it, all are forgotten at once). A signature that cannot be hashed (it holds
    an unhashable mod) is neither found nor kept: such a call is checked, and the checks say what is wrong."""

    def find(self, signature):
        """The plan kept for ``signature``, or None."""
        try:
            return self.get(signature)
        except TypeError:
            return None

    def remember(self, signature, plan) -> None:
        """Keep ``plan`` for ``signature`` (None, or an unhashable one: nothing is kept)."""
        if signature is None:
            return
        try:
            hash(signature)
        except TypeError:
            return
        if len(self) >= PLANS_LIMIT:
            self.clear()
        self[signature] = plan


#: The types of ``scale`` that need no conversion (see :func:`python_scalars`).
PLAIN_SCALES = (float, int, type(None))


def python_scalars(*values) -> tuple:
    """``values`` with each NumPy scalar (``np.float32(0.125)``, ``np.True_``, ``np.int64(2)``) as the Python number
    it holds: options given so mean what the Python ones do. Callers test the types first (``type(causal) is not
    bool``), so that a call with Python options pays nothing."""
    return tuple(v.item() if type(v).__module__ == "numpy" and getattr(v, "ndim", None) == 0 else v for v in values)


def check_mapping(what: str, mapping, loc) -> None:
    """``mapping`` is None (the library's default) or an ``nvdsl.tasks.Mapping``."""
    if mapping is not None and not isinstance(mapping, Mapping):
        raise ArgumentError(f"{what}: mapping={mapping!r} must be an nvdsl.tasks.Mapping", code="bad-argument",
                            hint="pass nvdsl.tasks.Mapping(tiles={...}, ...), or leave it out for the default",
                            loc=loc)


def described(what: str, arrays: dict, loc) -> dict[str, ArgSpec]:
    """Each array's description, by the caller's name; anything that is not an array is refused by it."""
    specs = {}
    for name, value in arrays.items():
        spec, _ = describe(value, name, loc)
        if spec.kind != ARRAY:
            raise ArgumentError(f"{what}: '{name}' must be an array, got {type(value).__name__}",
                                code="bad-argument", hint="pass a NumPy array or a CUDA array (torch, CuPy)",
                                loc=loc)
        specs[name] = spec
    return specs


def bound_extents(what: str, specs: dict[str, ArgSpec], axes: dict[str, str], loc) -> dict[str, int]:
    """The problem's extents by letter: ``axes`` gives each array's letters, one per axis ("MK": (M, K)); a letter
    takes its extent from the first array of the right rank that has it, a digit is that extent itself. An array of
    another rank, or with another extent for a letter, is refused, naming the array the extent came from."""
    extents: dict[str, int] = {}
    source: dict[str, str] = {}

    def expected(letters: str, shape: tuple) -> str:
        """The shape ``letters`` ask for: known extents, else the array's own where it has that axis."""
        own = dict(zip(letters, shape)) if len(shape) == len(letters) else {}
        known = [extents.get(x, int(x) if x.isdigit() else own.get(x, x)) for x in letters]
        return "(" + ", ".join(map(str, known)) + ("," if len(known) == 1 else "") + ")"

    for name, letters in axes.items():         # first the extents, from the arrays of the right rank, for hints
        shape = tuple(specs[name].shape)
        if len(shape) == len(letters):
            for letter, extent in zip(letters, shape):
                if not letter.isdigit() and letter not in extents:
                    extents[letter], source[letter] = extent, name
    for name, letters in axes.items():
        shape = tuple(specs[name].shape)
        if len(shape) != len(letters):
            raise ArgumentError(f"{what}: '{name}' must be {len(letters)}-D ({', '.join(letters)}), got shape "
                                f"{shape}", code="bad-shape",
                                hint=f"pass '{name}' of shape {expected(letters, shape)}", loc=loc)
        for axis, (letter, extent) in enumerate(zip(letters, shape)):
            if letter.isdigit():
                if extent != int(letter):
                    raise ArgumentError(f"{what}: '{name}' has shape {shape}; axis {axis} must be {letter}",
                                        code="bad-shape", hint=f"pass '{name}' of shape {expected(letters, shape)}",
                                        loc=loc)
            elif extent != extents[letter]:
                raise ArgumentError(f"{what}: '{name}' has shape {shape}, {letter} = {extent} on axis {axis}, but "
                                    f"'{source[letter]}' has {letter} = {extents[letter]}", code="bad-shape",
                                    hint=f"pass '{name}' of shape {expected(letters, shape)}", loc=loc)
    return extents


def check_dtypes(what: str, specs: dict[str, ArgSpec], allowed: dict[str, tuple], loc, *, alike: tuple = ()) -> None:
    """Each array's dtype among ``allowed[name]``, and the arrays named in ``alike`` of one dtype."""
    for name, dtypes in allowed.items():
        dtype = specs[name].dtype
        if dtype not in dtypes:
            raise ArgumentError(f"{what}: '{name}' is {dtype.name}; it must be "
                                f"{' or '.join(d.name for d in dtypes)}", code="bad-dtype",
                                hint=f"convert it to {dtypes[0].name}", loc=loc)
    if len({specs[name].dtype for name in alike}) > 1:
        given = ", ".join(f"'{name}' {specs[name].dtype.name}" for name in alike)
        raise ArgumentError(f"{what}: {given}: they must be of one dtype", code="bad-dtype",
                            hint=f"convert them to {specs[alike[0]].dtype.name}", loc=loc)


def checked(what: str, arrays: dict, axes: dict[str, str], allowed: dict[str, tuple], loc, *, written: str,
            alike: tuple = ()) -> tuple[dict[str, int], dict[str, ArgSpec]]:
    """:func:`described`, :func:`bound_extents` and :func:`check_dtypes` in turn, and the output ``written``
    writeable: the problem's extents and each array's description."""
    specs = described(what, arrays, loc)
    extents = bound_extents(what, specs, axes, loc)
    check_dtypes(what, specs, allowed, loc, alike=alike)
    _check_reduced_extents(what, specs, axes, extents, written, loc)
    check_outputs_writable({written: arrays[written]}, loc)
    return extents, specs


def _check_reduced_extents(what: str, specs: dict[str, ArgSpec], axes: dict[str, str], extents: dict[str, int],
                          written: str, loc) -> None:
    """An output with elements needs every extent it is computed over (a product's K, a row's N) to have some: a
    call whose output is empty launches nothing, but one over K = 0 would leave it a sum of no products."""
    shape = specs[written].shape
    if not all(shape):
        return
    for letter, extent in extents.items():
        if extent == 0 and letter not in axes[written]:
            name = next(n for n, letters in axes.items() if letter in letters)
            raise ArgumentError(f"{what}: {letter} = 0 ('{name}' has shape {tuple(specs[name].shape)}), so each "
                                f"element of '{written}' {tuple(shape)} would be computed over an empty axis",
                                code="empty", hint=f"skip the call and fill '{written}' yourself (for a product, a "
                                f"sum over {letter} = 0 is zero)", loc=loc)


def by_callers_names(error: UserError, callers) -> UserError:
    """``error`` as the caller of a library function should read it: a refusal of overlapping arrays by one of
    the library's programs names the program's parameters ('C', 'X'), here the function's own (``callers``:
    'c', 'x') where they are the same but for case; any other error as it is."""
    arrays = getattr(error, "arrays", None)
    if arrays is None:
        return error
    named = [next((c for c in callers if c.lower() == name.lower()), name) for name in arrays]
    return overlapping_arrays(*named)._replaced(loc=error.loc, origin=error.origin)
