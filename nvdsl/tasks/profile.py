"""``nvdsl.profile``: where a generated pipeline's time goes, per SM and role, read from the device's clocks.

``nvdsl.profile(fn, *args)`` runs ``fn(*args)`` once; every task kernel it calls (the library's GEMMs and
attention, or your ``nt.build`` kernels) runs a variant that records, from one thread of each role of each
block, the spans of :data:`SPAN_KINDS` with ``%clock64`` (see :mod:`nvdsl.hopper.timeline`). The result holds
the spans per kernel, a text summary of each role's time by kind, and draws a timeline per SM and role beside
the schedule the mapping planned (``save_png``, needs matplotlib: ``pip install nvdsl[profile]``).

Recording costs a shared-memory read and write and one 8-byte global store per event on one thread per role,
so the profiled kernel runs slower than the plain one (on an H200: the library GEMM 14%, attention 50-60%):
read the timeline for where time goes, time the plain kernel for how much. Hand-written ``@mlir_func`` kernels
a function calls run unrecorded. In the interpreter the clock is the interpreter's (32 simulated ns per read):
the spans' order is the model's, their lengths are not the GPU's.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError, user_location
from ..scratch import scratch_like

#: The spans a profiled kernel's roles record, by kind number: a tile's whole work; the producer waiting for a
#: free slot and issuing its loads; a consumer waiting for a slot's data, its step's products and math (or a
#: row-wise program's pass over a column block), two-phase attention's math (softmax) between products, waits
#: for products to retire, waits for its turn at the tensor cores, and the epilogue.
SPAN_KINDS = ("tile", "load", "data wait", "step", "math", "product wait", "turn wait", "epilogue")
TILE, LOAD, DATA_WAIT, STEP, MATH, PRODUCT_WAIT, TURN_WAIT, EPILOGUE = range(len(SPAN_KINDS))

DEFAULT_CAPACITY = 4096
HEADER_LENGTH = 6            # nvdsl.hopper.timeline.HEADER_FIELDS (which imports MLIR)
_SESSION: contextvars.ContextVar = contextvars.ContextVar("nvdsl_profile", default=None)


def roles(schedule) -> tuple[str, ...]:
    """The names of a block's roles under ``schedule``, in the order a profile records them."""
    return ("producer",) * schedule.warp_specialized + tuple(f"consumer {c}" for c in range(schedule.consumers))


def session():
    """The profile being recorded in this context, or None."""
    return _SESSION.get()


def profile(fn, *args, capacity: int = DEFAULT_CAPACITY, **kwargs) -> "Profile":
    """Run ``fn(*args, **kwargs)`` once, each task kernel it calls recording its timeline; return them.

    ``capacity`` bounds the events kept per role of each block (those after it are counted as dropped). The
    records are read back after ``fn`` returns (a device synchronisation for device arrays).
    """
    if not callable(fn):
        raise ArgumentError(f"nvdsl.profile(fn, *args) runs fn(*args); got fn={fn!r}", code="bad-argument",
                            hint="pass the function first: nvdsl.profile(gemm, a, b, c)", loc=user_location())
    with recording(capacity) as recorded:
        fn(*args, **kwargs)
    return Profile([launch.read() for launch in recorded.launches])


@contextlib.contextmanager
def recording(capacity: int = DEFAULT_CAPACITY):
    """Inside the block, task kernels run their recording variants; the records (``.launches``, unread: no
    synchronisation) are the value it yields. :func:`profile` reads them back."""
    if not (isinstance(capacity, int) and not isinstance(capacity, bool) and capacity >= 1):
        raise ArgumentError(f"capacity={capacity!r} must be an int >= 1 (events kept per role of each block)",
                            code="bad-argument", hint=f"pass capacity={DEFAULT_CAPACITY}", loc=user_location())
    recorded = _Session(capacity)
    token = _SESSION.set(recorded)
    try:
        yield recorded
    finally:
        _SESSION.reset(token)


