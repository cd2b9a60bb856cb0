"""The errors tftrace raises: each carries a message a user can act on."""


class TftraceError(Exception):
    """Base class: the CLI prints the message on one line and exits with code 2."""


class TraceReadError(TftraceError):
    """A trace file is missing, empty, truncated, or not a trace."""


class NoTracesError(TftraceError):
    """A path holds no trace files tftrace can read."""


class ReportError(TftraceError):
    """A saved report cannot be read back."""
