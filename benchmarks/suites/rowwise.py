"""Row-wise kernels (``nvdsl.kernels.rowwise``) against torch and Triton, in GB/s, one table per operation:

* ``softmax``: ``y = softmax(x)`` along rows, x and y bf16: 2·M·N·2 bytes.
* ``rms_norm``: ``y = x * rsqrt(mean(x^2) + 1e-6) * w``, bf16: 2·M·N·2 + N·2 bytes.
* ``layer_norm``: ``y = (x - mean) * rsqrt(var + 1e-5) * w + b``, bf16: 2·M·N·2 + 2·N·2 bytes.
* ``cross_entropy``: per-row loss, bf16 logits, int32 targets (int64 for torch), float32 loss (torch's is
  bf16, as its logits): M·N·2 + M·(4 + 4) bytes.

Bytes are the least any kernel must move (each input read once, each output written once); a kernel that
reads a row twice (nvdsl's passes, when the row does not stay in L2) shows it as lower GB/s.
Shapes (M, N): (4096, 1000), (4096, 4096), (8192, 50257) (a GPT-2 vocabulary: rows of 100514 bytes, which
TMA cannot address, so nvdsl stores them by ordinary stores) and (8192, 50304) (the padded vocabulary);
``--quick``: (4096, 4096) and (8192, 50257).

Systems:

* ``nvdsl``: the library call (``rowwise.softmax(x, y)``, ...: the task program under the default mapping for
  the shape, ``rowwise.default_mapping``), called with torch CUDA tensors; ``--tiles BMxBN,...`` adds the same
  call under those tiles, ``BMxBN:shared`` under those tiles with x's row block kept in shared memory for the
  tile (``memory={"X": "shared"}``: read once by TMA, every pass reading it there; not for cross-entropy, one
  pass), and ``BMxBN:MEMORY:C`` (MEMORY ``shared``, ``register`` or empty) with ``C`` consumer warpgroups (which
  hold a row tile together where they cannot split its rows).
* ``torch``: ``torch.softmax(x, -1)``, ``F.rms_norm``, ``F.layer_norm``, ``F.cross_entropy(...,
  reduction="none")``, each writing a new tensor (the allocation is in the timing, as in a model).
* ``triton``: :mod:`benchmarks.peers.triton_rowwise` for softmax and RMSNorm (one program per row).
* ``device copy``: ``y.copy_(x)`` of the shape's x (2·M·N·2 bytes): the device's copy bandwidth on the same
  bytes, measured in the same run, the yardstick of the "% of copy" columns (a reference, not a peer).

Every output is checked against torch in float32 (relative Frobenius error below ``RTOL``: bf16 outputs
round at 2^-9; every element written) before it is timed.
"""

from __future__ import annotations

from types import SimpleNamespace

from .. import harness

SUITE = "rowwise"
OPS = ("softmax", "rms_norm", "layer_norm", "cross_entropy")
SHAPES = ((4096, 1000), (4096, 4096), (8192, 50257), (8192, 50304))
QUICK_SHAPES = ((4096, 4096), (8192, 50257))
EPS = {"rms_norm": 1e-6, "layer_norm": 1e-5}
RTOL = 1e-2
COPY = "device copy"

TABLE_METRIC = "gbps"
SECTION = "op"
SECTION_TITLES = {"softmax": "softmax (bf16)", "rms_norm": "RMSNorm (bf16)", "layer_norm": "LayerNorm (bf16)",
                  "cross_entropy": "cross-entropy (bf16 logits, float32 loss)"}
PLOT = {"kind": "bars", "peak": False}


def shapes(args) -> list[dict]:
    """Every operation at each shape: ``--shapes MxN,...`` where given, else the default (or ``--quick``) set."""
    chosen = harness.parse_shapes(getattr(args, "shapes", "") or "", "--shapes", "MxN", "8192x50304") or \
        (QUICK_SHAPES if args.quick else SHAPES)
    return [{"op": op, "dtype": "bf16", "M": m, "N": n} for op in OPS for m, n in chosen]


def nbytes(p: dict) -> int:
    m, n = p["M"], p["N"]
    return {"softmax": 4 * m * n, "rms_norm": 4 * m * n + 2 * n, "layer_norm": 4 * m * n + 4 * n,
            "cross_entropy": 2 * m * n + 8 * m}[p["op"]]


def copy_bytes(p: dict) -> int:
    return 4 * p["M"] * p["N"]


def row_label(p: dict) -> str:
    return f"{p['op']} {p['dtype']} {p['M']}×{p['N']}"


def derived_columns(row: list[harness.Measurement]) -> dict[str, str]:
    """Each system's bandwidth as a percentage of the device copy's on the same shape."""
    copy = next((m for m in row if m.system == COPY and m.gbps), None)
    return {f"{m.system} % of copy": f"{100 * m.gbps / copy.gbps:.1f}%" if copy else "—"
            for m in row if m.system != COPY and m.gbps}


# --------------------------------------------------------------------------- operands

