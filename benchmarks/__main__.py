"""``python3 -m benchmarks {gemm,gemm_family,attention,attention_backward,attention_variants,rowwise,launch,saxpy,
compile,trust,all} [options]``: run, print, write results."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from .suites import SUITES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m benchmarks",
        description="nvdsl's benchmarks against cuBLAS, cuDNN/FlashAttention (torch), Triton and JAX Pallas. "
                    "Each suite writes <date>_<device>_<suite>.json/.md/.png and prints its Markdown table.",
        epilog="suites: gemm (fp16/bf16 GEMM, TFLOP/s), gemm_family (dual GEMM, GEMM + row sums, batched GEMM, "
               "linear + bias + activation against Triton and torch, TFLOP/s), attention (fp16 attention "
               "forward, TFLOP/s), attention_backward (dQ, dK, dV against cuDNN and FlashAttention-2 through "
               "torch autograd, TFLOP/s; --dtypes fp16,bf16), attention_variants (soft cap, sliding window, document "
               "mask, causal as a mask_mod, forward and backward, against torch.compile'd FlexAttention and plain "
               "attention, TFLOP/s of the unmasked work), rowwise (softmax, RMSNorm, LayerNorm, cross-entropy "
               "against torch and Triton, GB/s and "
               "its fraction of the copy bandwidth), launch (host overhead per call, µs), saxpy (bandwidth, GB/s), compile (cold "
               "and disk-cached compile time, ms), trust (the static protocol check and the CPU interpreter, "
               "ms, no GPU needed); all runs them in turn.")
    parser.add_argument("suite", choices=SUITES + ("all",), help="which suite to run")
    parser.add_argument("--quick", action="store_true",
                        help="a small subset (gemm: fp16, K in {1024, 4096}; gemm_family: fp16; attention: L=4096; "
                             "rowwise: (4096, 4096) and (8192, 50257); compile: 1 repeat)")
    parser.add_argument("--square", action="store_true",
                        help="gemm: also M=N=K in {1024, 2048, 4096, 8192, 16384}")
    parser.add_argument("--shapes", default="",
                        help="gemm: also these comma-separated MxNxK shapes, e.g. 1024x1024x8192,256x8192x8192 (in the "
                             "table, not the plot); rowwise: these MxN shapes instead of the default, e.g. 8192x50304")
    parser.add_argument("--a-layout", default="MK", choices=("MK", "KM"),
                        help="gemm: A stored (M, K) row-major (default), or KM: given as the transposed view of a "
                             "(K, M) array, as the x.T of a weight gradient x.T @ dy")
    parser.add_argument("--b-layout", default="KN", choices=("KN", "NK"),
                        help="gemm: B stored (K, N) row-major (default), or NK: given as the transposed view w.T of "
                             "an (N, K) row-major weight, as a linear layer stores it (cuBLAS: torch.matmul(a, w.T))")
    parser.add_argument("--k", default="",
                        help="gemm, gemm_family: comma-separated K values to sweep instead of the default")
    parser.add_argument("--dtypes", default="",
                        help="gemm, gemm_family, attention_backward, attention_variants: comma-separated dtypes (fp16, "
                             "bf16) instead of the default")
    parser.add_argument("--head-dims", default="",
                        help="attention, attention_backward: comma-separated head dims (64, 128, 256) instead of the "
                             "default 128,64")
    parser.add_argument("--variants", default="",
                        help="attention_variants: comma-separated variants (softcap, sliding_window, document, "
                             "causal_mask_mod, varlen) instead of all")
    parser.add_argument("--ops", default="",
                        help="gemm_family: comma-separated operations (dual, rowsum, batched, grouped, linear, fp8, "
                             "fp8-block) instead of all")
    parser.add_argument("--tiles", default="",
                        help="rowwise: also nvdsl under these comma-separated BMxBN tiles (rows per block x columns per "
                             "step), each a system of its own, e.g. 8x1024,4x2048; BMxBN:shared keeps x's row block in "
                             "shared memory for the tile")
    parser.add_argument("--reps", type=int, default=50, help="timed repetitions per system and shape (default 50)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed warm-up calls before timing (default 10)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="time the systems of a shape in turn, this many rounds (each a warm-up and its share of "
                             "--reps), so that clock drift falls on all alike (default 1: each system at once)")
    parser.add_argument("--flush-l2", action="store_true",
                        help="write a buffer of 2x the L2 size before each event-timed call (outside the timing)")
    parser.add_argument("--host-bound", action="store_true",
                        help="time event pairs without queueing the calls ahead: a call shorter on the device than on "
                             "the host then reads its host time (tables whose details lack queued_ahead were timed so)")
    parser.add_argument("--systems", default="",
                        help="comma-separated system names to run (default: all), e.g. cublas,triton")
    parser.add_argument("--out-dir", default=None,
                        help="where to write results (default: benchmarks/results/), e.g. $OUT")
    return parser


def run_suite(name: str, args) -> None:
    """Run one suite, write its files, print its table and where the files went."""
    from . import harness, report

    module = importlib.import_module(f"{__package__}.suites.{name}")
    env = harness.environment()
    measurements = module.run(args)
    env["nvidia_smi_end"] = harness.nvidia_smi()
    paths, table = report.write(name, module, measurements, env, args, args.out_dir)
    print(f"\n## {name} on {report.device_name(env) or 'unknown device'}\n\n{table}\n")
    for kind, path in paths.items():
        print(f"{kind}: {path}")


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.reps < 1 or args.warmup < 0 or args.rounds < 1:
        raise SystemExit("--reps and --rounds must be >= 1 and --warmup >= 0")
    failed = []
    for name in SUITES if args.suite == "all" else (args.suite,):
        try:
            run_suite(name, args)
        except Exception:
            if args.suite != "all":
                raise
            traceback.print_exc()
            failed.append(name)
    if failed:
        print(f"suites that could not run: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
