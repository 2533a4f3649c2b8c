"""Chapter 7: attention, from one block of softmax to the online softmax over key blocks.

Attention is two products with a softmax between them:
``O = softmax(Q K^T / sqrt(d)) V``, the softmax taken along each row. The
chapters so far stored an accumulator as soon as the tensor cores had filled
it. Here the accumulator of the first product is worked on in registers (a
row max, an exponential, a row sum) and then becomes the A operand of the
second product, without a trip through memory.

**Step 1: one block.** One warpgroup holds 64 rows of Q, and all of K and V
fit in shared memory (at most 256 keys: one wgmma's N). Then:

* ``S = Q K^T`` is one wgmma product into a 64 x n float32
  ``WGMMAAccumulator``. K is stored row by row (n x d, d contiguous), so
  its transpose is a "K-major" B operand, which wgmma reads as it is:
  ``WGMMAMatrix(k_tile, k_tma, transposed=True)``.
* The accumulator is a :class:`~nvdsl.RegisterTile`: each of the 128
  threads holds some of its elements, placed by its
  :class:`~nvdsl.FragmentLayout`, which ``print(s.layout)`` writes in
  shape:stride form, ``((4,8,4),(2,2,n/8)):((128,1,16),(64,8,512))`` for
  64 x n. Read it as: thread ``t = t0 + 4 t1 + 32 t2`` (``t2`` its warp)
  holds rows ``16 t2 + t1`` and ``16 t2 + t1 + 8``, and in each, columns
  ``2 t0`` and ``2 t0 + 1`` of every 8-column block. ``main()`` prints the
  owner of each element of the top left corner (``T5`` is thread 5)::

        T0  T0  T1  T1  T2  T2  T3  T3  T0  T0 ...
        T4  T4  T5  T5  T6  T6  T7  T7  T4  T4 ...

  So one row is spread over four neighbouring lanes of one warp, a *quad*.
* The softmax's row max and row sum are therefore cheap: each thread
  combines its own n/4 values of the row, then the quad exchanges partial
  results with two butterfly shuffles (``shfl.sync.bfly`` with lanes 1 and 2
  apart: ``s.layout.reduction(1).shuffle_masks``), after which all four
  lanes hold the row's result. No shared memory, no barrier. ``s.max(axis=1)``
  returns a :class:`~nvdsl.RowVector`, one value per row, which broadcasts
  over the tile's rows.
* The exponential uses the GPU's ``ex2.approx`` unit (``MUFU.EX2``):
  ``exp(x) = 2^(x log2 e)``, and the scale ``1/sqrt(d)`` folds into the same
  factor, so ``P = exp2(S * c - m * c)`` with ``c = log2(e) / sqrt(d)`` is one
  fused multiply-add and one ``MUFU.EX2`` per element. Subtracting the row
  max keeps every exponent at or below 0, so nothing overflows.
* ``O = P V``: P, rounded to 16 bits, is in the accumulator layout, which is
  also the layout of wgmma's A operand in registers, so
  ``out += p.to(nvdsl.float16) @ WGMMAMatrix(v_tile, v_tma)`` issues wgmma
  with A straight from registers (``HGMMA ... R, gdesc`` in SASS). Each row is
  divided by its sum at the end, once per output element instead of once per
  score.

**Step 2: the online softmax.** A real sequence has more keys than one
wgmma holds, and S for all of them would not fit in registers. Flash
Attention walks the keys in blocks of ``bn`` and keeps, per row, the running
max ``m`` and the running sum ``l`` of ``exp(S - m)``, and an O that is
correct for the keys seen so far. When a block raises the max from ``m`` to
``m_new``, everything summed so far was scaled by ``exp(-m)`` and must now be
scaled by ``exp(-m_new)``: O and l are multiplied by
``alpha = exp2((m - m_new) * c)`` before the block's contribution is added::

    m_new = maximum(m, S.max(axis=1))
    P     = exp2(S * c - m_new * c)
    O     = O * alpha + P V
    l     = l * alpha + P.sum(axis=1)

At the end ``O / l`` is the output, and ``m / sqrt(d) + log(l)`` is the
log-sum-exp of each row (the backward pass recomputes P from it). One block
of 128 threads handles 64 rows of Q; an ``nvdsl.fori`` over the key blocks
carries ``(O, m, l)``, an accumulator and two row vectors, in registers.

The keys arrive through an ``nvdsl.Aref`` ring of two slots (chapter 5). The
warpgroup is its own producer: before working on block ``j`` it puts the TMA
loads of block ``j + 1`` into the other slot, so the copy runs while the
tensor cores and the ``MUFU`` unit work on block ``j``.

Two kinds of scores must not count, and ``nvdsl.where`` on the tile's
``indices()`` sets them to ``-inf`` (whose ``exp2`` is 0):

* *causal* attention lets query ``i`` see keys ``0..i`` only
  (``key <= row``); the blocks right of the diagonal are not even loaded,
  the loop stops at the last block the row block can see;
* a sequence length that is not a multiple of the block: TMA reads rows
  past the end of K and V as zeros, whose scores (0, not -inf) would count,
  so keys at or past ``L`` are masked too. Rows of Q past the end compute
  garbage that is never written: O leaves through a TMA store, which clips
  at the tensor's edge (Q's shared tile, no longer read, stages it), and the
  log-sum-exp's store stops at ``L``.

Every row sees key 0 in the first block, so its max is finite from the first
block on and ``S - m`` is never ``-inf - (-inf)``. Masking every block costs
a few instructions per score; a faster kernel masks only the blocks on the
diagonal and at the end.

This kernel is correct but leaves the GPU idle much of the time: each step
waits for its own Q K^T, then the softmax waits for the product, and P V
waits for the softmax. The last step overlaps them.

**Step 3: the pipelined, warp-specialized kernel, generated.**
``nvdsl.kernels.attention.attention(q, k, v, o, lse, causal=...)`` is the
kernel to use. It takes (batch, heads, L, d) tensors, grouped-query attention
(query head ``h`` reads K/V head ``h // (H // Hkv)``) and d = 64, 128 or 256.
Its source, ``attention_program`` in ``nvdsl/kernels/attention.py``, is step
2's online softmax written as a tile program (chapter 6): about 30 lines with
no barrier, ring or role in them. Its mapping (``task_mapping``) asks for
warp specialization and ``turns=True``, and the task layer derives
FlashAttention-3's pipeline, removing step 2's idle time three ways:

* *Warp specialization* (chapter 5): a producer warpgroup with 24 registers
  per thread loads the block's Q once (the tile does not depend on the key
  loop, so copy elimination hoists it) and streams K and V through a ring
  each; two consumer warpgroups (three at d = 64), each owning 64 query rows,
  take the registers it gave up.
* *Overlap inside a warpgroup*: the key loop has two phases, ``S = Q K^T``
  with its softmax, and ``O *= alpha; O += P V`` with P from registers. Step
  ``j`` issues ``S_j``, then ``O += P_{j-1} V_{j-1}``, and waits only for
  ``S_j``: the exponentials of block ``j`` run on the ``MUFU`` unit while the
  tensor cores compute the previous block's P V. ``kernel.explain(...)``
  prints this schedule.
* *Ping-pong between warpgroups*: the consumers take turns at issuing their
  products (named barriers), so one consumer's softmax runs while another's
  products hold the tensor cores.

The masks are left out of the key blocks wholly below the causal diagonal or
before ``L`` (the task layer reads that from the ``nt.arange`` comparisons),
and under a causal mask the longest rows go first. One line differs from step
2: the running max moves only when a row's scores grow by more than 2^8
(FlashAttention-4's lazy rescaling; P then stays at most 256), so in most
steps alpha is 1 for all of a thread's rows, and the generated code skips
that thread's ``O *= alpha`` (exactly: ``x * 1 == x``). On an H100 it runs at
cuDNN's speed (``python3 -m benchmarks attention``).

Run it: ``python3 tutorials/ch7_attention.py``.
"""

