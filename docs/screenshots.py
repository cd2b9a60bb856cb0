"""Regenerate the README's screenshots of the HTML diff, the step timeline and the TensorBoard tab from
the bundled sample traces, with headless Chromium: `python docs/screenshots.py` (needs /usr/bin/chromium)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # the DevTools-protocol driver the browser tests use

from tftrace.api import analyze, diff  # noqa: E402
from tftrace.render.diff import render_diff  # noqa: E402
from tftrace.render.html import _timeline  # noqa: E402
from tftrace.render.html_page import page  # noqa: E402
from tftrace.render.html_style import CSS  # noqa: E402
from tftrace.tensorboard.serve import serve_command, tab_url  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND"]


def shoot(markup: str, out: str, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "page.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(markup)
        subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={os.path.join(tmp, 'profile')}", f"--screenshot={out}",
                        f"--window-size={width},{height}", "file://" + path], check=True, capture_output=True,
                       timeout=120)
    print(f"wrote {os.path.relpath(out, ROOT)} ({os.path.getsize(out) // 1024} KB)")


def main() -> None:
    os.chdir(ROOT)  # the pages name the runs as a user in the repository would
    samples = "sample_traces"
    d = diff(os.path.join(samples, "augment", "flatten"), os.path.join(samples, "augment", "gap"), fail_if_slower=5)
    shoot(render_diff(d, "html"), os.path.join(HERE, "diff.png"), 1200, 1560)
    view = analyze(os.path.join(samples, "stock", "predict_light")).runs[0].step_view
    card = _timeline(view)
    svg_h = int(re.search(r'data-chart="timeline" viewBox="0 0 \d+ (\d+)"', card).group(1))
    shoot(page("tftrace step timeline", CSS, f'<main class="wrap">{card}</main>'),
          os.path.join(HERE, "timeline.png"), 1200, svg_h + 200)
    tensorboard_tab(os.path.join(HERE, "tensorboard_tab.png"))


def tensorboard_tab(out: str, port: int = 6199) -> None:
    """TensorBoard's tftrace tab on two sample runs, the newer selected."""
    from cdp import Browser
    with tempfile.TemporaryDirectory() as tmp:
        logdir = os.path.join(tmp, "logs")
        for variant in ("flatten", "gap"):
            shutil.copytree(os.path.join(ROOT, "sample_traces", "augment", variant), os.path.join(logdir, variant))
        server = subprocess.Popen(serve_command(logdir, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while True:  # TensorBoard answers once it has started
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugins_listing", timeout=5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit(f"TensorBoard did not start on port {port}")
                    time.sleep(0.5)
            with Browser(1280, 960) as browser:
                browser.navigate(tab_url(port))
                browser.wait_for('!!(window.frames[0] && window.frames[0].frames[0] && '
                                 'window.frames[0].frames[0].document.querySelector(".verdict"))', timeout=120)
                time.sleep(0.5)  # fonts and layout settle
                browser.screenshot(out)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"wrote {os.path.relpath(out, ROOT)} ({os.path.getsize(out) // 1024} KB)")


if __name__ == "__main__":
    main()
