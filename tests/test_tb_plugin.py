"""tftrace's TensorBoard tab: a real TensorBoard serving its routes, and the parts behind them."""

from __future__ import annotations

import dataclasses
import html
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import time
import types
import urllib.parse

import pytest

import tftrace
from cdp import CHROMIUM, Browser
from conftest import BROKEN, ROOT, sample, sample_file
from tbserver import _get, _stop, _wait_until, fetch, free_port
from tftrace.tensorboard import serve as tb_serve
from tftrace.tensorboard import sessions
from tftrace.tensorboard.results import Results, _analysed

RUN_FILE = ("plugins", "profile", "run", "sample.xplane.pb")


def _plain(markup: str) -> str:
    """An HTML page as the words a reader sees."""
    markup = re.sub(r"<(style|script)\b.*?</\1>", " ", markup, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


def _verdict(path: str) -> str:
    return tftrace.analyze(path).runs[0].verdict.text


def _listing(port: int) -> dict:
    return _get(port, "/data/plugins_listing")


def _start(args: list[str], logdir: str, log_path: str) -> tuple[subprocess.Popen, int]:
    """A TensorBoard on 127.0.0.1 that lists tftrace's tab as enabled (it may take a while)."""
    port = free_port()
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, *args, logdir, "--port", str(port)], stdout=log,
                                stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
    _wait_until(lambda: _listing(port).get("tftrace", {}).get("enabled"), proc, log_path, "the tftrace tab enabled")
    return proc, port


# --- a real TensorBoard started by `tftrace tensorboard` on a logdir of profiled runs only -------

@pytest.fixture(scope="module")
def tab(tmp_path_factory):
    base = tmp_path_factory.mktemp("tab")
    logdir = base / "logdir"
    shutil.copytree(sample("augment", "flatten"), logdir)  # plugins/profile/run: the Profile tab's "run"
    shutil.copytree(sample("augment", "gap"), logdir / "train")  # "train/run"
    outside = base / "outside"  # a profiled run outside the logdir, reached only by a symlink
    shutil.copytree(sample("dropout", "plain"), outside)
    (logdir / "escape" / "plugins" / "profile").mkdir(parents=True)
    os.symlink(outside / "plugins" / "profile" / "run", logdir / "escape" / "plugins" / "profile" / "run")
    log_path = str(base / "tensorboard.log")
    proc, port = _start(["-m", "tftrace", "tensorboard"], str(logdir), log_path)
    try:
        yield types.SimpleNamespace(
            logdir=logdir, port=port, log_path=log_path,
            verdicts={"run": _verdict(str(logdir)), "train/run": _verdict(str(logdir / "train"))})
    finally:
        _stop(proc)


def test_the_tab_is_an_enabled_iframe_plugin(tab):
    entry = _listing(tab.port)["tftrace"]
    assert entry["enabled"] is True and entry["tab_name"] == "tftrace"
    assert entry["loading_mechanism"] == {"type": "IFRAME", "module_path": "/data/plugin/tftrace/index.js"}
    status, module = fetch(tab.port, "/data/plugin/tftrace/index.js")
    assert status == 200 and "export async function render()" in module
    assert fetch(tab.port, "/data/plugin/tftrace/style.css")[0] == 200
    assert fetch(tab.port, "/data/plugin/tftrace/plugin.py")[0] == 404  # only the listed static files


def test_runs_are_named_as_the_profile_tab_names_them(tab):
    runs = _get(tab.port, "/data/plugin/tftrace/runs")
    assert runs == ["run", "train/run"]  # not escape/run: its folder is a symlink out of the logdir
    assert set(runs) <= set(_get(tab.port, "/data/plugin/profile/runs"))


@pytest.mark.parametrize("run", ["run", "train/run"])
def test_report_of_each_run_holds_its_verdict(tab, run):
    status, page = fetch(tab.port, f"/data/plugin/tftrace/report?run={urllib.parse.quote(run)}")
    assert status == 200
    text = _plain(page)
    assert tab.verdicts[run] in text and f"Run {run} " in text
    assert "<script" not in page  # TensorBoard's CSP would block it: the pages need none


