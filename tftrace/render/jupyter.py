"""Fill the model's display hook: Jupyter shows a Report or a DiffReport as its HTML page, scoped
so it leaves the notebook's styles alone (the HTML renderers are imported when first shown)."""

from __future__ import annotations

from tftrace.model.display import register_html


def _report_html(report) -> str:
    from tftrace.render.html import render_html_fragment
    return render_html_fragment(report)


def _diff_html(diff) -> str:
    from tftrace.render.html_diff import render_diff_fragment
    return render_diff_fragment(diff)


register_html("tftrace.model.report.Report", _report_html)
register_html("tftrace.model.diff_report.DiffReport", _diff_html)
