"""The benchmark suites. Each module ``benchmarks.suites.<name>`` defines its shapes at the top and:

* ``run(args) -> list[Measurement]``: measure every selected system on every shape;
* ``TABLE_METRIC``: the number the Markdown table shows (``"tflops"``, ``"gbps"``, ``"us"`` or ``"ms"``);
* optionally ``PLOT`` (``{"x": param, "xlabel": str, "group": (params...), "peak": bool}``: throughput
  against ``x`` on a log2 axis, one line per system and group, with the device's dense fp16/bf16 peak
  when ``peak``), ``row_label(params) -> str`` and
  ``derived_columns(row: list[Measurement]) -> dict[str, str]`` (extra table columns), and ``SECTION``
  (a param name: one table per value of it, headed by ``SECTION_TITLES[value]``). ``PLOT = {"kind":
  "bars", "peak": bool}`` draws a group of bars per table row instead.
"""

SUITES = ("gemm", "gemm_family", "attention", "attention_backward", "attention_variants", "attention_decode", "rowwise",
          "launch", "saxpy", "compile", "trust")
