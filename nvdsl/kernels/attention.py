"""Flash Attention forward: ``O = softmax(Q Kᵀ · scale [+ causal mask]) V``, with the log-sum-exp of each row.

    from nvdsl.kernels.attention import attention
    attention(q, k, v, o)                         # q, o (B, H, L, D); k, v (B, Hkv, Lk, D); float16 or bfloat16
    attention(q, k, v, o, lse, causal=True)       # lse (B, H, L) float32: the natural log of each row's sum

Any of them may be a view, used in place: ``q = x.transpose(1, 2)`` of a (B, L, H, D) projection, the three
slices of a packed (B, L, 3, H, D) qkv one, ``o`` the (B, H, L, D) view of the (B, L, H, D) buffer the next
layer reads, ``lse`` a slice of a wider array.
``H`` must be a multiple of ``Hkv`` (grouped-query attention: query head ``h`` reads key/value head
``h // (H // Hkv)``); ``D`` is 64, 128 or 256; ``L`` and ``Lk`` need not be multiples of the tile.
``causal=True`` masks key ``j`` for query ``i`` where ``j > i`` (top-left aligned, as
``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``). ``scale`` defaults to ``D ** -0.5``.

The kernel is a tile program, :func:`attention_program` (about 30 lines of ``nvdsl.tasks``: per block of
query rows, an online softmax over the key blocks, with no roles, rings or barriers), run under a mapping,
:func:`task_mapping`. The task layer derives FlashAttention-3's pipeline from it:

* a **producer** warpgroup (24 registers per thread) loads the block's Q once (a ring filled once per tile)
  and streams K and V through a ring each, so K of block j loads while V of block j - 1 is read;
* two **consumers** (three at D = 64 from 2048 queries, 4097 under a causal mask; 240 registers, or 160)
  own 64 query rows each. The loop has two phases (``S = Q Kᵀ`` and its softmax; ``O *= alpha; O += P V``): step j issues
  ``S_j``, then ``O += P_{j-1} V_{j-1}`` with P straight from registers, and computes block j's softmax
  while that product runs. The consumers take turns at issuing their products (named barriers, the
  mapping's ``turns=True``), so one's softmax also overlaps another's products;
* the masks (causal, ragged keys) are left out of the steps where they cannot change a score (a loop
  without them, then one with them), and under a causal mask the longest blocks launch first;
* a row's running max moves only when its scores grow by more than 2^8 (lazy rescaling), so in most steps a
  thread's factors ``alpha`` are all 1 and it skips its ``O *= alpha``;
* O leaves through each consumer's rows of Q's tile and TMA (clipped at ``L``).

Key blocks are 128 keys (64 at D = 256), chosen by measurement on an H100.
Pass ``mapping=`` to run the same program otherwise (persistent, other tiles): results do not change.

Variants (FlexAttention's meaning, written in tile math; see :class:`Variant`)::

    def softcap(score, b, h, q_idx, kv_idx):
        return 20.0 * nt.tanh(score / 20.0)
    def document(b, h, q_idx, kv_idx, doc):
        return (q_idx >= kv_idx) & (doc[b, q_idx] == doc[b, kv_idx])
    attention(q, k, v, o, lse, score_mod=softcap, mask_mod=document, mod_args=(doc,))

A ``mask_mod`` is evaluated once per call over blocks of 64 x 64 pairs (:func:`kept_blocks`, its operators and
indexing run on scalars; once for all batches and heads if it reads neither); each kernel then visits per block
only the range of blocks the mask keeps (:func:`block_ranges`), and the forward skips the mask on the blocks it
keeps whole. :func:`attention_backward` takes the same mods and derives the ``score_mod``'s derivative.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass

from .. import dtypes as dt
from .. import jit
from .. import tasks as nt
from ..errors import ArgumentError, TaskError, TraceError, user_location
from ..arguments import check_outputs_writable, describe, signature_key
from ..signature import ARRAY
from ..target import REGISTER_FILE
from ..scratch import float32_like, scratch_like
from . import checks

ROWS = 64                   # query rows per consumer warpgroup (one wgmma M)
PRODUCER_REGISTERS = 24
LOG2_E = 1 / math.log(2)
# A row's running max m moves only when the block's max exceeds it by more than 2^8 (FlashAttention-4's lazy
# rescaling): the scores' exponentials then stay at most 256 (fp16/bf16 P and the fp32 sums hold that with the
# same relative precision), and in most steps no row moves, alpha is 1 and o's rescaling is skipped. The result
# is the same softmax: o and l are both measured from the same m.
RESCALE_ABOVE = 8.0
LN_2 = math.log(2)
HEAD_DIMS = (64, 128, 256)


def _tiles(d: int, causal: bool, seq_q: int) -> tuple[int, int]:
    """(keys per block, consumer warpgroups), as measured fastest on an H100: 128 keys per block, 64 at
    D = 256 (two K and two V slots of 128 would not fit); at D = 64 three consumers (192 query rows per
    block, 160 registers each) without a mask from 2048 queries, and with a causal mask above 4096 (1.06x
    cuDNN at L = 16384 against 0.97x with two; 0.85x against 0.87x at 4096). (176 keys, the hand-written
    kernel's best at D = 128 without a mask, ran 3-8% slower than 128 in the generated kernel at L = 4096
    and 16384.) At most 64 queries fit one consumer's rows (decode): a second would compute nothing (at D = 256,
    bf16, one took 6.9-7.6 us where two took 9.9-10.5, on an H200 and an H100, at 1-64 queries against 4k-16k
    keys)."""
    if d == 64 and (seq_q > 4096 if causal else seq_q >= 2048):
        return 128, 3
    return (128 if d <= 128 else 64), (1 if seq_q <= ROWS else 2)


@dataclass(frozen=True)
class Variant:
    """An attention variant: a ``score_mod`` and a ``mask_mod`` (FlexAttention's meaning, written in tile math),
    and how many arrays they read (``mod_args``, passed to both after the positions).

    ``score_mod(score, b, h, q_idx, kv_idx, *mod_args) -> score``: ``score`` is a tile of ``q k * scale``, ``b``
    and ``h`` the batch and query head (indices), ``q_idx`` and ``kv_idx`` the positions of the tile's queries
    and keys (broadcast so that ``q_idx - kv_idx`` is a tile); ``mask_mod(b, h, q_idx, kv_idx, *mod_args)`` a
    mask: where it is False, the key is not attended to. Arrays read by index: ``slopes[h]``,
    ``doc[b, q_idx] == doc[b, kv_idx]``. Tile math is the task layer's (``nt.tanh``, ``nt.where``, ...), or nvdsl's
    functions of the same names (``nvdsl.tanh(score / cap)``), which apply it to tiles. A mod is kept by its hash
    (the kernel compiled for it): a function, or an object of a frozen dataclass, whose fields are then its key. A
    function's globals and closure values are read when its kernel is traced, once per process: values that change
    go in ``mod_args`` or in the fields of a frozen dataclass."""

    score_mod: object = None
    mask_mod: object = None
    arity: int = 0

    def score(self, s, b, h, q_idx, kv_idx, mods):
        """The modified scores of the tile ``s`` (``q k * scale``), checked."""
        out = self.score_mod(s, b, h, q_idx, kv_idx, *mods)
        if type(out) is not type(s) or out.shape != s.shape or not out.dtype.is_float:
            raise ArgumentError(f"score_mod {getattr(self.score_mod, '__name__', self.score_mod)} returned {out!r}; it "
                                f"must return a float tile of the scores' shape {list(s.shape)}", code="bad-argument",
                                hint="return tile math on score, e.g. cap * nt.tanh(score / cap)", loc=user_location())
        return out

    def blocks(self, partition, j, step: int, causal_below, b, h, ranges_and_mods):
        """The loop over the blocks a tile visits, the block of each step (``srange`` variable -> block index) and
        the steps whose blocks the mask keeps whole (block index -> ``nt.within``, for ``nt.where(..., unless=)``;
        None without a mask_mod): with a mask_mod, those of its row of ``RANGES`` (the first argument after the
        fixed ones); else all, or the causal triangle's (``causal_below``)."""
        if not self.mask_mod:
            return nt.srange(partition.grid[2], below=causal_below, step=step), lambda t: t, None
        ranges = ranges_and_mods[0]
        lo, hi = (nt.load_index(ranges, b, h, j, column) for column in (0, 1))
        return nt.srange(partition.grid[2], below=(hi - lo) * step, step=step), lambda t: lo + t, \
            lambda block: nt.within(block, nt.load_index(ranges, b, h, j, 2), nt.load_index(ranges, b, h, j, 3))

    @staticmethod
    def arrays(ranges_and_mods, mask_mod) -> tuple:
        """The mods' arrays among a program's last arguments (after ``RANGES`` where there is a mask_mod)."""
        return tuple(ranges_and_mods[1:] if mask_mod else ranges_and_mods)

    def keep(self, keep, b, h, q_idx, kv_idx, mods):
        """``keep`` and the mask of ``mask_mod``, checked."""
        mask = self.mask_mod(b, h, q_idx, kv_idx, *mods)
        if getattr(mask, "dtype", None) != dt.bool_:
            raise ArgumentError(f"mask_mod {getattr(self.mask_mod, '__name__', self.mask_mod)} returned {mask!r}; it "
                                "must return a mask (comparisons of positions or of arrays' elements)",
                                code="bad-argument", hint="e.g. return (q_idx >= kv_idx) & (q_idx - kv_idx < 1024)",
                                loc=user_location())
        return keep & mask


PLAIN = Variant()


def _taking(body, fixed: tuple[str, ...], variant: Variant, name: str):
    """``body`` as a function of the tensors ``fixed`` and then, with a mask_mod, the ranges of blocks to visit
    (``RANGES``, :func:`block_ranges`), and the variant's arrays (``MOD0``, ``MOD1``, ...)."""
    names = fixed + (("RANGES",) if variant.mask_mod else ()) + tuple(f"MOD{n}" for n in range(variant.arity))

    def program(*tensors):
        body(*tensors)
    program.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                               for n in names])
    program.__name__ = name
    return program, names[len(fixed):]


