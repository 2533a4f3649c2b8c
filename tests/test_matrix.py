"""A randomized correctness matrix on the GPU: dtypes x ragged and aligned shapes x kernels x NumPy and
device (torch) arrays, each against a NumPy float32/float64 (or exact integer) reference.

Run it alone with ``python3 -m pytest -m matrix -q``; ``--matrix-seed N`` reproduces a run (the seed is
printed in the header and in every failure). Kernels: tutorial chapters 1 to 5, ``nvdsl.kernels.gemm``,
and two of the matrix's own (an atomic sum into a scratch array, a TMA copy that moves every array
dtype, float8 included). Chapter 4 needs M and N multiples of 128 and K of 256: its ragged cases expect the
ValueError it raises; chapter 5 and ``nvdsl.kernels.gemm`` take any shape whose rows are 16-byte multiples
(TMA's rule; other shapes expect its error). Tolerances (``TOLERANCE``): exact for integers,
relative and absolute 1e-12 (float64), 1e-5 (float32), 2e-3 (float16), 2e-2 (bfloat16) against a
float64 reference of the same inputs; atomic float sums within 1e-4 (float32) of sum(|x|); GEMMs by relative
Frobenius error against a float64 product: 1e-3 (float32 C), 2e-3 (float16 C), 1e-2 (bfloat16 C).
"""

import functools
import os
import random
import sys
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

import nvdsl
from nvdsl.testing import GPU_MARKS

pytestmark = [*GPU_MARKS, pytest.mark.matrix]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = 520
NUMPY_DTYPES = {"bfloat16": np.dtype(ml_dtypes.bfloat16)}
TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}
SUM_TOLERANCE = {"float64": 1e-12, "float32": 1e-4}  # relative to sum(|x|): the GPU picks the order
GEMM_TOLERANCE = {"float32": 1e-3, "float16": 2e-3, "bfloat16": 1e-2}
ELEMENTWISE = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "bfloat16", "float32", "float64"]


def np_dtype(name: str) -> np.dtype:
    return NUMPY_DTYPES.get(name) or np.dtype(name)


@dataclass(frozen=True)
class Case:
    family: str
    dtype: str
    shape: tuple
    kind: str          # "numpy" or "torch"
    seed: int

    def __str__(self):
        return f"{self.family}-{self.dtype}-{'x'.join(map(str, self.shape))}-{self.kind}-{self.seed}"


def matrix(seed: int) -> list[Case]:
    """The cases of one seed: shapes drawn from small pools per family (so few signatures compile), data
    seeds and argument kinds drawn per case."""
    rng = random.Random(seed)
    pools = {
        "saxpy": [(64, 64), (96, 128)] + [(rng.randint(1, 70), rng.randint(1, 90)) for _ in range(2)],
        "atomic_sum": [(4096,), (rng.randint(1, 5000),), (rng.randint(1, 300),)],
        "tma_copy": [(64, 128), (100, 48), (37, 24)],
        "ch2": [(128, 128), (256, 192)],
        "ch3": [(128, 128, 64)],                         # its one fixed tile (M, N, K)
        "ch4": [(256, 256, 256), (128, 384, 512), (200, 256, 256)],
        "ch5": [(256, 256, 256), (128, 512, 512), (200, 264, 200), (256, 300, 256)],
        "gemm": [(256, 256, 256), (384, 512, 256), (136, 264, 328), (256, 300, 256)],
    }
    dtypes = {"saxpy": ELEMENTWISE, "atomic_sum": ["int32", "uint32", "int64", "uint64", "float32", "float64"],
              "tma_copy": ELEMENTWISE + ["float8_e4m3fn", "float8_e5m2"], "ch2": ["float16"], "ch3": ["float16"],
              "ch4": ["float16", "bfloat16"], "ch5": ["float16", "bfloat16"], "gemm": ["float16", "bfloat16"]}
    weights = {"saxpy": 200, "atomic_sum": 100, "tma_copy": 100, "ch2": 20, "ch3": 10, "ch4": 30, "ch5": 30,
               "gemm": 30}
    families = list(weights)
    cases = []
    for _ in range(CASES):
        family = rng.choices(families, [weights[f] for f in families])[0]
        dtype = rng.choice(dtypes[family])
        kind = "torch" if dtype.startswith("float8") else rng.choice(["numpy", "torch"])
        cases.append(Case(family, dtype, rng.choice(pools[family]), kind, rng.randrange(1 << 30)))
    return cases


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        seed = metafunc.config.getoption("--matrix-seed")
        cases = matrix(seed)
        metafunc.parametrize("case", cases, ids=[str(c) for c in cases])


