"""CSV: one table (ops, layers, steps, hosts, python...) of every run, for spreadsheets and pandas."""

from __future__ import annotations

import csv
import io

from tftrace.model.tables import TABLES  # noqa: F401 - the tables this renderer can write


def render_csv(report, table: str = "ops", **_options) -> str:
    header, rows = report.rows(table)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header or ["run"])
    writer.writerows(rows)
    return buf.getvalue()
