"""Chapter 6: tasks and mappings. Write the GEMM once, as a tile program, and map it four ways.

Chapters 4 and 5 wrote the same product twice, and most of each kernel was
*how*: which warpgroup loads, how many stages, which barrier, which offset.
The *what* fits in a few lines. The task layer (``nvdsl.tasks``) takes the
what, a **tile program**, apart from the how, a **mapping**, and derives the
kernel from both.

The tile program below says: C is cut into BM x BN tiles, each computed in
parallel (``prange``); for each, a float32 accumulator sums the products of
A's and B's tiles along K in order (``srange``); the sum, converted to C's
type, is the tile of C. It holds no barrier, phase, offset, thread index or
role, and reads and writes only what its ``@nt.task`` declaration allows.

A **mapping** (``nt.Mapping``) says how it runs: tile sizes, the ring's depth,
whether a producer warpgroup issues the loads (warp specialization), how many
consumer warpgroups share a tile, whether blocks are persistent, in which
order they walk the tiles. The compiler's passes, which ``explain()`` prints,
turn program and mapping into the primitives of the earlier chapters:

1. every read of an argument's tile becomes a copy into shared memory, and
   the events are ordered by what they read and write;
2. copies issued by the producer and read by the consumers become an ``Aref``
   ring (chapter 5), whose depth is the mapping's ``pipeline``;
3. the consumers split each tile's rows; shared memory is allocated, letting
   buffers share bytes only when their lifetimes do not overlap;
4. the accumulator goes out through a staging tile and TMA stores.

The four mappings below give chapter 4's multistage pipeline, chapter 5's
warp-specialized one, the persistent kernel of ``nvdsl.kernels.gemm``, and a
*ping-pong*, from one program. In the ping-pong each consumer takes whole
tiles, and the two take turns at the K loop (named barriers): while one runs
its tile's products, the other stores its finished tile, so the epilogue
costs the tensor cores nothing. One ring feeds both, its slots taken in turn
(``Aref(in_turn=True)``). Each consumer now holds a whole 128-row
accumulator, so the tile is 128 x 128 (128 x 256 would need about 296
registers a thread; the mapping is refused with both numbers). Mapping changes speed, never results: each is checked
against NumPy, and on a GPU with PyTorch each is also timed on a large
problem. A mapping the compiler cannot honour (a ring deeper than shared
memory holds, a tile the tensor cores cannot multiply) is refused with an
error naming both numbers, before anything is traced.

Two tools tell mappings apart. ``nvdsl.profile(kernel, c, a, b)`` runs the
kernel with each role recording its spans (the producer's loads, the
consumers' waits for data, steps and epilogues) and sums them by role; on a
GPU, ``save_png`` draws them per SM beside the planned schedule.
``nt.autotune(gemm, mappings)`` times the candidates on the device at the
first call of each shape class and keeps the fastest on disk (without a GPU
it runs the first that plans). Recording slows a kernel down: a profile shows
where the time goes, the plain kernel's time how much there is.

Run it: ``python3 tutorials/ch6_tasks_and_mappings.py``.
"""

import numpy as np

import nvdsl
import nvdsl.tasks as nt
from _chapter import run_and_verify


@nt.task(reads=("A", "B"), writes=("C",))
def gemm(C, A, B):
    BM, BN, BK = nt.tunable("BM", 128), nt.tunable("BN", 256), nt.tunable("BK", 64)
    Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
    for i, j in nt.prange(*Ct.grid):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in nt.srange(At.grid[1]):
            acc += At[i, k] @ Bt[k, j]
        Ct[i, j] = acc.astype(C.dtype)


MAPPINGS = {
    # chapter 4: the two warpgroups load for themselves, a few slots ahead of their products
    "multistage": nt.Mapping(warp_specialize=False, pipeline=4, persistent=False),
    # chapter 5: a producer warpgroup loads, two consumers multiply; one block per tile
    "warp-specialized": nt.Mapping(pipeline=4, persistent=False),
    # nvdsl.kernels.gemm: the same, one block per SM walking the tiles in groups of 8 tile rows
    "persistent": nt.Mapping(pipeline=4, persistent=True, raster="grouped", group=8),
    # the consumers take whole 128 x 128 tiles in turn, one's epilogue under the other's products
    "ping-pong": nt.Mapping(tiles={"BN": 128}, schedule="pingpong", persistent=True),
}


def check(kernel, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)

    def verify():
        expected = a.astype(np.float32) @ b.astype(np.float32)
        error = np.linalg.norm(c.astype(np.float32) - expected) / np.linalg.norm(expected)
        assert error < 2e-3, f"relative error {error}"
    run_and_verify(kernel, (c, a, b), verify)


def speed(kernels: dict, m: int = 8192, n: int = 8192, k: int = 4096) -> None:
    """TFLOP/s of each mapping on device arrays (median of 20 runs, CUDA events)."""
    try:
        import torch
    except ImportError:
        print("(timing uses PyTorch for device arrays; it is not installed)")
        return
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    print(f"speed on {torch.cuda.get_device_name()}, M={m} N={n} K={k}, float16:")
    for name, kernel in kernels.items():
        kernel(c, a, b)
        times = []
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            kernel(c, a, b)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        milliseconds = sorted(times)[len(times) // 2]
        print(f"  {name:18s} {2 * m * n * k / milliseconds / 1e9:7.1f} TFLOP/s")
    tuned = nt.autotune(gemm, list(MAPPINGS.values()))
    tuned(c, a, b)
    winner = list(MAPPINGS)[tuned.mappings.index(tuned.kernel(c, a, b).mapping)]
    print(f"nt.autotune chose: {winner}")
    profile = nvdsl.profile(kernels["persistent"], c, a, b, capacity=8192)
    try:
        profile.save_png("ch6_timeline.png")
        print("timeline of the persistent mapping: ch6_timeline.png")
    except nvdsl.ArgumentError as missing:           # matplotlib is not installed
        print(missing.hint)


def where_time_goes(kernel, m: int, n: int, k: int) -> None:
    """Each role's time by kind of span (in the interpreter: its clock, not the GPU's)."""
    c, a, b = np.zeros((m, n), np.float16), np.ones((m, k), np.float16), np.ones((k, n), np.float16)
    print(nvdsl.profile(kernel, c, a, b).summary())


def main(m=512, n=768, k=1000):
    kernels = {name: nt.build(gemm, mapping) for name, mapping in MAPPINGS.items()}
    c, a, b = np.zeros((m, n), np.float16), np.zeros((m, k), np.float16), np.zeros((k, n), np.float16)
    for name, kernel in kernels.items():
        print(f"--- {name}")
        print(kernel.explain(c, a, b))
        check(kernel, m, n, k)
        if name == "persistent":
            where_time_goes(kernel, m, n, k)
    if nvdsl.device_count() > 0:
        speed(kernels)


if __name__ == "__main__":
    main()
