"""The contract scripts and agents rely on: `tftrace schema` is a valid JSON Schema that real
`--format json` output validates against, errors are JSON with --format json, old saved reports
still load, and `diff` matches findings by id with a verdict."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest

from conftest import ROOT, public_traces, run_cli, sample
from tftrace import api
from tftrace.model.json_schema import DOCUMENTS, combined_schema, document_schema, field_notes
from tftrace.model.report import SCHEMA_VERSION, Bottleneck, Report

V1 = os.path.join(ROOT, "tests", "data", "reports", "v1_slow_callback.json")
KINETO = next(p for p in public_traces() if "resnet50_num_workers_0" in p)
# One of each trace family: tf.keras fit, Keras 3 predict, stock TensorBoard capture, JAX on CPU, JAX on a GPU,
# PyTorch's Kineto JSON, a legacy trace.json.gz, a TPU xplane.
RUNS = [sample("augment", "flatten"), sample("predict_loop", "light"), sample("stock", "fit_tensorboard"),
        sample("zoo", "checkpoint"), sample("jax_zoo", "keras_fit"), sample("gpu_jax", "keras_compute"), KINETO,
        next(p for p in public_traces() if p.endswith("8c859046be41.ant.amazon.com.trace.json.gz")),
        next(p for p in public_traces() if p.endswith("tpu_inference_2.xplane.pb") and "_corrupt" not in p)]


def validator(name: str):
    schema = document_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def assert_valid(name: str, data: dict) -> None:
    errors = sorted(validator(name).iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:10])


def test_schema_command_prints_valid_draft_2020_12_schemas():
    out = run_cli("schema", check=True).stdout
    whole = json.loads(out)
    assert whole == json.loads(json.dumps(combined_schema()))
    jsonschema.Draft202012Validator.check_schema(whole)
    assert whole["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    for name in DOCUMENTS:
        one = json.loads(run_cli("schema", name, check=True).stdout)
        jsonschema.Draft202012Validator.check_schema(one)
        assert one["title"] == name and one["type"] == "object"


def test_schema_describes_fields_from_the_models_comments():
    report = document_schema("report")
    bottleneck = report["$defs"]["Bottleneck"]["properties"]
    assert "stable key" in bottleneck["id"]["description"]
    assert set(bottleneck) >= {"id", "projection_basis", "projection_how", "part", "floor_ps", "floor_ms",
                               "measured_step_ps", "measured_step_ms", "step_if_removed_ms"}
    assert field_notes(Bottleneck)["share"] == "of step time"
    ops = report["$defs"]["OpRow"]["properties"]
    assert ops["flops"]["type"] == ["number", "null"]


@pytest.mark.parametrize("path", RUNS, ids=lambda p: os.path.relpath(p, ROOT)[-60:])
def test_real_reports_validate_against_the_schema(path, tmp_path):
    out = tmp_path / "report.json"
    run_cli("analyze", path, "--format", "json", "--no-tensorboard", "-o", str(out), check=True)
    data = json.loads(out.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert_valid("report", data)
    assert Report.from_dict(data).to_dict() == data
    assert all(b["id"] for r in data["runs"] for b in r["bottlenecks"])


def test_a_key_the_model_does_not_have_fails_validation():
    data = api.analyze(sample("augment", "gap")).to_dict()
    data["runs"][0]["bottlenecks"][0]["confidence"] = 0.9
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, document_schema("report"), cls=jsonschema.Draft202012Validator)


def test_diff_json_validates_and_matches_findings_by_id():
    """Two real runs of different programs: the callback's finding is resolved, the wide layer's is
    new, host dispatch persists; the verdict counts them."""
    proc = run_cli("diff", sample("zoo", "slow_callback"), sample("zoo", "heavy_layer"), "--format", "json", check=True)
    data = json.loads(proc.stdout)
    assert_valid("diff", data)
    status = {f["id"]: f["status"] for f in data["findings"]}
    assert status["callback/batchstats.on_train_batch_end"] == "resolved"
    assert status["layer/wide_conv"] == "new"
    assert status["host_overhead/dispatch"] == "persisting"
    v = data["verdict"]
    assert v["findings"] == "matched" and v["speed"] in ("faster", "slower", "same", "unknown")
    assert (v["resolved"], v["new"], v["persisting"]) == tuple(
        sum(1 for s in status.values() if s == k) for k in ("resolved", "new", "persisting"))
    assert "callback/batchstats.on_train_batch_end" in v["text"]
    text = run_cli("diff", sample("zoo", "slow_callback"), sample("zoo", "heavy_layer"), check=True).stdout
    assert "resolved: callback/batchstats.on_train_batch_end" in text
    from tftrace.render.diff import render_diff
    result = api.diff(sample("zoo", "slow_callback"), sample("zoo", "heavy_layer"))
    assert 'data-table="findings"' in render_diff(result, "html")
    assert "| callback/batchstats.on\\_train\\_batch\\_end | resolved |" in render_diff(result, "markdown")


def test_a_report_saved_before_findings_had_ids_still_diffs():
    with open(V1, encoding="utf-8") as f:
        old = json.load(f)
    assert old["schema_version"] == 1 and "id" not in old["runs"][0]["bottlenecks"][0]
    report = Report.from_dict(old)
    assert report.schema_version == 1 and report.runs[0].bottlenecks[0].id == ""
    proc = run_cli("diff", V1, sample("zoo", "slow_callback"), "--format", "json", check=True)
    data = json.loads(proc.stdout)
    assert_valid("diff", data)
    assert data["findings"] == [] and data["verdict"]["findings"] == "no ids"


def test_a_report_from_a_newer_tftrace_is_refused_in_one_line(tmp_path):
    with open(V1, encoding="utf-8") as f:
        data = json.load(f)
    data["schema_version"] = SCHEMA_VERSION + 1
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data))
    proc = run_cli("diff", str(path), sample("zoo", "slow_callback"))
    assert proc.returncode == 2 and "newer tftrace" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, code", [
    (("analyze", "/no/such/logdir", "--format", "json"), "trace_read"),
    (("analyze", os.path.join(ROOT, "README.md"), "-f", "json"), "trace_read"),
    (("findings", "--format=json", "--no-such-option", "x"), "usage"),
    (("diff", V1, os.path.join(ROOT, "docs"), "-fjson"), "no_traces"),
    (("explain", sample("zoo", "slow_callback"), "layer/nope", "--format", "json"), "unknown_finding"),
    (("whatif", sample("zoo", "slow_callback"), "--format", "json"), "bad_input"),
    (("schema", "nope"), "usage"),
])
def test_errors_are_json_with_format_json_and_keep_their_exit_code(args, code):
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    error = json.loads(proc.stdout)
    assert_valid("error", error)
    assert error["error"]["code"] == code and error["error"]["exit"] == 2 and error["error"]["message"]
    assert "Traceback" not in proc.stderr


def test_without_format_json_an_error_stays_one_line_on_stderr():
    proc = run_cli("findings", "/no/such/logdir")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("tftrace: error: ") and len(proc.stderr.strip().splitlines()) == 1


def test_ids_name_what_a_finding_is_about_without_line_numbers():
    """A line number moves when the file is edited (the fix included): the id keeps the file and the
    function; a second finding about the same thing gets `~2`."""
    from tftrace.analysis.findings.ids import finding_ids
    from tftrace.model.finding import Finding

    def f(kind: str, subject: str) -> Finding:
        return Finding(kind, "title", 0.1, (), "fix", 0, subject=subject)

    assert finding_ids([f("code", "loss_fn (train.py:68)"), f("code", "loss_fn (train.py:75)"),
                        f("callback", "SlowCallback.on_train_batch_end"), f("eager", ""),
                        f("device_sync", "np.asarray(x)")]) == [
        "code/loss_fn-train.py", "code/loss_fn-train.py~2", "callback/slowcallback.on_train_batch_end", "eager",
        "device_sync/np.asarray-x"]
