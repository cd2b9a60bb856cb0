"""The TensorBoard plugin: routes under /data/plugin/tftrace/ and the tab that shows them."""

from __future__ import annotations

import os
import threading
import time

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from tftrace.model.errors import TraceReadError
from tftrace.tensorboard.pages import message_page
from tftrace.tensorboard.results import Results
from tftrace.tensorboard.sessions import BadRunName, UnknownRun, find_sessions, has_sessions, lookup

PLUGIN_NAME = "tftrace"
STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
STATIC_FILES = {"index.js": "application/javascript", "style.css": "text/css"}  # all it serves: no path from a URL
INACTIVE_RECHECK_S = 5.0  # an empty logdir is walked again at most this often; once active, always active


# Refused names, and a session folder removed between the lookup and the reading (TraceReadError:
# "no such file or folder").
_GONE = (BadRunName, UnknownRun, FileNotFoundError, TraceReadError)


class TftracePlugin(base_plugin.TBPlugin):
    """The `tftrace` tab: the report of each profiled run, analysed on demand in this process."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context):
        super().__init__(context)
        # With TensorBoard's fast loader (its default) there is no multiplexer and profile folders
        # hold no event files: like the Profile plugin, walk the logdir itself.
        self._logdir = context.logdir or ""
        self._results = Results()
        self._active = False
        self._checked_at = float("-inf")
        self._active_lock = threading.Lock()

    def is_active(self) -> bool:
        """Runs on every plugins listing: cheap, cached."""
        with self._active_lock:
            if not self._active and time.monotonic() - self._checked_at >= INACTIVE_RECHECK_S:
                self._active = has_sessions(self._logdir)
                self._checked_at = time.monotonic()
            return self._active

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="tftrace")

    def get_plugin_apps(self):
        apps = {"/runs": self._runs, "/report": self._report, "/diff": self._diff}
        apps.update({f"/{name}": self._static for name in STATIC_FILES})
        return apps

    @wrappers.Request.application
    def _runs(self, request):
        return http_util.Respond(request, list(find_sessions(self._logdir)), "application/json")

    @wrappers.Request.application
    def _report(self, request):
        try:
            session = lookup(self._logdir, request.args.get("run"))
            code, markup = self._results.report_page(session)
        except _GONE as e:
            return _refusal(request, e)
        return http_util.Respond(request, markup, "text/html", code=code)

    @wrappers.Request.application
    def _diff(self, request):
        try:
            a = lookup(self._logdir, request.args.get("a"))
            b = lookup(self._logdir, request.args.get("b"))
            code, markup = self._results.diff_page(a, b)
        except _GONE as e:
            return _refusal(request, e)
        return http_util.Respond(request, markup, "text/html", code=code)

    @wrappers.Request.application
    def _static(self, request):
        name = request.path.rsplit("/", 1)[-1]
        with open(os.path.join(STATIC, name), "rb") as f:
            return http_util.Respond(request, f.read(), STATIC_FILES[name])


def _refusal(request, error: Exception):
    """400 for a malformed or escaping name, 404 for a run that is not (or no longer) there."""
    if isinstance(error, BadRunName):
        return http_util.Respond(request, message_page("Bad request", str(error)), "text/html", code=400)
    text = str(error) if isinstance(error, UnknownRun) else "that run's folder is gone"
    return http_util.Respond(request, message_page("Unknown run", text), "text/html", code=404)
