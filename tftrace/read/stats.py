"""Event stats (XStat): parsed on demand, values resolved through the plane's stat metadata."""

from __future__ import annotations

from google.protobuf.message import DecodeError

from tftrace.read.schema import XStat


def parsed_stats(event) -> list:
    """An event's stats, parsed now (they are read lazily); a corrupt one is skipped."""
    out = []
    for data in event.stats:
        try:
            out.append(XStat.FromString(data))
        except DecodeError:
            continue
    return out


def stat_value(st, stat_names):
    kind = st.WhichOneof("value")
    if kind is None:
        return None
    if kind == "ref_value":
        return stat_names.get(st.ref_value, "")
    return getattr(st, kind)
