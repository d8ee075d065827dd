"""The outer ``Trace`` message on the wire: ``repeated TracePacket packet = 1``, nothing else.

`batches` walks the packets' length prefixes (one varint each) and hands out runs of whole
packets (a few MiB) for protobuf to parse at once, so a big trace is never held parsed as a
whole.  Damage (a key other than field 1, a length running past the end) stops the walk: the
packets before it are handed out and `Damage` says where and what.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

BATCH_BYTES = 1 << 20  # bytes of packets parsed by protobuf in one call


@dataclass(frozen=True)
class Damage:
    """Where the walk stopped: ``offset`` (byte of the packet's key), what was found there
    and how many bytes after it are lost."""

    offset: int
    reason: str
    lost_bytes: int


def _varint(data: bytes | memoryview, pos: int, end: int) -> tuple[int, int] | None:
    value = shift = 0
    while pos < end and shift < 64:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    return None


def bad_key(byte: int, pos: int, end: int) -> Damage:
    return Damage(pos, f"byte 0x{byte:02x} where a packet (field 1, length-delimited: 0x0a) was expected",
                  end - pos)


def bad_length(pos: int, end: int) -> Damage:
    return Damage(pos, "packet length varint cut or longer than 10 bytes", end - pos)


def past_end(pos: int, size: int, left: int, end: int) -> Damage:
    """A packet of ``size`` bytes at ``pos`` with ``left`` bytes after its length."""
    return Damage(pos, f"packet of {size} bytes runs past the end of the data ({left} left; truncated?)",
                  end - pos)


def batches(data: bytes | memoryview, damage: list[Damage]) -> Iterator[tuple[int, int, int]]:
    """``(start, stop, packets)``: runs of whole packets of ``data``, in order.  On damage the
    walk stops and appends a `Damage` to ``damage``."""
    end = len(data)
    pos = start = count = 0
    while pos < end:
        if data[pos] != 0x0A:
            damage.append(bad_key(data[pos], pos, end))
            break
        if pos + 1 < end and data[pos + 1] < 0x80:  # the common case: a length of one byte
            size, body = data[pos + 1], pos + 2
        else:
            got = _varint(data, pos + 1, end)
            if got is None:
                damage.append(bad_length(pos, end))
                break
            size, body = got
        if body + size > end:
            damage.append(past_end(pos, size, end - body, end))
            break
        pos = body + size
        count += 1
        if pos - start >= BATCH_BYTES:
            yield start, pos, count
            start, count = pos, 0
    if count:
        yield start, pos, count
