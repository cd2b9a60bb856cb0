"""The XSpace protobuf message classes, built from our own descriptor in our own pool."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "tftrace.xplane"

# (message, [(field, number, type, label, type_name, oneof_index)]); numbers follow xplane.proto.
_MESSAGES = {
    "XSpace": [
        ("planes", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XPlane", None),
        ("errors", 2, _F.TYPE_STRING, _F.LABEL_REPEATED, None, None),
        ("warnings", 3, _F.TYPE_STRING, _F.LABEL_REPEATED, None, None),
        ("hostnames", 4, _F.TYPE_STRING, _F.LABEL_REPEATED, None, None),
    ],
    "XPlane": [
        ("id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("lines", 3, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XLine", None),
        ("event_metadata", 4, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XPlane.EventMetadataEntry", None),
        ("stat_metadata", 5, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XPlane.StatMetadataEntry", None),
        ("stats", 6, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XStat", None),
    ],
    "XLine": [
        ("id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("display_id", 10, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("display_name", 11, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("timestamp_ns", 3, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("duration_ps", 9, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("events", 4, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XEvent", None),
    ],
    "XEvent": [
        ("metadata_id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("offset_ps", 2, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, 0),
        ("num_occurrences", 5, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, 0),
        ("duration_ps", 3, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("stats", 4, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XStat", None),
    ],
    "XStat": [
        ("metadata_id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("double_value", 2, _F.TYPE_DOUBLE, _F.LABEL_OPTIONAL, None, 0),
        ("uint64_value", 3, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, None, 0),
        ("int64_value", 4, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, 0),
        ("str_value", 5, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, 0),
        ("bytes_value", 6, _F.TYPE_BYTES, _F.LABEL_OPTIONAL, None, 0),
        ("ref_value", 7, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, None, 0),
    ],
    "XEventMetadata": [
        ("id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("display_name", 4, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("metadata", 3, _F.TYPE_BYTES, _F.LABEL_OPTIONAL, None, None),
        ("stats", 5, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XStat", None),
        ("child_id", 6, _F.TYPE_INT64, _F.LABEL_REPEATED, None, None),
    ],
    "XStatMetadata": [
        ("id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
        ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
        ("description", 3, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, None),
    ],
}
_ONEOFS = {"XEvent": "data", "XStat": "value"}
_MAPS = {"EventMetadataEntry": "XEventMetadata", "StatMetadataEntry": "XStatMetadata"}


def _add_fields(msg: descriptor_pb2.DescriptorProto, fields) -> None:
    for name, number, ftype, label, type_name, oneof in fields:
        field = msg.field.add(name=name, number=number, type=ftype, label=label)
        if type_name:
            field.type_name = f".{_PACKAGE}.{type_name}"
        if oneof is not None:
            field.oneof_index = oneof


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="tftrace/xplane.proto", package=_PACKAGE, syntax="proto3")
    for name, fields in _MESSAGES.items():
        msg = fd.message_type.add(name=name)
        if name in _ONEOFS:
            msg.oneof_decl.add(name=_ONEOFS[name])
        _add_fields(msg, fields)
        if name == "XPlane":
            for entry, value_type in _MAPS.items():
                nested = msg.nested_type.add(name=entry)
                nested.options.map_entry = True
                _add_fields(nested, [
                    ("key", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
                    ("value", 2, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, value_type, None),
                ])
    return fd


def _lazy_file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The same messages, except that an event's stats stay unparsed bytes: most events' stats
    are never read, and not parsing them halves parse time and memory on large traces."""
    fd = _file_descriptor()
    fd.name, fd.package = "tftrace/xplane_lazy.proto", _LAZY_PACKAGE
    for msg in fd.message_type:
        for field in list(msg.field) + [f for nested in msg.nested_type for f in nested.field]:
            if field.type_name:
                field.type_name = field.type_name.replace(f".{_PACKAGE}.", f".{_LAZY_PACKAGE}.")
            if msg.name == "XEvent" and field.name == "stats":
                field.type = _F.TYPE_BYTES
                field.ClearField("type_name")
    # A line whose events stay bytes: upb splits a line into its events in C, far faster than
    # hopping over each event's tag and length in Python.
    raw = fd.message_type.add(name="XLineRaw")
    raw.CopyFrom(next(m for m in fd.message_type if m.name == "XLine"))
    raw.name = "XLineRaw"
    events = next(f for f in raw.field if f.name == "events")
    events.type = _F.TYPE_BYTES
    events.ClearField("type_name")
    return fd


_LAZY_PACKAGE = "tftrace.xplane_lazy"
# A private pool: a process that also imports TensorFlow's own xplane_pb2 gets no name clash.
_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file_descriptor())
_POOL.Add(_lazy_file_descriptor())


def _message(name: str, package: str = _PACKAGE):
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{package}.{name}"))


XSpace = _message("XSpace")
XStat = _message("XStat")
XEvent = _message("XEvent")  # with its stats parsed, for the few events whose every stat is read
# For reading: events' stats arrive as serialized XStat bytes, parsed only where needed.
XSpaceLazy = _message("XSpace", _LAZY_PACKAGE)
XPlaneLazy = _message("XPlane", _LAZY_PACKAGE)
XLineLazy = _message("XLine", _LAZY_PACKAGE)
XEventLazy = _message("XEvent", _LAZY_PACKAGE)
XLineRaw = _message("XLineRaw", _LAZY_PACKAGE)
