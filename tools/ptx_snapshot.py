"""Write the PTX of every tutorial kernel and every ``nvdsl.kernels`` kernel (under each of its mappings) to a
folder, one file per kernel, so that a refactoring can show it changed no kernel: run it before and after,
then ``diff -r before after``.

    python3 tools/ptx_snapshot.py DIR [NAME_FILTER]

Runs without a GPU (the compile needs ptxas: the ``test`` extra's nvidia-cuda-nvcc wheel).
"""

import importlib
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tutorials"))

import nvdsl                                 # noqa: E402
import nvdsl.tasks as nt                     # noqa: E402
from nvdsl.kernels import attention as att   # noqa: E402
from nvdsl.kernels import gemm as g          # noqa: E402
from nvdsl.kernels import rowwise            # noqa: E402

f16 = lambda *shape: np.zeros(shape, np.float16)     # noqa: E731
f32 = lambda *shape: np.zeros(shape, np.float32)     # noqa: E731


def chapter(name):
    return importlib.import_module(name)


def cases():
    """(name, a compile thunk returning a Compiled)."""
    x = f32(1000, 1500)
    yield "ch0_hello", lambda: chapter("ch0_hello").hello.compile()
    yield "ch1_saxpy", lambda: chapter("ch1_saxpy").saxpy.compile(x, x.copy(), 2.5)
    yield "ch2_tma", lambda: chapter("ch2_tma").double_by_tiles.compile(f16(256, 192), f16(256, 192))
    yield "ch3_gemm_single_tile", lambda: chapter("ch3_gemm_single_tile").gemm_tile.compile(
        f16(128, 64), f16(64, 128), f32(128, 128))
    yield "ch4_gemm_multistage", lambda: chapter("ch4_gemm_multistage").make_gemm(4).compile(
        f16(256, 512), f16(512, 256), f32(256, 256))
    yield "ch5_gemm_warp_specialized", lambda: chapter("ch5_gemm_warp_specialized").make_gemm(num_stages=4).compile(
        f16(256, 512), f16(512, 1024), f16(256, 1024))
    ch6 = chapter("ch6_tasks_and_mappings")
    for name, mapping in ch6.MAPPINGS.items():
        yield f"ch6_{name}", lambda m=mapping: nt.build(ch6.gemm, m.replace(sm_count=132)).compile(
            f16(512, 768), f16(512, 1000), f16(1000, 768))
    ch7 = chapter("ch7_attention")
    for causal in (False, True):
        q = f16(1, 1, 1000, 128)
        yield f"ch7_flash_attention_causal{int(causal)}", lambda c=causal: ch7.make_flash_attention(
            128, c, bn=128).compile(f16(1000, 128), f16(1000, 128), f16(1000, 128), f16(1000, 128), f32(1000))
    mappings = {"default": g.MAPPING, "pingpong": g.PINGPONG_MAPPING, "128x128": g.TILE_128x128_MAPPING,
                "64x128": g.TILE_64x128_MAPPING, "64x64": g.TILE_64x64_MAPPING}
    m, n, k = 1000, 768, 520
    for mname, mapping in mappings.items():
        mapping = mapping.replace(sm_count=132)
        yield f"gemm_kn_{mname}", lambda mp=mapping: nt.build(g.matmul, mp).compile(f16(m, n), f16(m, k), f16(k, n))
        yield f"gemm_nk_{mname}", lambda mp=mapping: nt.build(g.matmul_nk, mp).compile(f16(m, n), f16(m, k), f16(n, k))
        yield f"gemm_batched_{mname}", lambda mp=mapping: nt.build(g.batched_matmul, mp).compile(
            f16(3, m, n), f16(3, m, k), f16(3, k, n))
        for act in g.ACTIVATIONS:
            yield f"linear_{act}_{mname}", lambda mp=mapping, a=act: nt.build(g.linear_program(a), mp).compile(
                f16(m, n), f16(m, k), f16(n, k), f16(n))
    base = g.MAPPING.replace(sm_count=132)
    yield "gated_mlp", lambda: nt.build(g.gated_mlp_program(), base.replace(tiles={"BN": 128})).compile(
        f16(m, n), f16(m, k), f16(k, n), f16(k, n))
    yield "matmul_rowsum", lambda: nt.build(g.matmul_rowsum, base).compile(f16(m, n), f32(3, m), f16(m, k), f16(k, n))
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from helpers import FakeDLPackDeviceArray
    f8 = lambda *s: FakeDLPackDeviceArray(s, 10, 8)   # noqa: E731  a float8 e4m3fn device array's description
    yield "scaled_gemm", lambda: nt.build(g.scaled_matmul, g.FP8_MAPPING.replace(sm_count=132)).compile(
        f16(m, n), f8(m, 512), f8(n, 512), f32(1), f32(1))
    for name, mapping in (("block_scaled_gemm", g.BLOCK_SCALED_MAPPING),
                          ("block_scaled_gemm_pingpong", g.BLOCK_SCALED_PINGPONG_MAPPING)):
        yield name, lambda mapping=mapping: nt.build(g.block_scaled_matmul, mapping.replace(sm_count=132)).compile(
            f16(m, n), f8(m, 512), f8(n, 512), f32(4, m), f32(-(-n // 128), 4))
    table = g.row_tile_table([300, 0, 700], 128)
    yield "grouped_gemm", lambda: nt.build(g.grouped_matmul, base).compile(f16(m, n), f16(m, k), f16(3, k, n), table)
    for d in att.HEAD_DIMS:
        for causal in (False, True):
            for lse in (False, True):
                def thunk(d=d, causal=causal, lse=lse):
                    q, kv = f16(2, 4, 1000, d), f16(2, 2, 700, d)
                    kernel = nt.build(att.attention_program(causal, d ** -0.5, lse), att.task_mapping(d, causal, 1000))
                    args = (q, f32(2, 4, 1000), q, kv, kv) if lse else (q, q, kv, kv)
                    return kernel.compile(*args)
                yield f"attention_d{d}_causal{int(causal)}_lse{int(lse)}", thunk
    for d in att.BACKWARD_HEAD_DIMS:
        delta, dq, dkdv = att.backward_mappings(d)
        q, kv, rows = f16(2, 4, 1000, d), f16(2, 2, 700, d), f32(2, 4, 1000)
        for causal in (False, True):
            yield f"attention_dq_d{d}_causal{int(causal)}", lambda d=d, c=causal, m=dq: nt.build(
                att.dq_program(c, d ** -0.5), m).compile(q, q, kv, kv, q, rows, rows)
            fused = att._dkdv_parts(d, fused=True) if d in att.FUSED_DQ_HEAD_DIMS else ()
            for parts in att._dkdv_parts(d) + fused:
                grads = f32(2, 4, 700, d)
                args = {"dkdv": (grads, grads, q, kv, kv, q, rows, rows), "dk": (grads, q, kv, kv, q, rows, rows),
                        "dv": (grads, q, kv, q, rows),
                        "dkdvdq": (grads, grads, f32(2, 4, 1000, d), q, kv, kv, q, rows, rows)}[parts]
                yield f"attention_{parts}_d{d}_causal{int(causal)}", lambda d=d, c=causal, m=dkdv, p=parts, a=args: \
                    nt.build(att.dkdv_program(c, d ** -0.5, parts=p), m).compile(*a)
        yield f"attention_delta_d{d}", lambda m=delta: nt.build(att.delta_program(), m).compile(rows, q, q)
    for n in (4096, 1001):                  # rows of 16-byte multiples, and odd ones
        x16 = f16(64, n)
        for name, args in (("softmax", (x16, x16)), ("rms_norm", (x16, x16, f16(n))),
                           ("layer_norm", (x16, x16, f16(n), f16(n))),
                           ("cross_entropy", (f32(64), x16, np.zeros(64, np.int32)))):
            yield f"rowwise_{name}_n{n}", lambda k=name, a=args: rowwise.kernel(k).compile(*a)


def main(out: str, pattern: str = "") -> None:
    os.makedirs(out, exist_ok=True)
    for name, thunk in cases():
        if pattern not in name:
            continue
        with open(os.path.join(out, name + ".ptx"), "w") as f:
            f.write(thunk().ptx)
        print(name, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
