"""Regenerate the README's screenshots of the HTML diff and the step timeline from the bundled
sample traces, with headless Chromium: `python docs/screenshots.py` (needs /usr/bin/chromium)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tftrace.api import analyze, diff  # noqa: E402
from tftrace.render.diff import render_diff  # noqa: E402
from tftrace.render.html import _timeline  # noqa: E402
from tftrace.render.html_page import page  # noqa: E402
from tftrace.render.html_style import CSS  # noqa: E402

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


if __name__ == "__main__":
    main()
