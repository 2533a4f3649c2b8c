"""Where a cached call's host time goes (GPU machine): the pieces of nvdsl's generated run timed alone."""
import json
import sys
import threading
import timeit

import torch

sys.path.insert(0, ".")
from benchmarks.suites.launch import bare_launcher, sum8  # noqa: E402
from benchmarks.nvdsl_kernels import axpy  # noqa: E402

N = 1 << 12
out = {}


def per_call(fn, number=20000):
    fn()
    best = min(timeit.repeat(fn, number=number, repeat=7))
    torch.cuda.synchronize()
    return round(best / number * 1e6, 3)


for name, fn, count in (("axpy", axpy, 1), ("sum8", sum8(), 7)):
    xs = [torch.randn(N, device="cuda") for _ in range(count)]
    y = torch.randn(N, device="cuda")
    args = (*xs, y, 2.0) if name == "axpy" else (*xs, y)
    fn(*args)
    torch.cuda.synchronize()
    (program,) = fn._programs.values()
    names = program.run.__globals__
    guard = names.get("guard")
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    bare = bare_launcher(fn.compile(*args), args)
    lock = threading.Lock()

    def locked():
        lock.acquire()
        lock.release()
    row = {
        "call": per_call(lambda: fn(*args)),
        "run": per_call(lambda: program.run(args, (), 0)),
        "bare launch": per_call(bare),
        "guard passes": bool(guard(*tensors)) if guard else None,
        "guard": per_call(lambda: guard(*tensors)) if guard else None,
        "guards learned": len(getattr(names.get("learn"), "__self__", None).checks) if names.get("learn") else None,
        "data_ptr each": per_call(lambda: [t.data_ptr() for t in tensors]),
        "current stream": per_call(names["current_stream"]) if "current_stream" in names else None,
        "lock": per_call(locked),
        "empty lambda": per_call(lambda: None),
    }
    out[name] = row
    print(name, row, flush=True)
print(json.dumps(out))