def operands(p: dict) -> SimpleNamespace:
    """The inputs of one shape (shared by every system) and the float32 torch reference."""
    import torch
    import torch.nn.functional as F

    m, n, op = p["M"], p["N"], p["op"]
    x = harness.randn((m, n), torch.bfloat16, scale=2.0, seed=1)
    ops = SimpleNamespace(x=x, y=torch.empty_like(x))
    if op == "softmax":
        ops.ref = torch.softmax(x.float(), -1)
    elif op == "rms_norm":
        ops.w = harness.randn((n,), torch.bfloat16, seed=2)
        ops.ref = F.rms_norm(x.float(), (n,), ops.w.float(), EPS[op])
    elif op == "layer_norm":
        ops.w, ops.b = harness.randn((n,), torch.bfloat16, seed=2), harness.randn((n,), torch.bfloat16, seed=3)
        ops.ref = F.layer_norm(x.float(), (n,), ops.w.float(), ops.b.float(), EPS[op])
    else:
        generator = torch.Generator(device="cuda").manual_seed(4)
        ops.targets64 = torch.randint(0, n, (m,), device="cuda", generator=generator)
        ops.targets = ops.targets64.to(torch.int32)
        ops.loss = torch.empty((m,), dtype=torch.float32, device="cuda")
        ops.ref = F.cross_entropy(x.float(), ops.targets64, reduction="none")
    return ops


# --------------------------------------------------------------------------- systems

def _nvdsl(op: str, tiles: tuple[int, int] | None = None, memory: str = "", consumers: int = 1):
    def prepare(ops, args) -> harness.Prepared:
        from nvdsl.kernels import rowwise

        mapping = None
        if tiles is not None:
            mapping = rowwise.default_mapping().replace(tiles={"BM": tiles[0], "BN": tiles[1]},
                                                        memory={"X": memory} if memory else {}, consumers=consumers)
        kwargs = {"mapping": mapping, **({"eps": EPS[op]} if op in EPS else {})}
        arguments = {"softmax": (ops.x, ops.y), "rms_norm": (ops.x, getattr(ops, "w", None), ops.y),
                     "layer_norm": (ops.x, getattr(ops, "w", None), getattr(ops, "b", None), ops.y),
                     "cross_entropy": (ops.x, getattr(ops, "targets", None), getattr(ops, "loss", None))}[op]
        library = getattr(rowwise, op)
        out = arguments[-1]
        call = lambda: library(*arguments, **kwargs)           # noqa: E731
        checked = harness.checked_call(call, out, ops.ref, RTOL)
        return harness.Prepared(call, checked, {"program": op, "mapping": str(mapping) if mapping else
                                                "rowwise.default_mapping for the shape"})
    return prepare


def _torch(op: str):
    def prepare(ops, args) -> harness.Prepared:
        import torch
        import torch.nn.functional as F

        n = ops.x.shape[1]
        fn = {"softmax": lambda: torch.softmax(ops.x, -1),
              "rms_norm": lambda: F.rms_norm(ops.x, (n,), getattr(ops, "w", None), EPS.get(op)),
              "layer_norm": lambda: F.layer_norm(ops.x, (n,), getattr(ops, "w", None), getattr(ops, "b", None),
                                                 EPS.get(op)),
              "cross_entropy": lambda: F.cross_entropy(ops.x, getattr(ops, "targets64", None), reduction="none")}[op]
        torch.cuda.synchronize()
        check = harness.check_close(fn(), ops.ref, RTOL)
        return harness.Prepared(fn, check)
    return prepare


def _triton(op: str):
    def prepare(ops, args) -> harness.Prepared:
        from ..peers import triton_rowwise as peer

        call = (lambda: peer.softmax(ops.x, ops.y)) if op == "softmax" else \
            (lambda: peer.rms_norm(ops.x, ops.w, ops.y, EPS[op]))
        return harness.Prepared(call, harness.checked_call(call, ops.y, ops.ref, RTOL))
    return prepare


def _copy(ops, args) -> harness.Prepared:
    call = lambda: ops.y.copy_(ops.x)                          # noqa: E731
    return harness.Prepared(call, harness.checked_call(call, ops.y, ops.x, 1e-12))


def tile_choices(args) -> list[tuple[int, int, str, int]]:
    """``--tiles``: the (BM, BN, x's memory: "" for the default, or "shared", consumer warpgroups) to time nvdsl
    under besides the default mapping's."""
    choices = []
    for item in filter(None, (part.strip() for part in (getattr(args, "tiles", "") or "").split(","))):
        tiles, _, rest = item.partition(":")
        memory, _, consumers = rest.partition(":")
        if memory not in ("", "shared", "register"):
            raise SystemExit(f"--tiles: {item!r}: after ':' comes 'shared' or 'register', e.g. 1x4096:shared")
        if consumers and not (consumers.isdigit() and int(consumers) > 0):
            raise SystemExit(f"--tiles: {item!r}: after the memory comes a count of consumer warpgroups, e.g. "
                             "1x8192:shared:4")
        (bm, bn), = harness.parse_shapes(tiles, "--tiles", "BMxBN", "4x2048")
        choices.append((bm, bn, memory, int(consumers or 1)))
    return choices


def systems(op: str, args=None) -> dict:
    found = {"nvdsl": _nvdsl(op), "torch": _torch(op)}
    for bm, bn, memory, consumers in tile_choices(args):
        if memory == "shared" and op == "cross_entropy":
            continue
        name = f"nvdsl {bm}x{bn}" + (f" {memory}" if memory else "") + (f" {consumers}wg" if consumers > 1 else "")
        found[name] = _nvdsl(op, (bm, bn), memory, consumers)
    if op in ("softmax", "rms_norm"):
        found["triton"] = _triton(op)
    found[COPY] = harness.System(_copy, role=harness.REFERENCE, nbytes=copy_bytes)
    return found


def run(args) -> list[harness.Measurement]:
    harness.require_default_stream()
    measured = []
    all_shapes = shapes(args)
    for op in OPS:
        measured += harness.run_shapes(SUITE, [p for p in all_shapes if p["op"] == op], operands, systems(op, args),
                                       lambda p: None, args, nbytes=nbytes)
    return measured