def test_diff_page_compares_two_runs(tab):
    status, page = fetch(tab.port, "/data/plugin/tftrace/diff?a=run&b=train%2Frun")
    assert status == 200 and "<title>tftrace diff</title>" in page
    text = _plain(page)
    assert "run" in text and "train/run" in text
    assert tab.verdicts["run"] in text and tab.verdicts["train/run"] in text  # each side's verdict


@pytest.mark.parametrize("query, status", [
    ("report?run=..%2Frun", 400), ("report?run=%2Fetc%2Fpasswd", 400), ("report?run=train%2F..%2Frun", 400),
    ("report?run=.%2Frun", 400), ("report?run=train%5Crun", 400), ("report?run=", 400), ("report", 400),
    ("report?run=escape%2Frun", 404), ("report?run=nothing", 404),
    ("diff?a=run&b=..%2F..%2Fetc", 400), ("diff?a=escape%2Frun&b=run", 404),
])
def test_names_outside_the_logdir_are_refused(tab, query, status):
    got, page = fetch(tab.port, f"/data/plugin/tftrace/{query}")
    assert got == status
    assert "Bad request" in page if status == 400 else "Unknown run" in page


def test_new_and_changed_runs_are_seen_without_a_restart(tab):
    later = tab.logdir / "later"
    shutil.copytree(sample("predict_loop", "light"), later)  # copytree keeps the old times: a complete run
    try:
        assert "later/run" in _get(tab.port, "/data/plugin/tftrace/runs")
        status, page = fetch(tab.port, "/data/plugin/tftrace/report?run=later%2Frun")
        assert status == 200 and _verdict(str(later)) in _plain(page)
        # The same run re-captured: a new trace, written a while ago (so not "being written").
        trace = later.joinpath(*RUN_FILE)
        shutil.copyfile(sample("augment", "gap", *RUN_FILE), trace)
        os.utime(trace, (time.time() - 60, time.time() - 60))
        status, page = fetch(tab.port, "/data/plugin/tftrace/report?run=later%2Frun")
        assert status == 200 and _verdict(str(later)) in _plain(page) and "input-bound" in _plain(page)
    finally:
        shutil.rmtree(later)
    assert "later/run" not in _get(tab.port, "/data/plugin/tftrace/runs")


def test_a_run_being_written_is_shown_as_such(tab):
    session = tab.logdir / "wip" / "plugins" / "profile" / "now"
    session.mkdir(parents=True)
    try:
        status, page = fetch(tab.port, "/data/plugin/tftrace/report?run=wip%2Fnow")
        assert status == 200 and "is still being written" in _plain(page) and "not written its trace" in page
        assert '<meta http-equiv="refresh"' in page  # it looks again by itself
        trace = session / "host.xplane.pb"
        trace.write_bytes(b"\x0a\x05half")  # a file the profiler is still writing
        status, page = fetch(tab.port, "/data/plugin/tftrace/report?run=wip%2Fnow")
        assert "is still being written" in _plain(page) and "changed" in _plain(page)
        os.utime(trace, (time.time() - 60, time.time() - 60))  # it stopped changing, and stays broken
        status, page = fetch(tab.port, "/data/plugin/tftrace/report?run=wip%2Fnow")
        assert status == 200 and "This run could not be read" in _plain(page)
        assert "being written" not in _plain(page)
    finally:
        shutil.rmtree(tab.logdir / "wip")


# --- the tab in real headless Chromium -----------------------------------------------------------

