"""The errors tftrace raises: each carries a message a user can act on."""


class TftraceError(Exception):
    """Base class: the CLI prints the message on one line and exits with code 2. `code` names the
    kind of error in JSON errors (`{"error": {"code": ..., "message": ...}}`)."""

    code = "bad_input"


class TraceReadError(TftraceError):
    """A trace file is missing, empty, truncated, or not a trace."""

    code = "trace_read"


class NoTracesError(TftraceError):
    """A path holds no trace files tftrace can read."""

    code = "no_traces"


class ReportError(TftraceError):
    """A saved report cannot be read back."""

    code = "report"


class UnknownFinding(TftraceError):
    """An id that names no finding of the run."""

    code = "unknown_finding"