@functools.lru_cache(maxsize=None)
def attention_program(causal: bool = False, scale: float | None = None, with_lse: bool = True,
                      variant: Variant = PLAIN) -> nt.Task:
    """Attention as a tile program (``nvdsl.tasks``): what is computed per block of query rows, with no
    roles, rings or barriers; :func:`task_mapping` says how it runs. ``O`` (B, H, L, D) and ``LSE`` (B, H, L)
    are written (``with_lse=False``: the task takes no LSE); ``K`` and ``V`` may have fewer heads than ``Q``
    (grouped-query attention). A ``variant`` modifies the scores and masks keys (:class:`Variant`); its arrays
    are the task's last arguments."""

    def attention(O, LSE, Q, K, V, *extra):
        BM, BN = nt.tunable("BM", 128), nt.tunable("BN", 128)
        batch, heads, seq_q, d = Q.shape
        kv_heads, seq_k = K.shape[1], K.shape[2]
        group = heads // kv_heads
        scale_ = d ** -0.5 if scale is None else scale
        c = LOG2_E if variant.score_mod else scale_ * LOG2_E     # softmax in base 2, the scale folded in
        Qt, Ot = nt.blocks(Q, (1, 1, BM, d)), nt.blocks(O, (1, 1, BM, d))
        Lt = nt.blocks(LSE, (1, 1, BM)) if with_lse else None
        Kt, Vt = nt.blocks(K, (1, 1, BN, d)), nt.blocks(V, (1, 1, BN, d))
        mods = Variant.arrays(extra, variant.mask_mod)
        for b, hk, g, i in nt.prange(batch, kv_heads, group, Qt.grid[2]):
            h = hk * group + g
            rows = nt.arange(BM, start=i * BM, name="rows")
            m, l = nt.full((BM,), -math.inf, name="m"), nt.zeros((BM,), name="l")
            o = nt.zeros((BM, d), name="o")
            steps, block, whole = variant.blocks(Kt, i, BN, (i + 1) * BM if causal else None, b, h, extra)
            for t in steps:
                j = block(t)
                keys = nt.arange(BN, start=j * BN, name="keys")
                s = nt.zeros((BM, BN), name="s")
                s += Qt[b, h, i, 0] @ Kt[b, hk, j, 0].T
                if variant.score_mod:
                    s = variant.score(s * scale_, b, h, rows[:, None], keys[None, :], mods)
                keep = (keys < seq_k)[None, :]                      # keys past the end (a ragged last block)
                if causal:
                    keep = (keys[None, :] <= rows[:, None]) & keep     # and keys after the query
                if variant.mask_mod:
                    keep = variant.keep(keep, b, h, rows[:, None], keys[None, :], mods)
                s = nt.where(keep, s, -math.inf, unless=whole(j) if whole else None)
                online_softmax_step(s, m, l, o, Vt[b, hk, j, 0], c, Q.dtype, empty_rows=bool(variant.mask_mod))
            inverse = 1.0 / l
            if variant.mask_mod:                 # a row whose keys are all masked: O = 0, LSE = -inf
                inverse = nt.where(l > 0.0, inverse, 0.0)
            Ot[b, h, i, 0] = (o * inverse[:, None]).astype(O.dtype)
            if with_lse:
                Lt[b, h, i] = (m * c + nt.log2(l, approx=True)) * LN_2

    if with_lse:
        program, extra = _taking(attention, ("O", "LSE", "Q", "K", "V"), variant, "attention")
        return nt.task(reads=("Q", "K", "V") + extra, writes=("O", "LSE"))(program)

    def attention_o(O, Q, K, V, *extra):
        attention(O, None, Q, K, V, *extra)
    program, extra = _taking(attention_o, ("O", "Q", "K", "V"), variant, "attention")
    return nt.task(reads=("Q", "K", "V") + extra, writes=("O",))(program)


def online_softmax_step(s, m, l, o, v, c: float, dtype, empty_rows: bool = False) -> None:
    """One key block of an online softmax in a tile program, in base 2 with the scale folded into ``c``: the
    running max ``m`` moves to the block's (lazily: :data:`RESCALE_ABOVE`), the row sums ``l`` and the output
    ``o`` are rescaled by how far it moved, and the block's exponentials of the (masked) scores ``s`` add to
    ``l``, their product with the value tile ``v`` (P rounded to ``dtype``) to ``o``. ``empty_rows``: a row may
    have no key yet (all masked): its exponentials are measured from 0, not -inf."""
    m_new = nt.maximum(m, s.max(axis=1))
    m_new = nt.where((m_new - m) * c > RESCALE_ABOVE, m_new, m)   # lazy rescaling (RESCALE_ABOVE)
    m_from = m_new
    if empty_rows:                       # a row with no key yet: its exponentials measured from 0, not -inf
        m_from = nt.where(m_new > -math.inf, m_new, 0.0)
    p = nt.exp2(s * c - (m_from * c)[:, None], approx=True)
    alpha = nt.exp2((m - m_from) * c, approx=True)
    l[...] = l * alpha + p.sum(axis=1)
    o *= alpha[:, None]
    o += p.astype(dtype) @ v
    m[...] = m_new