# ---- arrays: NumPy, or torch on the GPU from the same bytes -------------------------------------------

def data(rng, dtype: str, shape) -> np.ndarray:
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(np_dtype(dtype) if not dtype.startswith("float8") else np.float32)


def to_kind(array: np.ndarray, kind: str, dtype: str = None):
    if kind == "numpy":
        return array
    import torch
    raw = torch.from_numpy(np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()).cuda()
    return raw.view(getattr(torch, dtype or array.dtype.name)).reshape(array.shape)


def to_numpy(value, like: np.ndarray) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    import torch
    torch.cuda.synchronize()
    return value.contiguous().view(torch.uint8).cpu().numpy().view(like.dtype).reshape(like.shape)


def assert_close(got: np.ndarray, expected: np.ndarray, dtype: str, case: Case, seed: int):
    where = f"(case {case}, --matrix-seed {seed})"
    if dtype in TOLERANCE:
        tolerance = TOLERANCE[dtype]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=tolerance,
                                   atol=tolerance, err_msg=where)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=where)


# ---- the kernels ----------------------------------------------------------------------------------------

def tutorial(name):
    path = os.path.join(ROOT, "tutorials")
    if path not in sys.path:
        sys.path.insert(0, path)
    return __import__(name)


def run_saxpy(case, rng, seed):
    x, y = data(rng, case.dtype, case.shape), data(rng, case.dtype, case.shape)
    alpha = np_dtype(case.dtype).type(3)
    if case.dtype.startswith(("int", "uint")):
        with np.errstate(over="ignore"):
            expected = (alpha * x + y).astype(case.dtype)
    else:
        expected = alpha.astype(np.float64) * x.astype(np.float64) + y.astype(np.float64)
    xs, ys = to_kind(x, case.kind), to_kind(y, case.kind)
    tutorial("ch1_saxpy").saxpy(xs, ys, alpha)
    assert_close(to_numpy(ys, y), expected, case.dtype, case, seed)


