"""What a compile produces, as plain records (no MLIR): the runtime and the disk cache read these."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..signature import ProgramPlan


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel."""

    registers: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    static_smem: int


@dataclass
class CompiledModule:
    """Everything the runtime needs to load and launch a traced function's kernels."""

    key: str
    name: str
    plan: ProgramPlan
    ptx: str
    cubin: bytes | None
    resources: dict[str, KernelResources] = field(default_factory=dict)
    ptxas_log: str = ""
    timings: dict[str, float] = field(default_factory=dict)


_FUNC = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers.*?(?:(\d+) bytes smem)?$")


def parse_ptxas_log(log: str) -> dict[str, KernelResources]:
    """Per-kernel registers, stack, spills and static shared memory from ``ptxas -v``."""
    resources, current, frame = {}, None, (0, 0, 0)
    for line in log.splitlines():
        if m := _FUNC.search(line):
            current, frame = m.group(1), (0, 0, 0)
        elif (m := _FRAME.search(line)) and current:
            frame = tuple(int(g) for g in m.groups())
        elif (m := _USED.search(line)) and current:
            resources[current] = KernelResources(int(m.group(1)), frame[0], frame[1], frame[2],
                                                 int(m.group(2) or 0))
            current = None
    return resources


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")


def ptxas_warnings(log: str, kernels: list[str]) -> list[tuple[str, str]]:
    """(kernel, message) for each ptxas warning or performance note in a ``ptxas -v`` log (e.g. C7508,
    ``setmaxnreg`` ignored; C7519, wgmma serialized): things that change a kernel's behaviour or speed.

    ptxas prints such a note before the entry function it concerns, or names the function in it.
    """
    lines = log.splitlines()
    found = []
    for n, line in enumerate(lines):
        if "warning" not in line and "Potential Performance Loss" not in line:
            continue
        message = line.split(":", 1)[1].strip() if ":" in line else line.strip()
        named = [k for k in kernels if f"'{k}'" in line]
        following = next((m.group(1) for later in lines[n + 1:] if (m := _ENTRY.search(later))), None)
        kernel = named[0] if named else following or (kernels[0] if len(kernels) == 1 else "?")
        found.append((kernel, message))
    return found
