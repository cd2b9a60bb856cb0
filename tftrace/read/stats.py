"""Event stats (XStat): parsed on demand, values resolved through the plane's stat metadata."""

from __future__ import annotations

import math

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


_INT64 = 2 ** 63


def stat_int(value) -> int | None:
    """A stat's value as an int that fits the int64 columns, or None: a corrupt file may hold
    any number (a uint64 from 2**63, inf, NaN), and numpy refuses those with an exception."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value)
    if not isinstance(value, int) or not -_INT64 <= value < _INT64:
        return None
    return value


def stat_value(st, stat_names):
    kind = st.WhichOneof("value")
    if kind is None:
        return None
    if kind == "ref_value":
        return stat_names.get(st.ref_value, "")
    return getattr(st, kind)
