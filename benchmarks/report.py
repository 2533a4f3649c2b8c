"""Writing one suite's run: ``<date>_<device>_<suite>.json`` (environment and every measurement),
``.md`` (a table, one row per shape, one column per system) and ``.png`` (throughput plot)."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from typing import Any

from .harness import NVDSL, PEER, Measurement

DEFAULT_OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

# Dense (no sparsity) fp16/bf16 tensor-core peak in TFLOP/s, from NVIDIA's datasheets, keyed by a
# substring of the device name; the first match wins. Used only to draw the plots' peak line.
PEAK_TFLOPS_16BIT = (
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H200", 989.0),   # H200 SXM and GH200
    ("H100", 989.0),   # H100 SXM5 ("NVIDIA H100 80GB HBM3")
)

_METRICS = {  # TABLE_METRIC -> (caption, higher is better)
    "tflops": ("TFLOP/s", True),
    "gbps": ("GB/s", True),
    "us": ("µs per call", False),
    "ms": ("ms", False),
}


def peak_tflops(device_name: str | None) -> float | None:
    """The dense fp16/bf16 peak for a device name, or None when the table does not know it."""
    for key, peak in PEAK_TFLOPS_16BIT:
        if device_name and key.lower() in device_name.lower():
            return peak
    return None


def device_name(env: dict) -> str | None:
    return (env.get("device") or {}).get("name")


def device_slug(env: dict) -> str:
    return re.sub(r"[^a-z0-9]+", "-", (device_name(env) or "unknown-device").lower()).strip("-")


def value(m: Measurement, metric: str) -> float | None:
    """The number a table cell shows for this measurement."""
    if m.median_ms is None:
        return None
    return {"tflops": m.tflops, "gbps": m.gbps, "us": m.median_ms * 1e3, "ms": m.median_ms}[metric]


def _short(text: str, limit: int = 60) -> str:
    first = text.strip().splitlines()[0] if text.strip() else "?"
    first = first if len(first) <= limit else first[:limit - 1] + "…"
    return first.replace("|", "\\|")


def _fmt(x: float) -> str:
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}" if abs(x) >= 1 else f"{x:.3f}"


def _cell(m: Measurement | None, metric: str) -> str:
    if m is None:
        return "—"
    if m.error:
        return f"failed: {_short(m.error)}"
    text = _fmt(value(m, metric))
    if m.correct is False:
        rel = (m.extra.get("check") or {}).get("rel_err")
        text += " ✗ wrong" + (f" (err {rel:.1e})" if isinstance(rel, float) else "")
    return text


def _best(row: list[Measurement], role: str, metric: str, higher: bool) -> Measurement | None:
    ok = [m for m in row if m.role == role and m.correct is not False and value(m, metric) is not None]
    if not ok:
        return None
    return (max if higher else min)(ok, key=lambda m: value(m, metric))


def group_rows(measurements: list[Measurement]) -> list[list[Measurement]]:
    """Measurements grouped by identical params (one table row each), in first-seen order."""
    rows: dict[str, list[Measurement]] = {}
    for m in measurements:
        rows.setdefault(json.dumps(m.params, sort_keys=True, default=str), []).append(m)
    return list(rows.values())


def table(module, measurements: list[Measurement]) -> str:
    """The Markdown table: a row per shape, a column per system, then best peer, nvdsl/best peer, extras. "nvdsl" in
    the ratio is the system named ``nvdsl`` where a row has one (the library call under its default mapping: other
    nvdsl systems beside it are variants of it, such as ``--tiles``), else the best of the row's nvdsl systems.

    A suite with ``SECTION`` (a param name) gets one table per value of that param, headed by
    ``SECTION_TITLES[value]``, each with only the systems that ran in it.
    """
    caption, higher = _METRICS[module.TABLE_METRIC]
    lines = [f"Values: {caption} ({'higher' if higher else 'lower'} is better); median over repetitions."]
    section = getattr(module, "SECTION", None)
    if section is None:
        return "\n".join(lines + [""] + _grid(module, measurements))
    titles = getattr(module, "SECTION_TITLES", {})
    parts: dict[Any, list[Measurement]] = {}
    for m in measurements:
        parts.setdefault(m.params.get(section), []).append(m)
    for key, part in parts.items():
        lines += ["", f"### {titles.get(key, key)}", ""] + _grid(module, part)
    return "\n".join(lines)


def _grid(module, measurements: list[Measurement]) -> list[str]:
    metric = module.TABLE_METRIC
    higher = _METRICS[metric][1]
    label = getattr(module, "row_label", lambda p: " ".join(f"{k}={v}" for k, v in p.items()))
    derived = getattr(module, "derived_columns", None)
    roles = {m.system: m.role for m in measurements}
    systems = sorted(roles, key=lambda s: (NVDSL, PEER).index(roles[s]) if roles[s] in (NVDSL, PEER) else 2)
    has_peers = any(m.role == PEER for m in measurements)
    rows = group_rows(measurements)
    extras = list(dict.fromkeys(k for row in rows for k in (derived(row) if derived else {})))
    ratio = "nvdsl / best peer" + ("" if higher else " (time)")
    clocked = has_peers and any(CLOCK in m.extra for m in measurements)
    header = ["shape"] + systems + (["best peer", ratio] if has_peers else []) + \
        (["SM MHz while timed (nvdsl / peer)", ratio + " per SM cycle"] if clocked else []) + extras
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        by_system = {m.system: m for m in row}
        cells = [label(row[0].params)] + [_cell(by_system.get(s), metric) for s in systems]
        if has_peers:
            default = [m for m in row if m.system == "nvdsl" and m.correct is not False and value(m, metric)]
            peer, ours = _best(row, PEER, metric, higher), default[0] if default else _best(row, NVDSL, metric, higher)
            cells.append(f"{peer.system} {_fmt(value(peer, metric))}" if peer else "—")
            cells.append(f"{value(ours, metric) / value(peer, metric):.2f}×" if peer and ours else "—")
            if clocked:
                cells += _per_cycle(ours, peer, metric, higher)
        found = derived(row) if derived else {}
        cells += [found.get(k, "—") for k in extras]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


#: The extra that holds a measurement's median SM clock while it was timed (see ``harness.ClockSampler``).
CLOCK = "sm_clock_mhz"


def _per_cycle(ours: Measurement | None, peer: Measurement | None, metric: str, higher: bool) -> list[str]:
    """The clocks nvdsl's system and the best peer ran at, and their ratio with the clocks taken out (each one's
    work per SM cycle: the ratio a kernel bound by its SM's pipes would show at one clock)."""
    clocks = [m.extra.get(CLOCK) if m is not None else None for m in (ours, peer)]
    if None in clocks:
        return ["—", "—"]
    ratio = value(ours, metric) / value(peer, metric)
    per_cycle = ratio * clocks[1] / clocks[0] if higher else ratio * clocks[0] / clocks[1]
    return [f"{clocks[0]} / {clocks[1]}", f"{per_cycle:.2f}×"]