# The tab is TensorBoard's iframe (frames[0], plugin_entry.html) holding the page's own iframe.
_TAB = "window.frames[0]"
_PAGE = "window.frames[0].frames[0]"


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing (apt-get install chromium)")
def test_the_tab_in_a_browser_shows_reports_diffs_new_runs_and_links_to_the_trace_viewer(tab):
    with Browser(1280, 1000) as browser:
        browser.navigate(tb_serve.tab_url(tab.port))
        shown = browser.wait_for(f"""(() => {{
            const verdict = {_PAGE}.document.querySelector(".verdict");
            return verdict && {{run: {_TAB}.document.getElementById("tftrace-run").value,
                                verdict: verdict.textContent}};
        }})()""", what="the selected run's verdict in the tab")
        assert shown["run"] == "train/run"  # the last by name: timestamped session names sort oldest first
        assert tab.verdicts["train/run"] in " ".join(shown["verdict"].split())

        browser.evaluate(f"""(() => {{ const s = {_TAB}.document.getElementById("tftrace-baseline");
            s.value = "run"; s.dispatchEvent(new Event("change")); }})()""")
        diff = browser.wait_for(f"""{_PAGE}.document.title === "tftrace diff" &&
            {_PAGE}.document.readyState === "complete" && {_PAGE}.document.body.textContent""", what="the diff")
        assert tab.verdicts["run"] in " ".join(diff.split()) and tab.verdicts["train/run"] in " ".join(diff.split())

        later = tab.logdir / "later"
        shutil.copytree(sample("predict_loop", "light"), later)
        try:
            browser.wait_for(f"""Array.from({_TAB}.document.getElementById("tftrace-run").options)
                .some(o => o.value === "later/run")""", timeout=30, what="the new run in the run selector")
        finally:
            shutil.rmtree(later)
        ours = [p for p in browser.problems() if "tftrace" in p]
        assert ours == [], ours  # no script error, no refusal by TensorBoard's Content-Security-Policy

        link = browser.evaluate(f'{_TAB}.document.getElementById("tftrace-trace").href')
        assert link == f"http://127.0.0.1:{tab.port}/?run=train%2Frun&tag=trace_viewer#profile"
        browser.evaluate(f'{_TAB}.document.getElementById("tftrace-trace").click()')
        # The Profile tab (XProf) opens its trace viewer on that same session (and rewrites the page's
        # address without the #profile it came with).
        opened = browser.wait_for(f"""{_TAB} &&
            {_TAB}.location.href.includes("/data/plugin/profile/trace_viewer") && {_TAB}.location.href""",
                                  what="the Profile tab's trace viewer")
        assert "run=train%2Frun" in opened


# --- the plain `tensorboard` command, through the installed entry point -------------------------

def test_plain_tensorboard_loads_the_tab_through_the_entry_point(tmp_path):
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        declared = re.search(r'^\[project\.entry-points\.tensorboard_plugins\]\s*\ntftrace = "([^"]+)"', f.read(), re.M)
    assert declared and declared.group(1) == "tftrace.tensorboard.plugin:TftracePlugin"
    if not importlib.metadata.entry_points(group="tensorboard_plugins", name="tftrace"):
        pytest.skip("the installed tftrace's metadata predates the tab's entry point: run `pip install -e .` again")
    logdir = tmp_path / "logdir"
    shutil.copytree(sample("augment", "gap"), logdir / "train")
    proc, port = _start(["-m", "tensorboard.main", "--host", "127.0.0.1", "--logdir"], str(logdir),
                        str(tmp_path / "tensorboard.log"))
    try:
        assert _get(port, "/data/plugin/tftrace/runs") == ["train/run"]
        status, page = fetch(port, "/data/plugin/tftrace/report?run=train%2Frun")
        assert status == 200 and _verdict(str(logdir)) in _plain(page)
    finally:
        _stop(proc)


# --- the parts, without a server ---------------------------------------------------------------

def test_sessions_are_found_and_named_as_the_profile_tab_does(tmp_path):
    for folder in ("plugins/profile/s1", "a/b/plugins/profile/s2", "a/plugins/other/x", "c/profile/y",
                   "a/b/plugins/profile/s2/plugins/profile/nested"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "inside").mkdir()
    os.symlink(tmp_path / "inside", tmp_path / "plugins" / "profile" / "linked")  # a symlink within: kept
    found = sessions.find_sessions(str(tmp_path))
    assert list(found) == ["a/b/s2", "linked", "s1"]
    assert found["a/b/s2"].path == str(tmp_path / "a" / "b" / "plugins" / "profile" / "s2")
    assert sessions.find_sessions(str(tmp_path / "missing")) == {} and sessions.find_sessions("gs://bucket/x") == {}
    assert sessions.has_sessions(str(tmp_path)) and not sessions.has_sessions(str(tmp_path / "c"))


