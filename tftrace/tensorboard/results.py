"""Reports and diffs of a logdir's runs, analysed on demand and kept until a run's files change."""

from __future__ import annotations

import collections
import threading

from tftrace import api
from tftrace.model.errors import TftraceError
from tftrace.model.report import DEFAULT_TOP, Report, RunReport, failed_run
from tftrace.model.version import VERSION
from tftrace.tensorboard.pages import message_page, writing_page
from tftrace.tensorboard.sessions import Session, as_run, fingerprint, still_writing

KEEP = 8  # analyses kept: a report page or an analysed run each; the oldest used goes first
DIFF_TOP = api.DIFF_TOP  # as `tftrace diff`


class Results:
    """One per TensorBoard process. One lock runs one analysis at a time: a large trace can
    take a few hundred MB while it is read, and TensorBoard answers requests on many threads."""

    def __init__(self, keep: int = KEEP):
        self._keep = keep
        self._cache: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.RLock()  # re-entered: a diff caches the two runs it is made of

    def report_page(self, session: Session) -> tuple[int, str]:
        """(HTTP status, HTML) of the run's report, or of a page saying it is still being written."""
        why = still_writing(session)
        if why:
            return 200, writing_page(session.name, why)
        return 200, self._cached(("report", session.path, fingerprint(session)), lambda: _report_html(session))

    def diff_page(self, a: Session, b: Session) -> tuple[int, str]:
        """(HTTP status, HTML) of the diff with `a` as the baseline and `b` as the candidate."""
        for side in (a, b):
            why = still_writing(side)
            if why:
                return 200, writing_page(side.name, why)
        key = ("diff", a.path, fingerprint(a), b.path, fingerprint(b))
        try:
            return 200, self._cached(key, lambda: self._diff_html(a, b))
        except TftraceError as e:
            return 422, message_page("No diff", str(e))

    def _diff_html(self, a: Session, b: Session) -> str:
        from tftrace.render.html_diff import render_diff_html
        base, cand = (self._cached(("run", s.path, fingerprint(s)), lambda s=s: _analysed(s)) for s in (a, b))
        for side, run in (("baseline", base), ("candidate", cand)):
            if run.error:
                raise TftraceError(f"the {side} {run.name} could not be read: {run.error}")
        return render_diff_html(api.compare(base, cand, a.name, b.name, DIFF_TOP))

    def _cached(self, key: tuple, make):
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            value = make()
            self._cache[key] = value
            while len(self._cache) > self._keep:
                self._cache.popitem(last=False)
            return value


def _analysed(session: Session, top: int | None = None) -> RunReport:
    """The run's report entry, its hosts mapped and reduced as `tftrace analyze` does; a run that
    cannot be read becomes an entry carrying its error."""
    try:
        run = as_run(session)
    except TftraceError as e:
        return failed_run(session.path, session.name, str(e))
    return api.analyze_run(run, top)


def _report_html(session: Session) -> str:
    from tftrace.render.html import render_html
    return render_html(Report((_analysed(session, DEFAULT_TOP),), VERSION))