@nvdsl.mlir_func
def atomic_sum(x, out):
    n = x.shape[0]
    total = nvdsl.zeros((1,), x.dtype)

    @nvdsl.gpu_launch(grid=(n + 255) // 256, block=256)
    def accumulate(ctx):
        i = ctx.block_id.x * 256 + ctx.thread_id.x
        with nvdsl.when(i < n):
            total.atomic_add(0, x[i])
    accumulate()

    @nvdsl.gpu_launch(grid=1, block=1)
    def publish(ctx):
        out[0] = total[0]
    publish()


def run_atomic_sum(case, rng, seed):
    x = data(rng, case.dtype, case.shape)
    out = np.zeros(1, x.dtype)
    if case.dtype.startswith(("int", "uint")):
        expected = np.array([x.astype(np.int64).sum()]).astype(case.dtype)
    else:
        expected = np.array([x.astype(np.float64).sum()])
    outs = to_kind(out, case.kind)
    atomic_sum(to_kind(x, case.kind), outs)
    got = to_numpy(outs, out)
    if case.dtype.startswith("float"):  # the order of the additions is the GPU's: relative to sum |x|
        scale = np.abs(x.astype(np.float64)).sum()
        assert abs(got[0] - expected[0]) <= SUM_TOLERANCE[case.dtype] * scale, f"case {case}, seed {seed}"
    else:
        assert_close(got, expected, case.dtype, case, seed)


@functools.lru_cache(maxsize=None)
def made(chapter: str, dtype: str):
    """A chapter's make_gemm(4, dtype), made once (each made function traces its own signatures)."""
    return tutorial(chapter).make_gemm(4, getattr(nvdsl, dtype))


@functools.lru_cache(maxsize=None)
def tma_copy(itemsize: int):
    box = (32, 64 // itemsize)

    @nvdsl.mlir_func
    def copy(a, out):
        rows, cols = a.shape
        load, store = nvdsl.TMA(a, box=box), nvdsl.TMA(out, box=box)
        tile_bytes = box[0] * box[1] * itemsize

        @nvdsl.gpu_launch(grid=((cols + box[1] - 1) // box[1], (rows + box[0] - 1) // box[0]), block=32,
                          smem=tile_bytes)
        def kernel(ctx):
            tile = ctx.dynamic_shared(box, a.dtype, align=128)
            bar = nvdsl.Mbarriers(1)[0]
            leader = ctx.thread_id.x.eq(0)
            bar.init(1, predicate=leader)
            ctx.sync_threads()
            coords = (ctx.block_id.y * box[0], ctx.block_id.x * box[1])
            bar.arrive(tile_bytes, predicate=leader)
            load.load(tile, bar, coords, predicate=leader)
            bar.try_wait(0)
            nvdsl.fence_shared_to_async()
            store.store(tile, coords, predicate=leader)
        kernel()
    return copy


def run_tma_copy(case, rng, seed):
    dtype = nvdsl.dtypes.BY_NAME[case.dtype]
    copy = tma_copy(dtype.itemsize)
    if case.dtype.startswith("float8"):
        import torch
        a = torch.randn(case.shape, device="cuda").to(getattr(torch, case.dtype))
        out = torch.zeros(case.shape, device="cuda").to(a.dtype)
        expected = a.view(torch.uint8).cpu().numpy()
    else:
        source = data(rng, case.dtype, case.shape)
        a, out, expected = to_kind(source, case.kind), to_kind(np.zeros_like(source), case.kind), source
    if case.shape[1] * dtype.itemsize % 16:  # TMA needs 16-byte row strides
        with pytest.raises(nvdsl.TraceError, match="multiples of 16"):
            copy(a, out)
        return
    copy(a, out)
    if case.dtype.startswith("float8"):
        import torch
        torch.cuda.synchronize()
        np.testing.assert_array_equal(out.view(torch.uint8).cpu().numpy(), expected, err_msg=f"{case} {seed}")
    else:
        np.testing.assert_array_equal(to_numpy(out, expected), expected, err_msg=f"case {case}, seed {seed}")


def run_ch2(case, rng, seed):
    a = data(rng, "float16", case.shape)
    out = np.zeros_like(a)
    outs = to_kind(out, case.kind)
    tutorial("ch2_tma").double_by_tiles(to_kind(a, case.kind), outs)
    np.testing.assert_array_equal(to_numpy(outs, out), a * np.float16(2), err_msg=f"case {case}, seed {seed}")


def run_gemm(case, rng, seed):
    m, n, k = case.shape
    a, b = data(rng, case.dtype, (m, k)), data(rng, case.dtype, (k, n))
    if case.family == "ch3":
        fn, c_dtype = tutorial("ch3_gemm_single_tile").gemm_tile, "float32"
    elif case.family == "ch4":
        fn, c_dtype = made("ch4_gemm_multistage", case.dtype), "float32"
    elif case.family == "ch5":
        fn, c_dtype = made("ch5_gemm_warp_specialized", case.dtype), case.dtype
    else:
        from nvdsl.kernels.gemm import gemm as fn
        c_dtype = case.dtype
    c = np.zeros((m, n), np_dtype(c_dtype))
    args = (to_kind(a, case.kind), to_kind(b, case.kind), to_kind(c, case.kind))
    if case.family == "ch5":  # any shape whose rows TMA can address (16-byte strides); the library takes any shape
        if (k * 2) % 16 or (n * 2) % 16 or (n * c.dtype.itemsize) % 16:
            with pytest.raises(nvdsl.UserError, match="16"):
                fn(*args)
            return
    elif case.family == "ch4" and (m % 128 or n % 128 or k % 256):
        with pytest.raises(ValueError, match="multiple"):
            fn(*args)
        return
    fn(*args)
    got = to_numpy(args[2], c).astype(np.float64)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    error = np.linalg.norm(got - expected) / np.linalg.norm(expected)
    assert error < GEMM_TOLERANCE[c_dtype], f"relative error {error} (case {case}, --matrix-seed {seed})"


RUNNERS = {"saxpy": run_saxpy, "atomic_sum": run_atomic_sum, "tma_copy": run_tma_copy, "ch2": run_ch2,
           "ch3": run_gemm, "ch4": run_gemm, "ch5": run_gemm, "gemm": run_gemm}


def test_matrix(case, request):
    if case.kind == "torch":
        pytest.importorskip("torch")
    seed = request.config.getoption("--matrix-seed")
    RUNNERS[case.family](case, np.random.default_rng(case.seed), seed)
