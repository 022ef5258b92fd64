"""`penpal-eval view RUN`: the run store as a small read-only web page on 127.0.0.1.

Served by the standard library's http.server, bound to the loopback address only, answering
GET and HEAD for two paths: the page (evaluators.report.viewer_page) and its data,
`cases.json` (evaluators.report.viewer_data), read from the run store when the server starts.
Nothing is written and nothing outside the machine is asked for. Ctrl-C stops it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from evaluators.report.viewer_data import viewer_cases
from evaluators.report.viewer_page import render_page
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult

HOST = "127.0.0.1"
# No outside requests, no framing, no sniffing: the page needs nothing but itself and its data.
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; "
                               "script-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


class ViewerServer(ThreadingHTTPServer):
    """The viewer's HTTP server: the page and the cases, prepared once."""

    daemon_threads = True

    def __init__(self, cases: Sequence[CaseResult], rubric: Rubric, *, run_id: str, port: int = 0) -> None:
        self.page = render_page(run_id).encode("utf-8")
        self.data = json.dumps(viewer_cases(cases, rubric), ensure_ascii=False).encode("utf-8")
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"

    def start_in_thread(self) -> threading.Thread:
        """Serve in a background thread (tests); `shutdown()` then `server_close()` stop it."""
        thread = threading.Thread(target=self.serve_forever, daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "penpal-eval-viewer"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet: the URL was printed once
        pass

    def _answer(self, head_only: bool) -> None:
        path = self.path.split("?", 1)[0]
        status = 200
        if path in ("/", "/index.html"):
            body, kind = self.server.page, "text/html; charset=utf-8"
        elif path == "/cases.json":
            body, kind = self.server.data, "application/json; charset=utf-8"
        else:
            status, body, kind = 404, b"not found\n", "text/plain; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in _HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._answer(head_only=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(head_only=True)

    def _read_only(self) -> None:
        self.send_error(405, "the viewer is read-only")

    do_POST = do_PUT = do_DELETE = do_PATCH = _read_only  # noqa: N815
