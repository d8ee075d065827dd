"""The ``XSpace`` / ``XPlane`` protobuf schema (``*.xplane.pb``, written by the
TF2 / JAX / XLA profilers), built at runtime: no protoc, no TensorFlow.

Field names and numbers follow ``tsl/profiler/protobuf/xplane.proto``
(package ``tensorflow.profiler``), as shipped in TensorFlow 2.21's
``xplane_pb2``.  The ``map<int64, XEventMetadata>`` / ``map<int64,
XStatMetadata>`` fields are declared as repeated ``{key, value}`` messages (the
same bytes on the wire); the ``oneof`` groups of ``XEvent`` (``offset_ps`` |
``num_occurrences``) and ``XStat`` (the value) are real oneofs, so
``WhichOneof`` tells which one is set.  The descriptors live in a private
`DescriptorPool` and never clash with a real TensorFlow in the process.

`top_level_planes` walks the outer ``XSpace`` message on the raw wire
format, one plane at a time from a stream of chunks, so a big file is never
held twice (once as bytes and once parsed) as a whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from google.protobuf import descriptor_pb2

from .proto_runtime import RuntimeSchema, add_messages

PACKAGE = "jupyter_profview.xplane"

# message -> (field, number, type, repeated, oneof name or None)
_MESSAGES: dict[str, list[tuple[str, int, str, bool, str | None]]] = {
    "XSpace": [
        ("planes", 1, "XPlane", True, None), ("errors", 2, "string", True, None),
        ("warnings", 3, "string", True, None), ("hostnames", 4, "string", True, None),
    ],
    "EventMetadataEntry": [("key", 1, "int64", False, None), ("value", 2, "XEventMetadata", False, None)],
    "StatMetadataEntry": [("key", 1, "int64", False, None), ("value", 2, "XStatMetadata", False, None)],
    "XPlane": [
        ("id", 1, "int64", False, None), ("name", 2, "string", False, None),
        ("lines", 3, "XLine", True, None), ("event_metadata", 4, "EventMetadataEntry", True, None),
        ("stat_metadata", 5, "StatMetadataEntry", True, None), ("stats", 6, "XStat", True, None),
    ],
    "XLine": [
        ("id", 1, "int64", False, None), ("display_id", 10, "int64", False, None),
        ("name", 2, "string", False, None), ("display_name", 11, "string", False, None),
        ("timestamp_ns", 3, "int64", False, None), ("duration_ps", 9, "int64", False, None),
        ("events", 4, "XEvent", True, None),
    ],
    "XEvent": [
        ("metadata_id", 1, "int64", False, None), ("offset_ps", 2, "int64", False, "data"),
        ("num_occurrences", 5, "int64", False, "data"), ("duration_ps", 3, "int64", False, None),
        ("stats", 4, "XStat", True, None),
    ],
    "XStat": [
        ("metadata_id", 1, "int64", False, None), ("double_value", 2, "double", False, "value"),
        ("uint64_value", 3, "uint64", False, "value"), ("int64_value", 4, "int64", False, "value"),
        ("str_value", 5, "string", False, "value"), ("bytes_value", 6, "bytes", False, "value"),
        ("ref_value", 7, "uint64", False, "value"),
    ],
    "XEventMetadata": [
        ("id", 1, "int64", False, None), ("name", 2, "string", False, None),
        ("display_name", 4, "string", False, None), ("metadata", 3, "bytes", False, None),
        ("stats", 5, "XStat", True, None), ("child_id", 6, "int64", True, None),
    ],
    "XStatMetadata": [
        ("id", 1, "int64", False, None), ("name", 2, "string", False, None),
        ("description", 3, "string", False, None),
    ],
}


def _file_proto() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="jupyter_profview/xplane.proto", package=PACKAGE, syntax="proto3"
    )
    add_messages(proto, _MESSAGES)
    return proto


_SCHEMA = RuntimeSchema(_file_proto)


def message_class(name: str) -> Any:
    """The generated message class ``name`` (``"XSpace"``, ``"XPlane"``, ...)."""
    return _SCHEMA.message_class(name)


BIG_FIELD = 1 << 20  # fields longer than this are assembled in a buffer of their own


class WireError(Exception):
    """The outer XSpace message is cut or malformed at byte ``position``."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason


class _Stream:
    """Bytes from an iterator of chunks, consumed from the front.  ``guard(at,
    got)`` is called while a big field whose key is at ``at`` is assembled,
    with the bytes it has so far (it may raise to stop)."""

    def __init__(self, chunks: Iterable[bytes | memoryview],
                 guard: Callable[[int, int], None] | None = None) -> None:
        self._chunks = iter(chunks)
        self._guard = guard
        self.field_at = 0  # offset of the key of the field being read
        self._buf = bytearray()
        self._pos = 0        # read position in _buf
        self.offset = 0      # absolute offset of _buf[_pos]

    def _fill(self, n: int) -> bool:
        while len(self._buf) - self._pos < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                return False
            if self._pos:
                del self._buf[:self._pos]
                self._pos = 0
            self._buf += chunk
        return True

    def at_end(self) -> bool:
        return not self._fill(1)

    def varint(self) -> int:
        value = shift = 0
        start = self.offset
        while shift < 70:
            if not self._fill(1):
                raise WireError(start, "truncated varint (the file ends inside it)")
            byte = self._buf[self._pos]
            self._pos += 1
            self.offset += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
        raise WireError(start, "varint longer than 10 bytes")

    def take(self, n: int) -> bytes | bytearray:
        """The next ``n`` bytes.  A big field is assembled in a buffer of its own,
        chunk by chunk, so the stream never holds it twice."""
        have = len(self._buf) - self._pos
        if n <= max(have, BIG_FIELD):
            if not self._fill(n):
                raise WireError(self.offset, f"field of {n} bytes runs past the end of the data "
                                             f"({len(self._buf) - self._pos} left; truncated?)")
            small = bytes(self._buf[self._pos:self._pos + n])
            self._pos += n
            self.offset += n
            return small
        # grown as the bytes arrive (never allocated from the length alone: the
        # length may be a lie), in place (bytearray growth is amortised)
        out = bytearray(self._buf[self._pos:])
        self._buf = bytearray()
        self._pos = 0
        while len(out) < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                raise WireError(self.offset, f"field of {n} bytes runs past the end of the data "
                                             f"({len(out)} left; truncated?)")
            used = min(len(chunk), n - len(out))
            out += chunk[:used]
            if used < len(chunk):
                self._buf += chunk[used:]
            if self._guard is not None:
                self._guard(self.field_at, len(out))
        self.offset += n
        return out


def top_level_fields(chunks: Iterable[bytes | memoryview], guard: Callable[[int, int], None] | None = None,
                     ) -> Iterator[tuple[int, int, Any]]:
    """(field number, byte offset of its key, value) of each field of the outer
    message: bytes for length-delimited fields, an int for varints/fixed ones
    (``guard``: see `_Stream`)."""
    stream = _Stream(chunks, guard)
    while not stream.at_end():
        at = stream.field_at = stream.offset
        key = stream.varint()
        number, wire = key >> 3, key & 7
        if number == 0 or wire in (3, 4, 6, 7):
            raise WireError(at, f"invalid field key {key}")
        if wire == 0:
            value: Any = stream.varint()
        elif wire in (1, 5):
            value = int.from_bytes(stream.take(8 if wire == 1 else 4), "little")
        else:
            size = stream.varint()
            if size > 2**40:
                raise WireError(at, f"length {size} is not plausible")
            value = stream.take(size)
        yield number, at, value
