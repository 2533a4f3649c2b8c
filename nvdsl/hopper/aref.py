"""``Aref``: an asynchronous reference, a ring of shared-memory slots handed from a producer to its consumers.

A ring owns everything a pipeline's synchronization is made of, so user code never writes a phase, a
parity, a byte count or an offset:

* ``depth`` slots, each a tuple of tiles declared by shape and dtype, placed in shared memory by the
  kernel's allocator (each tile 1024-byte aligned, as 128-byte-swizzled TMA tiles need);
* a ``full`` and an ``empty`` mbarrier per slot. ``full`` expects one arrival (the producer's) and the
  bytes of the slot's tiles; ``empty`` expects one arrival per consumer warpgroup, counted from the
  roles that actually call :meth:`Aref.get` once the kernel is traced;
* the position of each role in the ring (slot index and phase), kept in registers of that role's
  threads and advanced by every ``put`` and ``get``. It carries through any loop, across the tiles of
  a persistent kernel, and for trip counts that are not a multiple of ``depth``, because it is never
  derived from a loop index.

The protocol (slot ``s``, phase bit ``p``, both advanced together):

* ``put``: wait until ``empty[s]`` completed phase ``p ^ 1`` (a fresh barrier counts as having completed
  the phase before its first, so the first pass through the ring does not wait); one thread arms
  ``full[s]`` with the slot's bytes and issues the TMA loads on it.
* ``get``: wait until ``full[s]`` completed phase ``p``; the body reads the slot's tiles.
* release: one thread per consumer warpgroup arrives on ``empty[s]``, only once every read of the slot
  has finished. For wgmma reads that is when the wgmma group reading it has retired: with ``P``
  products left in flight after a ``get`` body, the slot of ``P`` gets ago is released, and the rest at
  the next ``wgmma_wait`` (or accumulator store) that retires them. So ``depth >= P + 1`` is required,
  and checked. Reads by ordinary loads are complete once the warpgroup has passed a barrier.

Consumers may also take the slots in turn (``in_turn=True``, a ping-pong's): each slot is then read,
and released, by one of them, and each passes over the others' slots with :meth:`Aref.skip`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from .. import dtypes as dt
from ..errors import TraceError, user_location
from ..frontend.context import at_user_line, current_kernel
from ..frontend.control import when
from ..frontend.memory import Array, RegisterCell, byte_size, checked_shape, round_up
from ..frontend.values import Value, select
from ..layouts.swizzle import swizzle_alignment
from .mbarrier import Mbarriers
from .tma import TMA
from .warpgroup import WARPGROUP_THREADS

TILE_ALIGNMENT = swizzle_alignment(128)   # where 128-byte swizzled TMA tiles and wgmma operands start


@dataclass(frozen=True)
class SlotTile:
    """One tile of every slot: its shape, dtype, and byte offset inside the slot."""

    shape: tuple[int, ...]
    dtype: dt.DType
    offset: int
    rows: int | None = None         # the rows the producer's copies fill (None: all)

    @property
    def nbytes(self) -> int:
        return byte_size(self.shape, self.dtype)

    @property
    def loaded_shape(self) -> tuple[int, ...]:
        return self.shape if self.rows is None else (self.rows,) + tuple(self.shape[1:])


class _Lease:
    """The validity of the tile views one ``get`` (or the ring's internal ``put``) hands out."""

    def __init__(self, ring_name: str):
        self.ring_name = ring_name
        self.active = True
        self.read_by_threads = False


class _Role:
    """Which threads use a ring on one side: a warpgroup (by index) or, outside any, the whole block."""

    def __init__(self, ctx, warpgroup):
        self.ctx, self.warpgroup = ctx, warpgroup
        self.key = ("warpgroup", warpgroup.index) if warpgroup is not None else ("block",)
        threads = ctx.block.x * ctx.block.y * ctx.block.z
        self.whole_warpgroups = threads % WARPGROUP_THREADS == 0

    @property
    def name(self) -> str:
        return f"warpgroup {self.key[1]}" if self.warpgroup is not None else "the block"

    @property
    def arrivals(self) -> int:
        """Arrivals this role makes on a slot's ``empty`` barrier: one per warpgroup."""
        if self.warpgroup is not None or not self.whole_warpgroups:
            return 1
        return self.ctx.block.x * self.ctx.block.y * self.ctx.block.z // WARPGROUP_THREADS

    def leader(self) -> Value:
        """The thread that releases slots for its warpgroup (for the block: one per warpgroup)."""
        if self.warpgroup is not None:
            return self.warpgroup.thread_index.eq(0)
        thread = self.ctx.linear_thread_id
        return (thread % WARPGROUP_THREADS).eq(0) if self.whole_warpgroups else thread.eq(0)

    def issuer(self) -> Value:
        """The one thread of the role that arms a slot's barrier and issues its copies."""
        if self.warpgroup is not None:
            return self.warpgroup.thread_index.eq(0)
        return self.ctx.linear_thread_id.eq(0)

    def sync(self) -> None:
        """Wait for every thread of the role (all threads then have finished their earlier reads)."""
        if self.warpgroup is not None:
            self.warpgroup.sync()
        else:
            self.ctx.sync_threads()


class _Position:
    """A role's place in the ring, in three 32-bit registers of each of its threads: slot, phase, and
    (for consumers) how many slots it holds whose readers have not retired."""

    def __init__(self, ctx):
        self._cells = RegisterCell.many(ctx, 3)

    def _get(self, i: int) -> Value:
        return self._cells[i].value

    def _set(self, i: int, value: Value) -> None:
        self._cells[i].set(value)

    slot = property(lambda self: self._get(0))
    phase = property(lambda self: self._get(1))
    held = property(lambda self: self._get(2))

    def set_held(self, value: Value) -> None:
        self._set(2, value)

    def advance(self, depth: int) -> None:
        following = self.slot + 1
        wrapped = following.eq(depth)
        self._set(0, select(wrapped, 0, following))
        self._set(1, self.phase ^ wrapped.to(dt.int32))

    def advance_by(self, count, depth: int) -> None:
        """Move ``count`` (a non-negative int or traced int32) slots on: the phase flips once per wrap."""
        total = self.slot + count
        self._set(0, total % depth)
        self._set(1, self.phase ^ ((total // depth) & 1))


class _ConsumerState:
    def __init__(self, role: _Role, position: _Position):
        self.role, self.position = role, position
        self.pattern = None          # (groups per get body, groups in flight after it, slots held)
        self.open_lease = None
        self.read_by_threads = False
        self.may_hold = False        # whether, where tracing is, unretired wgmma may still hold slots


class Aref:
    """A ring of ``depth`` shared-memory slots from one producer role to one or more consumer roles.

    Args:
        ctx: the kernel's launch context. Create the ring at the top of the kernel body (all threads pass
            there: its barriers are initialised and the block synchronised).
        tiles: the tiles of one slot, each ``(shape, dtype)``, or ``(shape, dtype, rows)`` for a tile whose copies
            fill only its first ``rows`` rows (the rest keep what they held: for rows no result depends on).
        depth: the number of slots (pipeline stages), at least 2.
        name: what reports call the ring.
        at: place the slots at this byte offset of the launch's dynamic shared memory (``smem=``), a
            multiple of 1024, instead of after everything placed so far (for a planner that lets buffers
            with disjoint lifetimes share memory).
        in_turn: the consumer roles take the slots in turn, each slot read by one of them (a ping-pong's
            consumers, each taking a whole tile's K steps): a slot's ``empty`` barrier expects one role's
            arrival, and each consumer passes over the slots the others read with :meth:`skip`. Its
            consumers must run in the producer's order (take turns), or a wait may pass a phase early.

    Producer side: ``ring.put((a_tma, a_coords), (b_tma, b_coords))`` fills the next slot, one TMA copy
    per tile (a tile may be made of several of the descriptor's boxes). Consumer side::

        with ring.get() as (a, b):              # waits for the slot's bytes
            acc.accumulate(nvdsl.WGMMAMatrix(a, a_tma) @ nvdsl.WGMMAMatrix(b, b_tma), in_flight=1)

    The slot is given back when its readers are done (see the module's docstring). The tiles a ``get``
    yields are valid only inside its ``with`` block. A role is a warpgroup body (``nvdsl.Warpgroup``) or,
    outside any, the whole block; the ring counts its consumer warpgroups itself.
    """

    def __init__(self, ctx, tiles, *, depth: int, name: str = "ring", at: int | None = None, in_turn: bool = False):
        current_kernel("nvdsl.Aref")
        self._loc = user_location()
        if not isinstance(in_turn, bool):
            raise TraceError(f"Aref in_turn={in_turn!r} must be True or False", code="bad-aref",
                             hint="pass in_turn=True where the consumers take the slots in turn, else leave it out",
                             loc=self._loc)
        self.in_turn = in_turn
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise TraceError(f"Aref depth={depth!r} must be a positive Python int", code="bad-aref",
                             hint="2 or more slots overlap loading with computing; 1 suits a tile loaded once "
                                  "per output tile", loc=self._loc)
        if ctx.warpgroup is not None or ir.InsertionPoint.current.block != ctx.entry_block:
            raise TraceError(f"Aref '{name}' must be created at the top level of the kernel body", code="bad-aref",
                             hint="every thread must pass its initialisation; create rings before any "
                                  "Warpgroup, when or loop", loc=self._loc)
        try:
            specs = [(checked_shape(tile[0], f"Aref '{name}' tile"), *tile[1:]) for tile in tiles]
            if not all(len(spec) in (2, 3) for spec in specs):
                raise ValueError
        except (TypeError, ValueError, IndexError):
            raise TraceError(f"Aref tiles={tiles!r} must be a sequence of (shape, dtype) pairs", code="bad-aref",
                             hint="pass tiles=[((128, 64), nvdsl.float16), ...]: one (shape, dtype) pair per tile of "
                                  "a slot", loc=self._loc) from None
        if not specs or not all(isinstance(spec[1], dt.DType) for spec in specs):
            raise TraceError(f"Aref tiles={tiles!r} must be a non-empty sequence of (shape, nvdsl dtype) pairs",
                             code="bad-aref",
                             hint="pass tiles=[((128, 64), nvdsl.float16)]: at least one tile, each with an nvdsl "
                                  "dtype", loc=self._loc)
        for shape, _, *rows in specs:
            if rows and not (isinstance(rows[0], int) and not isinstance(rows[0], bool) and 0 < rows[0] <= shape[0]):
                raise TraceError(f"Aref '{name}': a tile of shape {list(shape)} cannot have its first {rows[0]!r} rows "
                                 "filled", code="bad-aref", hint="give rows between 1 and the tile's", loc=self._loc)
        self.ctx, self.depth, self.name = ctx, depth, name
        offset, layout = 0, []
        for shape, dtype, *rows in specs:
            layout.append(SlotTile(shape, dtype, offset, rows[0] if rows else None))
            offset += round_up(byte_size(shape, dtype), TILE_ALIGNMENT)
        self.tiles: tuple[SlotTile, ...] = tuple(layout)
        self.slot_bytes = offset
        #: The bytes the producer's copies deliver into one slot (the ``full`` barrier's expected transactions).
        self.transaction_bytes = sum(byte_size(t.loaded_shape, t.dtype) for t in self.tiles)
        with at_user_line():
            if at is None:
                self.base = ctx.shared.place(depth * self.slot_bytes, TILE_ALIGNMENT)
            else:
                self.base = ctx.shared.reserve(at, depth * self.slot_bytes, TILE_ALIGNMENT, f"Aref '{name}'")
            self.full, self.empty = Mbarriers(depth), Mbarriers(depth)
            index = ir.IndexType.get()
            self._empty_count = arith.constant(index, 1)     # fixed once the consumers are known
            with when(ctx.linear_thread_id.eq(0)):
                for s in range(depth):
                    self.full[s].init(1)
                    self.empty[s].init(Value(self._empty_count, dt.index))
            ctx.sync_threads()
        self._producer: tuple[_Role, _Position] | None = None
        self._fillers: tuple[TMA, ...] | None = None    # the descriptors of the first put(), tile by tile
        self._unlaid_views: list[tuple[Array, ...]] = []  # consumers' views made before that put
        self._consumers: dict[tuple, _ConsumerState] = {}
        ctx.on_finish(self._finish)

    # -- what the ring is ---------------------------------------------------------------------------------
    @property
    def consumer_arrivals(self) -> int:
        """Arrivals per phase on each ``empty`` barrier: one per consumer warpgroup (of one consumer role
        where the consumers take the slots in turn)."""
        arrivals = [state.role.arrivals for state in self._consumers.values()]
        return max(arrivals, default=0) if self.in_turn else sum(arrivals)

    def describe(self) -> str:
        """The ring as text: depth, slot layout, barrier counts, expected bytes and the roles using it."""
        tiles = ", ".join(f"{t.dtype.name}{list(t.shape)} @{t.offset}" for t in self.tiles)
        producer = self._producer[0].name if self._producer else "none yet"
        consumers = ", ".join(s.role.name for s in self._consumers.values()) or "none yet"
        return (f"ring '{self.name}': {self.depth} slots of {self.slot_bytes} B at shared byte {self.base} "
                f"({tiles}); full: 1 arrival + {self.transaction_bytes} B, empty: {self.consumer_arrivals} "
                f"arrival(s); producer {producer}; consumers {consumers}" + (", in turn" if self.in_turn else ""))

    def _lay_out(self, views: tuple[Array, ...]) -> None:
        for tma, view in zip(self._fillers, views):
            tma.lay_out(view, f"ring '{self.name}''s copies")

    def _slot_views(self, slot: Value, lease: _Lease, loaded: bool = False) -> tuple[Array, ...]:
        """The slot's tiles (``loaded``: the part of each its copies fill)."""
        start = slot.to(dt.index) * self.slot_bytes + self.base
        return tuple(self.ctx.shared.view(t.loaded_shape if loaded else t.shape, t.dtype,
                                          start + t.offset if t.offset else start, f"{self.name}.tile{i}",
                                          alignment=TILE_ALIGNMENT, lease=lease)
                     for i, t in enumerate(self.tiles))

    def joined(self, views, first: int, count: int, axis: int) -> Array:
        """Tiles ``first .. first + count - 1`` of the slot whose tiles ``get`` yielded as ``views``, read as one
        tile concatenated along ``axis``: their bytes lie one after the other. Along axis 0 that is the
        row-major concatenation; along axis 1 it is for tiles made of TMA boxes that each span all the tile's
        rows (boxes in row-major order), such as two N-major B operands of products that share A, which one
        wider wgmma then reads."""
        current_kernel("Aref.joined")
        tiles = self.tiles[first:first + count] if isinstance(first, int) and isinstance(count, int) else ()
        ok = len(tiles) == count >= 2 and axis in (0, 1) and len(views) == len(self.tiles)
        for a, b in zip(tiles, tiles[1:]):
            other = [s for i, s in enumerate(a.shape) if i != axis] == [s for i, s in enumerate(b.shape) if i != axis]
            ok &= a.dtype == b.dtype and other and len(a.shape) == 2 and b.offset == a.offset + a.nbytes
        if not ok:
            raise TraceError(f"ring '{self.name}': tiles {first}..{first + count - 1} of its slot "
                             f"({[f'{t.dtype.name}{list(t.shape)} @{t.offset}' for t in tiles]}) cannot be joined along "
                             f"axis {axis!r}: they need one dtype, one extent on the other axis, and bytes one after "
                             "the other", code="bad-aref",
                             hint="join 2 or more consecutive tiles of one dtype that agree on the other axis's "
                                  "extent, along axis 0 or 1", loc=user_location())
        start = views[first]
        start.check_lease("joining")
        shape = list(tiles[0].shape)
        shape[axis] = sum(t.shape[axis] for t in tiles)
        with at_user_line():
            return self.ctx.shared.view(tuple(shape), tiles[0].dtype, start.offset, f"{self.name}.tiles{first}+{count}",
                                        alignment=TILE_ALIGNMENT, lease=start.lease)

    # -- producer -------------------------------------------------------------------------------------------
    def put(self, *copies) -> None:
        """Fill the next slot: one ``(tma, coords)`` per tile of the slot, in order.

        Waits until the slot's consumers have released it, then one thread of the role arms the slot's
        ``full`` barrier with the tiles' bytes and issues the TMA loads (``coords`` are the element
        coordinates of the tile's first box, outermost first).
        """
        ctx = current_kernel("Aref.put")
        role = _Role(ctx, ctx.warpgroup)
        if self._producer is None:
            self._producer = (role, _Position(ctx))
        elif self._producer[0].key != role.key:
            raise TraceError(f"ring '{self.name}' is filled by {self._producer[0].name} and by {role.name}; a ring "
                             "has one producer role", code="bad-aref", hint="use one ring per producer",
                             loc=user_location())
        if len(copies) != len(self.tiles):
            raise TraceError(f"ring '{self.name}' has {len(self.tiles)} tile(s) per slot but put() got "
                             f"{len(copies)} copies", code="bad-aref",
                             hint="give one (tma, coords) pair per tile, in the ring's tile order", loc=user_location())
        for i, (copy, tile) in enumerate(zip(copies, self.tiles)):
            if not (isinstance(copy, tuple) and len(copy) == 2 and isinstance(copy[0], TMA)):
                raise TraceError(f"put() copy {i} must be a (nvdsl.TMA, coords) pair, got {copy!r}", code="bad-aref",
                                 hint="pass put((tma, (row, col)), ...): each copy an nvdsl.TMA and the coordinates "
                                      "of its first box", loc=user_location())
            if copy[0].array.dtype != tile.dtype:
                raise TraceError(f"put() copy {i} moves {copy[0].array.dtype.name} but tile {i} of ring '{self.name}' "
                                 f"is {tile.dtype.name}{list(tile.shape)}", code="bad-aref",
                                 hint=f"load tile {i} with a descriptor of a {tile.dtype.name} array, or declare the "
                                      f"ring's tile {i} as {copy[0].array.dtype.name}", loc=user_location())
            copy[0].boxes(tile.loaded_shape)            # the tile must be made of the descriptor's boxes
        if self._fillers is None:
            # Consumers indexing their tiles plainly read them in the layout the copies give (TMA._lay_out).
            self._fillers = tuple(tma for tma, _ in copies)
            for views in self._unlaid_views:
                self._lay_out(views)
            self._unlaid_views = []
        _, position = self._producer
        with at_user_line():
            slot, phase = position.slot, position.phase
            self.empty[slot].try_wait(phase ^ 1)
            issuer = role.issuer()
            self.full[slot].arrive(self.transaction_bytes, predicate=issuer)
            lease = _Lease(self.name)
            for (tma, coords), view in zip(copies, self._slot_views(slot, lease, loaded=True)):
                tma.load(view, self.full[slot], coords, predicate=issuer)
            lease.active = False
            position.advance(self.depth)

    # -- consumers ------------------------------------------------------------------------------------------
    def get(self) -> "_Get":
        """``with ring.get() as tiles:`` waits for the next slot and yields its tiles (a tuple of shared arrays),
        valid inside the block; the slot is released once everything that read it has finished."""
        state = self._consumer("Aref.get")
        if state.open_lease is not None:
            raise TraceError(f"a get() of ring '{self.name}' inside another get() of it by {state.role.name}",
                             code="bad-aref", hint="finish one slot's `with` block before taking the next",
                             loc=user_location())
        return _Get(self, state)

    def skip(self, count) -> None:
        """Pass over the next ``count`` slots (a non-negative int or traced int32), which other consumers of
        an ``in_turn`` ring read: ``count`` is how many ``put`` calls filled them. The role must hold no
        slot: call it outside ``get`` blocks, after the ``wgmma_wait`` that retires its products."""
        state = self._consumer("Aref.skip")
        loc = user_location()
        if not self.in_turn:
            raise TraceError(f"skip() on ring '{self.name}', whose consumers all read every slot", code="bad-aref",
                             hint="make the ring with in_turn=True if its consumers take the slots in turn", loc=loc)
        if state.open_lease is not None or state.may_hold:
            raise TraceError(f"skip() on ring '{self.name}' while {state.role.name} may still hold slots (inside a "
                             "get() block, or with wgmma products reading a slot not yet retired)", code="bad-aref",
                             hint="call nvdsl.wgmma_wait(0) first", loc=loc)
        if isinstance(count, int) and not isinstance(count, bool):
            if count < 0:
                raise TraceError(f"skip({count}): the count of slots must be >= 0", code="bad-aref",
                                 hint="pass the number of slots the other consumers read, 0 or more", loc=loc)
            if count == 0:
                return
        elif not (isinstance(count, Value) and count.dtype == dt.int32):
            raise TraceError(f"skip({count!r}) needs an int or a traced int32", code="bad-aref",
                             hint="pass a Python int or a traced int32, e.g. n.to(nvdsl.int32)", loc=loc)
        with at_user_line():
            state.position.advance_by(count, self.depth)

    def _consumer(self, what: str) -> _ConsumerState:
        """The state of the consumer role tracing now (made at its first get or skip)."""
        ctx = current_kernel(what)
        role = _Role(ctx, ctx.warpgroup)
        state = self._consumers.get(role.key)
        if state is None:
            state = self._consumers[role.key] = _ConsumerState(role, _Position(ctx))
            ctx.on_wgmma_wait(lambda in_flight, state=state: self._retired(state, in_flight))
        return state

    def _release(self, state: _ConsumerState, slot: Value) -> None:
        with when(state.role.leader()):
            self.empty[slot].arrive()

    def _leave(self, state: _ConsumerState, lease: _Lease, committed: int) -> None:
        """End of a ``get`` body: keep the slots that in-flight wgmma may still read, release the oldest."""
        ctx, position = self.ctx, state.position
        in_flight = ctx.wgmma_in_flight if committed else 0
        keep = -(-in_flight // committed) if committed else 0    # slots whose wgmma groups may still run
        pattern = (committed, in_flight, keep)
        if state.pattern is not None and state.pattern != pattern and keep == 1 == state.pattern[2]:
            # Each body's groups in flight are all its own (in_flight <= committed), so only the last slot
            # is held, however many groups each body commits; retiring counts the fewest per body.
            pattern = (min(committed, state.pattern[0]), max(in_flight, state.pattern[1]), keep)
        elif state.pattern is not None and state.pattern != pattern:
            raise TraceError(f"the get() bodies of ring '{self.name}' in {state.role.name} leave wgmma work in "
                             f"flight differently ({committed} group(s) committed, {in_flight} in flight here; "
                             f"{state.pattern[0]} and {state.pattern[1]} before)", code="bad-aref",
                             hint="read a ring the same way at every get()", loc=user_location())
        state.pattern = pattern
        if keep >= self.depth:
            raise TraceError(f"ring '{self.name}' has depth {self.depth}, but {in_flight} wgmma group(s) left in flight "
                             f"keep {keep} slot(s) busy: the producer would never get one back", code="aref-depth",
                             hint=f"use depth >= {keep + 1}, or fewer products in flight (in_flight=)",
                             loc=user_location())
        state.read_by_threads |= lease.read_by_threads
        if keep == 0:                     # every read has finished (after a barrier for ordinary loads)
            if lease.read_by_threads:
                state.role.sync()
            self._release(state, position.slot)
        else:
            state.may_hold = True
            held = position.held + 1
            with when(held > keep):
                if state.read_by_threads:
                    state.role.sync()
                self._release(state, _wrap(position.slot + (self.depth - keep), self.depth))
            position.set_held(select(held > keep, keep, held))
        position.advance(self.depth)

    def _retired(self, state: _ConsumerState, in_flight: int) -> None:
        """A wgmma wait in a consumer role: give back the held slots whose readers have now retired."""
        ctx = self.ctx
        if _Role(ctx, ctx.warpgroup).key != state.role.key or state.open_lease is not None or state.pattern is None:
            return
        committed, _, keep = state.pattern
        still = -(-in_flight // committed) if committed else 0     # bodies without products hold no slot
        if still >= keep:
            return
        state.may_hold = still > 0
        position = state.position
        with at_user_line():
            held, slot = position.held, position.slot
            if state.read_by_threads:
                state.role.sync()
            for j in range(keep - still):   # the oldest held slot is `held` slots behind the next one
                with when(held > still + j):
                    self._release(state, _wrap(slot + (self.depth + j) - held, self.depth))
            position.set_held(select(held > still, still, held))

    def _finish(self) -> None:
        if self._producer is None or not self._consumers:
            missing = "put()" if self._producer is None else "get()"
            raise TraceError(f"ring '{self.name}' is never used with {missing} in the kernel", code="bad-aref",
                             hint="a ring needs a producer (put) and at least one consumer (get)", loc=self._loc)
        self._empty_count.owner.attributes["value"] = ir.IntegerAttr.get(ir.IndexType.get(), self.consumer_arrivals)


class _Get:
    """The ``with`` block of one ``Aref.get``."""

    def __init__(self, ring: Aref, state: _ConsumerState):
        self.ring, self.state = ring, state

    def __enter__(self) -> tuple[Array, ...]:
        ring, state = self.ring, self.state
        self.lease = _Lease(ring.name)
        self.committed_before = ring.ctx.wgmma_committed
        with at_user_line():
            slot, phase = state.position.slot, state.position.phase
            ring.full[slot].try_wait(phase)
            views = ring._slot_views(slot, self.lease)
        if ring._fillers is None:
            ring._unlaid_views.append(views)
        else:
            ring._lay_out(views)
        state.open_lease = self.lease
        return views

    def __exit__(self, *exc) -> bool:
        ring, state = self.ring, self.state
        self.lease.active = False
        state.open_lease = None
        if exc[0] is None:
            with at_user_line():
                ring._leave(state, self.lease, ring.ctx.wgmma_committed - self.committed_before)
        return False


def _wrap(slot: Value, depth: int) -> Value:
    """``slot`` (in 0 .. 2 * depth - 1) modulo ``depth``."""
    return select(slot >= depth, slot - depth, slot)