_QUIET = {"traceback", "check", "configs_tried", "compile_stages_s", "calls_per_repeat", "l2_flush"}


def _details(module, measurements: list[Measurement]) -> list[str]:
    label = getattr(module, "row_label", lambda p: " ".join(f"{k}={v}" for k, v in p.items()))
    lines = []
    for m in measurements:
        head = f"- **{m.system}**, {label(m.params)}: "
        if m.error:
            lines.append(head + "FAILED — " + m.error.strip().replace("\n", " ")[:600])
            continue
        parts = [f"median {m.median_ms:.4g} ms (p10 {m.p10_ms:.4g}, p90 {m.p90_ms:.4g}, n={m.reps})"]
        check = m.extra.get("check")
        if check:
            parts.append(f"rel. err {check['rel_err']:.1e}" + (f", {check['nonfinite']} non-finite"
                                                              if check["nonfinite"] else ""))
        parts += [f"{k}={v}" for k, v in m.extra.items() if k not in _QUIET and v not in (None, {}, [], "")]
        lines.append(head + "; ".join(parts))
    return lines


def _header(suite: str, env: dict) -> list[str]:
    dev, versions, smi = env.get("device") or {}, env.get("versions") or {}, env.get("nvidia_smi_start") or {}
    device = f"- device: {dev.get('name', dev.get('error', '?'))}"
    if dev.get("l2_bytes"):
        device += f", {dev.get('sm_count', '?')} SMs, L2 {dev['l2_bytes'] / 2**20:.0f} MiB"
    lines = [f"# nvdsl benchmarks: {suite}", "",
             f"- date: {env.get('date')}; host: {env.get('host')}", device,
             f"- driver: {smi.get('driver_version', '?')} (CUDA {dev.get('driver_cuda_version', '?')}), "
             f"torch CUDA runtime {dev.get('cuda_runtime', '?')}",
             "- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items())]
    if smi:
        lines.append(f"- at start: SM clock {smi.get('clocks.sm')} (max {smi.get('clocks.max.sm')}), memory clock "
                     f"{smi.get('clocks.mem')}, power {smi.get('power.draw')} / {smi.get('power.limit')}, "
                     f"{smi.get('temperature.gpu')} °C, {smi.get('pstate')}")
    end = env.get("nvidia_smi_end")
    if end:
        lines.append(f"- at end: SM clock {end.get('clocks.sm')}, power {end.get('power.draw')}, "
                     f"{end.get('temperature.gpu')} °C")
    git = env.get("git") or {}
    lines.append(f"- command: `{' '.join(env.get('argv') or [])}`; git {git.get('commit') or 'no commit'}"
                 + (" (dirty)" if git.get("dirty") else ""))
    return lines


def markdown(suite: str, module, measurements: list[Measurement], env: dict) -> str:
    """The whole Markdown report: environment, table, per-measurement details."""
    return "\n".join(_header(suite, env) + ["", table(module, measurements), "", "## Details", ""]
                     + _details(module, measurements)) + "\n"


def plot(suite: str, module, measurements: list[Measurement], env: dict, path: str) -> str | None:
    """Throughput as the suite's ``PLOT`` asks, plus the device's dense fp16/bf16 peak as a dashed line
    when ``PLOT["peak"]``; correct measurements only. Returns the path, or None without a plot.

    ``PLOT = {"x": param, ...}``: against that param on a log2 axis, a line per system and ``group``;
    ``PLOT = {"kind": "bars"}``: a group of bars per table row (``row_label``), a bar per system.
    ``PLOT["omit"] = {param: values}``: measurements with those values are in the table only.
    """
    spec, metric = getattr(module, "PLOT", None), module.TABLE_METRIC
    if not spec or metric not in ("tflops", "gbps"):
        return None
    shown = plotted(spec, measurements, metric)
    if not shown:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"no plot: {e}", file=sys.stderr)
        return None
    if spec.get("kind") == "bars":
        fig, ax = _bars(plt, module, shown, metric)
    else:
        fig, ax = _lines(plt, spec, shown, metric)
    peak = peak_tflops(device_name(env)) if spec.get("peak") and metric == "tflops" else None
    if peak:
        ax.axhline(peak, linestyle="--", color="black", linewidth=1, label=f"dense fp16/bf16 peak ({peak:g})")
    ax.set_ylabel(_METRICS[metric][0])
    ax.set_ylim(bottom=0)
    ax.set_title(f"{suite} on {device_name(env) or 'unknown device'}")
    ax.grid(True, which="both", axis="y" if spec.get("kind") == "bars" else "both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def plotted(spec: dict, measurements: list[Measurement], metric: str) -> list[Measurement]:
    """The measurements a plot shows: correct ones with a value, less those ``spec["omit"]`` leaves out."""
    omit = spec.get("omit", {})
    return [m for m in measurements if value(m, metric) is not None and m.correct is not False
            and not any(m.params.get(param) in values for param, values in omit.items())]


def _lines(plt, spec: dict, measurements: list[Measurement], metric: str):
    from matplotlib.ticker import ScalarFormatter

    lines: dict[tuple[str, str], list[tuple[float, float]]] = {}  # (system, group) -> points
    for m in measurements:
        group = " ".join(str(m.params[g]) for g in spec.get("group", ()) if g in m.params)
        lines.setdefault((m.system, group), []).append((m.params[spec["x"]], value(m, metric)))
    systems = list(dict.fromkeys(system for system, _ in lines))
    groups = list(dict.fromkeys(group for _, group in lines))
    colors = plt.get_cmap("tab10").colors
    styles = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D")]
    fig, ax = plt.subplots(figsize=(10, 5.5))
    for (system, group), points in lines.items():
        points.sort()
        style, marker = styles[groups.index(group) % len(styles)]
        ax.plot([p[0] for p in points], [p[1] for p in points], style, marker=marker,
                color=colors[systems.index(system) % len(colors)],
                linewidth=2.4 if system.startswith("nvdsl") else 1.5, label=f"{system} {group}".strip())
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel(spec.get("xlabel", spec["x"]))
    return fig, ax


def _bars(plt, module, measurements: list[Measurement], metric: str):
    label = getattr(module, "row_label", lambda p: " ".join(f"{k}={v}" for k, v in p.items()))
    rows = group_rows(measurements)
    systems = list(dict.fromkeys(m.system for m in measurements))
    colors = plt.get_cmap("tab10").colors
    width = 0.8 / len(systems)
    fig, ax = plt.subplots(figsize=(max(10, 0.25 * len(rows) * len(systems) + 2), 5.5))
    for i, system in enumerate(systems):
        offset = (i - (len(systems) - 1) / 2) * width
        points = [(x + offset, value(m, metric)) for x, row in enumerate(rows) for m in row if m.system == system]
        ax.bar([p[0] for p in points], [p[1] for p in points], width, label=system, color=colors[i % len(colors)])
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([label(row[0].params) for row in rows], rotation=30, ha="right", fontsize="small")
    return fig, ax


def _finite(obj: Any) -> Any:
    """JSON-safe: NaN and infinities become None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def write(suite: str, module, measurements: list[Measurement], env: dict, args, out_dir: str | None = None
          ) -> tuple[dict[str, str], str]:
    """Write the JSON, Markdown and PNG of one suite's run; returns their paths and the Markdown table."""
    out_dir = out_dir or DEFAULT_OUT_DIR
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, f"{(env.get('date') or 'undated')[:10]}_{device_slug(env)}_{suite}")
    record = {"suite": suite, "environment": env, "args": vars(args),
              "measurements": [m.to_json() for m in measurements]}
    paths = {"json": stem + ".json", "md": stem + ".md"}
    with open(paths["json"], "w") as f:
        json.dump(_finite(record), f, indent=1, default=str)
    with open(paths["md"], "w") as f:
        f.write(markdown(suite, module, measurements, env))
    try:
        png = plot(suite, module, measurements, env, stem + ".png")
    except Exception as e:  # a plot is a courtesy; the JSON and table are the record
        print(f"plot failed: {type(e).__name__}: {e}", file=sys.stderr)
        png = None
    if png:
        paths["png"] = png
    return paths, table(module, measurements)
