"""The HTML report in real headless Chromium: charts render, hostile trace text stays text, no console output."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess

import pytest

from conftest import sample
from test_html import CHART_KINDS, HOSTILE_ATTR, HOSTILE_SCRIPT, hostile_report
from tftrace.api import analyze
from tftrace.render import render

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"{CHROMIUM} is missing (apt-get install chromium; CI's .ci/run installs it)")

# Test-only probes, spliced into the page under test. The head probe counts alert() calls, so an
# injected onerror=alert(1) is seen; the end probe waits for load and timers (virtual time), then
# writes what it found into the DOM that --dump-dom prints.
HEAD_PROBE = "<script>window.__alerts = 0; window.alert = function () { window.__alerts += 1; };</script>"
END_PROBE = """<script>
window.addEventListener("load", function () { setTimeout(function () {
  var charts = {};
  document.querySelectorAll("svg[data-chart]").forEach(function (svg) {
    var rects = Array.prototype.filter.call(svg.querySelectorAll("rect"), function (r) {
      var box = r.getBBox(); return box.width > 0 && box.height > 0; });
    charts[svg.dataset.chart] = {rects: rects.length, width: svg.getBoundingClientRect().width,
                                 steps: svg.querySelectorAll("g.step").length};
  });
  var onAttrs = 0;
  document.querySelectorAll("*").forEach(function (el) {
    for (var i = 0; i < el.attributes.length; i++) { if (/^on/i.test(el.attributes[i].name)) onAttrs++; } });
  var titles = Array.prototype.map.call(document.querySelectorAll("svg title, svg text"),
                                        function (t) { return t.textContent; }).join("\\n");
  var probe = {pwned: window.__pwned !== undefined, alerts: window.__alerts, onAttrs: onAttrs,
               imgs: document.getElementsByTagName("img").length, scripts: document.scripts.length,
               bodyText: document.body.textContent, svgText: titles, charts: charts};
  var out = document.createElement("pre"); out.id = "tftrace-probe";
  out.textContent = JSON.stringify(probe); document.body.appendChild(out);
}, 50); });
</script>"""
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND",  # a page that tried the network would fail, not hang
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--window-size=1280,2000"]


def with_probes(page: str) -> str:
    assert page.count("<head>") == 1 and page.count("</body>") == 1
    return page.replace("<head>", "<head>" + HEAD_PROBE).replace("</body>", END_PROBE + "</body>")


def load(tmp_path, page: str, name: str) -> tuple[dict, list[str]]:
    """Open the page in Chromium; return what the probe saw and the console lines about the page."""
    path = tmp_path / name
    path.write_text(with_probes(page), encoding="utf-8")
    proc = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           path.as_uri()], capture_output=True, text=True, timeout=60)
    m = re.search(r'<pre id="tftrace-probe">(.*?)</pre>', proc.stdout, re.S)
    log = "\n".join(ln for ln in proc.stderr.splitlines() if "dbus" not in ln)[-3000:]
    assert m, f"the probe never ran: broken markup or an injected script (chromium exit {proc.returncode}): {log}"
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln and path.as_uri() in ln]
    return json.loads(html.unescape(m.group(1))), console


@pytest.fixture(scope="module")
def report():
    return hostile_report(analyze(sample("augment", "flatten")))


def test_report_renders_charts_and_keeps_hostile_names_as_text(tmp_path, report):
    run = report.runs[0]
    probe, console = load(tmp_path, render(report, "html"), "report.html")
    assert console == [], console  # the report itself logs nothing and throws nothing
    assert set(CHART_KINDS) <= set(probe["charts"])
    for kind in CHART_KINDS:
        assert probe["charts"][kind]["rects"] > 0 and probe["charts"][kind]["width"] > 300, (kind, probe["charts"])
    assert probe["charts"]["steps"]["steps"] == len(run.steps.steps)
    assert probe["charts"]["ops"]["rects"] == len(run.ops)
    # The hostile names show up as text, in the tables and in the SVG tooltips...
    assert HOSTILE_SCRIPT + HOSTILE_ATTR in probe["bodyText"]
    assert HOSTILE_SCRIPT + HOSTILE_ATTR in probe["svgText"]
    # ...and nothing they contain became markup or ran.
    assert probe["pwned"] is False and probe["alerts"] == 0
    assert probe["imgs"] == 0 and probe["onAttrs"] == 0
    assert probe["scripts"] == 2  # the two test probes only


def test_probe_catches_injected_markup(tmp_path, report):
    """The harness itself: the same page with the hostile text unescaped must be caught."""
    page = render(report, "html").replace("</main>", f"<div>{HOSTILE_SCRIPT}{HOSTILE_ATTR}</div></main>")
    probe, _console = load(tmp_path, page, "injected.html")
    assert probe["pwned"] is True and probe["alerts"] == 1 and probe["imgs"] == 1 and probe["onAttrs"] == 1


def test_report_timeline_renders(tmp_path, report):
    view = report.runs[0].step_view
    probe, console = load(tmp_path, render(report, "html"), "timeline.html")
    assert console == [], console
    timeline = probe["charts"]["timeline"]
    assert timeline["rects"] >= sum(len(lane.events) for lane in view.lanes) and timeline["width"] > 600


def test_diff_page_renders_and_keeps_hostile_names_as_text(tmp_path):
    import tftrace
    from test_html_diff import DIFF_CHARTS, hostile_diff
    from tftrace.render.diff import render_diff
    d = hostile_diff(tftrace.diff(sample("augment", "flatten"), sample("augment", "gap"), fail_if_slower=5))
    probe, console = load(tmp_path, render_diff(d, "html"), "diff.html")
    assert console == [], console
    for kind in DIFF_CHARTS:
        assert probe["charts"][kind]["rects"] > 0 and probe["charts"][kind]["width"] > 300, (kind, probe["charts"])
    dots = probe["charts"]["distribution"]["rects"]
    assert dots == len(d.baseline_step_times) + len(d.candidate_step_times)
    assert HOSTILE_SCRIPT + HOSTILE_ATTR in probe["bodyText"] and HOSTILE_SCRIPT + HOSTILE_ATTR in probe["svgText"]
    assert probe["pwned"] is False and probe["alerts"] == 0
    assert probe["imgs"] == 0 and probe["onAttrs"] == 0 and probe["scripts"] == 2
