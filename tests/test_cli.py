"""The `tftrace` command as users run it: formats, options, and no TensorFlow import."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from conftest import ROOT, run_cli, sample
from tftrace.model.report import BOUNDS, SCHEMA_VERSION, Report

FLATTEN = sample("augment", "flatten")


def test_text_output_is_a_readable_ranked_report():
    out = run_cli("analyze", FLATTEN, "--no-tensorboard", check=True).stdout
    assert "Verdict (input)" in out and "Bottlenecks" in out and "Top ops by self time" in out
    assert out.index("Verdict") < out.index("Top ops")


def test_json_follows_the_contract_and_round_trips():
    data = json.loads(run_cli("analyze", sample("augment"), "-f", "json", "--no-tensorboard", check=True).stdout)
    assert data["schema_version"] == SCHEMA_VERSION and data["tftrace_version"]
    assert len(data["runs"]) == 2
    for run in data["runs"]:
        for key in ("path", "hosts", "devices", "mode", "steps", "breakdown", "verdict", "bottlenecks", "ops",
                    "layers", "categories", "input_pipeline"):
            assert key in run, key
        assert {"count", "source", "mean_ms", "median_ms"} <= set(run["steps"])
        assert set(run["breakdown"]) == {"input", "compute", "host_overhead", "idle"}
        assert sum(run["breakdown"].values()) == pytest.approx(1.0, abs=0.01)
        assert {"bound", "text"} <= set(run["verdict"]) and run["verdict"]["bound"] in BOUNDS
        for b in run["bottlenecks"]:
            assert {"rank", "kind", "title", "share", "evidence", "recommendation"} <= set(b)
        for op in run["ops"]:
            assert {"name", "type", "category", "layer", "phase", "device", "count", "self_ms", "share"} <= set(op)
        assert all({"layer", "self_ms", "share"} <= set(x) for x in run["layers"])
        assert all({"category", "self_ms", "share"} <= set(x) for x in run["categories"])
        assert all({"name", "self_ms", "share"} <= set(x) for x in run["input_pipeline"]["stages"])
    assert Report.from_dict(data).to_dict() == data


def test_top_limits_every_ranked_list():
    run = json.loads(run_cli("analyze", FLATTEN, "-f", "json", "--top", "3", "--no-tensorboard",
                             check=True).stdout)["runs"][0]
    assert len(run["ops"]) == 3 and len(run["layers"]) <= 3 and len(run["categories"]) == 3
    selfs = [o["self_ms"] for o in run["ops"]]
    assert selfs == sorted(selfs, reverse=True)


def test_markdown_and_output_file(tmp_path):
    out = tmp_path / "report.md"
    proc = run_cli("analyze", FLATTEN, "-f", "markdown", "-o", str(out), "--no-tensorboard", check=True)
    assert proc.stdout == ""
    text = out.read_text()
    assert text.startswith("# tftrace report") and "| op | type |" in text and "**Verdict (input-bound):**" in text


@pytest.mark.parametrize("table,column", [("ops", "self_ms"), ("layers", "layer"), ("categories", "category"),
                                          ("stages", "name"), ("steps", "dur_ms")])
def test_csv_tables(table, column):
    text = run_cli("analyze", FLATTEN, "-f", "csv", "--table", table, "--no-tensorboard", check=True).stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and column in rows[0] and rows[0]["run"]


def test_csv_all_tables_one_file_each(tmp_path):
    run_cli("analyze", FLATTEN, "-f", "csv", "--table", "all", "-o", str(tmp_path / "r.csv"), "--no-tensorboard",
            check=True)
    for name in ("ops", "layers", "categories", "stages", "steps"):
        rows = list(csv.DictReader(open(tmp_path / f"r_{name}.csv")))
        assert rows and rows[0]["run"], name
    assert run_cli("analyze", FLATTEN, "-f", "csv", "--table", "all", "--no-tensorboard").returncode == 2


def test_unknown_format_is_a_one_line_error():
    proc = run_cli("analyze", FLATTEN, "-f", "pdf", "--no-tensorboard")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "pdf" in proc.stderr


def test_refuses_to_overwrite_a_trace_file(copy_of):
    logdir = copy_of(FLATTEN)
    target = f"{logdir}/plugins/profile/run/sample.xplane.pb"
    before = open(target, "rb").read()
    proc = run_cli("analyze", logdir, "-o", target, "--no-tensorboard")
    assert proc.returncode == 2 and open(target, "rb").read() == before


@pytest.mark.parametrize("args", [["--help"], ["analyze", FLATTEN, "-f", "json"], ["analyze", "--help"],
                                  ["diff", FLATTEN, sample("augment", "gap"), "-f", "json"]])
def test_cli_imports_no_tensorflow(args, copy_of):
    if args[0] == "analyze" and len(args) > 2:
        args = ["analyze", copy_of(FLATTEN), "-f", "json"]  # writes TensorBoard summaries too
    code = f"""
