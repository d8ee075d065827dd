"""Protobuf schemas built at run time (no protoc, no TensorFlow): a format declares its messages
as tables of ``(field, number, type, repeated[, oneof])`` and gets message classes from a private
`DescriptorPool`, which never clashes with a real TensorFlow in the same process."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    "int64": _F.TYPE_INT64, "uint64": _F.TYPE_UINT64, "int32": _F.TYPE_INT32,
    "uint32": _F.TYPE_UINT32, "string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES,
    "bool": _F.TYPE_BOOL, "double": _F.TYPE_DOUBLE,
}

Field = tuple[Any, ...]  # (name, number, type name, repeated) or (..., oneof name | None)


def add_messages(proto: descriptor_pb2.FileDescriptorProto, messages: Mapping[str, Sequence[Field]],
                 enums: frozenset[str] = frozenset()) -> None:
    """Declare ``messages`` in ``proto``: scalar types by name (`SCALARS`), anything else
    a message (or an enum, for the names in ``enums``) of the same package."""
    for message, fields in messages.items():
        desc = proto.message_type.add(name=message)
        oneofs: list[str] = []
        for name, number, type_name, repeated, *rest in fields:
            entry = desc.field.add(name=name, number=number, json_name=name)
            entry.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            if type_name in SCALARS:
                entry.type = SCALARS[type_name]  # type: ignore[assignment]
            else:
                entry.type = _F.TYPE_ENUM if type_name in enums else _F.TYPE_MESSAGE  # type: ignore[assignment]
                entry.type_name = f".{proto.package}.{type_name}"
            oneof = rest[0] if rest else None
            if oneof is not None:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    desc.oneof_decl.add(name=oneof)
                entry.oneof_index = oneofs.index(oneof)


class RuntimeSchema:
    """The message classes of one file descriptor, built on first use."""

    def __init__(self, build: Callable[[], descriptor_pb2.FileDescriptorProto]) -> None:
        self._build = build

    @cached_property
    def _file(self) -> descriptor_pb2.FileDescriptorProto:
        return self._build()

    @cached_property
    def _pool(self) -> descriptor_pool.DescriptorPool:
        pool = descriptor_pool.DescriptorPool()
        pool.Add(self._file)
        return pool

    def message_class(self, name: str) -> Any:
        descriptor = self._pool.FindMessageTypeByName(f"{self._file.package}.{name}")
        return message_factory.GetMessageClass(descriptor)
