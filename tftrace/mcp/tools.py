"""The MCP server: read-only tools that mirror the commands (analyze, findings, explain, whatif,
diff, owners, roofline; capture only when allowed), each answering the JSON its command writes with
`--format json`, under an output schema from tftrace's own (model/json_schema.py); the schemas as
resources. A failure is a tool error whose structured content is `{"error": {"code", "message"}}`."""

from __future__ import annotations

import json
from typing import Callable

from mcp.server import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from tftrace import api
from tftrace.mcp.cache import Reports
from tftrace.model.answers import ErrorAnswer, ErrorBody
from tftrace.model.errors import TftraceError
from tftrace.model.json_schema import DOCUMENTS, combined_schema, document_schema
from tftrace.model.version import VERSION
from tftrace.spill import LIMIT, spill

INSTRUCTIONS = (
    "tftrace reads TensorFlow, JAX and PyTorch profiler traces (a logdir, a run folder or one trace file) and says "
    "why steps are slow. Start with `findings` (ranked, each with an id, the step its fix would leave and the fix), "
    "then `explain` one id, `whatif` several ids together, and after a change `diff` the old run (or its saved "
    "JSON report) against the new one: its findings come back resolved, new or persisting. Results follow the "
    "JSON Schema in the resource tftrace://schema; an answer over the size limit comes back as a file path.")
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def build(allow_capture: bool = False, limit: int = LIMIT) -> MCPServer:
    reports = Reports(lambda path, top: api.report_of(path) if top is None else api.analyze(path, top=top))
    server = MCPServer("tftrace", version=VERSION, instructions=INSTRUCTIONS, tools=_tools(reports, limit, allow_capture))

    @server.resource("tftrace://schema", name="schema", mime_type="application/schema+json",
                     description="The JSON Schema (draft 2020-12) of every document tftrace writes.")
    def _schema() -> str:
        return json.dumps(combined_schema(), indent=2)

    @server.resource("tftrace://schema/{name}", name="schema of one document", mime_type="application/schema+json",
                     description=f"The JSON Schema of one document: {', '.join(DOCUMENTS)}.")
    def _document(name: str) -> str:
        if name not in DOCUMENTS:
            raise ValueError(f"no schema {name!r}; choose one of {', '.join(DOCUMENTS)}")
        return json.dumps(document_schema(name), indent=2)

    return server


def serve(allow_capture: bool = False) -> None:
    """Serve on stdin and stdout until the client closes them."""
    build(allow_capture).run("stdio")


def _tools(reports: Reports, limit: int, allow_capture: bool) -> list[Tool]:
    def analyze(path: str, top: int = 15) -> CallToolResult:
        """Analyse every run under a path (logdir, run folder, or a *.xplane.pb / *.trace.json[.gz] / PyTorch
        trace file): steps, breakdown, verdict, findings, owners, top ops, layers and categories. The whole
        report; `findings` is the compact start."""
        return _answer(lambda: reports.get(path, max(top, 1)), "analyze", limit)

    def findings(path: str) -> CallToolResult:
        """Each run's findings ranked by what their fixes save: id, title, share of step time, the step now and
        once fixed (projection and its basis), and the fix."""
        return _answer(lambda: api.findings(reports.get(path)), "findings", limit)

    def explain(path: str, id: str) -> CallToolResult:
        """What one finding (its id from `findings`) rests on: its evidence, and the ops, owners, steps and
        median-step timeline events it is about, each list capped. The path must hold one run."""
        return _answer(lambda: api.explain(reports.get(path), id), "explain", limit)

    def whatif(path: str, fixes: list[str]) -> CallToolResult:
        """The step once the fixes of several findings (ids from `findings`) are applied together, from their
        projections, with what the figure rests on and how they were combined. The path must hold one run."""
        return _answer(lambda: api.whatif(reports.get(path), fixes), "whatif", limit)

    def diff(baseline: str, candidate: str, fail_if_slower: float | None = None) -> CallToolResult:
        """Compare two runs (each a run folder, trace file or saved JSON report): the median step time with a
        significance test, what moved, each finding resolved, new or persisting (by id), and a verdict.
        `fail_if_slower` (percent) adds the speed gate's decision (`gate.failed`)."""
        return _answer(lambda: api.diff(baseline, candidate, fail_if_slower=fail_if_slower), "diff", limit)

    def owners(path: str) -> CallToolResult:
        """Who in the program holds each part of a step (layers by phase, loss, optimizer, callbacks, input
        stages, Python functions, the framework, the profiler), per run, largest first; rows add up to the step."""
        return _answer(lambda: api.owners(reports.get(path)), "owners", limit)

    def roofline(path: str, top: int = 30) -> CallToolResult:
        """The cost figures each run's report holds: the top ops' FLOPs and bytes accessed, each device's peak
        FLOP/s and bytes/s, the model's FLOPs per step and MFU; null where the trace cannot say (`known`)."""
        return _answer(lambda: api.roofline(reports.get(path), max(top, 1)), "roofline", limit)

    tools = [_tool(fn, doc) for fn, doc in ((analyze, "report"), (findings, "findings"), (explain, "explain"),
                                            (whatif, "whatif"), (diff, "diff"), (owners, "owners"),
                                            (roofline, "roofline"))]
    if allow_capture:
        def capture(addresses: str, logdir: str, duration_ms: int = 2000, python_tracer: bool = False) -> CallToolResult:
            """Capture running profiler servers (host:port[,host:port...], started in each worker with
            tf.profiler.experimental.server.start(port)) at the same time into one run under logdir; then
            `findings` on the run folder it returns."""
            return _answer(lambda: _capture(addresses, logdir, duration_ms, python_tracer), "capture", limit)
        tools.append(_tool(capture, "captured", read_only=False))
    return tools


def _tool(fn: Callable, document: str, read_only: bool = True) -> Tool:
    """A tool whose output schema is its document's (or, past the size limit, a spilled file's)."""
    annotations = _READ_ONLY if read_only else ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                                               idempotent_hint=False, open_world_hint=True)
    tool = Tool.from_function(fn, annotations=annotations)
    tool.fn_metadata.output_schema = combined_schema((document, "spilled"), title=f"{fn.__name__}-result")
    return tool


def _answer(make: Callable, name: str, limit: int) -> CallToolResult:
    """The answer's JSON as structured content (and as text), or a spilled file's, or an error."""
    try:
        data = make().to_dict()
    except TftraceError as e:
        return _error(e.code, str(e))
    except (OSError, ValueError) as e:  # a path it cannot read, a value it cannot take
        return _error("bad_input", f"{type(e).__name__}: {e}")
    text = json.dumps(data, indent=2)
    spilled = spill(text, name, ".json", limit)
    if spilled is not None:
        data = spilled.to_dict()
        text = json.dumps(data, indent=2)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _error(code: str, message: str) -> CallToolResult:
    data = ErrorAnswer(ErrorBody(code, " ".join(message.split()), 2)).to_dict()
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data))], structured_content=data,
                          is_error=True)


def _capture(addresses: str, logdir: str, duration_ms: int, python_tracer: bool):
    from tftrace.capture.remote import capture, parse_addresses
    from tftrace.model.answers import Captured
    result = capture(parse_addresses(addresses), logdir, duration_ms, python_tracer)
    return Captured(result.run_dir, tuple(result.captured), tuple(f"{a}: {why}" for a, why in sorted(result.failed.items())))
