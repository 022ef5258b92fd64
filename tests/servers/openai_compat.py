"""A local OpenAI-compatible chat-completions server for tests and benchmarks.

It speaks the same HTTP protocol as OpenAI's `/v1/chat/completions`, so the real `openai`
SDK talks to it over real sockets. It answers deterministically, counts every call per
conversation, and can inject the failures a live API produces: 429 with Retry-After, 500,
hanging past the client's timeout, and malformed 200 bodies.

    with OpenAICompatServer(faults=plan) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Fault:
    """What the server does with one call: answer normally or fail in a given way."""

    kind: str = "ok"  # ok | status | hang | malformed_json | malformed_shape
    status: int = 200
    retry_after: str | None = None  # Retry-After header value, with 429
    hang_s: float = 0.0


OK = Fault()


def rate_limited(retry_after: str = "1") -> Fault:
    return Fault("status", 429, retry_after=retry_after)


def server_error(status: int = 500) -> Fault:
    return Fault("status", status)


def hang(seconds: float) -> Fault:
    return Fault("hang", hang_s=seconds)


MALFORMED_JSON = Fault("malformed_json")
MALFORMED_SHAPE = Fault("malformed_shape")


@dataclass(frozen=True)
class Call:
    """One request as the server saw it."""

    key: str  # the conversation so far (hash of all messages)
    attempt: int  # 1 for the first call with this key, 2 for the next, ...
    model: str
    messages: list[dict]
    body: dict
    started: float


# A fault plan decides per call; it sees the call (key, attempt, messages).
FaultPlan = Callable[[Call], Fault]


def conversation_key(messages: list[dict]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]


def scripted_reply(messages: list[dict]) -> str:
    """A deterministic reply that shows which turn it answers and what the user said."""
    users = [m.get("content", "") for m in messages if m.get("role") == "user"]
    last = users[-1] if users else ""
    return f"Reply {len(users)}: I hear you about \"{last[:60]}\". How are you feeling about it?"


# Answers decide the text of a successful reply (default: `scripted_reply`), e.g. a judge's verdict.
AnswerPlan = Callable[[Call], str]


@dataclass
class OpenAICompatServer:
    faults: FaultPlan = field(default=lambda call: OK)
    latency_s: float = 0.0
    model_name: str | None = None  # reported model; default: the requested one
    answers: AnswerPlan | None = None
    # response_format types this server refuses, and how: 400 like most servers, 500 with a
    # validation message like llama-cpp-python's server.
    refused_formats: frozenset[str] = frozenset()
    refusal_status: int = 400

    def __post_init__(self) -> None:
        self.calls: list[Call] = []
        self.attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> OpenAICompatServer:
        handler = _handler_for(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> OpenAICompatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # --- bookkeeping ------------------------------------------------------------------------------
    def register(self, body: dict) -> Call:
        messages = body.get("messages") or []
        key = conversation_key(messages)
        with self._lock:
            self.attempts[key] += 1
            call = Call(key, self.attempts[key], str(body.get("model", "")), messages, body, time.monotonic())
            self.calls.append(call)
        return call

    def calls_for_user_turn(self, text: str) -> list[Call]:
        """Calls whose last user message is `text`."""
        return [c for c in self.calls
                if [m for m in c.messages if m.get("role") == "user"][-1:] == [{"role": "user", "content": text}]]


def _handler_for(server: OpenAICompatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like the real API

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
            return

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to do

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [
                    {"id": server.model_name or "test-model", "object": "model", "owned_by": "tests"}]}).encode())
            else:
                self._send(404, b'{"error": {"message": "not found"}}')

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send(400, b'{"error": {"message": "request body is not JSON"}}')
                return
            call = server.register(body)
            fault = server.faults(call)
            if server.latency_s:
                time.sleep(server.latency_s)
            if fault.kind == "hang":
                time.sleep(fault.hang_s)
            if fault.kind == "status":
                headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                error = {"error": {"message": f"injected HTTP {fault.status}", "type": "test", "code": None}}
                self._send(fault.status, json.dumps(error).encode(), headers)
                return
            if fault.kind == "malformed_json":
                self._send(200, b'{"id": "chatcmpl-broken", "choices": [')
                return
            if fault.kind == "malformed_shape":
                self._send(200, json.dumps({"id": "chatcmpl-odd", "object": "chat.completion"}).encode())
                return
            requested_format = (body.get("response_format") or {}).get("type")
            if requested_format in server.refused_formats:
                message = (f"1 validation error: body.response_format.type: Input should be 'text' or "
                           f"'json_object', got {requested_format!r}")
                error = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
                self._send(server.refusal_status, json.dumps(error).encode())
                return
            text = server.answers(call) if server.answers is not None else scripted_reply(call.messages)
            prompt_tokens = sum(len(str(m.get("content", ""))) for m in call.messages) // 4
            response = {
                "id": f"chatcmpl-{call.key}-{call.attempt}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": server.model_name or call.model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                          "total_tokens": prompt_tokens + len(text.split())},
            }
            self._send(200, json.dumps(response).encode())

    return Handler