import math

import numpy as np

import nvdsl
from _chapter import run_and_verify

LOG2_E = math.log2(math.e)
BM = 64           # rows of Q per warpgroup: one wgmma accumulator's M
BOX = 64          # TMA boxes are 64 values wide: one 128-byte swizzle row of 16-bit values


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# --- Step 1: one block of attention ------------------------------------------------------------------------

def make_attention_block(d: int, n: int, dtype=nvdsl.float16):
    """O (64 x d, float32) = softmax(Q K^T / sqrt(d)) V for Q (64, d) and K, V (n, d), in one block."""
    c = LOG2_E / math.sqrt(d)                 # exp(x / sqrt(d)) == exp2(x * c)

    @nvdsl.mlir_func
    def attention(q, k, v, o):
        q_tma, k_tma, v_tma = (nvdsl.TMA(x, box=(x.shape[0], BOX), swizzle=128) for x in (q, k, v))
        loaded_bytes = (BM * d + 2 * n * d) * dtype.itemsize

        @nvdsl.gpu_launch(grid=1, block=128)
        def kernel(ctx):
            q_tile, k_tile, v_tile = (ctx.shared_array(x.shape, dtype, align=1024) for x in (q, k, v))
            loaded = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            loaded.init(1, predicate=leader)
            ctx.sync_threads()
            loaded.arrive(loaded_bytes, predicate=leader)
            for tma, tile in ((q_tma, q_tile), (k_tma, k_tile), (v_tma, v_tile)):
                tma.load(tile, loaded, (0, 0), predicate=leader)
            loaded.try_wait(0)

            s = nvdsl.WGMMAAccumulator(BM, n)
            s += nvdsl.WGMMAMatrix(q_tile, q_tma) @ nvdsl.WGMMAMatrix(k_tile, k_tma, transposed=True)
            m = s.max(axis=1)                                   # a RowVector: per thread, quad shuffles
            p = nvdsl.exp2(s * c - m * c, approx=True)          # one FFMA and one MUFU.EX2 per score
            l = p.sum(axis=1)
            out = nvdsl.WGMMAAccumulator(BM, d)
            out += p.to(dtype) @ nvdsl.WGMMAMatrix(v_tile, v_tma)     # A (P) from registers
            (out * (1.0 / l)).store(o)

        kernel()

    return attention