@functools.lru_cache(maxsize=None)       # a Mapping is frozen; building one checks every field (a call's host time)
def task_mapping(d: int, causal: bool, seq_q: int, masked: bool = False) -> nt.Mapping:
    """How :func:`attention_program` runs: FlashAttention-3's pipeline (a producer warpgroup, consumers taking
    turns at the tensor cores, each 64 query rows), with :func:`_tiles`' sizes. Every tile the same length (no
    causal and no ``masked``: a mask_mod's ranges of blocks) runs persistent, a block per SM: side by side on
    an H100 and an H200 (fp16, B4 H16, D 64 and 128, L 1k-16k) that was 1-10% faster than a block per tile, and
    slower for causal rows (3-13% on the H200: their tiles, longest first, balance better one per block)."""
    key_block, consumers = _tiles(d, causal, seq_q)
    if consumers == 1:            # no turns to take; the task layer's own register split
        return nt.Mapping(tiles={"BM": ROWS, "BN": key_block}, pipeline=2, consumers=1, persistent=False)
    return nt.Mapping(tiles={"BM": consumers * ROWS, "BN": key_block}, pipeline=2, consumers=consumers, turns=True,
                      persistent=not (causal or masked), registers={"producer": PRODUCER_REGISTERS,
                                                   "consumer": (REGISTER_FILE // 128 - PRODUCER_REGISTERS) // consumers // 8 * 8})


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def attention(q, k, v, o, lse=None, *, causal: bool = False, scale: float | None = None, score_mod=None,
              mask_mod=None, mod_args=(), mapping: nt.Mapping | None = None) -> None:
    """``o[:] = softmax(q kᵀ · scale) v`` per (batch, head), and ``lse[:]`` the natural log of each row's sum
    of ``exp(q kᵀ · scale)`` (scores measured from 0), if given.

    Args:
        q: (B, H, L, D) float16 or bfloat16 (NumPy, or a CUDA array: torch, CuPy).
        k, v: (B, Hkv, Lk, D), q's dtype; H a multiple of Hkv.
        o: (B, H, L, D), q's dtype: the output.
        lse: (B, H, L) float32, or None.
        causal: mask key j for query i where j > i.
        scale: the factor on q kᵀ, default D ** -0.5.
        score_mod: ``score_mod(score, b, h, q_idx, kv_idx, *mod_args) -> score``, tile math on the scores
            ``q kᵀ · scale`` before the softmax (a soft cap: ``cap * nt.tanh(score / cap)``); see :class:`Variant`.
        mask_mod: ``mask_mod(b, h, q_idx, kv_idx, *mod_args) -> mask``: keys where the mask is False are not
            attended to (a sliding window: ``(q_idx >= kv_idx) & (q_idx - kv_idx < 1024)``). A row with no key
            left gets ``o = 0`` and ``lse = -inf``.
        mod_args: arrays the mods read (a document id per token, a slope per head), passed to both after
            ``kv_idx``; kernel arguments, not constants: new values need no new compile.
        mapping: how :func:`attention_program` runs (default :func:`task_mapping`'s); results do not change.

    Compiled once per shape, dtype, ``causal``, ``scale``, mods and mapping.
    """
    if type(causal) is not bool or type(scale) not in checks.PLAIN_SCALES:     # NumPy scalars: as Python's
        causal, scale = checks.python_scalars(causal, scale)
    mod_args = tuple(mod_args) if isinstance(mod_args, (tuple, list)) else mod_args
    arrays = ((q, k, v, o) if lse is None else (q, k, v, o, lse))
    plan = None
    if isinstance(causal, bool) and (scale is None or type(scale) in (int, float)) and \
            (mapping is None or isinstance(mapping, nt.Mapping)) and isinstance(mod_args, tuple):
        # The checks below are per signature (kinds, dtypes, shapes); a call like an earlier one skips them:
        # the kernel's own call still checks each array's layout and device.
        plan = (tuple(map(signature_key, arrays + mod_args)), causal, scale, mapping, score_mod, mask_mod)
        launch = _CHECKED.find(plan)
        if launch is not None:
            launch(q, k, v, o, lse, mod_args)
            return
    loc = user_location()
    specs = {name: describe(x, name, loc)[0] for name, x in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse))
             if x is not None}
    scalars = [name for name, spec in specs.items() if spec.kind != ARRAY]
    if scalars:
        raise ArgumentError(f"attention: {', '.join(scalars)} must be arrays", code="bad-argument",
                            hint="pass q, k, v, o (and lse) as NumPy arrays or CUDA tensors", loc=loc)
    (batch, heads, seq_q, d), _, _, scale = _checked_problem(specs, causal, scale, loc, "attention")
    checks.check_mapping("attention", mapping, loc)
    causal, variant = _recognized(causal, _variant(score_mod, mask_mod, mod_args, loc, "attention"))
    check_outputs_writable({"o": o, "lse": lse}, loc)
    mapping = mapping or task_mapping(d, causal, seq_q, variant.mask_mod is not None)
    launch = functools.partial(_forward, _kernel(causal, float(scale), lse is not None, mapping, variant),
                               variant.mask_mod, causal, mapping.tile_values())
    _CHECKED.remember(plan, launch)
    launch(q, k, v, o, lse, mod_args)


def _forward(kernel, mask_mod, causal: bool, tiles: dict, q, k, v, o, lse, mod_args) -> None:
    """Run the forward's kernel; with a mask_mod, on the ranges of key blocks it leaves each query block."""
    extra = mod_args
    if mask_mod is not None:
        extra = (visited_blocks(q, mask_mod, causal, k.shape[2], mod_args, tiles["BM"], tiles["BN"]),) + mod_args
    try:
        if lse is None:
            kernel(o, q, k, v, *extra)
        else:
            kernel(o, lse, q, k, v, *extra)
    except ArgumentError as error:
        raise checks.by_callers_names(error, ("q", "k", "v", "o", "lse")) from None


def _variant(score_mod, mask_mod, mod_args, loc, what: str) -> Variant:
    """The :class:`Variant` of a call's mods, checked (the mods' bodies are checked as they are traced)."""
    for name, mod in (("score_mod", score_mod), ("mask_mod", mask_mod)):
        if mod is not None and not callable(mod):
            raise ArgumentError(f"{what}: {name}={mod!r} must be a function", code="bad-argument",
                                hint="see nvdsl.kernels.attention.Variant for its parameters", loc=loc)
        try:
            hash(mod)
        except TypeError:
            raise ArgumentError(f"{what}: {name}={mod!r} cannot be hashed, and its kernel is kept by it",
                                code="bad-argument", hint=f"pass a function as {name}, or an object of a frozen "
                                "dataclass (@dataclass(frozen=True)), whose fields then key its kernel",
                                loc=loc) from None
    if not isinstance(mod_args, tuple):
        raise ArgumentError(f"{what}: mod_args={mod_args!r} must be a tuple of arrays", code="bad-argument",
                            hint="pass mod_args=(array,) for one array", loc=loc)
    arrays = "".join(f", mod{n}" for n in range(len(mod_args)))
    for name, mod, positions in (("score_mod", score_mod, "score, b, h, q_idx, kv_idx"),
                                 ("mask_mod", mask_mod, "b, h, q_idx, kv_idx")):
        try:
            if mod is not None:
                inspect.signature(mod).bind(*range(positions.count(",") + 1 + len(mod_args)))
        except TypeError:
            raise ArgumentError(f"{what}: {name} {getattr(mod, '__name__', mod)}{inspect.signature(mod)} cannot be "
                                f"called as {name}({positions}{arrays}): both mods are given every array of mod_args",
                                code="bad-argument", hint=f"give {name} the parameters ({positions}{arrays})",
                                loc=loc) from None
        except ValueError:          # no signature to inspect (a builtin): the call will tell
            pass
    if mod_args and score_mod is None and mask_mod is None:
        raise ArgumentError(f"{what}: mod_args given without a score_mod or mask_mod to read them",
                            code="bad-argument", hint="pass score_mod= or mask_mod=, or leave mod_args out", loc=loc)
    for n, x in enumerate(mod_args):
        if describe(x, f"mod_args[{n}]", loc)[0].kind != ARRAY:
            raise ArgumentError(f"{what}: mod_args[{n}] must be an array, got {type(x).__name__}",
                                code="bad-argument", hint="pass numbers as a one-element array, or in the mod's code",
                                loc=loc)
    return Variant(score_mod, mask_mod, len(mod_args)) if score_mod or mask_mod else PLAIN


class _NotPositional(Exception):
    """A mask_mod that reads more than the positions' differences (an array, the batch or the head)."""


class _Opaque:
    """An argument a positional mask does not read: any use of it ends the probe."""

    def __getattr__(self, name):
        raise _NotPositional(name)

    def _refuse(self, *args):
        raise _NotPositional()
    __getitem__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __index__ = __int__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __and__ = __rand__ = __or__ = __ror__ = _refuse
    __hash__ = object.__hash__


class _HalfPlanes(frozenset):
    """A conjunction of half-planes: ``&`` adds to it; ``|`` and ``~`` leave the shapes recognized here."""

    def __and__(self, o):
        if not isinstance(o, _HalfPlanes):
            raise _NotPositional()
        return _HalfPlanes(frozenset(self) | frozenset(o))

    def _refuse(self, *args):
        raise _NotPositional()
    __rand__ = __or__ = __ror__ = __invert__ = __xor__ = _refuse


@dataclass(frozen=True)
class _Position:
    """``q * q_idx + kv * kv_idx + c``: what a positional mask compares."""

    q: int = 0
    kv: int = 0
    c: int = 0

    def _plus(self, o, sign: int):
        if isinstance(o, _Position):
            return _Position(self.q + sign * o.q, self.kv + sign * o.kv, self.c + sign * o.c)
        if isinstance(o, int) and not isinstance(o, bool):
            return _Position(self.q, self.kv, self.c + sign * o)
        raise _NotPositional()

    def __add__(self, o): return self._plus(o, 1)
    def __radd__(self, o): return self._plus(o, 1)
    def __sub__(self, o): return self._plus(o, -1)
    def __rsub__(self, o): return _Position(-self.q, -self.kv, -self.c)._plus(o, 1)

    def _at_least(self, o, strict: bool, flip: bool) -> frozenset:
        """The half-plane ``self >= o`` (``>`` if strict; the other way if flip), as {(q, kv, c)}: q*q_idx +
        kv*kv_idx + c >= 0 over integers."""
        diff = self._plus(o, -1)
        if flip:
            diff = _Position(-diff.q, -diff.kv, -diff.c)
        return _HalfPlanes({(diff.q, diff.kv, diff.c - (1 if strict else 0))})

    def __ge__(self, o): return self._at_least(o, False, False)
    def __gt__(self, o): return self._at_least(o, True, False)
    def __le__(self, o): return self._at_least(o, False, True)
    def __lt__(self, o): return self._at_least(o, True, True)


def _half_planes(mask_mod, arity: int):
    """The half-planes (a frozenset of (q, kv, c), see :class:`_Position`) whose intersection a mask_mod is, if it
    only compares its positions and combines the comparisons with ``&``; else None."""
    try:
        mask = mask_mod(_Opaque(), _Opaque(), _Position(q=1), _Position(kv=1), *(_Opaque() for _ in range(arity)))
    except Exception:           # any other use of the arguments: not a positional mask (traced as tile math)
        return None
    return frozenset(mask) if isinstance(mask, _HalfPlanes) else None


CAUSAL_HALF_PLANE = frozenset({(1, -1, 0)})       # q_idx - kv_idx >= 0


def _recognized(causal: bool, variant: Variant) -> tuple[bool, Variant]:
    """``(causal, variant)`` with a mask_mod that is exactly the causal mask (``q_idx >= kv_idx``) run as
    ``causal=True``: the same result, with the causal kernel's block skipping and unmasked steps."""
    if variant.mask_mod is None or _half_planes(variant.mask_mod, variant.arity) != CAUSAL_HALF_PLANE:
        return causal, variant
    if variant.score_mod is None:
        return (True, PLAIN) if variant.arity == 0 else (causal, variant)
    return True, Variant(variant.score_mod, None, variant.arity)


def _listed(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


def _checked_problem(specs: dict, causal, scale, loc, what: str):
    """q's (B, H, L, D), k's Hkv and Lk, and the scale, from the described arrays q, k, v and o (and, for the
    backward, do, dq, dk, dv), checked: shapes, head_dim, heads, dtypes, lse, causal and scale."""
    like_q = [name for name in ("q", "o", "do", "dq") if name in specs]
    like_k = [name for name in ("k", "v", "dk", "dv") if name in specs]
    shapes = {name: specs[name].shape for name in like_q + like_k}
    if any(len(s) != 4 for s in shapes.values()):
        raise ArgumentError(f"{what} takes 4-D (batch, heads, seq, head_dim) arrays, got shapes {shapes}",
                            code="bad-shape", hint="a (B, L, H, D) projection goes in as x.transpose(1, 2) (no "
                            "copy); add a batch axis with x[None]", loc=loc)
    (batch, heads, seq_q, d), (kb, kv_heads, seq_k, kd) = shapes["q"], shapes["k"]
    if any(shapes[name] != shapes["k"] for name in like_k) or (kb, kd) != (batch, d) or \
            any(shapes[name] != shapes["q"] for name in like_q):
        raise ArgumentError(f"{what} needs {_listed(like_k)} of one shape (B, Hkv, Lk, D) and "
                            f"{_listed(like_q)} of one shape (B, H, L, D), with q's B and D; got {shapes}",
                            code="bad-shape", hint="make o (and do, dq) like q, and v (and dk, dv) like k",
                            loc=loc)
    if d not in HEAD_DIMS:
        raise ArgumentError(f"{what}: head_dim {d} is not supported", code="bad-shape",
                            hint=f"head_dim must be one of {HEAD_DIMS}", loc=loc)
    if kv_heads == 0 or heads % kv_heads:
        raise ArgumentError(f"{what}: q has {heads} heads, not a multiple of k's {kv_heads}", code="bad-shape",
                            hint="grouped-query attention shares each K/V head among H // Hkv query heads", loc=loc)
    if seq_k == 0 and batch * heads * seq_q:
        raise ArgumentError(f"{what}: k and v hold no keys (Lk = 0) but q holds {seq_q} queries a head: each query's "
                            "softmax would be over no keys", code="empty",
                            hint="skip the call: a query with no key gets o = 0 and lse = -inf (FlexAttention's, and "
                                 "nvdsl's for a row a mask leaves no key)", loc=loc)
    if seq_q == 0 and "dk" in specs and batch * kv_heads * seq_k:
        raise ArgumentError(f"{what}: q holds no queries (L = 0) but k holds {seq_k} keys a head: dk and dv would "
                            "be sums over no queries", code="empty", hint="skip the call: dk and dv are zero",
                            loc=loc)
    dtypes = {name: specs[name].dtype for name in like_q + like_k}
    if len(set(dtypes.values())) != 1 or dtypes["q"] not in (dt.float16, dt.bfloat16):
        raise ArgumentError(f"{what} needs {_listed(like_q + like_k)} all float16 or all bfloat16, got "
                            f"{ {name: dtype.name for name, dtype in dtypes.items()} }", code="bad-dtype",
                            hint="convert them to one of the two (x.half() or x.bfloat16())", loc=loc)
    if "lse" in specs and (specs["lse"].shape != (batch, heads, seq_q) or specs["lse"].dtype != dt.float32):
        raise ArgumentError(f"{what}: lse must be float32 of shape {(batch, heads, seq_q)}, got "
                            f"{specs['lse'].dtype.name}{list(specs['lse'].shape)}", code="bad-shape",
                            hint=f"pass lse as a float32 array of shape {(batch, heads, seq_q)}, or None", loc=loc)
    if not isinstance(causal, bool):
        raise ArgumentError(f"{what}: causal={causal!r} must be True or False", code="bad-argument",
                            hint="pass causal=True or causal=False", loc=loc)
    scale = d ** -0.5 if scale is None else scale
    if not (isinstance(scale, (int, float)) and not isinstance(scale, bool) and math.isfinite(scale) and scale > 0):
        raise ArgumentError(f"{what}: scale={scale!r} must be a positive finite number", code="bad-argument",
                            hint="leave scale out for head_dim ** -0.5, or pass a positive float", loc=loc)
    return (batch, heads, seq_q, d), kv_heads, seq_k, float(scale)


_CHECKED = checks.CallPlans()        # call signature -> the kernel its checks chose


@functools.lru_cache(maxsize=None)
def _kernel(causal: bool, scale: float, with_lse: bool, mapping: nt.Mapping, variant: Variant = PLAIN) -> nt.TaskKernel:
    return nt.build(attention_program(causal, scale, with_lse, variant), mapping)


# -- backward ---------------------------------------------------------------------------------------------------
#
# dS = P * (dP - D) with P = exp(S * scale - LSE), dP = dO Vᵀ and D = rowsum(dO * O); dV = Pᵀ dO,
# dK = dSᵀ Q * scale, dQ = dS K * scale. Three task programs compute it: D per query row (row-wise, ordinary
# loads), then dQ with the query block held (the forward's loop over key blocks, the scores recomputed), then dK
# and dV with the key block held, walking the query blocks. The last computes the transposed scores Sᵀ = K Qᵀ
# directly, so that all of its products take their operands as the tensor cores read them (Pᵀ and dSᵀ as register
# A operands, dO and Q as B): no tile is transposed through shared memory and nothing is accumulated atomically.
# dQ is therefore the same bits on every run. Query heads that share a key/value head (grouped-query attention)
# write float32 partial dK, dV per query head, summed per group by a fourth kernel in head order.

BACKWARD_KEYS = 128          # keys per dK/dV tile (two consumers, 64 each)
BACKWARD_QUERIES = 64        # queries per step of the dK/dV loop
BACKWARD_HEAD_DIMS = HEAD_DIMS
# Query rows per block of the D kernel: at 16 each thread has four loads of each array in flight (an H200, bf16 B4
# H16 L4096: 81 us at 4 rows, 22 at 16, 20 at 32 for D 64; 81, 34, 34 for D 128; tools/backward_probe.py delta-rows).
DELTA_ROWS = 16


@functools.lru_cache(maxsize=None)
def delta_program() -> nt.Task:
    """``D[b, h, i] = sum(dO[b, h, i] * O[b, h, i])`` in float32: the backward's row dot products."""

    @nt.task(reads=("O", "DO"), writes=("DELTA",))
    def attention_delta(DELTA, O, DO):
        BM = nt.tunable("BM", DELTA_ROWS)
        batch, heads, seq_q, d = O.shape
        Ot, DOt, Dt = nt.blocks(O, (1, 1, BM, d)), nt.blocks(DO, (1, 1, BM, d)), nt.blocks(DELTA, (1, 1, BM))
        for b, h, i in nt.prange(batch, heads, Ot.grid[2]):
            o = nt.zeros((BM, d), name="o")
            o += Ot[b, h, i, 0]
            do = nt.zeros((BM, d), name="do")
            do += DOt[b, h, i, 0]
            Dt[b, h, i] = (o * do).sum(axis=1)
    return attention_delta


def _probabilities(s, scale: float, lse_row, keep, variant: Variant, positions, mods, approx: bool = True):
    """The backward's ``P = exp(S · scale - LSE)`` of raw scores ``s`` (zero where ``keep`` is False; ``lse_row`` a
    broadcast row's log-sum-exp in base 2), and the derivative of the ``score_mod`` at each score (None
    without one): dS of the raw scores is ``P (dP - D)`` times it. (The mask stays in every step: skipping it on
    blocks kept whole, as the forward does, measured slower here: 213 against 233 TFLOP/s, H100, window 1024.)
    ``approx``: ``ex2.approx`` (2 ulp, as the forward's LSE is computed with; P is rounded to 16 bits before its
    products), see :func:`_approximate_exp`."""
    if not variant.score_mod:
        return nt.where(keep, nt.exp2(s * (scale * LOG2_E) - lse_row, approx=approx), 0.0), None
    modded, slope = nt.value_and_derivative(lambda x: variant.score(x, *positions, mods), s * scale)
    return nt.where(keep, nt.exp2(modded * LOG2_E - lse_row, approx=approx), 0.0), slope


def _approximate_exp(fused_dq: bool, d: int) -> bool:
    """Whether a backward program computes P with ``ex2.approx``: each does but the fused dK/dV/dQ one past
    head_dim 64. Measured on an H200 (bf16 B4 H16, ``--rounds 5``, one run each): approx took dK/dV+dQ 1-5%
    faster at D 64 and 128 and the fused kernel 1-3% at D 64, but the fused one at D 128 0.3-10% slower
    (causal L 16384: 455 -> 410 TFLOP/s), where ptxas spilled more (80 -> 100 B)."""
    return not fused_dq or d <= 64


@functools.lru_cache(maxsize=None)
def dq_program(causal: bool, scale: float, variant: Variant = PLAIN) -> nt.Task:
    """``dQ = dS K * scale`` per block of query rows, over the key blocks (the causal triangle's only)."""

    def attention_dq(DQ, Q, K, V, DO, LSE, DELTA, *extra):
        BM, BN = nt.tunable("BM", 128), nt.tunable("BN", 128)
        batch, heads, seq_q, d = Q.shape
        kv_heads, seq_k = K.shape[1], K.shape[2]
        group = heads // kv_heads
        Qt, DOt, DQt = nt.blocks(Q, (1, 1, BM, d)), nt.blocks(DO, (1, 1, BM, d)), nt.blocks(DQ, (1, 1, BM, d))
        Lt, Dt = nt.blocks(LSE, (1, 1, BM)), nt.blocks(DELTA, (1, 1, BM))
        Kt, Vt = nt.blocks(K, (1, 1, BN, d)), nt.blocks(V, (1, 1, BN, d))
        mods = Variant.arrays(extra, variant.mask_mod)
        for b, hk, g, i in nt.prange(batch, kv_heads, group, Qt.grid[2]):
            h = hk * group + g
            rows = nt.arange(BM, start=i * BM, name="rows")
            lse = nt.zeros((BM,), name="lse")
            lse += Lt[b, h, i]
            lse2 = lse * LOG2_E                                    # P = 2^(S * scale * log2(e) - LSE * log2(e))
            delta = nt.zeros((BM,), name="delta")
            delta += Dt[b, h, i]
            dq = nt.zeros((BM, d), name="dq")
            steps, block, _ = variant.blocks(Kt, i, BN, (i + 1) * BM if causal else None, b, h, extra)
            for t in steps:
                j = block(t)
                keys = nt.arange(BN, start=j * BN, name="keys")
                s = nt.zeros((BM, BN), name="s")
                dp = nt.zeros((BM, BN), name="dp")
                s += Qt[b, h, i, 0] @ Kt[b, hk, j, 0].T
                dp += DOt[b, h, i, 0] @ Vt[b, hk, j, 0].T
                keep = (keys < seq_k)[None, :]
                if causal:
                    keep = (keys[None, :] <= rows[:, None]) & keep
                if variant.mask_mod:
                    keep = variant.keep(keep, b, h, rows[:, None], keys[None, :], mods)
                p, slope = _probabilities(s, scale, lse2[:, None], keep, variant, (b, h, rows[:, None], keys[None, :]),
                                          mods)
                ds = p * (dp - delta[:, None])
                if slope is not None:
                    ds = ds * slope
                dq += ds.astype(Q.dtype) @ Kt[b, hk, j, 0]
            DQt[b, h, i, 0] = (dq * scale).astype(DQ.dtype)
    program, extra = _taking(attention_dq, ("DQ", "Q", "K", "V", "DO", "LSE", "DELTA"), variant, "attention_dq")
    return nt.task(reads=("Q", "K", "V", "DO", "LSE", "DELTA") + extra, writes=("DQ",))(program)


@functools.lru_cache(maxsize=None)
def dkdv_program(causal: bool, scale: float, variant: Variant = PLAIN, parts: str = "dkdv") -> nt.Task:
    """``dK = dSᵀ Q * scale`` and ``dV = Pᵀ dO`` per block of keys and query head, over the query blocks (under a
    causal mask, those at or after the block's first key, walked from the last). ``DK`` and ``DV`` have a head per
    query head: summed per group of heads by the caller where key/value heads are shared. ``parts`` ``"dk"`` or
    ``"dv"``: the program computes (and takes) only that gradient, with the arrays it needs (at head_dim 256 a
    consumer cannot hold both accumulators, and the scores are recomputed by each). ``parts`` ``"dkdvdq"``: dQ
    too, each step's ``dS K`` (unscaled) added into the float32 ``DQ`` (FlashAttention-3's: the scores computed
    once, five products a step; the additions land in any order)."""
    with_dk, with_dv, with_dq = parts in ("dkdv", "dk", "dkdvdq"), parts in ("dkdv", "dv", "dkdvdq"), \
        parts == "dkdvdq"
    fixed = (("DK",) if with_dk else ()) + (("DV",) if with_dv else ()) + (("DQ",) if with_dq else ()) + \
        ("Q", "K") + (("V",) if with_dk else ()) + ("DO", "LSE") + (("DELTA",) if with_dk else ())

    def attention_dkdv(*tensors):
        named = dict(zip(fixed, tensors))
        extra = tensors[len(fixed):]
        Q, K, DO, LSE = named["Q"], named["K"], named["DO"], named["LSE"]
        BM, BN = nt.tunable("BM", BACKWARD_QUERIES), nt.tunable("BN", BACKWARD_KEYS)
        batch, heads, seq_q, d = Q.shape
        kv_heads, seq_k = K.shape[1], K.shape[2]
        group = heads // kv_heads
        Kt = nt.blocks(K, (1, 1, BN, d))
        Qt, DOt = nt.blocks(Q, (1, 1, BM, d)), nt.blocks(DO, (1, 1, BM, d))
        Lt = nt.blocks(LSE, (1, 1, BM))
        if with_dk:
            Vt, DKt = nt.blocks(named["V"], (1, 1, BN, d)), nt.blocks(named["DK"], (1, 1, BN, d))
            Dt = nt.blocks(named["DELTA"], (1, 1, BM))
        if with_dv:
            DVt = nt.blocks(named["DV"], (1, 1, BN, d))
        if with_dq:
            DQt = nt.blocks(named["DQ"], (1, 1, BM, d))
        blocks = Qt.grid[2]
        mods = Variant.arrays(extra, variant.mask_mod)
        approx = _approximate_exp(with_dq, d)
        for b, hk, g, j in nt.prange(batch, kv_heads, group, Kt.grid[2]):
            h = hk * group + g
            keys = nt.arange(BN, start=j * BN, name="keys")
            if with_dk:
                dk = nt.zeros((BN, d), name="dk")
            if with_dv:
                dv = nt.zeros((BN, d), name="dv")
            # causal: the query blocks ending after the key block's first key, i = blocks-1 down to j*BN // BM;
            # with a mask_mod, those of the key block's range
            steps, block, _ = variant.blocks(Qt, j, BM, blocks * BM - j * BN if causal else None, b, h, extra)
            for t in steps:
                i = block(t) if variant.mask_mod else blocks - 1 - t if causal else t
                rows = nt.arange(BM, start=i * BM, name="rows")
                st = nt.zeros((BN, BM), name="st")
                if with_dk:
                    dpt = nt.zeros((BN, BM), name="dpt")
                st += Kt[b, hk, j, 0] @ Qt[b, h, i, 0].T
                if with_dk:
                    dpt += Vt[b, hk, j, 0] @ DOt[b, h, i, 0].T
                # Rows past L need no mask: their Q and dO read as zeros and their LSE and D as 0, so their
                # P is exp(0) = 1 and their dS 0, and both meet zero rows of dO and Q in the products. (Under a
                # variant they are masked: a score_mod may make their P overflow, and inf times 0 is NaN.)
                if variant.score_mod or variant.mask_mod:
                    keep = (rows < seq_q)[None, :]
                    if causal:
                        keep = (keys[:, None] <= rows[None, :]) & keep
                    if variant.mask_mod:
                        keep = variant.keep(keep, b, h, rows[None, :], keys[:, None], mods)
                    pt, slope = _probabilities(st, scale, Lt[b, h, i][None, :] * LOG2_E, keep, variant,
                                               (b, h, rows[None, :], keys[:, None]), mods, approx)
                else:
                    pt = nt.exp2(st * (scale * LOG2_E) - Lt[b, h, i][None, :] * LOG2_E, approx=approx)
                    slope = None
                    if causal:
                        pt = nt.where(keys[:, None] <= rows[None, :], pt, 0.0)
                if with_dv:
                    dv += pt.astype(Q.dtype) @ DOt[b, h, i, 0]
                if with_dk:
                    dst = pt * (dpt - Dt[b, h, i][None, :])
                    if slope is not None:
                        dst = dst * slope
                    ds16 = dst.astype(Q.dtype)
                # dQ's part is stored while dK's product runs where it is issued first (a group of its own); at
                # D 128 the registers of both in flight made ptxas serialize the products (H100: 2869 -> 3061 us
                # at L 4096, B4 H16), so there dK's goes first and both are waited for together
                dq_first = with_dq and d <= 64
                if dq_first:
                    dq = nt.zeros((BM, d), name="dq")
                    dq += ds16.T @ Kt[b, hk, j, 0]
                if with_dk:
                    dk += ds16 @ Qt[b, h, i, 0]
                if with_dq and not dq_first:
                    dq = nt.zeros((BM, d), name="dq")
                    dq += ds16.T @ Kt[b, hk, j, 0]
                if with_dq:
                    DQt[b, h, i, 0] += dq
            if with_dk:
                DKt[b, h, j, 0] = (dk * scale).astype(named["DK"].dtype)
            if with_dv:
                DVt[b, h, j, 0] = dv.astype(named["DV"].dtype)
    name = {"dkdv": "attention_dkdv", "dk": "attention_dk", "dv": "attention_dv", "dkdvdq": "attention_dkdvdq"}[parts]
    program, extra = _taking(attention_dkdv, fixed, variant, name)
    reads = tuple(n for n in fixed if n not in ("DK", "DV", "DQ"))
    return nt.task(reads=reads + extra, writes=tuple(n for n in fixed if n in ("DK", "DV")),
                   reduces=("DQ",) if with_dq else ())(program)


@functools.lru_cache(maxsize=None)
def backward_mappings(d: int) -> tuple[nt.Mapping, nt.Mapping, nt.Mapping]:
    """How the backward's programs run: D row-wise (DELTA_ROWS rows per block, no producer); dQ and dK/dV each as a
    producer warpgroup and two consumers of 64 rows with 3-slot rings, stepping by 64 keys (dQ) or 64 queries
    (dK, dV). Measured on an H100 at B4 H16 L4096: 3 slots against 2 took dQ from 537 to 650 TFLOP/s (its
    three products) and dK/dV from 503 to 620 (its four) at D = 128; 128-key steps left dQ's products
    serialized by ptxas for want of registers. dK/dV's steps take their queries' LSE and D through the ring
    beside Q and dO (read from shared memory where they are used): loaded by each thread from global memory, they
    arrived only after the step's first products, and the fused dK/dV/dQ kernel's consumers stalled on them (ncu
    on an H200, B4 H16 L4096 D128: 17% of its warps' stall samples at the two subtractions). At D = 256 a
    consumer's accumulator of 64 x 256 takes half its registers and a tile of 64 rows 32 KiB: one consumer of 64
    rows, 64 per step, 2-slot rings, and dK and dV each by its own program (see :func:`dkdv_program`), their
    vectors through the ring too (ptxas: the causal dK kernel's spills 248 -> 124 bytes)."""
    delta = nt.Mapping(tiles={"BM": DELTA_ROWS}, consumers=1, warp_specialize=False, persistent=False)
    if d > 128:
        one = nt.Mapping(tiles={"BM": ROWS, "BN": 64}, pipeline=2, consumers=1, persistent=False)
        return delta, one, one.replace(memory=STEP_VECTORS_IN_RING)
    consumer = (REGISTER_FILE // 128 - PRODUCER_REGISTERS) // 2 // 8 * 8
    registers = {"producer": PRODUCER_REGISTERS, "consumer": consumer}
    dq = nt.Mapping(tiles={"BM": 2 * ROWS, "BN": 64}, pipeline=3, consumers=2, persistent=False,
                    registers=registers)
    dkdv = nt.Mapping(tiles={"BM": BACKWARD_QUERIES, "BN": BACKWARD_KEYS}, pipeline=3, consumers=2,
                      persistent=False, registers=registers, memory=STEP_VECTORS_IN_RING)
    return delta, dq, dkdv


#: The dK/dV programs' per-step vectors (their queries' log-sum-exp and D), loaded by TMA into the step ring.
STEP_VECTORS_IN_RING = {"LSE": "shared", "DELTA": "shared"}


def _dkdv_parts(d: int, fused: bool = False) -> tuple[str, ...]:
    """The programs computing dK and dV (and with ``fused``, dQ) at head_dim ``d`` (see :func:`dkdv_program`)."""
    return ("dkdvdq",) if fused else ("dkdv",) if d <= 128 else ("dk", "dv")


#: Head dims whose backward adds dQ into a float32 sum from the dK/dV program (:func:`dkdv_program`'s "dkdvdq")
#: with ``deterministic=False``.
FUSED_DQ_HEAD_DIMS = (64, 128)


def attention_backward(q, k, v, o, lse, do, dq, dk, dv, *, causal: bool = False, scale: float | None = None,
                       score_mod=None, mask_mod=None, mod_args=(), deterministic: bool = True) -> None:
    """The gradients of :func:`attention`: given its inputs ``q``, ``k``, ``v``, its output ``o`` and log-sum-exp
    ``lse``, and the gradient ``do`` of a loss with respect to ``o``, write ``dq``, ``dk`` and ``dv``.

    Args:
        q, o, do, dq: (B, H, L, D) float16 or bfloat16 (NumPy, or a CUDA array: torch, CuPy); any may be a view.
        k, v, dk, dv: (B, Hkv, Lk, D), q's dtype; H a multiple of Hkv (the gradient of a shared key/value head
            sums its query heads').
        lse: (B, H, L) float32, as :func:`attention` wrote it (with the same ``causal`` and ``scale``).
        causal, scale, score_mod, mask_mod, mod_args: as given to :func:`attention`. The ``score_mod``'s
            derivative is derived from its tile math (:func:`nvdsl.tasks.value_and_derivative`).
        deterministic: True (the default): dQ by its own pass over the key blocks, so that every output is the
            same bits on every run. False (D = 64 or 128): the dK/dV program adds each step's part of dQ into a
            float32 sum (FlashAttention-3's five products a step: the scores computed once), whose additions land
            in any order, so dQ may differ in its last bits from run to run (dK and dV do not). At D 128 the
            consumer warpgroups stage dS side by side in shared memory and each computes half of dQ's columns
            (FlashAttention-3's); at D 64 each adds its own keys' part, staged while dK's product runs. Faster
            at long L (bf16 B4 H16 on an H200, D 64 and 128: 0.81-0.97x the default at L 1024, 0.91-1.15x
            at L 4096 and 16384, behind only causal at D 128, L 4096; at D 128 its consumers spill a few
            registers).

    D = 64, 128 or 256 (at 256 the scores are computed three times: a consumer cannot hold dK and dV at once,
    and dQ has its own pass); L and Lk need not be multiples of anything. Float32 scratch (the row dot products
    ``rowsum(do * o)``, dQ's sum, and per-query-head dK, dV under grouped-query attention) is allocated beside
    ``q``. A call like an earlier one (the arrays' kinds, dtypes, shapes and strides, the options
    and mods) skips the argument checks and goes straight to the kernels.
    """
    if type(causal) is not bool or type(scale) not in checks.PLAIN_SCALES:     # NumPy scalars: as Python's
        causal, scale = checks.python_scalars(causal, scale)
    mod_args = tuple(mod_args) if isinstance(mod_args, (tuple, list)) else mod_args
    signature = None
    if isinstance(causal, bool) and (scale is None or type(scale) in (int, float)) and isinstance(mod_args, tuple):
        # The checks below are per signature (kinds, dtypes, shapes, strides); a call like an earlier one skips
        # them (a training step's): the kernels' own calls still check each array's layout and device.
        signature = (tuple(map(signature_key, (q, k, v, o, lse, do, dq, dk, dv) + mod_args)), causal, scale,
                     score_mod, mask_mod, deterministic)
        plan = _BACKWARD_PLANS.find(signature)
        if plan is not None:
            plan.run(q, k, v, o, lse, do, dq, dk, dv, mod_args)
            return
    loc = user_location()
    arrays = {"q": q, "k": k, "v": v, "o": o, "lse": lse, "do": do, "dq": dq, "dk": dk, "dv": dv}
    specs = {name: describe(x, name, loc)[0] for name, x in arrays.items()}
    scalars = [name for name, spec in specs.items() if spec.kind != ARRAY]
    if scalars:
        raise ArgumentError(f"attention_backward: {', '.join(scalars)} must be arrays", code="bad-argument",
                            hint="pass every input and gradient as a NumPy array or CUDA tensor", loc=loc)
    shape, kv_heads, seq_k, scale = _checked_problem(specs, causal, scale, loc, "attention_backward")
    causal, variant = _recognized(causal, _variant(score_mod, mask_mod, mod_args, loc, "attention_backward"))
    if not isinstance(deterministic, bool):
        raise ArgumentError(f"attention_backward: deterministic={deterministic!r} must be True or False",
                            code="bad-argument", hint="pass deterministic=True (dQ the same bits every run) or "
                            "False (dQ summed by atomic additions)", loc=loc)
    check_outputs_writable({"dq": dq, "dk": dk, "dv": dv}, loc)
    plan = _BackwardPlan(shape, kv_heads, seq_k, causal, scale, variant,
                         fused=not deterministic and shape[3] in FUSED_DQ_HEAD_DIMS)
    plan.run(q, k, v, o, lse, do, dq, dk, dv, mod_args)
    _BACKWARD_PLANS.remember(signature, plan)


_BACKWARD_PLANS = checks.CallPlans()      # call signature -> the _BackwardPlan its checks made


@dataclass(frozen=True)
class _BackwardPlan:
    """What :func:`attention_backward` runs for one call signature, once its arguments are checked."""

    shape: tuple[int, int, int, int]        # q's (B, H, L, D)
    kv_heads: int
    seq_k: int
    causal: bool
    scale: float
    variant: Variant
    fused: bool = False                     # dQ added up by the dK/dV program (see attention_backward)

    def run(self, q, k, v, o, lse, do, dq, dk, dv, mod_args) -> None:
        try:
            self._run(q, k, v, o, lse, do, dq, dk, dv, mod_args)
        except ArgumentError as error:
            raise checks.by_callers_names(error, ("q", "k", "v", "o", "lse", "do", "dq", "dk", "dv")) from None

    def _run(self, q, k, v, o, lse, do, dq, dk, dv, mod_args) -> None:
        batch, heads, seq_q, d = self.shape
        seq_k, causal, scale, variant = self.seq_k, self.causal, self.scale, self.variant
        delta_mapping, dq_mapping, dkdv_mapping = backward_mappings(d)
        delta = float32_like(q, (batch, heads, seq_q), "attention_backward.delta")
        if delta is None:
            raise ArgumentError(f"attention_backward: cannot allocate scratch beside q of type {type(q).__name__}",
                                code="bad-argument", hint="pass NumPy arrays, torch tensors or CuPy arrays",
                                loc=user_location())
        _built(delta_program(), delta_mapping)(delta, o, do)
        kept = kept_blocks(q, variant.mask_mod, causal, seq_k, mod_args) if variant.mask_mod else None
        if self.fused:
            dq_sum = float32_like(q, (batch, heads, seq_q, d), "attention_backward.dq")
            _fill(dq_sum, value=0)
        else:
            dq_extra = mod_args if kept is None else \
                (block_ranges(q, kept, dq_mapping.tile_values()["BM"], dq_mapping.tile_values()["BN"]),) + mod_args
            _built(dq_program(causal, scale, variant), dq_mapping)(dq, q, k, v, do, lse, delta, *dq_extra)
        # Under a causal mask no query reaches the keys past the last query block: their gradients are zero, and
        # the dK/dV loop (which walks the query blocks at or after its keys) runs over the others only.
        step = dkdv_mapping.tile_values()["BM"]
        reached = min(seq_k, _cdiv(seq_q, step) * step) if causal else seq_k
        if reached < seq_k:
            _fill(dk[:, :, reached:], value=0)
            _fill(dv[:, :, reached:], value=0)
            k, v, dk, dv = k[:, :, :reached], v[:, :, :reached], dk[:, :, :reached], dv[:, :, :reached]
        grouped = heads != self.kv_heads
        dk_heads = float32_like(q, (batch, heads, reached, d), "attention_backward.dk") if grouped else dk
        dv_heads = float32_like(q, (batch, heads, reached, d), "attention_backward.dv") if grouped else dv
        # per key block, the query blocks its keys are kept by (the table's key blocks past ``reached`` are never
        # read)
        keys = dkdv_mapping.tile_values()["BN"]
        dkdv_extra = mod_args if kept is None else \
            (block_ranges(q, kept, keys, step, along_keys=False)[:, :, :_cdiv(reached, keys)],) + mod_args
        for parts in _dkdv_parts(d, self.fused):
            arguments = {"dkdv": (dk_heads, dv_heads, q, k, v, do, lse, delta),
                         "dkdvdq": (dk_heads, dv_heads, dq_sum, q, k, v, do, lse, delta) if self.fused else None,
                         "dk": (dk_heads, q, k, v, do, lse, delta), "dv": (dv_heads, q, k, do, lse)}[parts]
            _built(dkdv_program(causal, scale, variant, parts), dkdv_mapping)(*arguments, *dkdv_extra)
        if self.fused:
            _sum_groups(dq, dq_sum, scale=scale)
        if grouped:
            _sum_groups(dk, dk_heads)
            _sum_groups(dv, dv_heads)


@functools.lru_cache(maxsize=None)
def _built(program: nt.Task, mapping: nt.Mapping) -> nt.TaskKernel:
    return nt.build(program, mapping)


ELEMENTWISE_THREADS = 256


def _element(ctx, shape):
    """This thread's element of a 4-D array of ``shape`` (one thread per element, ``ELEMENTWISE_THREADS`` a
    block), and whether there is one."""
    batch, heads, seq, d = shape
    e = ctx.block_id.x * ELEMENTWISE_THREADS + ctx.thread_id.x
    c, r = e % d, e // d
    position, r = r % seq, r // seq
    return e < batch * heads * seq * d, (r // heads, r % heads, position, c)


def _elementwise_grid(shape) -> dict:
    return {"grid": (_cdiv(math.prod(shape), ELEMENTWISE_THREADS), 1, 1), "block": (ELEMENTWISE_THREADS, 1, 1)}


@jit.mlir_func
def _sum_groups(out, parts, *, scale: float = 1.0):
    """``out[b, hk] = (parts[b, hk * G] + parts[b, hk * G + 1] + ...) * scale`` (G = parts' heads // out's), added
    in head order and converted to out's dtype: the gradient of a key/value head shared by G query heads (with
    G = 1 and a scale, dQ from its float32 sum)."""
    from ..frontend.control import when          # MLIR: imported when traced, not with the library
    from ..frontend.launch import gpu_launch
    group = parts.shape[1] // out.shape[1]

    @gpu_launch(**_elementwise_grid(out.shape))
    def sum_kernel(ctx):
        inside, (b, hk, position, c) = _element(ctx, out.shape)
        with when(inside):
            acc = parts[b, hk * group, position, c]
            for g in range(1, group):
                acc = acc + parts[b, hk * group + g, position, c]
            if scale != 1.0:
                acc = acc * scale
            out[b, hk, position, c] = acc.to(out.dtype)
    sum_kernel()


@jit.mlir_func
def _fill(out, *, value: int):
    """``out[...] = value`` for a 4-D array (a view of one, any strides)."""
    from ..frontend.control import when
    from ..frontend.launch import gpu_launch
    from ..frontend.values import constant

    @gpu_launch(**_elementwise_grid(out.shape))
    def fill_kernel(ctx):
        inside, index = _element(ctx, out.shape)
        with when(inside):
            out[index] = constant(value if out.dtype.is_int else float(value), out.dtype)
    fill_kernel()


# -- blocks a mask_mod masks entirely ---------------------------------------------------------------------------
#
# A mask_mod is evaluated over every (query, key) pair once per call, at the granularity of MASK_BLOCK x MASK_BLOCK
# blocks (one thread per query row of a block, looping over its keys: the mask written with operators and indexing
# runs on scalars as it runs on tiles): a block is kept if any pair in it is. Each kernel then visits, per block of
# its loop, the range of blocks from the first kept to the last (masks, sliding windows and documents keep a
# contiguous range; blocks inside a range are visited even if masked).

MASK_BLOCK = 64


@functools.lru_cache(maxsize=None)
def _kept_blocks(mask_mod, causal: bool, seq_q: int, seq_k: int, batch_given=None, head_given=None):
    """The kernel marking ``kept[b, h, i, j] = 1`` where ``mask_mod`` (and ``causal``) keeps any pair of query block
    ``i`` and key block ``j`` (of :data:`MASK_BLOCK`), and ``missing[b, h, i, j] = 1`` where it leaves out any (or
    the block runs past an end); both zero before. With ``batch_given`` (``head_given``) the mask is given that
    batch (head) for all: the tables then have one."""

    def kept_blocks(kept, missing, *mods):
        from ..frontend.control import fori, when      # MLIR: imported when traced, not with the library
        from ..frontend.launch import gpu_launch
        from ..frontend.values import constant, minimum
        batch, heads, query_blocks, key_blocks = kept.shape

        @gpu_launch(grid=(batch * heads * query_blocks * key_blocks, 1, 1), block=(MASK_BLOCK, 1, 1))
        def mark(ctx):
            e = ctx.block_id.x
            j, e = e % key_blocks, e // key_blocks
            i, e = e % query_blocks, e // query_blocks
            b, h = e // heads, e % heads
            row = i * MASK_BLOCK + ctx.thread_id.x
            first = j * MASK_BLOCK
            at_row = minimum(row, seq_q - 1)         # rows and keys past the ends: a pair inside, never kept

            @fori(0, MASK_BLOCK, carry=(constant(False, dt.bool_), constant(False, dt.bool_)))
            def found(c, carried):
                any_kept, any_left = carried
                key = first + c
                keep = mask_mod(b if batch_given is None else batch_given, h if head_given is None else head_given,
                                at_row, minimum(key, seq_k - 1), *mods) & (key < seq_k) & (row < seq_q)
                if causal:
                    keep = keep & (key <= row)
                return any_kept | keep, any_left | ~keep
            any_kept, any_left = found
            with when(any_kept):
                kept[b, h, i, j] = constant(1, dt.int32)
            with when(any_left):               # a pair left out (or past an end): the block is not full
                missing[b, h, i, j] = constant(1, dt.int32)
        mark()
    kept_blocks.__name__ = f"kept_blocks_{getattr(mask_mod, '__name__', 'mask')}"
    return jit.mlir_func(kept_blocks)


@jit.mlir_func
def _block_ranges(ranges, kept, missing, *, along_keys: bool, factor_rows: int, factor_range: int):
    """``ranges[b, h, r] = (first, end, first full, end of the full run)`` of the blocks kept beside block ``r``:
    with ``along_keys``, ``r`` a query block of ``factor_rows`` :data:`MASK_BLOCK` rows and the range over key blocks
    of ``factor_range``; else ``r`` a key block and the range over query blocks. A block is full where every pair in
    it is kept (none missing, none past an end); the full run is the first block that is and those right after it
    that are too. (0, 0) where none is kept (none full). ``kept`` and ``missing`` may have one batch or head for
    all."""
    from ..frontend.control import fori, when
    from ..frontend.launch import gpu_launch
    from ..frontend.values import constant, minimum, select
    batch, heads, count = ranges.shape[:3]
    kept_batch, kept_head, query_blocks, key_blocks = kept.shape
    span = _cdiv(key_blocks if along_keys else query_blocks, factor_range)

    @gpu_launch(grid=(_cdiv(batch * heads * count, 128), 1, 1), block=(128, 1, 1))
    def scan(ctx):
        e = ctx.block_id.x * 128 + ctx.thread_id.x
        r, bh = e % count, e // count
        b, h = bh // heads, bh % heads
        kb, kh = (b if kept_batch > 1 else 0), (h if kept_head > 1 else 0)
        with when(e < batch * heads * count):
            none = constant(-1, dt.int32)

            @fori(0, span, carry=(constant(span, dt.int32), none, none, none))
            def bounds(t, carried):
                lo, last, full_lo, full_end = carried
                any_kept, all_full = constant(False, dt.bool_), constant(True, dt.bool_)
                for a in range(factor_rows):
                    for z in range(factor_range):
                        fine_r, fine_t = r * factor_rows + a, t * factor_range + z
                        q, k = (fine_r, fine_t) if along_keys else (fine_t, fine_r)
                        inside = (q < query_blocks) & (k < key_blocks)
                        at = (kb, kh, minimum(q, query_blocks - 1), minimum(k, key_blocks - 1))
                        any_kept = any_kept | (inside & (kept[at] != 0))
                        all_full = all_full & inside & (missing[at] == 0)
                t32 = t.to(dt.int32)
                starts = all_full & (full_lo < 0)
                extends = all_full & (starts | (full_end == t32))
                return (minimum(lo, select(any_kept, t32, lo)), select(any_kept, t32, last),
                        select(starts, t32, full_lo), select(extends, t32 + 1, full_end))
            lo, last, full_lo, full_end = bounds
            ranges[b, h, r, 0] = select(last >= 0, lo, constant(0, dt.int32))
            ranges[b, h, r, 1] = last + 1
            ranges[b, h, r, 2] = select(full_lo >= 0, full_lo, constant(0, dt.int32))
            ranges[b, h, r, 3] = select(full_lo >= 0, full_end, constant(0, dt.int32))
    scan()


def kept_blocks(q, mask_mod, causal: bool, seq_k: int, mod_args):
    """``(kept, missing)``, each (B, H, ceil(L / 64), ceil(Lk / 64)) int32: 1 where ``mask_mod`` (and ``causal``)
    keeps any pair of a block of :data:`MASK_BLOCK` queries and keys, and where it leaves out any (or the block runs
    past an end); scratch beside ``q``, with one batch (head) for all if the mask does not read it. A mask that does
    not run on scalars (one calling ``nt`` functions rather than operators) keeps every block and fills none: the
    kernels then visit all of them and mask each. A mask_mod with a ``block_tables(q, causal, seq_k, mod_args)``
    attribute gives its tables itself (the library's masks whose structure makes them cheaper than evaluating
    every pair: ``attention_varlen.key_interval``)."""
    given = getattr(mask_mod, "block_tables", None)
    if given is not None:
        return given(q, causal, seq_k, mod_args)
    batch, heads, seq_q = q.shape[:3]
    blocks = (_cdiv(seq_q, MASK_BLOCK), _cdiv(seq_k, MASK_BLOCK))
    reads = _mask_reads(q, mask_mod, causal, seq_k, mod_args)
    shape = ((batch if reads[0] else 1, heads if reads[1] else 1) if reads else (1, 1)) + blocks
    kept = scratch_like(q, shape, "attention.kept_blocks", "int32")
    missing = scratch_like(q, shape, "attention.missing_blocks", "int32")
    _fill(kept, value=0 if reads else 1)
    _fill(missing, value=0 if reads else 1)
    if reads:
        _kept_blocks(mask_mod, causal, seq_q, seq_k, None if reads[0] else 0, None if reads[1] else 0)(
            kept, missing, *mod_args)
    return kept, missing


def _mask_reads(q, mask_mod, causal: bool, seq_k: int, mod_args):
    """(whether ``mask_mod`` reads the batch, whether it reads the head), or None if it does not run on scalars:
    its kernel traced with batch 1 (head 1) differs from its kernel traced with 0. A mask that reads neither (a
    sliding window) is evaluated once for all batches and heads, one that reads the batch (a document id per
    token) once per batch."""
    seq_q = q.shape[2]
    key = (mask_mod, causal, seq_q, seq_k, tuple(map(signature_key, (q,) + mod_args)))
    if key not in _MASK_READS:
        kept = scratch_like(q, (1, 1, _cdiv(seq_q, MASK_BLOCK), _cdiv(seq_k, MASK_BLOCK)), "attention.kept_blocks",
                            "int32")
        try:
            text = lambda b, h: _kept_blocks(mask_mod, causal, seq_q, seq_k, b, h).trace(  # noqa: E731
                kept, kept, *mod_args).mlir
            base = text(0, 0)          # (a batch or head of one is the same for all: not probed past its end)
            _MASK_READS[key] = (q.shape[0] > 1 and text(1, 0) != base, q.shape[1] > 1 and text(0, 1) != base)
        except (TraceError, TaskError):
            _MASK_READS[key] = None
    return _MASK_READS[key]


_MASK_READS: dict = {}


def block_ranges(q, blocks, block_rows: int, block_range: int, along_keys: bool = True):
    """``ranges`` (B, H, blocks, 4) int32 from :func:`kept_blocks`' tables: per block of ``block_rows`` queries
    (``along_keys``; else keys), the first block of ``block_range`` keys (else queries) with a kept pair and the end
    of the last, then the first full block and the end of the full run from it (:func:`_block_ranges`); (0, 0)
    where none (scratch beside ``q``)."""
    kept, missing = blocks
    query_blocks, key_blocks = kept.shape[2:]
    count = _cdiv((query_blocks if along_keys else key_blocks) * MASK_BLOCK, block_rows)
    ranges = scratch_like(q, q.shape[:2] + (count, 4), f"attention.ranges_{block_rows}_{block_range}_{along_keys}",
                          "int32")
    _block_ranges(ranges, kept, missing, along_keys=along_keys, factor_rows=block_rows // MASK_BLOCK,
                  factor_range=block_range // MASK_BLOCK)
    return ranges


def visited_blocks(q, mask_mod, causal: bool, seq_k: int, mod_args, block_rows: int, block_range: int,
                   along_keys: bool = True):
    """:func:`block_ranges` of :func:`kept_blocks`."""
    return block_ranges(q, kept_blocks(q, mask_mod, causal, seq_k, mod_args), block_rows, block_range, along_keys)
