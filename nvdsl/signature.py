"""Small typed records that pass between the layers: argument specs and the launch plan.

The frontend describes each argument (:class:`ArgSpec`), the compiler reads
the launches out of the outlined MLIR module (:class:`ProgramPlan`), and the
runtime executes the plan. None of them holds MLIR objects.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import dtypes as dt

ARRAY = "array"
SCALAR = "scalar"


@dataclass(frozen=True)
class ArgSpec:
    """One positional argument of a traced function, as the trace saw it."""

    name: str
    kind: str                 # ARRAY or SCALAR
    dtype: dt.DType
    shape: tuple[int, ...] = ()

    def describe(self) -> str:
        if self.kind == ARRAY:
            return f"{self.dtype.name} array of shape {self.shape}"
        return f"{self.dtype.name} scalar"


@dataclass(frozen=True)
class LaunchSpec:
    """One kernel launch: which kernel, its fixed configuration, and where its parameters come from."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    params: tuple[int, ...]   # for each kernel parameter, the index of the host argument

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "grid": list(self.grid), "block": list(self.block),
                "smem": self.smem, "params": list(self.params)}

    @classmethod
    def from_json(cls, d: dict) -> "LaunchSpec":
        return cls(d["kernel"], tuple(d["grid"]), tuple(d["block"]), d["smem"], tuple(d["params"]))


@dataclass(frozen=True)
class ProgramPlan:
    """The launches a traced host function performs, in order."""

    launches: tuple[LaunchSpec, ...]

    def to_json(self) -> list:
        return [launch.to_json() for launch in self.launches]

    @classmethod
    def from_json(cls, data: list) -> "ProgramPlan":
        return cls(tuple(LaunchSpec.from_json(d) for d in data))