def owners(layout: nvdsl.FragmentLayout, rows: int, cols: int) -> str:
    """Which thread holds each element of the ``rows`` x ``cols`` top left corner of a tile of ``layout``."""
    owner = np.full(layout.shape, -1)
    for thread in range(layout.threads):
        for row, col in layout.elements(thread):
            owner[row, col] = thread
    return "\n".join(" ".join(f"T{t:<3d}" for t in line) for line in owner[:rows, :cols])


def explain_accumulator_layout(n: int) -> None:
    """Print the layout of a 64 x n accumulator, the owners of its corner, and how a row is reduced."""
    layout = nvdsl.layouts.wgmma_accumulator(BM, n)
    reduction = layout.reduction(1)
    print(layout)
    print(owners(layout, 10, 12))
    print(f"a row max: each thread combines its {len(reduction.groups[0])} values of a row, then "
          f"shfl.sync.bfly with lanes {' and '.join(map(str, reduction.shuffle_masks))} apart")


def reference(q, k, v, causal: bool = False):
    """O and the log-sum-exp of each row, in float64."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.T / math.sqrt(q.shape[1])
    if causal:
        rows, cols = np.indices(s.shape)
        s = np.where(cols <= rows, s, -np.inf)
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    return e @ v / e.sum(axis=1, keepdims=True), m[:, 0] + np.log(e.sum(axis=1))


def random_inputs(seq_len: int, kv_len: int, d: int, dtype=nvdsl.float16, seed: int = 0):
    """Q (seq_len, d), K and V (kv_len, d): standard normal values of a 16-bit float type."""
    np_dtype = nvdsl.dtypes.numpy_dtype(dtype)
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32).astype(np_dtype)
            for shape in ((seq_len, d), (kv_len, d), (kv_len, d))]


def tolerance(dtype) -> float:
    """P (and step 2's O) are rounded to 16 bits: float16 keeps 11 significant bits, bfloat16 8."""
    return 2e-3 if dtype == nvdsl.float16 else 1.6e-2


def check_attention_block(d: int = 64, n: int = 128, dtype=nvdsl.float16) -> None:
    q, k, v = random_inputs(BM, n, d, dtype)
    o = np.zeros((BM, d), np.float32)

    def verify():
        expected, _ = reference(q, k, v)
        np.testing.assert_allclose(o, expected, atol=tolerance(dtype), rtol=tolerance(dtype))
    print(f"step 1: one block, Q 64 x {d}, K and V {n} x {d}, {dtype.name}, against NumPy (float64)")
    run_and_verify(make_attention_block(d, n, dtype), (q, k, v, o), verify)


# --- Step 2: online softmax over blocks of keys ---------------------------------------------------------------

def make_flash_attention(d: int, causal: bool = False, bn: int = 128, dtype=nvdsl.float16):
    """O = softmax(Q K^T / sqrt(d)) V (``causal``: query i sees keys 0..i) for Q, K, V (L, d) of ``dtype``,
    and the log-sum-exp of each row (float32): one warpgroup per 64 rows of Q, keys in blocks of ``bn``."""
    scale = 1 / math.sqrt(d)
    c = scale * LOG2_E

    @nvdsl.mlir_func
    def attention(q, k, v, o, lse):
        seq_len = q.shape[0]
        q_tma, o_tma = (nvdsl.TMA(x, box=(BM, BOX), swizzle=128) for x in (q, o))
        k_tma, v_tma = (nvdsl.TMA(x, box=(bn, BOX), swizzle=128) for x in (k, v))
        key_blocks = cdiv(seq_len, bn)

        @nvdsl.gpu_launch(grid=cdiv(seq_len, BM), block=128)
        def kernel(ctx):
            kv = nvdsl.Aref(ctx, [((bn, d), dtype), ((bn, d), dtype)], depth=2, name="kv")
            q_tile = ctx.shared_array((BM, d), dtype, align=1024)
            q_loaded = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            q_loaded.init(1, predicate=leader)
            ctx.sync_threads()
            row0 = ctx.block_id.x * BM
            q_loaded.arrive(BM * d * dtype.itemsize, predicate=leader)
            q_tma.load(q_tile, q_loaded, (row0, 0), predicate=leader)

            def load_keys(block):
                kv.put((k_tma, (block * bn, 0)), (v_tma, (block * bn, 0)))

            # Causal: blocks right of this row block's diagonal hold only masked scores; skip them.
            blocks = nvdsl.minimum((row0 + BM - 1) // bn + 1, key_blocks) if causal else key_blocks
            load_keys(0)
            q_loaded.try_wait(0)
            zero = nvdsl.WGMMAAccumulator(BM, d)

            @nvdsl.fori(0, blocks, carry=(zero, nvdsl.RowVector.full(zero, -math.inf),
                                          nvdsl.RowVector.full(zero, 0.0)))
            def state(j, carry):
                out, m, l = carry
                with nvdsl.when(j + 1 < blocks):
                    load_keys(j + 1)                        # into the other slot, while this block computes
                with kv.get() as (k_tile, v_tile):
                    s = nvdsl.WGMMAAccumulator(BM, bn)
                    s += nvdsl.WGMMAMatrix(q_tile, q_tma) @ nvdsl.WGMMAMatrix(k_tile, k_tma, transposed=True)
                    rows, cols = s.indices()
                    keys = cols + (j * bn).to(nvdsl.int32)
                    visible = keys < seq_len                # TMA read the keys past the end as zeros
                    if causal:
                        visible = visible & (keys <= rows + row0.to(nvdsl.int32))
                    s = nvdsl.where(visible, s, -math.inf)
                    m_new = nvdsl.maximum(m, s.max(axis=1))
                    p = nvdsl.exp2(s * c - m_new * c, approx=True)
                    alpha = nvdsl.exp2((m - m_new) * c, approx=True)      # rescales what was summed before
                    out = out * alpha
                    out += p.to(dtype) @ nvdsl.WGMMAMatrix(v_tile, v_tma)
                return out, m_new, l * alpha + p.sum(axis=1)

            out, m, l = state
            o_staging = q_tile                              # Q is read no more: its tile stages O
            ctx.sync_threads()                              # once every warp's last Q K^T has read it
            (out * (1.0 / l)).store(o_staging, tma=o_tma)
            nvdsl.fence_shared_to_async()
            ctx.sync_threads()
            o_tma.store(o_staging, (row0, 0), predicate=leader)     # clipped at row seq_len
            (m * scale + nvdsl.log(l)).store(lse, row0, stop=seq_len)

        kernel()

    return attention


def check_flash_attention(seq_len: int, d: int = 64, causal: bool = False, bn: int = 128,
                          dtype=nvdsl.float16) -> None:
    q, k, v = random_inputs(seq_len, seq_len, d, dtype, seed=seq_len)
    o = np.zeros((seq_len, d), q.dtype)
    lse = np.zeros(seq_len, np.float32)

    def verify():
        expected, expected_lse = reference(q, k, v, causal)
        np.testing.assert_allclose(o.astype(np.float32), expected, atol=tolerance(dtype), rtol=tolerance(dtype))
        np.testing.assert_allclose(lse, expected_lse, atol=1e-4, rtol=1e-5)
    print(f"step 2: online softmax, L = {seq_len} in blocks of {bn} keys, d = {d}, "
          f"{'causal' if causal else 'not causal'}, {dtype.name}: O and log-sum-exp against NumPy (float64)")
    run_and_verify(make_flash_attention(d, causal, bn, dtype), (q, k, v, o, lse), verify)


def check_library_attention(batch: int = 1, heads: int = 4, kv_heads: int = 2, seq_len: int = 200, d: int = 64,
                            causal: bool = True, dtype=nvdsl.float16) -> None:
    """Step 3: nvdsl.kernels.attention on (batch, heads, L, d) tensors, each head against step 2's reference."""
    from nvdsl.kernels.attention import attention

    group = heads // kv_heads
    per_head = [random_inputs(seq_len, seq_len, d, dtype, seed=i) for i in range(batch * heads)]
    q = np.stack([x[0] for x in per_head]).reshape(batch, heads, seq_len, d)
    k = np.stack([x[1] for x in per_head[::group]]).reshape(batch, kv_heads, seq_len, d)
    v = np.stack([x[2] for x in per_head[::group]]).reshape(batch, kv_heads, seq_len, d)
    o, lse = np.zeros_like(q), np.zeros((batch, heads, seq_len), np.float32)

    def verify():
        for b in range(batch):
            for h in range(heads):
                expected, expected_lse = reference(q[b, h], k[b, h // group], v[b, h // group], causal)
                np.testing.assert_allclose(o[b, h].astype(np.float32), expected, atol=tolerance(dtype),
                                           rtol=tolerance(dtype))
                np.testing.assert_allclose(lse[b, h], expected_lse, atol=1e-4, rtol=1e-5)
    print(f"step 3: nvdsl.kernels.attention, {batch} x {heads} heads ({kv_heads} K/V heads), L = {seq_len}, d = {d}, "
          f"{'causal' if causal else 'not causal'}, {dtype.name}: every head against NumPy (float64)")
    attention(q, k, v, o, lse, causal=causal)
    verify()
    print("PASS")


def main(d=64, seq_len=200):
    explain_accumulator_layout(128)
    check_attention_block(d, 128)
    for causal in (False, True):
        check_flash_attention(seq_len, d, causal, bn=64)
    check_library_attention(seq_len=seq_len, d=d)


if __name__ == "__main__":
    main()
