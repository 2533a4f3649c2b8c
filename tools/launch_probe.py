"""Where a cached call's host time goes (GPU machine): the pieces of nvdsl's generated run timed alone."""
import json
import re
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


ABLATIONS = {   # a piece of the generated run -> its source's text without that piece
    "without the lock": lambda src: src.replace("    acquire()\n", "").replace("        release()", "        pass"),
    "without the guard": lambda src: re.sub(r"if guard\([^)]*\) and ", "if ", src),
    "without torch's current stream": lambda src: src.replace("    if not stream:\n        stream = current_stream()\n",
                                                              ""),
    "without the devices' count": lambda src: src.replace("    if len(DEVICES) > 1:\n        make_current()\n", ""),
}


def ablations(run, args) -> dict:
    """The generated run timed with each piece taken out (and with all of them out): what each piece costs where
    it runs, beside the others."""
    def variant(*changes):
        source = run.source
        for change in changes:
            source = change(source)
        names = dict(run.__globals__)
        exec(compile(source, "<variant>", "exec"), names)
        return names["run"]
    row = {what: per_call(lambda v=variant(change): v(args, (), 0)) for what, change in ABLATIONS.items()}
    row["without all four"] = per_call(lambda v=variant(*ABLATIONS.values()): v(args, (), 0))
    # the run's own cuLaunchKernel alone, its stream an int (as the run passes it) and a CUstream object
    from cuda.bindings import driver as cu
    call = re.search(r"launch_kernel\((F0, .*)\)\[0\]", run.source).group(1)
    names = dict(run.__globals__)
    for what, stream in (("its launch alone, stream an int", 0),
                         ("its launch alone, stream a CUstream", cu.CUstream(0))):
        names["stream"] = stream
        launch = eval(f"lambda: launch_kernel({call})", names)
        row[what] = per_call(launch)
    return row


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
    row.update(ablations(program.run, args))
    out[name] = row
    print(name, row, flush=True)
print(json.dumps(out))
print(program.run.source)
