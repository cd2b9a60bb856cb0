"""What every part of tftrace shares and nothing computes: the event table, the reports and
their rows, findings, names, the run folder's layout, the version. Imports nothing else of tftrace's."""