import sys
sys.argv = ['tftrace'] + {args!r}
from tftrace.cli import main
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
# Start-up time: no TensorFlow, and no pandas or pydantic either (each costs more than the analysis;
# typer, the command line, would convert the arguments through pydantic: tftrace.cli.values does).
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'tensorboard_plugin_profile', 'xprof',
                                                           'pandas', 'pydantic', 'pydantic_core'))
assert not bad, bad
print('clean', file=sys.stderr)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0 and "clean" in proc.stderr, proc.stderr[-3000:]


def test_progress_shows_on_a_terminal_and_not_in_pipes():
    import os
    import pty
    master, slave = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "tftrace", "analyze", FLATTEN, "--no-tensorboard"],
                          stdout=subprocess.PIPE, stderr=slave, cwd=ROOT, timeout=300)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.returncode == 0 and b"reading" in b"".join(chunks)
    piped = run_cli("analyze", FLATTEN, "--no-tensorboard", check=True)
    assert "reading" not in piped.stderr


def test_report_tables_as_dataframes():
    import tftrace
    report = tftrace.analyze(sample("augment"))
    ops = report.dataframe("ops")
    assert {"run", "name", "type", "category", "self_ms", "self_ps", "share"} <= set(ops.columns)
    assert set(ops["run"]) == {r.name for r in report.runs}
    steps = report.dataframe("steps")
    assert len(steps) == sum(len(r.steps.steps) for r in report.runs)
    trace = tftrace.load(FLATTEN)
    assert len(trace.events) > 1000 and {"line", "name", "start_ps", "dur_ps", "self_ps"} <= set(trace.events.columns)


@pytest.mark.parametrize("args,says", [
    (["analyze"], "Missing argument 'PATH'"),
    (["analyze", FLATTEN, "--bogus"], "No such option: --bogus"),
    (["analyze", FLATTEN, "--top", "0"], "0 is below 1"),
    (["analyze", FLATTEN, "--top", "many"], "'many' is not a whole number"),
    (["analyze", FLATTEN, "--ops", "gpu"], "'gpu' is not one of all, host, device"),
    (["diff", FLATTEN], "Missing argument 'CANDIDATE'"),
    (["capture", "127.0.0.1:1", "logs", "--duration-ms", "-5"], "-5 is below 1"),
    (["tensorboard", "logs", "--port", "x"], "'x' is not a whole number"),
    (["frobnicate"], "No such command 'frobnicate'"),
])
def test_usage_errors_are_one_line_with_exit_code_2(args, says):
    proc = run_cli(*args)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.startswith("tftrace: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert says in proc.stderr and "--help" in proc.stderr and "Traceback" not in proc.stderr


def test_help_version_and_bare_command():
    top = run_cli("--help", check=True).stdout
    assert all(name in top for name in ("analyze", "diff", "capture", "tensorboard", "--install-completion",
                                        "--show-completion"))
    assert run_cli(check=True).stdout == top  # bare `tftrace`: the help, exit 0
    assert run_cli("-h", check=True).stdout == top
    analyze_help = run_cli("analyze", "--help", check=True).stdout
    for option in ("--format", "--top", "--output", "--table", "--no-tensorboard", "--ops", "[default: 15"):
        assert option in analyze_help, option
    assert "--fail-if-slower" in run_cli("diff", "--help", check=True).stdout
    import tftrace
    assert run_cli("--version", check=True).stdout.strip() == tftrace.__version__


def test_shell_completion_completes_commands_and_options():
    # The script `--show-completion bash` prints, asked for as the shell asks for it (typer's flag
    # also probes the parent shell, which a background test run may not have).
    script = run_cli(env={"_TFTRACE_COMPLETE": "source_bash"}, check=True).stdout
    assert "_TFTRACE_COMPLETE" in script and "complete " in script
    env = {"_TFTRACE_COMPLETE": "complete_bash", "COMP_WORDS": "tftrace an", "COMP_CWORD": "1"}
    assert run_cli(env=env, check=True).stdout.split() == ["analyze"]
    env = {"_TFTRACE_COMPLETE": "complete_bash", "COMP_WORDS": "tftrace analyze x --no", "COMP_CWORD": "3"}
    assert "--no-tensorboard" in run_cli(env=env, check=True).stdout.split()
