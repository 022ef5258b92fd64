"""A companion backend with its own memory, for the `http` target tests: a JSON API on 127.0.0.1.

POST /chat with `{"session": ..., "turn": ..., "text": ...}` (the tests' request template) answers
`{"data": {"reply": ...}}`. With `memory` it keeps every user message by session id and its reply
brings the earlier ones back ("Earlier you told me: ..."), as a backend with conversation memory
would; without it, it forgets everything between calls. Nothing but the new message is sent to
it, so only its own memory can recall an earlier turn.

`faults(call_number, body)` may return an HTTP status to answer instead (a 500 on the first
call, a 503 on every call for one session), so retries and failures can be played.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FaultPlan = Callable[[int, dict], int | None]
FORGETFUL_REPLY = "Thanks for telling me. How are you feeling about all of it?"


@dataclass
class CompanionHttpServer:
    memory: bool = True
    faults: FaultPlan = field(default=lambda number, body: None)
    latency_s: float = 0.0  # the wait before each answer (a slow backend)

    def __post_init__(self) -> None:
        self.arrivals = 0  # requests received, counted before any wait
        self.calls: list[dict] = []  # every request answered: its body and the headers that matter
        self.sessions: dict[str, list[str]] = {}  # session id -> user messages, in order
        self.turns: dict[str, list[int]] = {}  # session id -> turn indexes received, in order
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> CompanionHttpServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/chat"

    def answer(self, body: dict, headers: dict[str, str]) -> tuple[int, dict]:
        with self._lock:
            number = len(self.calls) + 1
            self.calls.append({"body": body, "authorization": headers.get("authorization")})
            status = self.faults(number, body)
            if status is not None:
                return status, {"error": f"injected {status}"}
            session, text = str(body.get("session")), str(body.get("text"))
            earlier = list(self.sessions.get(session, [])) if self.memory else []
            if self.memory:
                self.sessions.setdefault(session, []).append(text)
            self.turns.setdefault(session, []).append(body.get("turn"))
        if earlier:
            reply = f"Earlier you told me: {' / '.join(earlier)}. How are you feeling about it now?"
        else:
            reply = FORGETFUL_REPLY
        return 200, {"data": {"reply": reply, "session": session}}


def _handler_for(server: CompanionHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
            return

        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with server._lock:
                server.arrivals += 1
            time.sleep(server.latency_s)
            try:
                body = json.loads(raw)
            except ValueError:
                status, payload = 400, {"error": "body is not JSON"}
            else:
                status, payload = server.answer(body, {k.lower(): v for k, v in self.headers.items()})
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (its timeout): nothing to answer

    return Handler
