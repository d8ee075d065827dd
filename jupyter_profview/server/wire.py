"""The framed binary reply of the server's API (mirrored by ``js/src/transport_http.ts``).

A command reply of the widget's RPC is a JSON message plus binary buffers; over
HTTP both travel in one ``application/octet-stream`` body:

``b"PVR1"`` | ``uint32 LE`` header length | header (UTF-8 JSON) | zero padding to 8 |
buffer 0 | padding to 8 | buffer 1 | ...

The header is ``{"msg": ..., "buffers": [[offset, length], ...]}`` with offsets
from the start of the body (8-aligned, so typed arrays can view them in place).
``bytes`` values at the top level of ``msg`` (the widget's binary traits, e.g.
``_overview``) are moved into buffers and replaced by ``{"$buffer": i}``.
"""

from __future__ import annotations

import json
import struct
from typing import Any

MAGIC = b"PVR1"  # "reply"; the frames inside (codec.py) start with PVF1
CONTENT_TYPE = "application/octet-stream"


def _pad(n: int) -> int:
    return (-n) % 8


def encode(msg: dict[str, Any], buffers: list[bytes] | None = None) -> bytes:
    """One framed body from a JSON-able message and its buffers."""
    bufs = list(buffers or [])
    out_msg: dict[str, Any] = {}
    for key, value in msg.items():
        if isinstance(value, (bytes, bytearray, memoryview)):
            out_msg[key] = {"$buffer": len(bufs)}
            bufs.append(bytes(value))
        else:
            out_msg[key] = value
    # offsets depend on the header length, which depends on the offsets' digits: iterate to a fixpoint
    spans: list[list[int]] = [[0, len(b)] for b in bufs]
    while True:
        header = json.dumps({"msg": out_msg, "buffers": spans}, separators=(",", ":"),
                            allow_nan=False).encode()
        pos = 8 + len(header)
        pos += _pad(pos)
        new = []
        for b in bufs:
            new.append([pos, len(b)])
            pos += len(b) + _pad(len(b))
        if new == spans:
            break
        spans = new
    parts = [MAGIC, struct.pack("<I", len(header)), header, b"\0" * _pad(8 + len(header))]
    for b in bufs:
        parts += [b, b"\0" * _pad(len(b))]
    return b"".join(parts)


def decode(body: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """Inverse of `encode` (``{"$buffer": i}`` values are put back as bytes)."""
    if body[:4] != MAGIC or len(body) < 8:
        raise ValueError("not a profview frame (missing PVR1 magic)")
    (n,) = struct.unpack_from("<I", body, 4)
    header = json.loads(body[8:8 + n])
    buffers = [body[o:o + size] for o, size in header["buffers"]]
    msg = header["msg"]
    if isinstance(msg, dict):
        for key, value in list(msg.items()):
            if isinstance(value, dict) and set(value) == {"$buffer"}:
                msg[key] = buffers[value["$buffer"]]
    return msg, buffers
