"""profview's Perfetto proto subset (formats/perfetto/schema.py) against Google's classes: every
field it declares has the number, wire type and cardinality Perfetto's own .proto gives it."""

from __future__ import annotations

import pytest

from jupyter_profview.formats.perfetto.schema import GOOGLE_NAMES, MESSAGES, message_class

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

# FieldDescriptor types that share a wire encoding with what the subset declares (enums as int32)
SAME_WIRE = {"int32": {5, 14}, "int64": {3}, "uint32": {13}, "uint64": {4}, "bool": {8},
             "double": {1}, "string": {9}, "bytes": {12}, "fixed64": {6}}


def _google(name: str) -> object:
    obj: object = pb
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("message", sorted(GOOGLE_NAMES))
def test_fields_match_googles(message: str) -> None:
    theirs = _google(GOOGLE_NAMES[message]).DESCRIPTOR.fields_by_name  # type: ignore[attr-defined]
    for name, number, type_name, repeated in MESSAGES[message]:
        field = theirs[name]
        assert field.number == number, (message, name)
        assert field.is_repeated == repeated, (message, name)
        if type_name in SAME_WIRE:
            assert field.type in SAME_WIRE[type_name], (message, name, field.type)
        else:
            assert field.message_type.name == GOOGLE_NAMES[type_name].split(".")[-1], (message, name)


def test_subset_reads_googles_bytes() -> None:
    packet = pb.TracePacket()
    packet.timestamp = 123
    packet.track_event.flow_ids.append(2**63 + 5)
    packet.track_event.name = "x"
    ours = message_class("TracePacket").FromString(packet.SerializeToString())
    assert ours.timestamp == 123
    assert list(ours.track_event.flow_ids) == [2**63 + 5]
    assert ours.track_event.name == "x"
