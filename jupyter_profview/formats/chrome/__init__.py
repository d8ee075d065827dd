"""Chrome Trace Event JSON (PyTorch profiler / Kineto, TF ``timeline.py``, XProf trace viewer).

Decoding (:mod:`.decode`, the pure-Python reference, and :mod:`.native`, the C scanner's glue)
produces :class:`.columns.ChromeColumns`; :mod:`.trace` turns those into a Trace with the help of
:mod:`.slices` (B/E and async matching, labels), :mod:`.flows` (flow arrows) and :mod:`.memory`
(PyTorch ``[memory]`` events and counters).
"""

from __future__ import annotations

from .trace import FORMAT, decode, load, sniff, to_trace

__all__ = ["FORMAT", "decode", "load", "sniff", "to_trace"]
