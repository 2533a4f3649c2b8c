"""Run on the GPU machine: ``source .gpu-bundle/setup.sh && python3 tools/backward_probe.py [OUT_DIR [profile |
delta-rows | masks | turns [D ...]]]`` (D: the head dims to probe, 64 and 128 by default).

Where attention_backward's time goes: each kernel of the deterministic path (D, dQ, dK/dV) and of the
fused one (``deterministic=False``: D, the float32 sum's fill, dK/dV/dQ, dQ's cast) timed alone on the device
(CUDA events around queued calls), bf16 B4 H16 L4096, D 64 and 128, causal or not; then a profile summary
(``nvdsl.profile``) of the dK/dV and dK/dV/dQ kernels where asked (``profile``), their timelines saved in
OUT_DIR. ``delta-rows``: instead, the D kernel alone under each count of rows per block (``DELTA_ROWS`` picks one):
at 4 rows a thread has one load of each array in flight (4 or 8 bytes; ncu on an H200 read it at 35% of DRAM's
bandwidth, cuDNN's at 78%), at 16 rows four of each (ptxas, sm_90a), at L 1024 and 4096, beside a copy of O of
the same bytes (``torch``'s) for the bandwidth the machine gives. ``masks``: the causal dK/dV and dK/dV/dQ kernels
as built (a loop over the steps no mask changes, then one over the others) and with the mask applied in every step
(one loop: ptxas spilled 608 B in the fused kernel at D 128 as built, 120 B so, its SASS 4820 -> 2682 lines).
``turns``: the dK/dV and dK/dV/dQ kernels as built and with their two consumers taking turns at each step's S and
dP products (``turns=True``), causal or not."""
import os
import sys

import torch

import nvdsl
import nvdsl.kernels.attention as A
from probe_timing import device_us                   # tools/: the folder of the script run


