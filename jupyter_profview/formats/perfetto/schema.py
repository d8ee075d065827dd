"""The subset of Perfetto's trace protos (``protos/perfetto/trace/``) that profview reads and
writes, built at run time with `..proto_runtime` (no protoc, no ``perfetto`` package).

Field names, numbers and wire types follow Perfetto's ``trace_packet.proto``,
``track_event/track_event.proto``, ``track_event/debug_annotation.proto``,
``track_event/track_descriptor.proto``, ``interned_data/interned_data.proto``,
``clock_snapshot.proto`` and ``trace_packet_defaults.proto`` (``tests/test_perfetto_schema.py``
compares every field with the classes Google ships in the ``perfetto`` package).  Enums are
declared as ``int32`` (the same varint on the wire); fields this subset leaves out are kept
by protobuf as unknown fields and ignored.  ``proto2``: ``HasField`` tells an explicit 0 (a
``track_uuid: 0``) from an absent field.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2

from ..proto_runtime import RuntimeSchema, add_messages

PACKAGE = "jupyter_profview.perfetto"
_Fields = list[tuple[str, int, str, bool]]

MESSAGES: dict[str, _Fields] = {
    "Trace": [("packet", 1, "TracePacket", True)],
    "TraceRaw": [("packet", 1, "bytes", True)],  # the same bytes, packets left unparsed
    "TracePacket": [
        ("timestamp", 8, "uint64", False), ("timestamp_clock_id", 58, "uint32", False),
        ("trusted_packet_sequence_id", 10, "uint32", False), ("sequence_flags", 13, "uint32", False),
        ("incremental_state_cleared", 41, "bool", False), ("previous_packet_dropped", 42, "uint32", False),
        ("first_packet_on_sequence", 87, "bool", False), ("track_event", 11, "TrackEvent", False),
        ("interned_data", 12, "InternedData", False),
        ("trace_packet_defaults", 59, "TracePacketDefaults", False),
        ("clock_snapshot", 6, "ClockSnapshot", False), ("track_descriptor", 60, "TrackDescriptor", False),
        ("compressed_packets", 50, "bytes", False), ("process_descriptor", 43, "ProcessDescriptor", False),
        ("thread_descriptor", 44, "ThreadDescriptor", False), ("trusted_pid", 79, "int32", False),
    ],
    "TrackEvent": [
        ("category_iids", 3, "uint64", True), ("categories", 22, "string", True),
        ("name_iid", 10, "uint64", False), ("name", 23, "string", False), ("type", 9, "int32", False),
        ("track_uuid", 11, "uint64", False), ("counter_value", 30, "int64", False),
        ("double_counter_value", 44, "double", False),
        ("extra_counter_track_uuids", 31, "uint64", True), ("extra_counter_values", 12, "int64", True),
        ("extra_double_counter_track_uuids", 45, "uint64", True),
        ("extra_double_counter_values", 46, "double", True),
        ("flow_ids", 47, "fixed64", True), ("terminating_flow_ids", 48, "fixed64", True),
        ("flow_ids_old", 36, "uint64", True),
        ("debug_annotations", 4, "DebugAnnotation", True), ("legacy_event", 6, "LegacyEvent", False),
    ],
    "LegacyEvent": [
        ("name_iid", 1, "uint64", False), ("phase", 2, "int32", False), ("duration_us", 3, "int64", False),
        ("unscoped_id", 6, "uint64", False), ("bind_id", 8, "uint64", False),
        ("flow_direction", 13, "int32", False), ("pid_override", 18, "int32", False),
        ("tid_override", 19, "int32", False), ("instant_event_scope", 14, "int32", False),
    ],
    "DebugAnnotation": [
        ("name_iid", 1, "uint64", False), ("name", 10, "string", False), ("bool_value", 2, "bool", False),
        ("uint_value", 3, "uint64", False), ("int_value", 4, "int64", False),
        ("double_value", 5, "double", False), ("string_value", 6, "string", False),
        ("string_value_iid", 17, "uint64", False), ("pointer_value", 7, "uint64", False),
        ("legacy_json_value", 9, "string", False), ("dict_entries", 11, "DebugAnnotation", True),
        ("array_values", 12, "DebugAnnotation", True), ("proto_type_name", 16, "string", False),
    ],
    "InternedData": [
        ("event_categories", 1, "EventCategory", True), ("event_names", 2, "EventName", True),
        ("debug_annotation_names", 3, "DebugAnnotationName", True),
        ("debug_annotation_string_values", 29, "InternedString", True),
    ],
    "EventCategory": [("iid", 1, "uint64", False), ("name", 2, "string", False)],
    "EventName": [("iid", 1, "uint64", False), ("name", 2, "string", False)],
    "DebugAnnotationName": [("iid", 1, "uint64", False), ("name", 2, "string", False)],
    "InternedString": [("iid", 1, "uint64", False), ("str", 2, "bytes", False)],
    "TrackDescriptor": [
        ("uuid", 1, "uint64", False), ("parent_uuid", 5, "uint64", False), ("name", 2, "string", False),
        ("static_name", 10, "string", False), ("process", 3, "ProcessDescriptor", False),
        ("thread", 4, "ThreadDescriptor", False), ("counter", 8, "CounterDescriptor", False),
    ],
    "ProcessDescriptor": [("pid", 1, "int32", False), ("process_name", 6, "string", False),
                          ("cmdline", 2, "string", True)],
    "ThreadDescriptor": [("pid", 1, "int32", False), ("tid", 2, "int64", False),
                         ("thread_name", 5, "string", False)],
    "CounterDescriptor": [
        ("type", 1, "int32", False), ("unit", 3, "int32", False), ("unit_name", 6, "string", False),
        ("unit_multiplier", 4, "int64", False), ("is_incremental", 5, "bool", False),
    ],
    "ClockSnapshot": [("clocks", 1, "Clock", True), ("primary_trace_clock", 2, "int32", False)],
    "Clock": [("clock_id", 1, "uint32", False), ("timestamp", 2, "uint64", False),
              ("is_incremental", 3, "bool", False), ("unit_multiplier_ns", 4, "uint64", False)],
    "TracePacketDefaults": [("timestamp_clock_id", 58, "uint32", False),
                            ("track_event_defaults", 11, "TrackEventDefaults", False)],
    "TrackEventDefaults": [
        ("track_uuid", 11, "uint64", False), ("extra_counter_track_uuids", 31, "uint64", True),
        ("extra_double_counter_track_uuids", 45, "uint64", True),
    ],
}

#: Google's message (``perfetto_trace_pb2`` attribute path) for each message of the subset
GOOGLE_NAMES = {
    "Trace": "Trace", "TracePacket": "TracePacket", "TrackEvent": "TrackEvent",
    "LegacyEvent": "TrackEvent.LegacyEvent", "DebugAnnotation": "DebugAnnotation",
    "InternedData": "InternedData", "EventCategory": "EventCategory", "EventName": "EventName",
    "DebugAnnotationName": "DebugAnnotationName", "InternedString": "InternedString",
    "TrackDescriptor": "TrackDescriptor", "ProcessDescriptor": "ProcessDescriptor",
    "ThreadDescriptor": "ThreadDescriptor", "CounterDescriptor": "CounterDescriptor",
    "ClockSnapshot": "ClockSnapshot", "Clock": "ClockSnapshot.Clock",
    "TracePacketDefaults": "TracePacketDefaults", "TrackEventDefaults": "TrackEventDefaults",
}

# TrackEvent.Type
TYPE_UNSPECIFIED, TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_INSTANT, TYPE_COUNTER = range(5)
# TracePacket.SequenceFlags
SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE = 1, 2
#: CounterDescriptor.BuiltinCounterType -> the name Perfetto gives such a track
BUILTIN_COUNTER_NAMES = {1: "thread_time", 2: "thread_instruction_count"}
#: BuiltinClock ids
BOOTTIME, MONOTONIC = 6, 3
FIRST_SEQUENCE_CLOCK, LAST_SEQUENCE_CLOCK = 64, 127


def _file_proto() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name="jupyter_profview/perfetto_trace.proto",
                                               package=PACKAGE, syntax="proto2")
    fixed = {(m, f[0]) for m, fields in MESSAGES.items() for f in fields if f[2] == "fixed64"}
    declared = {m: [(n, num, "uint64" if t == "fixed64" else t, rep) for n, num, t, rep in fields]
                for m, fields in MESSAGES.items()}
    add_messages(proto, declared)
    for message in proto.message_type:
        for field in message.field:
            if (message.name, field.name) in fixed:
                field.type = descriptor_pb2.FieldDescriptorProto.TYPE_FIXED64
    return proto


_SCHEMA = RuntimeSchema(_file_proto)


def message_class(name: str) -> Any:
    """The generated message class ``name`` (``"TracePacket"``, ``"TrackEvent"``, ...)."""
    return _SCHEMA.message_class(name)
