"""A CUDA memory snapshot as columns: what ``pickle_snap.c`` builds without a Python object per
trace entry, and what `from_object` builds from the pure-Python reader's result (the reference).

Columns (int64 arrays, the per-entry ones as `E_DTYPES`): ``e_*`` one per trace entry, device
traces in order (``e_dev``,
``e_action`` = index in `ACTIONS`, ``e_size``, ``e_addr`` / ``e_addr_null``, ``e_stream``,
``e_time`` / ``e_has_time`` (``time_us`` as written), ``e_stack``, ``e_dfree`` /
``e_dfree_null`` (``device_free``)); ``s_*`` one per segment (``s_dev``, ``s_addr``,
``s_total``, ``s_nblocks``); ``b_*`` one per block (``b_size``, ``b_addr`` as the reader
places it, ``b_state`` string id, ``b_stack``); stacks ``k_off`` (offsets, stack 0 empty) into
``k_frame`` (frame ids); frames ``f_name`` / ``f_file`` (string ids) and ``f_line``;
``strings``.  A stack or frame is stored once however many entries share it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ProfviewError

EXPECTED = "a PyTorch memory snapshot pickle ({'segments': [...], 'device_traces': [[...], ...]})"
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "oom", "snapshot")
LIMIT = 2**62
#: the per-entry columns' dtypes (``pickle_cols.c``'s COL_WIDTH): flags and actions int8, the
#: device and the stack id int32, the rest int64
E_DTYPES = {"e_dev": np.int32, "e_action": np.int8, "e_size": np.int64, "e_addr": np.int64,
            "e_addr_null": np.int8, "e_stream": np.int64, "e_time": np.int64, "e_has_time": np.int8,
            "e_stack": np.int32, "e_dfree": np.int64, "e_dfree_null": np.int8}


def get(obj: Any, key: str, kind: type | tuple[type, ...], where: str, name: str, default: Any = ...) -> Any:
    """``obj[key]`` of type ``kind`` (ints not bool, below 2**62), ``default`` if absent."""
    if not isinstance(obj, dict):
        raise ProfviewError(f"{where} is {type(obj).__name__}", source=name, position=where,
                            expected="a dict")
    if key not in obj:
        if default is not ...:
            return default
        raise ProfviewError(f"missing {key!r}", source=name, position=where, expected=EXPECTED)
    value = obj[key]
    bad = not isinstance(value, kind) or isinstance(value, bool) and kind in (int, (int, float))
    if bad or (isinstance(value, int) and abs(value) >= LIMIT):
        raise ProfviewError(f"{key} = {str(value)[:40]}", source=name, position=f"{where}.{key}",
                            expected=f"{kind.__name__ if isinstance(kind, type) else 'a number'}")
    return value


class _Interner:
    def __init__(self) -> None:
        self.strings: dict[str, int] = {}
        self.frames: dict[tuple[int, int, int], int] = {}
        self.stacks: dict[tuple[int, ...], int] = {(): 0}

    def string(self, s: str) -> int:
        return self.strings.setdefault(s, len(self.strings))

    def stack(self, raw: Any, where: str, name: str) -> int:
        if not isinstance(raw, list):
            raise ProfviewError("frames is not a list", source=name, position=where,
                                expected="a list of frames")
        ids = []
        for k, f in enumerate(raw):
            key = (self.string(get(f, "name", str, f"{where}[{k}]", name, "?")),
                   self.string(get(f, "filename", str, f"{where}[{k}]", name, "?")),
                   get(f, "line", int, f"{where}[{k}]", name, 0))
            ids.append(self.frames.setdefault(key, len(self.frames)))
        return self.stacks.setdefault(tuple(ids), len(self.stacks))


def from_object(snap: Any, name: str) -> dict[str, Any]:
    """The columns of an unpickled snapshot, or ProfviewError (which value, where, expected what)."""
    if not isinstance(snap, dict) or "segments" not in snap:
        raise ProfviewError(f"top level is {type(snap).__name__} without 'segments'", source=name,
                            expected=EXPECTED)
    segments = get(snap, "segments", list, "snapshot", name)
    traces = get(snap, "device_traces", list, "snapshot", name, [])
    timed = any(isinstance(e, dict) and "time_us" in e for d in traces if isinstance(d, list) for e in d)
    it = _Interner()
    e: dict[str, list[int]] = {k: [] for k in ("e_dev", "e_action", "e_size", "e_addr", "e_addr_null",
                                               "e_stream", "e_time", "e_has_time", "e_stack", "e_dfree",
                                               "e_dfree_null")}
    for d, trace in enumerate(traces):
        if not isinstance(trace, list):
            raise ProfviewError("not a list", source=name, position=f"device_traces[{d}]", expected=EXPECTED)
        for k, entry in enumerate(trace):
            where = f"device_traces[{d}][{k}]"
            t = get(entry, "time_us", int, where, name) if timed else 0
            action = get(entry, "action", str, where, name)
            if action not in ACTIONS:
                raise ProfviewError(f"unknown action {action!r}", source=name, position=where,
                                    expected=f"one of {', '.join(ACTIONS)}")
            addr = get(entry, "addr", int, where, name, None)
            dfree = get(entry, "device_free", int, where, name, None)
            row = (d, ACTIONS.index(action), get(entry, "size", int, where, name, 0), addr or 0, addr is None,
                   get(entry, "stream", int, where, name, 0), t, timed,
                   it.stack(entry.get("frames", []), f"{where}.frames", name), dfree or 0, dfree is None)
            for key, value in zip(e, row, strict=True):
                e[key].append(int(value))
    s: dict[str, list[int]] = {k: [] for k in ("s_dev", "s_addr", "s_total", "s_nblocks", "b_size", "b_addr",
                                               "b_state", "b_stack")}
    for i, seg in enumerate(segments):
        where = f"segments[{i}]"
        dev = get(seg, "device", int, where, name, 0)
        base = get(seg, "address", int, where, name)
        total = get(seg, "total_size", int, where, name)
        blocks = get(seg, "blocks", list, where, name)
        addr = base
        for k, block in enumerate(blocks):
            bw = f"{where}.blocks[{k}]"
            size = get(block, "size", int, bw, name)
            addr = get(block, "address", int, bw, name, addr)
            state = get(block, "state", str, bw, name)
            for key, value in (("b_size", size), ("b_addr", addr), ("b_state", it.string(state)),
                               ("b_stack", it.stack(block.get("frames", []), f"{bw}.frames", name))):
                s[key].append(value)
            addr += size
            if abs(addr) >= LIMIT:
                raise ProfviewError("block addresses run past 2**62", source=name, position=bw,
                                    expected="addresses of real memory")
        for key, value in (("s_dev", dev), ("s_addr", base), ("s_total", total), ("s_nblocks", len(blocks))):
            s[key].append(value)
    out: dict[str, Any] = {k: np.array(v, E_DTYPES.get(k, np.int64)) for k, v in (*e.items(), *s.items())}
    stacks = sorted(it.stacks.items(), key=lambda kv: kv[1])
    out["k_off"] = np.concatenate([[0], np.cumsum([len(k) for k, _ in stacks])]).astype(np.int64)
    out["k_frame"] = np.array([f for k, _ in stacks for f in k], np.int64)
    frames = sorted(it.frames, key=it.frames.__getitem__)
    for c, key in enumerate(("f_name", "f_file", "f_line")):
        out[key] = np.array([f[c] for f in frames], np.int64)
    out["strings"] = sorted(it.strings, key=it.strings.__getitem__)
    return out
