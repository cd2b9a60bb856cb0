"""JSON: the saved, round-tripping form of a report (README, "The JSON report")."""

from __future__ import annotations

import json


def render_json(report, **_options) -> str:
    return json.dumps(report.to_dict(), indent=2) + "\n"
