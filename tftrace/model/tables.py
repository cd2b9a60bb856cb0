"""The tables a report holds, by name: one list for the report, the CLI and the CSV renderer
(its own module: the CLI names them in --help without importing the report)."""

TABLES = ("owners", "ops", "layers", "categories", "stages", "steps", "hosts", "devices", "python", "roofline")
