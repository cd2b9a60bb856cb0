"""`tftrace mcp` through the `mcp` package's own client over stdio, started as `python -m tftrace mcp`:
its tools, their structured results (valid against tftrace's schema, with the CLI's ids), errors
as structured results, the schema as a resource; and `tftrace analyze` never imports `mcp`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, public_traces, run_cli, sample
from test_contract import assert_valid

pytest.importorskip("mcp", reason="the mcp package (pip install \"tftrace[mcp]\")")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

KINETO = next(p for p in public_traces() if "resnet50_num_workers_0" in p)
TOOLS = {"analyze", "findings", "explain", "whatif", "diff", "owners", "roofline"}


def session(calls, *flags: str):
    """Start the server as an MCP client does, run `calls(session)` and return what it returns."""
    async def go():
        params = StdioServerParameters(command=sys.executable, args=["-m", "tftrace", "mcp", *flags],
                                       env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                return await calls(s)
    return asyncio.run(asyncio.wait_for(go(), 300))


def cli_ids(path: str) -> list[str]:
    data = json.loads(run_cli("findings", path, "-f", "json", check=True).stdout)
    return [f["id"] for r in data["runs"] for f in r["findings"]]


@pytest.fixture(scope="module")
def answers():
    """One server for the module: every call the tests below look at."""
    paths = {"flatten": sample("augment", "flatten"), "predict": sample("stock", "predict_light"), "kineto": KINETO}

    async def calls(s):
        out = {"tools": await s.list_tools()}
        for name, path in paths.items():
            found = await s.call_tool("findings", {"path": path})
            out[f"findings {name}"] = found
            first = found.structured_content["runs"][0]["findings"][0]["id"]
            out[f"explain {name}"] = await s.call_tool("explain", {"path": path, "id": first})
            out[f"whatif {name}"] = await s.call_tool("whatif", {"path": path, "fixes": [first]})
        out["again"] = await s.call_tool("findings", {"path": paths["flatten"]})
        out["analyze"] = await s.call_tool("analyze", {"path": paths["flatten"], "top": 5})
        out["owners"] = await s.call_tool("owners", {"path": paths["flatten"]})
        out["roofline"] = await s.call_tool("roofline", {"path": sample("gpu_jax", "keras_compute")})
        out["diff"] = await s.call_tool("diff", {"baseline": sample("zoo", "slow_callback"),
                                                 "candidate": sample("zoo", "heavy_layer"), "fail_if_slower": 5})
        out["bad path"] = await s.call_tool("findings", {"path": "/no/such/run"})
        out["bad id"] = await s.call_tool("explain", {"path": paths["flatten"], "id": "layer/nope"})
        out["schema"] = await s.read_resource("tftrace://schema")
        out["schema report"] = await s.read_resource("tftrace://schema/report")
        return out
    return {k: v for k, v in session(calls).items()}, paths


def test_the_server_lists_read_only_tools_with_tftraces_output_schemas(answers):
    out, _ = answers
    tools = {t.name: t for t in out["tools"].tools}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.description and t.annotations.read_only_hint
        assert t.output_schema["type"] == "object" and "spilled" in t.output_schema["$defs"]
    assert tools["whatif"].input_schema["properties"]["fixes"]["type"] == "array"


@pytest.mark.parametrize("name", ["flatten", "predict", "kineto"])
def test_findings_and_explain_validate_and_carry_the_clis_ids(answers, name):
    out, paths = answers
    found = out[f"findings {name}"]
    assert not found.is_error
    assert_valid("findings", found.structured_content)
    ids = [f["id"] for r in found.structured_content["runs"] for f in r["findings"]]
    assert ids and ids == cli_ids(paths[name])
    explained = out[f"explain {name}"]
    assert not explained.is_error
    assert_valid("explain", explained.structured_content)
    assert explained.structured_content["finding"]["id"] == ids[0]
    assert json.loads(explained.content[0].text) == explained.structured_content
    assert_valid("whatif", out[f"whatif {name}"].structured_content)


def test_the_other_tools_validate_against_their_documents(answers):
    out, _ = answers
    for key, document in (("analyze", "report"), ("owners", "owners"), ("roofline", "roofline"), ("diff", "diff")):
        assert not out[key].is_error, out[key].content
        assert_valid(document, out[key].structured_content)
    assert len(out["analyze"].structured_content["runs"][0]["ops"]) <= 5
    assert out["owners"].structured_content["runs"][0]["owners"]
    roof = out["roofline"].structured_content["runs"][0]
    assert roof["ops"] and len(roof["ops"]) <= 30
    diff = out["diff"].structured_content
    assert diff["gate"]["fail_if_slower_pct"] == 5 and diff["verdict"]["findings"] == "matched"
    assert out["again"].structured_content == out["findings flatten"].structured_content


def test_a_bad_path_or_id_is_a_structured_error_not_a_crash(answers):
    out, _ = answers
    for key, code in (("bad path", "trace_read"), ("bad id", "unknown_finding")):
        result = out[key]
        assert result.is_error
        assert_valid("error", result.structured_content)
        assert result.structured_content["error"]["code"] == code


def test_the_schema_is_a_resource(answers):
    out, _ = answers
    whole = json.loads(out["schema"].contents[0].text)
    assert set(whole["$defs"]) >= {"report", "diff", "findings", "explain", "whatif", "error"}
    assert json.loads(out["schema report"].contents[0].text)["title"] == "report"


def test_capture_is_served_only_when_allowed():
    async def calls(s):
        return {t.name for t in (await s.list_tools()).tools}
    assert session(calls, "--allow-capture") == TOOLS | {"capture"}


def test_analyze_never_imports_mcp():
    code = ("import sys; from tftrace.cli import run; run(['analyze', sys.argv[1], '--no-tensorboard', '-f', 'json', "
            "'-o', sys.argv[2]]); print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('mcp', 'mcp_types', 'jsonschema', 'pydantic', 'starlette')))")
    out = subprocess.run([sys.executable, "-c", code, sample("augment", "flatten"), os.devnull], capture_output=True,
                         text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
