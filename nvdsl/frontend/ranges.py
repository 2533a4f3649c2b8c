"""What tracing knows exactly of a kernel's integers, to refuse out-of-bounds accesses before a launch.

An :class:`Affine` form ``c0 + c1*a1 + ... + cn*an`` is a sum over independent *atoms*: a thread or block
coordinate, or the trip number of a counted loop with constant bounds. Each atom takes every value in
``0..size-1`` whatever the others take (a launch runs every thread of every block, a loop every trip).
A traced integer carries a form while it is exactly that function of the atoms and fits its dtype for every
value of them, so that no wrap-around can make it differ. A comparison of two forms gives a *condition*: a
tuple of forms that must each be ``<= 0``; ``&`` concatenates conditions.

An access is refused only with a *witness*: values of the atoms that satisfy every condition of the
``when`` blocks around the access and put the index outside its extent. Nothing approximate refuses a
kernel: where the search finds no witness, or gives up, the access is left to debug mode.
"""

from __future__ import annotations

from dataclasses import dataclass


class Atom:
    """A quantity a kernel's threads take every value of: ``name`` is ``start + step * k`` for ``k`` in
    ``0..size-1`` (``size`` >= 1)."""

    __slots__ = ("name", "size", "start", "step")

    def __init__(self, name: str, size: int, start: int = 0, step: int = 1):
        self.name, self.size, self.start, self.step = name, size, start, step

    def describe(self, k: int) -> str:
        return f"{self.name} = {self.start + self.step * k}"


@dataclass(frozen=True)
class Affine:
    """``constant + sum(coefficient * atom)`` over ``terms``, pairs ``(atom, coefficient)`` with one pair per
    atom and no zero coefficient."""

    constant: int
    terms: tuple = ()

    @staticmethod
    def of_atom(atom: Atom) -> "Affine":
        """The value ``atom`` names: ``start + step * k``."""
        return Affine(atom.start, ((atom, atom.step),))

    def __add__(self, other: "Affine | int") -> "Affine":
        other = _affine(other)
        terms = dict(self.terms)
        for atom, c in other.terms:
            terms[atom] = terms.get(atom, 0) + c
        return Affine(self.constant + other.constant, tuple((a, c) for a, c in terms.items() if c))

    def __neg__(self) -> "Affine":
        return self.scaled(-1)

    def __sub__(self, other: "Affine | int") -> "Affine":
        return self + -_affine(other)

    def __rsub__(self, other: int) -> "Affine":
        return _affine(other) - self

    def scaled(self, k: int) -> "Affine":
        if k == 0:
            return Affine(0)
        return Affine(self.constant * k, tuple((a, c * k) for a, c in self.terms))

    def times(self, other: "Affine") -> "Affine | None":
        """The product, where one factor is a constant (else it is not affine)."""
        if not other.terms:
            return self.scaled(other.constant)
        if not self.terms:
            return other.scaled(self.constant)
        return None

    def bounds(self, box: dict | None = None) -> tuple[int, int]:
        """The smallest and largest value over ``box`` (atom -> (lo, hi) trip numbers; default every trip);
        both are attained."""
        lo = hi = self.constant
        for atom, c in self.terms:
            a, b = box[atom] if box is not None else (0, atom.size - 1)
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi

    def at(self, point: dict) -> int:
        return self.constant + sum(c * point[atom] for atom, c in self.terms)


def _affine(x: "Affine | int") -> Affine:
    return x if isinstance(x, Affine) else Affine(x)


def fitting(form: Affine | None, dtype) -> Affine | None:
    """``form`` where every value it takes fits the integer ``dtype``, else None."""
    if form is None:
        return None
    lo, hi = form.bounds()
    low, high = dtype.int_range()
    return form if low <= lo and hi <= high else None


def comparison(op: str, a: Affine, b: Affine) -> tuple | None:
    """The condition ``a op b`` holds under (integers), or None for ``!=`` (no conjunction of bounds)."""
    return {"<": (a - b + 1,), "<=": (a - b,), ">": (b - a + 1,), ">=": (b - a,),
            "==": (a - b, b - a)}.get(op)


# Boxes one search may look at before it gives up (and refuses nothing), and rounds of narrowing per box (two
# conditions such as i < j, j < i narrow each other by one per round).
_BUDGET = 400
_ROUNDS = 8


def witness(conditions) -> dict | None:
    """Trip numbers of the atoms of ``conditions`` under which every form is ``<= 0``, or None: there are
    none, or the search gave up. A search over boxes of trip numbers: each box is narrowed by each condition
    (bounds propagation), dropped when empty, returned (its lowest corner) when every point satisfies every
    condition, else split in two along its widest atom."""
    atoms = list(dict.fromkeys(atom for form in conditions for atom, _ in form.terms))
    stack = [{atom: (0, atom.size - 1) for atom in atoms}]
    for _ in range(_BUDGET):
        if not stack:
            return None
        box = _narrowed(stack.pop(), conditions)
        if box is None:
            continue
        if all(form.bounds(box)[1] <= 0 for form in conditions):
            return {atom: lo for atom, (lo, _) in box.items()}
        atom = max(box, key=lambda a: box[a][1] - box[a][0])
        lo, hi = box[atom]
        middle = (lo + hi) // 2
        stack += [{**box, atom: (lo, middle)}, {**box, atom: (middle + 1, hi)}]
    return None


def _narrowed(box: dict, conditions) -> dict | None:
    """``box`` without trip numbers that break a condition whatever the other atoms are; None if empty."""
    box = dict(box)
    for _ in range(_ROUNDS):
        changed = False
        for form in conditions:
            lowest = form.bounds(box)[0]
            if lowest > 0:
                return None
            for atom, c in form.terms:
                lo, hi = box[atom]
                limit = min(c * lo, c * hi) - lowest      # c * trip <= limit
                new = (lo, min(hi, limit // c)) if c > 0 else (max(lo, -(limit // -c)), hi)
                if new[0] > new[1]:
                    return None
                if new != (lo, hi):
                    box[atom], changed = new, True
        if not changed:
            break
    return box


@dataclass(frozen=True)
class OutOfBounds:
    """Proof that an access runs outside its extent: the index takes values ``low..high`` on the threads
    that reach it (both attained), and at ``point`` (trip numbers of atoms) it is ``index``."""

    low: int
    high: int
    point: dict
    index: int

    def where(self) -> str:
        return ", ".join(sorted(atom.describe(k) for atom, k in self.point.items()))


def out_of_bounds(index: Affine, extent: int, conditions: tuple) -> OutOfBounds | None:
    """The proof that ``index`` leaves ``0..extent-1`` where every condition holds, or None (none found)."""
    for outside in (extent - index, index + 1):         # index >= extent, index <= -1
        point = witness(conditions + (outside,))
        if point is not None:
            low = _extreme(index, conditions, point, -1)
            high = _extreme(index, conditions, point, 1)
            return OutOfBounds(low, high, point, index.at(point))
    return None


def _extreme(form: Affine, conditions: tuple, point: dict, sign: int) -> int:
    """The largest (``sign`` 1) or smallest (-1) value of ``form`` that a witness shows, starting from one at
    ``point``: exact unless a search gave up."""
    reached = sign * form.at(point)
    bound = form.bounds()[1] if sign > 0 else -form.bounds()[0]
    while reached < bound:
        middle = (reached + bound + 1) // 2
        found = witness(conditions + (middle - form.scaled(sign),))
        if found is None:
            bound = middle - 1
        else:
            reached = sign * form.at(found)
    return sign * reached
