"""The tables a report holds, by name: one list for the report, the CLI and the CSV renderer."""

TABLES = ("ops", "layers", "categories", "stages", "steps", "hosts", "devices", "python")