class _Session:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self.launches: list[_Launch] = []

    def run(self, kernel, arrays, stream) -> None:
        """Run task kernel ``kernel`` on ``arrays`` with its timeline recorded."""
        schedule = kernel.plan(*arrays)
        names = roles(schedule)
        beside = arrays[0]
        header = scratch_like(beside, (schedule.grid, len(names), HEADER_LENGTH), None, "int64")
        events = scratch_like(beside, (schedule.grid, len(names), self.capacity), None, "int64")
        if header is None:
            raise ArgumentError(f"nvdsl.profile records beside NumPy, torch or CuPy arrays; '{kernel.name}' got "
                                f"{type(beside).__name__}", code="bad-argument",
                                hint="call the function on NumPy, torch or CuPy arrays", loc=user_location())
        kernel.profiled(*arrays, header, events, stream=stream)
        self.launches.append(_Launch(kernel.name, names, kernel.explain(*arrays), header, events))


@dataclass
class _Launch:
    name: str
    roles: tuple[str, ...]
    schedule: str
    header: object
    events: object

    def read(self) -> "KernelProfile":
        return decode(self.name, self.roles, self.schedule, _host(self.header), _host(self.events))


def _host(x) -> np.ndarray:
    if hasattr(x, "detach"):                   # torch
        return x.detach().cpu().numpy()
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


@dataclass(frozen=True)
class KernelProfile:
    """One profiled kernel call: its spans, one row per span in parallel arrays (``block``, ``role`` (an index
    into ``roles``), ``sm``, ``kind`` (an index into :data:`SPAN_KINDS`), ``start_ns``, ``end_ns``, from the
    kernel's first recorded start), each role's time (``role_time_ns``, summed over blocks), each block's SM and
    time (``block_sm``, ``block_start_ns``, ``block_end_ns``: its roles' first start and last end), the events
    the capacity dropped, and the schedule text the mapping planned."""

    name: str
    roles: tuple[str, ...]
    schedule: str
    block: np.ndarray
    role: np.ndarray
    sm: np.ndarray
    kind: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    role_time_ns: np.ndarray
    block_sm: np.ndarray
    block_start_ns: np.ndarray
    block_end_ns: np.ndarray
    duration_ns: float
    dropped: int

    def spans(self, kind: str) -> np.ndarray:
        """The (start_ns, end_ns) rows of the spans of ``kind``."""
        keep = self.kind == SPAN_KINDS.index(kind)
        return np.stack([self.start_ns[keep], self.end_ns[keep]], axis=1)

    def summary(self) -> str:
        """Each role's time by span kind, summed over blocks: count, microseconds and share of the role's time
        (tiles contain the other kinds; "other" is the role's time in none of them)."""
        lines = [f"{self.name}: {self.duration_ns / 1e3:.1f} us from the first role's start to the last's end, "
                 f"{len(self.block_sm)} blocks" + (f", {self.dropped} events dropped" if self.dropped else "")]
        finish, idle = self.sm_finish_ns(), self.sm_idle_ns()
        if len(finish):
            lines.append(f"  {len(finish)} SMs finish between {finish.min() / 1e3:.1f} and {finish.max() / 1e3:.1f} us "
                         f"(median {np.median(finish) / 1e3:.1f}); between their blocks they idle "
                         f"{100 * idle.sum() / max(finish.sum(), 1.0):.1f}% of the time up to their finish")
        for r, role in enumerate(self.roles):
            total = float(self.role_time_ns[r])
            if total <= 0:
                continue
            lines.append(f"  {role}: {total / 1e3:.1f} us over its blocks")
            mine = self.role == r
            inner = 0.0
            for k, kind in enumerate(SPAN_KINDS):
                keep = mine & (self.kind == k)
                if not keep.any():
                    continue
                time = float(np.sum(self.end_ns[keep] - self.start_ns[keep]))
                inner += time if k != TILE else 0.0
                lines.append(f"    {kind:<13} {int(keep.sum()):>8} spans {time / 1e3:>10.1f} us "
                             f"{100 * time / total:5.1f}%")
            lines.append(f"    {'other':<13} {'':>8}       {(total - inner) / 1e3:>10.1f} us "
                         f"{100 * (total - inner) / total:5.1f}%")
        return "\n".join(lines)

    def sm_finish_ns(self) -> np.ndarray:
        """When each SM's last block ended, one entry per SM in increasing SM order."""
        return np.array([self.block_end_ns[self.block_sm == sm].max() for sm in np.unique(self.block_sm)])

    def sm_idle_ns(self) -> np.ndarray:
        """Each SM's time with no block of this kernel on it, from the kernel's start to the SM's finish."""
        idle = []
        for sm in np.unique(self.block_sm):
            mine = self.block_sm == sm
            order = np.argsort(self.block_start_ns[mine])
            starts, ends = self.block_start_ns[mine][order], self.block_end_ns[mine][order]
            covered, reach = 0.0, 0.0
            for start, end in zip(starts, ends):          # the union of the blocks' intervals
                if end > reach:
                    covered += end - max(start, reach)
                    reach = end
            idle.append(reach - covered)
        return np.array(idle)

    def save_png(self, path, *, sms: int = 8, schedule_lines: int = 48) -> None:
        """Draw the timeline of the first ``sms`` SMs (a row per SM and role, a colour per span kind; tiles as
        a pale band behind) beside the first ``schedule_lines`` lines of the planned schedule, as a PNG."""
        _draw(self, path, sms, schedule_lines)


