"""Races on global memory between the blocks of one launch.

Nothing orders two blocks of one launch: they may run at the same time, in any order (nvdsl offers no
synchronisation between blocks; atomics used as flags would be one, and are not modelled). So two accesses
of one element from two blocks of a launch race when at least one is a plain write (two atomics do not
race, nor do two reads, nor a plain read and an atomic). The launch's end orders it before the next
launch of the host function, so each launch starts with a fresh record.

Per element of a watched buffer (a global array some kernel of the program may write), the record keeps
the block that wrote it plainly and up to two blocks that read it or updated it atomically (the first,
and the latest other one): enough to find a block other than the current one. Blocks are numbered from 1
(0: none). Only the elements touched are visited; buffers no kernel writes are not watched at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import KernelFault

READ, WRITE, ATOMIC = 1, 2, 3


@dataclass(frozen=True)
class GlobalConflict:
    """An access of element ``element`` (a position in the buffer's elements) that races with the access
    ``other_op`` (of kind ``other_kind``) of block number ``other_block``."""

    element: int
    other_block: int
    other_op: int
    other_kind: int


class GlobalShadow:
    """The blocks of the current launch that touched each element of one global buffer."""

    def __init__(self, elements: int):
        self.writer = np.zeros(elements, np.int32)
        self.writer_op = np.zeros(elements, np.int32)
        # readers and atomic updaters: the first block, and the latest block other than the first
        self.first = np.zeros(elements, np.int32)
        self.first_op = np.zeros(elements, np.int32)
        self.first_kind = np.zeros(elements, np.int8)
        self.other = np.zeros(elements, np.int32)
        self.other_op = np.zeros(elements, np.int32)
        self.other_kind = np.zeros(elements, np.int8)

    def access(self, elements: np.ndarray, block: int, kind: int, op: int) -> GlobalConflict | None:
        """Check an access of ``kind`` to ``elements`` by block number ``block`` at operation ``op``, then
        record it; the first conflict found, or None."""
        writers = self.writer[elements]
        bad = (writers != 0) & (writers != block)
        if bad.any():
            e = int(elements[np.argmax(bad)])
            return GlobalConflict(e, int(self.writer[e]), int(self.writer_op[e]), WRITE)
        if kind == WRITE:
            for blocks, ops, kinds in ((self.first, self.first_op, self.first_kind),
                                       (self.other, self.other_op, self.other_kind)):
                seen = blocks[elements]
                bad = (seen != 0) & (seen != block)
                if bad.any():
                    e = int(elements[np.argmax(bad)])
                    return GlobalConflict(e, int(blocks[e]), int(ops[e]), int(kinds[e]))
            self.writer[elements] = block
            self.writer_op[elements] = op
            return None
        first = self.first[elements]
        fresh = first == 0
        if fresh.any():
            at = elements[fresh]
            self.first[at], self.first_op[at], self.first_kind[at] = block, op, kind
        other = ~fresh & (first != block)
        if other.any():
            at = elements[other]
            self.other[at], self.other_op[at], self.other_kind[at] = block, op, kind
        return None


def watched_elements(buffer, positions: np.ndarray, itemsize: int) -> np.ndarray:
    """The elements of ``buffer`` (as it is watched) that accesses of ``itemsize`` bytes at these positions
    (in units of ``itemsize``) touch."""
    granule = buffer.granule
    if itemsize == granule:
        return positions
    first = positions * itemsize // granule
    if itemsize < granule:
        return first
    return (first[:, None] + np.arange(itemsize // granule, dtype=np.int64)).ravel()


def check_global(block, warp, buffer, elements: np.ndarray, kind: int, info, what: str) -> None:
    """``what`` (an access of ``kind`` to ``elements`` of the watched ``buffer``, by ``warp`` of ``block`` at
    ``info``'s operation) must not race with an access of another block of the launch."""
    shadows = block.launch.global_shadows
    shadow = shadows.get(buffer)
    if shadow is None:
        shadow = shadows[buffer] = GlobalShadow(buffer.nbytes // buffer.granule)
    conflict = shadow.access(elements, block.launch.block_number(block.block_id), kind, info.id)
    if conflict is not None:
        raise global_race_fault(block, warp, buffer, conflict, kind, info, what)


_DID = {READ: "read", WRITE: "wrote", ATOMIC: "updated atomically"}
_DOES = {READ: "reads", WRITE: "writes", ATOMIC: "updates atomically"}


def global_race_fault(block, warp, buffer, conflict: GlobalConflict, kind: int, info, what: str) -> KernelFault:
    """The report of ``what`` (by ``warp`` of ``block``) racing with another block's access of an element."""
    index = tuple(int(i) for i in buffer.index_of(conflict.element))
    shown = ", ".join(map(str, index))
    other = block.launch.block_id(conflict.other_block)
    other_line = block.line_of(conflict.other_op)
    message = (f"{what} {_DOES[kind]} {buffer.name}[{shown}], which block ({', '.join(map(str, other))}) "
               f"{_DID[conflict.other_kind]} in the same launch at {other_line}\n  the blocks of a launch run in no "
               f"fixed order, possibly at the same time, and nothing orders their accesses to global memory: an "
               f"update may be lost, a read may see either value")
    hint = (f"make the update atomic ({buffer.name}.atomic_add({shown}, value)), or give each block its own "
            f"elements and combine them in a second kernel (launches run one after the other)")
    return block.fault("global-race", message, info, hint=hint, warp=warp, array=buffer.name, index=index,
                       blocks=(block.block_id, other), other_line=other_line)