def kernels(d, causal, B=4, H=16, L=4096):
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(B, H, L, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    o = torch.empty_like(q)
    lse = torch.empty(B, H, L, device="cuda", dtype=torch.float32)
    A.attention(q, k, v, o, lse, causal=causal)
    scale = d ** -0.5
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    delta = torch.empty(B, H, L, device="cuda", dtype=torch.float32)
    dq32 = torch.zeros(B, H, L, d, device="cuda", dtype=torch.float32)
    dm, qm, kvm = A.backward_mappings(d)
    delta_k = A._built(A.delta_program(), dm)
    dq_k = A._built(A.dq_program(causal, scale), qm)
    dkdv_k = A._built(A.dkdv_program(causal, scale), kvm)
    fused_k = A._built(A.dkdv_program(causal, scale, parts="dkdvdq"), kvm)
    return {
        "delta": lambda: delta_k(delta, o, do),
        "dq pass": lambda: dq_k(dq, q, k, v, do, lse, delta),
        "dkdv": lambda: dkdv_k(dk, dv, q, k, v, do, lse, delta),
        "fill dq32": lambda: A._fill(dq32, value=0),
        "dkdvdq": lambda: fused_k(dk, dv, dq32, q, k, v, do, lse, delta),
        "dq cast": lambda: A._sum_groups(dq, dq32, scale=scale),
        "whole default": lambda: A.attention_backward(q, k, v, o, lse, do, dq, dk, dv, causal=causal),
        "whole fused": lambda: A.attention_backward(q, k, v, o, lse, do, dq, dk, dv, causal=causal,
                                                    deterministic=False),
    }


def delta_rows(head_dims, rows=(4, 8, 16, 32), B=4, H=16):
    """Device time of the D kernel under each count of rows per block, and of copying O and dO."""
    import nvdsl.tasks as nt
    for d in head_dims:
        for L in (1024, 4096):
            o, do = (torch.randn(B, H, L, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
            delta = torch.empty(B, H, L, device="cuda", dtype=torch.float32)
            copies = torch.empty_like(o), torch.empty_like(do)
            times = {"copy O, dO": sorted(device_us(lambda: (copies[0].copy_(o), copies[1].copy_(do)), reps=5)
                                          for _ in range(5))[2]}
            for r in rows:
                kernel = nt.build(A.delta_program(), nt.Mapping(tiles={"BM": r}, consumers=1, warp_specialize=False,
                                                                persistent=False))
                kernel(delta, o, do)
                times[f"{r} rows"] = sorted(device_us(lambda: kernel(delta, o, do), reps=5) for _ in range(5))[2]
            print(f"D={d} L={L}: " + ", ".join(f"{n} {t:.1f} us" for n, t in times.items()), flush=True)


def masks(head_dims, B=4, H=16, L=4096):
    """Device time of the causal dK/dV kernels as built and with their causal mask in every step."""
    import nvdsl.tasks as nt
    import nvdsl.tasks.emit as emit
    built = emit._unmasked_steps
    for d in head_dims:
        calls, ptx = {}, {}
        for every_step in (False, True):
            emit._unmasked_steps = (lambda s, env, trips: None) if every_step else built
            q, k, v, do = (torch.randn(B, H, L, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            lse, delta = (torch.randn(B, H, L, device="cuda") for _ in range(2))
            dk, dv, dq32 = torch.empty_like(q), torch.empty_like(q), torch.zeros(B, H, L, d, device="cuda")
            _, _, mapping = A.backward_mappings(d)
            # a kernel is cached by its program and mapping: the variant's mapping differs in its SM count, which a
            # grid of a block per tile (persistent=False) does not read, and its PTX is checked to differ below
            mapping = mapping.replace(sm_count=1) if every_step else mapping
            dkdv = nt.build(A.dkdv_program(True, d ** -0.5), mapping)
            fused = nt.build(A.dkdv_program(True, d ** -0.5, parts="dkdvdq"), mapping)
            tag = "every step" if every_step else "as built"
            arguments = {"dkdv": (dkdv, (dk, dv, q, k, v, do, lse, delta)),
                         "dkdvdq": (fused, (dk, dv, dq32, q, k, v, do, lse, delta))}
            for name, (kernel, a) in arguments.items():
                ptx[name, every_step] = kernel.compile(*a).ptx
                calls[f"{name} {tag}"] = lambda kernel=kernel, a=a: kernel(*a)
                calls[f"{name} {tag}"]()            # its first call traced now, under this emission
            torch.cuda.synchronize()
        emit._unmasked_steps = built
        assert all(ptx[name, False] != ptx[name, True] for name in ("dkdv", "dkdvdq")), "the variants are one kernel"
        torch.cuda.synchronize()
        times = {name: sorted(device_us(fn, reps=5) for _ in range(5))[2] for name, fn in calls.items()}
        print(f"D={d} causal L={L}: " + ", ".join(f"{n} {t:.0f} us" for n, t in times.items()), flush=True)


def main(out, profiled, head_dims=(64, 128)):
    os.makedirs(out, exist_ok=True)
    for d in head_dims:
        for causal in (False, True):
            calls = kernels(d, causal)
            for fn in calls.values():
                fn()
            torch.cuda.synchronize()
            times = {name: sorted(device_us(fn, reps=5) for _ in range(5))[2] for name, fn in calls.items()}
            print(f"D={d} causal={causal}: " + ", ".join(f"{n} {t:.0f}" for n, t in times.items()), flush=True)
            if profiled and not causal:
                for name in ("dkdv", "dkdvdq"):
                    p = nvdsl.profile(calls[name])
                    print(p.summary(), flush=True)
                    p.save_png(os.path.join(out, f"backward-{name}-d{d}.png"))


def turns(head_dims, B=4, H=16, L=4096):
    """Device time of the dK/dV and dK/dV/dQ kernels as built and with their consumers taking turns at each step's
    first products (``turns=True``), causal or not."""
    import nvdsl.tasks as nt
    for d in head_dims:
        for causal in (False, True):
            q, k, v, do = (torch.randn(B, H, L, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            lse, delta = (torch.randn(B, H, L, device="cuda") for _ in range(2))
            dk, dv, dq32 = torch.empty_like(q), torch.empty_like(q), torch.zeros(B, H, L, d, device="cuda")
            _, _, mapping = A.backward_mappings(d)
            calls = {}
            for taking in (False, True):
                for parts, a in (("dkdv", (dk, dv, q, k, v, do, lse, delta)),
                                 ("dkdvdq", (dk, dv, dq32, q, k, v, do, lse, delta))):
                    kernel = nt.build(A.dkdv_program(causal, d ** -0.5, parts=parts), mapping.replace(turns=taking))
                    kernel(*a)
                    calls[f"{parts} {'turns' if taking else 'as built'}"] = lambda kernel=kernel, a=a: kernel(*a)
            torch.cuda.synchronize()
            times = {name: sorted(device_us(fn, reps=5) for _ in range(5))[2] for name, fn in calls.items()}
            print(f"D={d} causal={causal} L={L}: " + ", ".join(f"{n} {t:.0f} us" for n, t in times.items()),
                  flush=True)


if __name__ == "__main__":
    dims = tuple(int(d) for d in sys.argv[3:]) or (64, 128)
    if sys.argv[2:3] == ["delta-rows"]:
        delta_rows(dims)
    elif sys.argv[2:3] == ["masks"]:
        masks(dims)
    elif sys.argv[2:3] == ["turns"]:
        turns(dims)
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/backward-probe", sys.argv[2:3] == ["profile"], dims)
