"""An owner as the analyses key it: its kind, name and phase (model/owners.py holds its row)."""

from __future__ import annotations

from typing import NamedTuple


class OwnerKey(NamedTuple):
    kind: str
    name: str
    phase: str = ""
