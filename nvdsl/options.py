"""Configuration: one frozen :class:`Options` object, and the only place that reads ``NVDSL_*``.

Environment variables (each parsed strictly; a bad value is an error, not ignored):

============================  ===============================================
``NVDSL_DUMP_DIR``            write traced/lowered MLIR, PTX, cubin, SASS here
``NVDSL_CACHE_DIR``           the disk compile cache (default ``~/.cache/nvdsl``)
``NVDSL_DISK_CACHE``          ``1`` (default) or ``0``: use the disk cache
``NVDSL_CHIP``                target chip (default ``sm_90a``)
``NVDSL_PTX_FEATURES``        PTX features (default ``+ptx80``)
``NVDSL_OPT_LEVEL``           0-3 (default 3)
``NVDSL_PTXAS``               path of the ptxas to assemble cubins with
``NVDSL_DEVICE``              CUDA device ordinal (default 0)
``NVDSL_DEBUG``               ``1``: compile kernels with device-side checks
``NVDSL_BACKEND``             ``gpu`` or ``interpret`` (default: the GPU when
                              one is present, else the CPU interpreter)
``NVDSL_SEED``                an integer: the interpreter's schedule seed
``NVDSL_PROTOCOL_CHECK``      ``1`` (default) or ``0``: check each kernel's
                              barrier protocol before it is compiled or run
============================  ===============================================

Options passed to a decorator win over the environment, field by field. A
variable named ``NVDSL_*`` that is not in this table is an error (a misspelt
name would otherwise be ignored).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass

from .target import MIN_PTX_VERSION, ptx_version
from .errors import UserError

_CHIP = re.compile(r"sm_\d+[a-z]?$")
GPU, INTERPRET = "gpu", "interpret"
BACKENDS = (None, GPU, INTERPRET)
_FEATURES = re.compile(r"\+ptx\d+$")


@dataclass(frozen=True)
class Options:
    """How nvdsl compiles and runs a function.

    Args:
        chip: the target GPU architecture, e.g. ``"sm_90a"`` (wgmma and setmaxnreg need the ``a``).
        features: PTX ISA features for the NVPTX back end, e.g. ``"+ptx80"``.
        opt_level: LLVM and ptxas optimisation level, 0 to 3.
        assemble_cubin: assemble the PTX into a cubin with ptxas when one is found;
            otherwise (or when False) the driver compiles the PTX at load time.
        ptxas: path of the ptxas binary; None searches the CUDA install and NVIDIA's wheels.
        dump_dir: when set, every compile writes its artifacts there.
        disk_cache: keep compiled modules on disk across processes.
        cache_dir: where the disk cache lives; None means ``~/.cache/nvdsl``.
        device: the CUDA device ordinal kernels run on.
        debug: compile kernels with device-side checks that report the Python line of a misuse
            instead of corrupting memory or hanging (slower; part of the compile cache key).
        backend: where calls run: ``"gpu"``, ``"interpret"`` (the CPU interpreter, on NumPy arrays,
            reporting races, deadlocks and protocol errors), or None for the GPU when one is present
            and the interpreter otherwise.
        seed: for the interpreter, None runs warps in a fixed order; an int draws the order of warps
            and the landing of TMA copies from a generator seeded with it (schedule fuzzing).
        protocol_check: before compiling or interpreting, check each kernel's barrier protocol
            (arrival counts, transaction bytes, wait parities, stage reuse); a violation raises
            ``ProtocolError``, a kernel the check cannot decide gets a ``ProtocolCheckWarning``.
    """

    chip: str = "sm_90a"
    features: str = "+ptx80"
    opt_level: int = 3
    assemble_cubin: bool = True
    ptxas: str | None = None
    dump_dir: str | None = None
    disk_cache: bool = True
    cache_dir: str | None = None
    device: int = 0
    debug: bool = False
    backend: str | None = None
    seed: int | None = None
    protocol_check: bool = True

    def __post_init__(self):
        if not _CHIP.match(self.chip):
            raise UserError(f"chip={self.chip!r} is not an NVIDIA architecture name",
                            code="bad-option", hint="use a name such as 'sm_90a'")
        if not _FEATURES.match(self.features):
            raise UserError(f"features={self.features!r} is not a PTX feature string",
                            code="bad-option", hint="use a string such as '+ptx80'")
        if self.chip not in MIN_PTX_VERSION:
            raise UserError(f"chip={self.chip!r} is not an architecture nvdsl's compiler knows",
                            code="bad-option", hint="one of " + ", ".join(MIN_PTX_VERSION) + " (Hopper: 'sm_90a')")
        wanted, needed = ptx_version(self.features), MIN_PTX_VERSION[self.chip]
        if wanted is not None and wanted < needed:
            raise UserError(f"features={self.features!r} targets PTX ISA {wanted // 10}.{wanted % 10}, older than "
                            f"chip={self.chip!r}, which PTX ISA {needed // 10}.{needed % 10} introduced",
                            code="bad-option", hint=f"use features='+ptx{needed}' or later")
        if self.opt_level not in (0, 1, 2, 3):
            raise UserError(f"opt_level={self.opt_level!r} must be 0, 1, 2 or 3", code="bad-option",
                            hint="use 3 (ptxas' default) for speed, 0 to debug")
        if not isinstance(self.device, int) or self.device < 0:
            raise UserError(f"device={self.device!r} must be a device ordinal >= 0", code="bad-option",
                            hint="use 0 for the first GPU (nvidia-smi lists their ordinals)")
        if self.ptxas is not None and not (os.path.isfile(self.ptxas) and os.access(self.ptxas, os.X_OK)):
            raise UserError(f"ptxas={self.ptxas!r} is not an executable file", code="bad-option",
                            hint="point it at a ptxas binary, or leave it unset to search the CUDA install")
        for field in ("dump_dir", "cache_dir"):
            path = getattr(self, field)
            if path is not None and os.path.exists(path) and not os.path.isdir(path):
                raise UserError(f"{field}={path!r} is a file, not a directory", code="bad-option",
                                hint="point it at a directory (it is created when missing)")
        if self.backend not in BACKENDS:
            raise UserError(f"backend={self.backend!r} must be one of {', '.join(map(repr, BACKENDS))}",
                            code="bad-option", hint="'gpu' runs on the GPU, 'interpret' in the CPU interpreter")
        if self.seed is not None and (not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0):
            raise UserError(f"seed={self.seed!r} must be None or an int >= 0", code="bad-option",
                            hint="pass seed=0 (any int >= 0), or None for a fresh one each run")

    def replace(self, **changes) -> "Options":
        return dataclasses.replace(self, **changes)

    @property
    def resolved_cache_dir(self) -> str:
        return self.cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "nvdsl")

    def compile_key(self) -> str:
        """The fields that change the compiled code, for cache keys."""
        return (f"chip={self.chip};features={self.features};O={self.opt_level};cubin={self.assemble_cubin};"
                f"debug={self.debug}")


def _env_bool(name: str, raw: str) -> bool:
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise UserError(f"{name}={raw!r} is not a boolean", code="bad-env", hint="use 1 or 0")


def _env_int(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise UserError(f"{name}={raw!r} is not an integer", code="bad-env",
                        hint=f"set {name} to a whole number (e.g. {name}=0), or unset it") from None


def _env_backend(name: str, raw: str) -> str:
    if raw not in (GPU, INTERPRET):
        raise UserError(f"{name}={raw!r} is not a backend", code="bad-env", hint=f"use {GPU} or {INTERPRET}")
    return raw


_ENV_FIELDS = {
    "NVDSL_DUMP_DIR": ("dump_dir", str),
    "NVDSL_CACHE_DIR": ("cache_dir", str),
    "NVDSL_DISK_CACHE": ("disk_cache", _env_bool),
    "NVDSL_CHIP": ("chip", str),
    "NVDSL_PTX_FEATURES": ("features", str),
    "NVDSL_OPT_LEVEL": ("opt_level", _env_int),
    "NVDSL_PTXAS": ("ptxas", str),
    "NVDSL_DEVICE": ("device", _env_int),
    "NVDSL_DEBUG": ("debug", _env_bool),
    "NVDSL_BACKEND": ("backend", _env_backend),
    "NVDSL_SEED": ("seed", _env_int),
    "NVDSL_PROTOCOL_CHECK": ("protocol_check", _env_bool),
}


def from_env(environ=None) -> Options:
    """Options with every ``NVDSL_*`` variable that is set applied; an error names the variable."""
    environ = os.environ if environ is None else environ
    unknown = sorted(var for var in environ if var.startswith("NVDSL_") and var not in _ENV_FIELDS)
    if unknown:
        import difflib  # only for this error
        close = difflib.get_close_matches(unknown[0], _ENV_FIELDS, n=1)
        raise UserError(f"unknown environment variable {unknown[0]}={environ[unknown[0]]!r}", code="bad-env",
                        hint=(f"did you mean {close[0]}? " if close else "") +
                             "nvdsl reads " + ", ".join(_ENV_FIELDS))
    fields = {}
    for var, (field, parse) in _ENV_FIELDS.items():
        raw = environ.get(var)
        if raw is None or raw == "":
            continue
        value = parse(var, raw) if parse is not str else raw
        try:
            Options(**{field: value})
        except UserError as e:
            raise UserError(f"{var}={raw!r}: {e.message}", code="bad-env", hint=e.hint) from None
        fields[field] = value
    return Options(**fields)


def resolve(options: Options | None, **overrides) -> Options:
    """The environment's options, then ``options``' explicit fields, then keyword overrides."""
    base = from_env()
    if options is not None:
        defaults = Options()
        explicit = {f.name: getattr(options, f.name) for f in dataclasses.fields(Options)
                    if getattr(options, f.name) != getattr(defaults, f.name)}
        base = dataclasses.replace(base, **explicit)
    overrides = {k: v for k, v in overrides.items() if v is not None}
    return dataclasses.replace(base, **overrides) if overrides else base
