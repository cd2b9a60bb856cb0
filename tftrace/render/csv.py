"""CSV: the ops, layers or categories table of every run, for spreadsheets and pandas."""

from __future__ import annotations

import csv
import dataclasses
import io

TABLES = ("ops", "layers", "categories", "stages", "steps")


def rows_of(report, table: str) -> tuple[list[str], list[list]]:
    """Header and rows of one table across runs; times in ms (exact ps kept beside)."""
    header: list[str] = []
    rows: list[list] = []
    for run in report.runs:
        items = _items(run, table)
        for item in items:
            record = {"run": run.name}
            for f in dataclasses.fields(item):
                value = getattr(item, f.name)
                if f.name.endswith("_ps"):
                    record[f.name[:-3] + "_ms"] = round(value / 1e9, 6)
                record[f.name] = value
            if not header:
                header = list(record)
            rows.append([record[h] for h in header])
    return header, rows


def _items(run, table):
    if table == "stages":
        return run.input_pipeline.stages
    if table == "steps":
        return run.steps.steps
    return getattr(run, table)


def render_csv(report, table: str = "ops", **_options) -> str:
    header, rows = rows_of(report, table)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header or ["run"])
    writer.writerows(rows)
    return buf.getvalue()
