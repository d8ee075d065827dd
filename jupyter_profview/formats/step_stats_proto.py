"""A minimal, self-contained schema for TensorFlow's ``RunMetadata`` /
``StepStats`` protobufs, built at runtime (no protoc, no TensorFlow).

Field names and numbers follow TensorFlow's public ``step_stats.proto``,
``allocation_description.proto``, ``tensor_description.proto``,
``tensor_shape.proto``, ``types.proto`` and ``config.proto`` (``RunMetadata``:
only ``step_stats = 1``; everything else stays an unknown field).  The
descriptors live in a private `DescriptorPool`, so they never clash with
a real TensorFlow installation in the same process.

``DeviceStepStats.thread_names`` (a ``map<uint32, string>`` upstream) is
declared as a repeated ``{key, value}`` message, which is the same thing on the
wire and in text format.

`varint` and `wire_error` walk the raw wire format: the loader uses
them to recognise a binary head and to say at which byte (and in which field)
undecodable data breaks, which the protobuf runtime does not report.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from google.protobuf import descriptor_pb2

from .proto_runtime import RuntimeSchema, add_messages

PACKAGE = "jupyter_profview.tfproto"

# DataType (types.proto): name, number, element size in bytes (None: not fixed).
DATA_TYPES: tuple[tuple[str, int, int | None], ...] = (
    ("DT_INVALID", 0, None), ("DT_FLOAT", 1, 4), ("DT_DOUBLE", 2, 8), ("DT_INT32", 3, 4),
    ("DT_UINT8", 4, 1), ("DT_INT16", 5, 2), ("DT_INT8", 6, 1), ("DT_STRING", 7, None),
    ("DT_COMPLEX64", 8, 8), ("DT_INT64", 9, 8), ("DT_BOOL", 10, 1), ("DT_QINT8", 11, 1),
    ("DT_QUINT8", 12, 1), ("DT_QINT32", 13, 4), ("DT_BFLOAT16", 14, 2), ("DT_QINT16", 15, 2),
    ("DT_QUINT16", 16, 2), ("DT_UINT16", 17, 2), ("DT_COMPLEX128", 18, 16), ("DT_HALF", 19, 2),
    ("DT_RESOURCE", 20, None), ("DT_VARIANT", 21, None), ("DT_UINT32", 22, 4), ("DT_UINT64", 23, 8),
)

# message -> (field, number, type, repeated)
_MESSAGES: dict[str, list[tuple[str, int, str, bool]]] = {
    "TensorShapeDim": [("size", 1, "int64", False), ("name", 2, "string", False)],
    "TensorShapeProto": [("dim", 2, "TensorShapeDim", True), ("unknown_rank", 3, "bool", False)],
    "AllocationDescription": [
        ("requested_bytes", 1, "int64", False), ("allocated_bytes", 2, "int64", False),
        ("allocator_name", 3, "string", False), ("allocation_id", 4, "int64", False),
        ("has_single_reference", 5, "bool", False), ("ptr", 6, "uint64", False),
    ],
    "TensorDescription": [
        ("dtype", 1, "DataType", False), ("shape", 2, "TensorShapeProto", False),
        ("allocation_description", 4, "AllocationDescription", False),
    ],
    "AllocationRecord": [("alloc_micros", 1, "int64", False), ("alloc_bytes", 2, "int64", False)],
    "AllocatorMemoryUsed": [
        ("allocator_name", 1, "string", False), ("total_bytes", 2, "int64", False),
        ("peak_bytes", 3, "int64", False), ("live_bytes", 4, "int64", False),
        ("allocator_bytes_in_use", 5, "int64", False),
        ("allocation_records", 6, "AllocationRecord", True),
    ],
    "NodeOutput": [("slot", 1, "int32", False), ("tensor_description", 3, "TensorDescription", False)],
    "MemoryStats": [
        ("temp_memory_size", 1, "int64", False), ("device_temp_memory_size", 2, "int64", False),
        ("persistent_memory_size", 3, "int64", False),
        ("device_persistent_memory_size", 4, "int64", False),
        ("persistent_tensor_alloc_ids", 5, "int64", True),
        ("device_persistent_tensor_alloc_ids", 6, "int64", True),
    ],
    "NodeExecStats": [
        ("node_name", 1, "string", False), ("all_start_micros", 2, "int64", False),
        ("op_start_rel_micros", 3, "int64", False), ("op_end_rel_micros", 4, "int64", False),
        ("all_end_rel_micros", 5, "int64", False), ("memory", 6, "AllocatorMemoryUsed", True),
        ("output", 7, "NodeOutput", True), ("timeline_label", 8, "string", False),
        ("scheduled_micros", 9, "int64", False), ("thread_id", 10, "uint32", False),
        ("referenced_tensor", 11, "AllocationDescription", True),
        ("memory_stats", 12, "MemoryStats", False), ("all_start_nanos", 13, "int64", False),
        ("op_start_rel_nanos", 14, "int64", False), ("op_end_rel_nanos", 15, "int64", False),
        ("all_end_rel_nanos", 16, "int64", False), ("scheduled_nanos", 17, "int64", False),
    ],
    "ThreadNamesEntry": [("key", 1, "uint32", False), ("value", 2, "string", False)],
    "DeviceStepStats": [
        ("device", 1, "string", False), ("node_stats", 2, "NodeExecStats", True),
        ("thread_names", 3, "ThreadNamesEntry", True),
    ],
    "StepStats": [("dev_stats", 1, "DeviceStepStats", True)],
    "RunMetadata": [("step_stats", 1, "StepStats", False)],
}


def _file_proto() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="jupyter_profview/tf_step_stats.proto", package=PACKAGE, syntax="proto3"
    )
    enum = proto.enum_type.add(name="DataType")
    for name, number, _size in DATA_TYPES:
        enum.value.add(name=name, number=number)
    for name, number, _size in DATA_TYPES[1:]:  # the *_REF variants (number + 100)
        enum.value.add(name=f"{name}_REF", number=number + 100)
    add_messages(proto, _MESSAGES, enums=frozenset({"DataType"}))
    return proto


_SCHEMA = RuntimeSchema(_file_proto)


def message_class(name: str) -> Any:
    """The generated message class ``name`` (``"RunMetadata"``, ``"StepStats"``, ...)."""
    return _SCHEMA.message_class(name)


def dtype_name(number: int) -> str:
    """``DT_FLOAT`` for 1, ``DT_FLOAT_REF`` for 101, ``DT_<n>`` when unknown."""
    base = number - 100 if number > 100 else number
    for name, value, _size in DATA_TYPES:
        if value == base:
            return name + ("_REF" if number > 100 else "")
    return f"DT_{number}"


# -- wire format, for error positions and sniffing ---------------------------

def varint(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
    """(value, next position) of the varint at ``pos``, or None if cut or too long."""
    value = shift = 0
    while pos < end and shift < 70:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None


def _repeated(field: Any) -> bool:
    if hasattr(field, "is_repeated"):  # protobuf >= 5.29; ``label`` is gone in 7
        return bool(field.is_repeated)
    return bool(field.label == field.LABEL_REPEATED)


def wire_error(data: bytes, desc: Any, start: int = 0, end: int | None = None,
                path: str = "") -> tuple[str, str] | None:
    """Where binary data stops being a valid ``desc`` message:
    (``byte N (in field.path)``, reason), or None if the wire format looks fine."""
    pos, end = start, len(data) if end is None else end
    counts: dict[int, int] = defaultdict(int)
    while pos < end:
        at = pos
        got = varint(data, pos, end)
        if got is None:
            return f"byte {at}" + (f" (in {path.lstrip('.')})" if path else ""), "truncated field key"
        key, pos = got
        number, wire = key >> 3, key & 7
        field = desc.fields_by_number.get(number)
        here = f"{path}.{field.name}" if field is not None else f"{path}.<field {number}>"
        if field is not None and _repeated(field):
            here += f"[{counts[number]}]"
        counts[number] += 1
        where = f"byte {at} (in {here.lstrip('.')})"
        if number == 0 or wire in (3, 4, 6, 7):
            return where, f"invalid field key {key}"
        if wire == 0:
            got = varint(data, pos, end)
            if got is None:
                return where, "truncated varint"
            pos = got[1]
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            got = varint(data, pos, end)
            if got is None or got[1] + got[0] > end:
                return where, "length runs past the end of the data (truncated?)"
            size, pos = got
            if field is not None and field.message_type is not None:
                inner = wire_error(data, field.message_type, pos, pos + size, here)
                if inner:
                    return inner
            elif field is not None and field.type == field.TYPE_STRING:
                try:
                    data[pos:pos + size].decode("utf-8")
                except UnicodeDecodeError:
                    return where, "string is not valid UTF-8"
            pos += size
        if pos > end:
            return where, "field runs past the end of the data (truncated?)"
    return None
