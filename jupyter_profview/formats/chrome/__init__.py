"""Chrome Trace Event JSON (PyTorch profiler / Kineto, TF ``timeline.py``, XProf trace viewer).

Decoding (`.decode`, the pure-Python reference, and `.native`, the C scanner's glue)
produces `.columns.ChromeColumns`; `.trace` turns those into a Trace with the help of
`.slices` (B/E and async matching, labels), `.flows` (flow arrows) and `.memory`
(PyTorch ``[memory]`` events and counters).
"""

from __future__ import annotations

from .trace import FORMAT, decode, load, sniff, to_trace

__all__ = ["FORMAT", "decode", "load", "sniff", "to_trace"]
