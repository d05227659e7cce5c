"""The machinery of the repro scripts ``op_generate`` writes, as plain Python.

A generated script is a *head* rendered per call (its docstring, imports,
``tested`` and ``bench`` callables, ``inputs()`` and settings) followed by
this machinery: the files below, each inlined verbatim from the line after
its marker line (``MARKER``), in the order of ``src/render/machinery.rs``;
with ``op_generate --shared-module`` the scripts import it instead from one
module written beside them. Every function takes what it needs from the
script (``call``: the script's own module) or from its arguments, never from
the head's globals, so the same code runs inlined or imported.

- ``_tables``: data tables rendered from msprobe-rs's Rust tables (do not edit);
- ``data_generate``: the dumped inputs as specs, random and real data;
- ``torch_exec``: torch execution (the PyTorch tested side and every bench);
- ``ms_bench``: torch equivalents of MindSpore signatures for the bench;
- ``ms_exec``: MindSpore execution (the MindSpore and the MSAdapter tested side);
- ``two_torches``: MSAdapter's torch and the real torch in one process (first in
  an MSAdapter script's machinery);
- ``standard``: the precision standards (the mirror of runtime/src/standard.rs);
- ``compare``: metrics rows, verdicts, the CSV writer;
- ``run_ut``: the command line and the iteration loop;
- ``pytorch_side`` / ``mindspore_side`` / ``mindtorch_side``: each framework's side and the entry point.
"""

# The line after which a file's text is inlined into the scripts; what is above
# it (docstring, imports of the package) is dropped.
MARKER = "# --- msprobe-rs: the scripts inline this file from here ---"
