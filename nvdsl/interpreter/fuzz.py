"""Schedule fuzzing: run a kernel under many interleavings and report the first seed that goes wrong."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import KernelFault, NvdslError


@dataclass(frozen=True)
class FuzzReport:
    """What :func:`fuzz` found.

    Attributes:
        seeds: the seeds run, in order, up to and including the first failing one.
        seed: the first seed whose run deadlocked, raced or diverged (None when all passed).
        kind: ``"diverged"``, or the failing run's error code (``"deadlock"``, ``"data-race"``, ...).
        error: the failing run's error (a :class:`~nvdsl.KernelFault`), None for a divergence.
        difference: for a divergence, which array differs from the fixed-order run, and where.
    """

    seeds: tuple[int, ...]
    seed: int | None = None
    kind: str | None = None
    error: NvdslError | None = None
    difference: str | None = None

    @property
    def ok(self) -> bool:
        return self.seed is None

    def __str__(self) -> str:
        if self.ok:
            return f"no report under {len(self.seeds)} schedules (seeds {self.seeds[0]}..{self.seeds[-1]})"
        what = self.difference if self.kind == "diverged" else str(self.error)
        return f"seed {self.seed} ({self.kind}): {what}"

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error
        if not self.ok:
            raise AssertionError(str(self))


def fuzz(fn, *args, seeds=20, rtol: float = 0.0, **constants) -> FuzzReport:
    """Run ``fn(*args, **constants)`` in the interpreter once in the fixed schedule, then under each seed
    (``seeds``: a count, or an iterable of seeds), and report the first seed that deadlocks, races
    (any :class:`~nvdsl.KernelFault`) or writes results that differ from the fixed schedule's by more
    than ``rtol`` (relative to the largest magnitude; 0 asks for identical bits). A seeded run draws the
    order of the warps of a block, when TMA copies land, and interleaves up to four blocks at a time.

    Each run gets fresh copies of the NumPy arguments; the arrays passed in are left unchanged.
    A fault in the fixed schedule itself is raised.
    """
    seeds = tuple(range(seeds)) if isinstance(seeds, int) else tuple(seeds)
    if not seeds:
        raise ValueError("fuzz needs at least one seed")
    reference = _run(fn.with_options(backend="interpret", seed=None), args, constants)
    tried = []
    for seed in seeds:
        tried.append(seed)
        try:
            # the static protocol check ran with the fixed schedule; it does not depend on the seed
            results = _run(fn.with_options(backend="interpret", seed=seed, protocol_check=False), args, constants)
        except KernelFault as error:
            return FuzzReport(tuple(tried), seed, error.code, error)
        difference = _difference(reference, results, rtol)
        if difference is not None:
            return FuzzReport(tuple(tried), seed, "diverged", None, difference)
    return FuzzReport(tuple(tried))


def _run(fn, args, constants):
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    fn(*copies, **constants)
    return [(i, a) for i, a in enumerate(copies) if isinstance(a, np.ndarray)]


def _difference(reference, results, rtol: float):
    for (i, expected), (_, got) in zip(reference, results):
        if np.array_equal(expected, got, equal_nan=expected.dtype.kind == "f"):
            continue
        scale = float(np.nanmax(np.abs(expected.astype(np.float64)))) if expected.size else 0.0
        delta = np.abs(got.astype(np.float64) - expected.astype(np.float64))
        worst = float(np.nanmax(delta)) if delta.size else 0.0
        if rtol and worst <= rtol * scale:
            continue
        where = np.unravel_index(int(np.nanargmax(delta)), expected.shape) if delta.size else ()
        return (f"argument {i} differs from the fixed-schedule run: at index {tuple(map(int, where))} "
                f"{got[where]!r} instead of {expected[where]!r} (largest difference {worst:g})")
    return None
