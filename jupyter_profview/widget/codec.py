"""Binary frames between kernel and browser (see ``docs/widget-protocol.md``).

Mirrored by ``js/src/codec.ts``.  Layout:

    byte 0   b"PVF1"
    byte 4   uint32 LE  H = header length in bytes
    byte 8   H bytes of UTF-8 JSON {"columns": [{name, dtype, offset, length}], "meta": {...}},
             padded with spaces so that the data starts 8-byte aligned
    data     each column little-endian at ``offset`` (a multiple of 8 from byte 0),
             zero padding between columns

No int64 on the wire: times travel as float64 relative to the trace start, or (``_detail``
replies) as float32 relative to ``meta.origin``; `absolute_times` undoes either.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAGIC = b"PVF1"
ALIGN = 8

#: wire dtype name -> little-endian numpy dtype
DTYPES: dict[str, np.dtype[Any]] = {
    "f64": np.dtype("<f8"),
    "f32": np.dtype("<f4"),
    "i32": np.dtype("<i4"),
    "u32": np.dtype("<u4"),
    "i16": np.dtype("<i2"),
    "u16": np.dtype("<u2"),
    "i8": np.dtype("i1"),
    "u8": np.dtype("u1"),
}
_NAMES = {(dt.kind, dt.itemsize): name for name, dt in DTYPES.items()}


class FrameError(ValueError):
    """A frame could not be encoded or decoded (names the column or byte position)."""


@dataclass
class Frame:
    """A decoded frame: named 1-D arrays (read-only views) and the JSON ``meta``."""

    columns: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]


def _pad(n: int) -> int:
    return (-n) % ALIGN


def wire_dtype(array: np.ndarray) -> str:
    """The wire name of an array's dtype; int64/uint64/object etc. are rejected."""
    dt = array.dtype
    name = _NAMES.get((dt.kind, dt.itemsize))
    if name is None:
        hint = " (no int64 on the wire: send float64 relative times)" if dt.kind in "iu" else ""
        raise FrameError(f"dtype {dt} cannot go on the wire{hint}")
    return name


def _json_safe(value: Any) -> Any:
    """Meta as strict JSON: numpy scalars to Python, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def encode_frame(columns: Mapping[str, np.ndarray], meta: Mapping[str, Any] | None = None) -> bytes:
    """Encode named 1-D arrays and a JSON-able ``meta`` dict into one frame."""
    arrays: list[tuple[str, str, np.ndarray]] = []
    for name, values in columns.items():
        array = np.asarray(values)
        if array.ndim != 1:
            raise FrameError(f"column {name!r} has {array.ndim} dimensions, expected 1")
        wire = wire_dtype(array)
        arrays.append((name, wire, np.ascontiguousarray(array, dtype=DTYPES[wire])))
    meta_json = _json_safe(dict(meta or {}))

    # The header holds the offsets, which depend on the header length: iterate to a fixed point.
    data_start = 0
    while True:
        specs: list[dict[str, Any]] = []
        offset = data_start
        for name, wire, array in arrays:
            specs.append({"name": name, "dtype": wire, "offset": offset, "length": len(array)})
            offset += array.nbytes + _pad(array.nbytes)
        header = json.dumps({"columns": specs, "meta": meta_json}, ensure_ascii=False,
                            allow_nan=False, separators=(",", ":")).encode("utf-8")
        header += b" " * _pad(8 + len(header))
        if 8 + len(header) == data_start:
            break
        data_start = 8 + len(header)

    out = bytearray(offset)
    out[0:4] = MAGIC
    out[4:8] = struct.pack("<I", len(header))
    out[8:data_start] = header
    for spec, (_, _, array) in zip(specs, arrays, strict=True):
        at = int(spec["offset"])  # type: ignore[call-overload]
        out[at:at + array.nbytes] = array.tobytes()
    return bytes(out)


def decode_frame(data: bytes | bytearray | memoryview) -> Frame:
    """Decode a frame; columns are read-only numpy views on ``data`` (no copy)."""
    view = memoryview(data).cast("B")
    if len(view) < 8 or bytes(view[0:4]) != MAGIC:
        raise FrameError(f"not a frame: expected magic {MAGIC!r} at byte 0, got {bytes(view[0:4])!r}")
    (hlen,) = struct.unpack("<I", view[4:8])
    if 8 + hlen > len(view):
        raise FrameError(f"header length {hlen} runs past the end of the {len(view)}-byte frame")
    try:
        header = json.loads(bytes(view[8:8 + hlen]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FrameError(f"bad frame header at byte 8: {exc}") from exc
    if not isinstance(header, dict) or not isinstance(header.get("columns", []), list):
        raise FrameError("bad frame header: expected an object with a 'columns' list")
    columns: dict[str, np.ndarray] = {}
    for spec in header.get("columns", []):
        name, wire = spec.get("name"), spec.get("dtype")
        offset, length = spec.get("offset"), spec.get("length")
        if wire not in DTYPES:
            raise FrameError(f"column {name!r}: unknown dtype {wire!r}")
        if not isinstance(offset, int) or not isinstance(length, int) or offset < 0 or length < 0:
            raise FrameError(f"column {name!r}: bad offset/length {offset!r}/{length!r}")
        if offset % ALIGN:
            raise FrameError(f"column {name!r}: offset {offset} is not {ALIGN}-byte aligned")
        dt = DTYPES[wire]
        end = offset + length * dt.itemsize
        if end > len(view):
            raise FrameError(f"column {name!r}: bytes {offset}..{end} run past the frame ({len(view)})")
        array = np.frombuffer(view, dtype=dt, count=length, offset=offset)
        array.flags.writeable = False
        columns[str(name)] = array
    meta = header.get("meta") or {}
    return Frame(columns, meta if isinstance(meta, dict) else {})


def absolute_times(frame: Frame, name: str) -> np.ndarray:
    """A time column as float64 relative to the trace start: the column plus ``meta.origin``
    (0 when absent). ``_detail`` replies send times as float32 relative to the request's t0."""
    origin = frame.meta.get("origin", 0)
    if isinstance(origin, bool) or not isinstance(origin, (int, float)) or not math.isfinite(origin):
        origin = 0
    return frame.columns[name].astype(np.float64) + float(origin)


def empty_frame(meta: Mapping[str, Any] | None = None) -> bytes:
    """A frame without columns (e.g. ``_memory`` for a trace without memory data)."""
    return encode_frame({}, meta)
