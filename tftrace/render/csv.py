"""CSV: the ops, layers or categories table of every run, for spreadsheets and pandas."""

from __future__ import annotations

import csv
import io

from tftrace import report as report_tables

TABLES = report_tables.TABLES


def render_csv(report, table: str = "ops", **_options) -> str:
    header, rows = report.rows(table)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header or ["run"])
    writer.writerows(rows)
    return buf.getvalue()