def test_results_are_kept_until_the_run_changes(tmp_path):
    shutil.copytree(sample("augment", "flatten"), tmp_path / "a")
    shutil.copytree(sample("augment", "gap"), tmp_path / "b")
    a, b = (sessions.lookup(str(tmp_path), name) for name in ("a/run", "b/run"))
    results = Results(keep=1)
    first = results.report_page(a)
    assert results.report_page(a)[1] is first[1]  # the same page: not analysed again
    trace = tmp_path.joinpath("a", *RUN_FILE)
    os.utime(trace, (time.time() - 90, time.time() - 90))
    changed = results.report_page(a)
    assert changed[1] is not first[1] and changed == first  # analysed again: same trace, same report
    results.report_page(b)
    assert results.report_page(a)[1] is not changed[1]  # keep=1: b's page pushed a's out


def test_a_run_of_several_hosts_is_analysed_as_tftrace_analyze_does(tmp_path):
    """The tab reaches the analyses through tftrace.api: a run of several hosts is mapped host by
    host and reduced, as `tftrace analyze` does, broken host files named alike."""
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    for i, (scenario, variant) in enumerate((("stock", "fit_tensorboard"), ("zoo", "heavy_layer"))):
        shutil.copy(sample_file(scenario, variant), run / f"worker-{i}.xplane.pb")
    shutil.copy(BROKEN, run / "worker-9.xplane.pb")
    os.utime(run / "worker-9.xplane.pb", (time.time() - 90, time.time() - 90))
    expected = tftrace.analyze(str(tmp_path)).runs[0]
    shown = _analysed(sessions.lookup(str(tmp_path), "run"), top=15)
    assert shown.hosts == ("worker-0", "worker-1") and shown.per_host and not shown.error
    assert any("worker-9.xplane.pb" in n for n in shown.notes)
    assert shown.name == "run" and expected.name == "plugins/profile/run"  # as each front end names runs
    assert dataclasses.replace(shown, name=expected.name, path=expected.path) == expected


def test_is_active_is_cached(tmp_path):
    from tensorboard.plugins.base_plugin import TBContext
    from tftrace.tensorboard.plugin import TftracePlugin
    plugin = TftracePlugin(TBContext(logdir=str(tmp_path)))
    assert plugin.is_active() is False
    (tmp_path / "plugins" / "profile" / "run").mkdir(parents=True)
    assert plugin.is_active() is False  # an empty answer is kept a few seconds: the listing asks often
    assert TftracePlugin(TBContext(logdir=str(tmp_path))).is_active() is True
    assert TftracePlugin(TBContext(logdir="")).is_active() is False  # a --logdir_spec: nothing to walk


def test_the_launcher_adds_the_tab_once():
    from tftrace.tensorboard.main import plugins
    names = [getattr(p, "plugin_name", None) for p in plugins()]
    assert names.count("tftrace") == 1
    assert tb_serve.serve_command("logs", 1)[1:3] == ["-m", "tftrace.tensorboard.main"]


def test_the_plugin_never_imports_tensorflow(tmp_path):
    shutil.copytree(sample("augment", "flatten"), tmp_path / "logdir")
    code = ("import sys\n"
            "from tensorboard.plugins.base_plugin import TBContext\n"
            "from werkzeug.test import Client\n"
            "from tftrace.tensorboard.plugin import TftracePlugin\n"
            f"plugin = TftracePlugin(TBContext(logdir={str(tmp_path / 'logdir')!r}))\n"
            "answer = Client(plugin.get_plugin_apps()['/report']).get('/report?run=run')\n"
            "assert answer.status_code == 200 and b'input-bound' in answer.data, answer.status_code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_hostile_run_names_stay_text(tmp_path):
    from tensorboard.plugins.base_plugin import TBContext
    from werkzeug.test import Client
    from tftrace.tensorboard.plugin import TftracePlugin
    hostile = '<img src=x onerror="alert(1)">'
    shutil.copytree(sample("augment", "flatten", "plugins", "profile", "run"),
                    tmp_path / "plugins" / "profile" / hostile)
    apps = TftracePlugin(TBContext(logdir=str(tmp_path))).get_plugin_apps()
    assert Client(apps["/runs"]).get("/runs").get_json() == [hostile]
    answer = Client(apps["/report"]).get("/report", query_string={"run": hostile})
    assert answer.status_code == 200
    page = answer.get_data(as_text=True)
    assert hostile not in page and html.escape(hostile) in page
    assert answer.headers["Content-Security-Policy"]  # TensorBoard's policy: no inline script runs