class Profile:
    """The kernels a profiled call ran, in order (:class:`KernelProfile` each)."""

    def __init__(self, kernels: list[KernelProfile]):
        self.kernels = kernels

    def __len__(self) -> int:
        return len(self.kernels)

    def __getitem__(self, i) -> KernelProfile:
        return self.kernels[i]

    def __iter__(self):
        return iter(self.kernels)

    def summary(self) -> str:
        return "\n".join(k.summary() for k in self.kernels) if self.kernels else "no task kernel ran"

    def save_png(self, path, *, kernel: int = 0, sms: int = 8) -> None:
        """Draw kernel ``kernel``'s timeline (see :meth:`KernelProfile.save_png`)."""
        if not self.kernels:
            raise ArgumentError("nothing to draw: no task kernel ran under nvdsl.profile", code="bad-argument",
                                hint="profile a function that calls a task kernel (nvdsl.kernels, nt.build)",
                                loc=user_location())
        self.kernels[kernel].save_png(path, sms=sms)


def decode(name: str, role_names: tuple[str, ...], schedule: str, header: np.ndarray,
           events: np.ndarray) -> KernelProfile:
    """The spans of a kernel's records: each role's cycles become nanoseconds on the common timer from the two
    clocks read at its start and end; a span is an event of a kind that begins and the next that ends it."""
    from ..hopper.timeline import HEADER_FIELDS, TAG_SHIFT
    assert len(HEADER_FIELDS) == HEADER_LENGTH and header.shape[2] == HEADER_LENGTH
    blocks, nroles, capacity = events.shape
    clock_bits = (1 << TAG_SHIFT) - 1
    origin = int(header[:, :, HEADER_FIELDS.index("start_ns")].min())
    columns: dict[str, list] = {c: [] for c in ("block", "role", "sm", "kind", "start_ns", "end_ns")}
    role_time = np.zeros(nroles)
    dropped, last = 0, origin
    block_sm = np.zeros(blocks, np.int64)
    block_start, block_end = np.full(blocks, np.inf), np.full(blocks, -np.inf)
    for b in range(blocks):
        for r in range(nroles):
            sm, t0, c0, t1, c1, count = (int(header[b, r, HEADER_FIELDS.index(field)]) for field in
                                         ("sm", "start_ns", "start_cycle", "end_ns", "end_cycle", "events"))
            written = min(count, capacity)
            dropped += count - written
            role_time[r] += t1 - t0
            last = max(last, t1)
            block_sm[b] = sm
            block_start[b], block_end[b] = min(block_start[b], t0 - origin), max(block_end[b], t1 - origin)
            scale = (t1 - t0) / (c1 - c0) if c1 > c0 else 1.0
            words = events[b, r, :written]
            tags, cycles = words >> TAG_SHIFT, (words - (c0 & clock_bits)) & clock_bits   # cycles since the start
            times = (t0 - origin) + cycles * scale
            for k in np.unique(tags // 2):
                begins, ends = times[tags == 2 * k], times[tags == 2 * k + 1]
                n = min(len(begins), len(ends))        # a span the capacity cut has no end
                for column, value in (("block", b), ("role", r), ("sm", sm), ("kind", k)):
                    columns[column].append(np.full(n, value, np.int64))
                columns["start_ns"].append(begins[:n])
                columns["end_ns"].append(ends[:n])
    arrays = {c: (np.concatenate(v) if v else np.zeros(0)) for c, v in columns.items()}
    return KernelProfile(name, tuple(role_names), schedule, **arrays, role_time_ns=role_time, block_sm=block_sm,
                         block_start_ns=block_start, block_end_ns=block_end, duration_ns=float(last - origin),
                         dropped=int(dropped))


_COLOURS = {"load": "#4c78a8", "data wait": "#e45756", "step": "#54a24b", "math": "#b279a2",
            "product wait": "#f58518", "turn wait": "#9d755d", "epilogue": "#72b7b2"}


def _draw(k: KernelProfile, path, sms: int, schedule_lines: int) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ArgumentError("drawing a timeline needs matplotlib", code="missing-dependency",
                            hint="pip install 'nvdsl[profile]' (or matplotlib)", loc=user_location()) from None
    shown = np.unique(k.sm)[:sms]
    rows = [(sm, r) for sm in shown for r in range(len(k.roles))]
    lines = k.schedule.splitlines()
    height = max(2 * (1.5 + 0.3 * len(rows)), 1 + 0.09 * min(len(lines), schedule_lines))
    fig = plt.figure(figsize=(18, height))
    grid = fig.add_gridspec(2, 2, width_ratios=[3, 1])
    whole, zoom, text = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[:, 1])
    _draw_rows(whole, k, rows)
    whole.set_title(f"{k.name}: {k.duration_ns / 1e3:.1f} us, {len(np.unique(k.block))} blocks "
                    f"(first {len(shown)} SMs shown)", fontsize=9)
    lo, hi = zoom_window(k, shown[0] if len(shown) else 0)
    _draw_rows(zoom, k, rows)
    zoom.set_xlim(lo / 1e3, hi / 1e3)
    zoom.set_title("the same, from the start of the second tile of the first SM's first consumer, for 1.5 tiles",
                   fontsize=9)
    whole.axvspan(lo / 1e3, hi / 1e3, color="#ffd700", alpha=0.25, linewidth=0, zorder=0)
    text.axis("off")
    shown_text = "\n".join(line[:90] for line in lines[:schedule_lines]) + ("\n..." if len(lines) > schedule_lines
                                                                          else "")
    text.text(0, 1, "planned schedule\n\n" + shown_text, family="monospace", fontsize=5.5, va="top")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def zoom_window(k: KernelProfile, sm: int) -> tuple[float, float]:
    """The stretch of the timeline the drawing enlarges (ns): from the start of the second tile (the first if
    there is one) of the first consumer on SM ``sm``, one and a half median tiles long."""
    consumer = k.roles.index("consumer 0") if "consumer 0" in k.roles else 0
    tiles = (k.sm == sm) & (k.role == consumer) & (k.kind == TILE)
    starts, ends = np.sort(k.start_ns[tiles]), np.sort(k.end_ns[tiles])
    if not len(starts):
        return 0.0, max(k.duration_ns, 1.0)
    lo = starts[1] if len(starts) > 1 else starts[0]
    return float(lo), float(lo + 1.5 * max(np.median(ends - starts), 1.0))


def _draw_rows(ax, k: KernelProfile, rows) -> None:
    for y, (sm, r) in enumerate(rows):
        mine = (k.sm == sm) & (k.role == r)
        for kind_index, kind in enumerate(SPAN_KINDS):
            keep = mine & (k.kind == kind_index)
            if not keep.any():
                continue
            bars = list(zip(k.start_ns[keep] / 1e3, (k.end_ns[keep] - k.start_ns[keep]) / 1e3))
            if kind == "tile":
                ax.broken_barh(bars, (y - 0.45, 0.9), facecolors="#eeeeee", edgecolors="#999999", linewidth=0.4)
            else:
                ax.broken_barh(bars, (y - 0.3, 0.6), facecolors=_COLOURS[kind], label=kind)
    ax.set_yticks(range(len(rows)), [f"SM {sm} {k.roles[r]}" for sm, r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("microseconds from the kernel's first recorded start")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), loc="upper right", fontsize=7, ncol=len(unique))
