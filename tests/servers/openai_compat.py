"""A local OpenAI-compatible chat-completions server for tests and benchmarks.

It speaks the same HTTP protocol as OpenAI's `/v1/chat/completions`, so the real `openai`
SDK talks to it over real sockets. It answers deterministically, counts every call per
conversation, and can inject the failures a live API produces: 429 with Retry-After, 500,
hanging past the client's timeout, malformed 200 bodies, and a stream cut off mid-way.

A request with `stream: true` is answered as server-sent events, the way OpenAI streams: the
headers and an empty role chunk at once, the first word after `first_token_s`, each further
word `token_interval_s` later, then the finish chunk and, when the request asks for it
(`stream_options.include_usage`) and `stream_usage` is on, a usage chunk before `[DONE]`.

It also serves the Batch API (`/v1/files`, `/v1/batches`): an uploaded JSONL file of chat
requests becomes a batch that stays `in_progress` for a scripted number of polls, then
completes; each request in it is answered like a live call, or fails, or expires, as the
test's `batch_fates` decides.

    with OpenAICompatServer(faults=plan) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Fault:
    """What the server does with one call: answer normally or fail in a given way."""

    # ok | status | hang | malformed_json | malformed_shape | broken_stream | truncated_stream | length
    # | stream_error | disconnect
    kind: str = "ok"
    status: int = 200
    retry_after: str | None = None  # Retry-After header value, with 429
    hang_s: float = 0.0
    message: str | None = None  # the error message of a status or stream_error fault


OK = Fault()


def rate_limited(retry_after: str = "1") -> Fault:
    return Fault("status", 429, retry_after=retry_after)


def server_error(status: int = 500, message: str | None = None) -> Fault:
    return Fault("status", status, message=message)


def hang(seconds: float) -> Fault:
    return Fault("hang", hang_s=seconds)


MALFORMED_JSON = Fault("malformed_json")
MALFORMED_SHAPE = Fault("malformed_shape")
# A streamed answer whose connection drops after the first word (a plain answer is unaffected).
BROKEN_STREAM = Fault("broken_stream")
# A streamed answer that ends cleanly after three words: no finish_reason, no [DONE] (a proxy or
# server that gives up mid-answer and still closes the body properly).
TRUNCATED_STREAM = Fault("truncated_stream")
# A streamed answer that stops because it reached max_tokens: finish_reason "length".
LENGTH_CUT = Fault("length")
# The server crashes mid-request: the connection closes before any answer.
DISCONNECT = Fault("disconnect")


def stream_error(message: str = "injected error in the stream") -> Fault:
    """A 200 stream whose first event is an error object (`data: {"error": ...}`), as OpenAI sends
    when a request fails after the headers went out."""
    return Fault("stream_error", message=message)


@dataclass(frozen=True)
class Call:
    """One request as the server saw it."""

    key: str  # the conversation so far (hash of all messages)
    attempt: int  # 1 for the first call with this key, 2 for the next, ...
    model: str
    messages: list[dict]
    body: dict
    started: float
    number: int = 0  # the call's place among all calls of the server, from 0
    received: float = 0.0  # time.monotonic() when the request line arrived


# A fault plan decides per call; it sees the call (key, attempt, messages).
FaultPlan = Callable[[Call], Fault]
# A batch fate decides what becomes of one request in a batch: "ok", "failed" (HTTP 500 in the
# error file) or "expired" (the batch's window closed before it ran). It sees the request line.
BatchFate = Callable[[dict], str]


@dataclass
class BatchJob:
    """One batch as the server keeps it."""

    id: str
    input_file_id: str
    requests: list[dict]  # the input file's lines: {custom_id, method, url, body}
    metadata: dict
    created_at: int
    polls: int = 0  # retrievals so far; the batch finishes after `batch_polls` of them
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None


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
    # Request fields this server refuses with 400, as OpenAI does with an unrecognized argument
    # (e.g. "stream_options" on an older API version).
    refused_fields: frozenset[str] = frozenset()
    batch_polls: int = 2  # retrievals a batch stays in progress before it finishes
    batch_fates: BatchFate = field(default=lambda request: "ok")
    # Streamed answers: the wait before the first word, the wait between words, and whether a
    # usage chunk is sent when asked for (some compatible servers never send one).
    first_token_s: float = 0.0
    token_interval_s: float = 0.0
    stream_usage: bool = True

    def __post_init__(self) -> None:
        self.calls: list[Call] = []
        self.files: dict[str, tuple[str, bytes]] = {}  # id -> (purpose, content)
        self.batches: dict[str, BatchJob] = {}
        self.attempts: Counter[str] = Counter()
        # time.monotonic() when each streamed call's first word was written, by call number: with
        # Call.received, the server's own share of a time to first token.
        self.first_token_sent: dict[int, float] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> OpenAICompatServer:
        handler = _handler_for(self)
        self._server = _Listener(("127.0.0.1", 0), handler)
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
    def register(self, body: dict, received: float | None = None) -> Call:
        messages = body.get("messages") or []
        key = conversation_key(messages)
        now = time.monotonic()
        with self._lock:
            self.attempts[key] += 1
            call = Call(key, self.attempts[key], str(body.get("model", "")), messages, body, now,
                        len(self.calls), received if received is not None else now)
            self.calls.append(call)
        return call

    def server_first_token_s(self) -> list[dict]:
        """Per streamed call that sent a word: its conversation key, attempt and the seconds from its
        request to its first word as the server saw them (its latency, its pacing and any time it
        lost to its own threads): what a client's time to first token holds of the server's."""
        return [{"key": call.key, "attempt": call.attempt,
                 "seconds": self.first_token_sent[call.number] - call.received}
                for call in list(self.calls) if call.number in self.first_token_sent]

    def batch_requests(self) -> list[dict]:
        """Every request line of every batch created, in order of creation."""
        return [request for job in self.batches.values() for request in job.requests]

    def add_file(self, purpose: str, content: bytes) -> dict:
        with self._lock:
            file_id = f"file-{len(self.files) + 1:04d}"
            self.files[file_id] = (purpose, content)
        return _file_object(file_id, purpose, content)

    def create_batch(self, body: dict) -> tuple[int, dict]:
        file_id = body.get("input_file_id")
        if file_id not in self.files:
            return 400, {"error": {"message": f"input_file_id {file_id!r} not found", "type": "invalid_request_error"}}
        requests = [json.loads(line) for line in self.files[file_id][1].decode("utf-8").splitlines() if line.strip()]
        with self._lock:
            job = BatchJob(id=f"batch_{len(self.batches) + 1:04d}", input_file_id=file_id, requests=requests,
                           metadata=body.get("metadata") or {}, created_at=int(time.time()))
            self.batches[job.id] = job
        return 200, _batch_object(job)

    def poll_batch(self, batch_id: str) -> dict | None:
        """The batch as a retrieval sees it; it finishes on its `batch_polls`-th retrieval."""
        with self._lock:
            job = self.batches.get(batch_id)
            if job is None:
                return None
            job.polls += 1
            if job.status in ("validating", "in_progress") and job.polls < self.batch_polls:
                job.status = "in_progress"
                return _batch_object(job)
        if job.output_file_id is None and job.status in ("validating", "in_progress"):
            self._finish(job)
        return _batch_object(job)

    def _finish(self, job: BatchJob) -> None:
        """Run every request of the batch as a live call would, or fail or expire it."""
        outputs, errors = [], []
        for request in job.requests:
            fate = self.batch_fates(request)
            custom_id = request.get("custom_id")
            if fate == "expired":
                errors.append({"id": f"batch_req_{custom_id[:12]}", "custom_id": custom_id, "response": None,
                               "error": {"code": "batch_expired",
                                         "message": "This request could not be executed before the completion "
                                                    "window expired."}})
                continue
            if fate == "failed":
                errors.append({"id": f"batch_req_{custom_id[:12]}", "custom_id": custom_id, "error": None,
                               "response": {"status_code": 500, "request_id": "req-test", "body": {
                                   "error": {"message": "injected batch request failure", "type": "server_error"}}}})
                continue
            status, body = _completion(self, request.get("body") or {})
            line = {"id": f"batch_req_{custom_id[:12]}", "custom_id": custom_id, "error": None,
                    "response": {"status_code": status, "request_id": "req-test", "body": body}}
            (outputs if status == 200 else errors).append(line)
        expired = any((line.get("error") or {}).get("code") == "batch_expired" for line in errors)
        if outputs:
            job.output_file_id = self.add_file("batch_output", _jsonl(outputs))["id"]
        if errors:
            job.error_file_id = self.add_file("batch_output", _jsonl(errors))["id"]
        job.status = "expired" if expired else "completed"

    def calls_for_user_turn(self, text: str) -> list[Call]:
        """Calls whose last user message is `text`."""
        return [c for c in self.calls
                if [m for m in c.messages if m.get("role") == "user"][-1:] == [{"role": "user", "content": text}]]


class _Listener(ThreadingHTTPServer):
    # socketserver's default backlog of 5 drops the SYNs of a client that opens dozens of
    # connections at once; the kernel retries them a second later, which a client then measures
    # as a second of latency that no real API would add.
    request_queue_size = 256


def _handler_for(server: OpenAICompatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like the real API

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
            return

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None,
                  content_type: str = "application/json") -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to do

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            path = self.path.split("?")[0].rstrip("/")
            if path == "/_test/first-tokens":  # for a client in another process: the server's own share
                self._send(200, json.dumps(server.server_first_token_s()).encode())
            elif path.endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [
                    {"id": server.model_name or "test-model", "object": "model", "owned_by": "tests"}]}).encode())
            elif match := re.search(r"/files/([^/]+)/content$", path):
                stored = server.files.get(match[1])
                if stored is None:
                    self._send(404, b'{"error": {"message": "no such file"}}')
                else:
                    self._send(200, stored[1], content_type="application/octet-stream")
            elif match := re.search(r"/files/([^/]+)$", path):
                stored = server.files.get(match[1])
                self._send(*((200, json.dumps(_file_object(match[1], *stored)).encode()) if stored else
                             (404, b'{"error": {"message": "no such file"}}')))
            elif match := re.search(r"/batches/([^/]+)$", path):
                batch = server.poll_batch(match[1])
                self._send(*((200, json.dumps(batch).encode()) if batch else
                             (404, b'{"error": {"message": "no such batch"}}')))
            elif path.endswith("/batches"):
                data = [_batch_object(job) for job in reversed(list(server.batches.values()))]
                self._send(200, json.dumps({"object": "list", "data": data, "has_more": False,
                                            "first_id": data[0]["id"] if data else None,
                                            "last_id": data[-1]["id"] if data else None}).encode())
            else:
                self._send(404, b'{"error": {"message": "not found"}}')

        def do_POST(self) -> None:  # noqa: N802
            received = time.monotonic()
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?")[0].rstrip("/")
            if path.endswith("/files"):
                purpose, content = _multipart_upload(self.headers.get("Content-Type", ""), raw)
                if content is None:
                    self._send(400, b'{"error": {"message": "no file in the upload"}}')
                else:
                    self._send(200, json.dumps(server.add_file(purpose or "", content)).encode())
                return
            if not (path.endswith("/chat/completions") or path.endswith("/batches")):
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send(400, b'{"error": {"message": "request body is not JSON"}}')
                return
            if path.endswith("/batches"):
                status, batch = server.create_batch(body)
                self._send(status, json.dumps(batch).encode())
                return
            call = server.register(body, received)
            fault = server.faults(call)
            if server.latency_s:
                time.sleep(server.latency_s)
            if fault.kind == "hang":
                time.sleep(fault.hang_s)
            if fault.kind == "disconnect":  # a crash: the connection closes with no answer at all
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault.kind == "status":
                headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                message = fault.message or f"injected HTTP {fault.status}"
                error = {"error": {"message": message, "type": "test", "code": None}}
                self._send(fault.status, json.dumps(error).encode(), headers)
                return
            if fault.kind == "malformed_json":
                broken = b'{"id": "chatcmpl-broken", "choices": ['
                self._send(200, b"data: " + broken + b"\n\n" if body.get("stream") else broken,
                           content_type="text/event-stream" if body.get("stream") else "application/json")
                return
            if fault.kind == "malformed_shape":
                odd = json.dumps({"id": "chatcmpl-odd", "object": "chat.completion"}).encode()
                self._send(200, b"data: " + odd + b"\n\ndata: [DONE]\n\n" if body.get("stream") else odd,
                           content_type="text/event-stream" if body.get("stream") else "application/json")
                return
            status, response = _completion(server, body, call)
            if status == 200 and body.get("stream"):
                if fault.kind == "length":
                    response["choices"][0]["finish_reason"] = "length"
                self._stream(response, call, include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
                             fault=fault)
            else:
                self._send(status, json.dumps(response).encode())

        def _stream(self, response: dict, call: Call, *, include_usage: bool, fault: Fault) -> None:
            """The completion as server-sent events, paced like a model generating it."""
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                events = _stream_events(server, response, include_usage=include_usage)
                if fault.kind == "stream_error":  # the role chunk, then an error object, then the end
                    error = {"error": {"message": fault.message, "type": "server_error", "code": None}}
                    events = [events[0], (json.dumps(error), 0.0)]
                for number, (event, wait) in enumerate(events):
                    if wait:
                        time.sleep(wait)
                    self._chunk(f"data: {event}\n\n".encode())
                    if number == 1 and fault.kind != "stream_error":
                        server.first_token_sent.setdefault(call.number, time.monotonic())
                    if fault.kind == "broken_stream" and number == 1:  # the role chunk, the first word, nothing
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if fault.kind == "truncated_stream" and number == 3:  # three words, then a clean end
                        break
                self._chunk(b"")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to do

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def _stream_events(server: OpenAICompatServer, response: dict, *, include_usage: bool) -> list[tuple[str, float]]:
    """(event data, seconds to wait before it) for a streamed answer, ending with [DONE]."""
    choice = response["choices"][0]
    words = re.findall(r"\S+\s*", choice["message"]["content"])

    def chunk(delta: dict, finish_reason: str | None = None) -> str:
        return json.dumps({"id": response["id"], "object": "chat.completion.chunk", "created": response["created"],
                           "model": response["model"],
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})

    events = [(chunk({"role": "assistant", "content": ""}), 0.0)]
    events += [(chunk({"content": word}), server.first_token_s if index == 0 else server.token_interval_s)
               for index, word in enumerate(words)]
    events.append((chunk({}, choice["finish_reason"]), 0.0))
    if include_usage and server.stream_usage:
        events.append((json.dumps({"id": response["id"], "object": "chat.completion.chunk",
                                   "created": response["created"], "model": response["model"], "choices": [],
                                   "usage": response["usage"]}), 0.0))
    return [*events, ("[DONE]", 0.0)]


def _completion(server: OpenAICompatServer, body: dict, call: Call | None = None) -> tuple[int, dict]:
    """The answer to one chat request, live or inside a batch: a refusal or a completion."""
    refused = sorted(name for name in server.refused_fields if name in body)
    if refused:
        return 400, {"error": {"message": f"Unrecognized request argument supplied: {refused[0]}",
                               "type": "invalid_request_error", "code": None}}
    requested_format = (body.get("response_format") or {}).get("type")
    if requested_format in server.refused_formats:
        message = (f"1 validation error: body.response_format.type: Input should be 'text' or "
                   f"'json_object', got {requested_format!r}")
        return server.refusal_status, {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    messages = body.get("messages") or []
    if call is None:  # a batch request: seen by the answer plan like a first live call, not counted as one
        call = Call(conversation_key(messages), 1, str(body.get("model", "")), messages, body, time.monotonic())
    text = server.answers(call) if server.answers is not None else scripted_reply(call.messages)
    prompt_tokens = sum(len(str(m.get("content", ""))) for m in call.messages) // 4
    return 200, {
        "id": f"chatcmpl-{call.key}-{call.attempt}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": server.model_name or call.model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                  "total_tokens": prompt_tokens + len(text.split())},
    }


def _jsonl(lines: list[dict]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")


def _file_object(file_id: str, purpose: str, content: bytes) -> dict:
    return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
            "filename": f"{file_id}.jsonl", "purpose": purpose, "status": "processed"}


def _batch_object(job: BatchJob) -> dict:
    counts = {"total": len(job.requests), "completed": 0, "failed": 0}
    return {"id": job.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
            "input_file_id": job.input_file_id, "completion_window": "24h", "status": job.status,
            "output_file_id": job.output_file_id, "error_file_id": job.error_file_id, "created_at": job.created_at,
            "request_counts": counts, "metadata": job.metadata}


def _multipart_upload(content_type: str, raw: bytes) -> tuple[str | None, bytes | None]:
    """The `purpose` field and the `file` part of a multipart/form-data upload."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        return None, None
    purpose, content = None, None
    for part in raw.split(b"--" + match[1].encode())[1:]:
        head, _, data = part.partition(b"\r\n\r\n")
        data = data[:-2] if data.endswith(b"\r\n") else data
        if b'name="purpose"' in head:
            purpose = data.decode("utf-8")
        elif b'name="file"' in head:
            content = data
    return purpose, content


def serve_in_process(argv: list[str] | None = None) -> None:
    """`python -m tests.servers.openai_compat --latency 0.2`: the server in a process of its own,
    so that a client under test shares no interpreter lock with it. It prints its base URL, serves
    on 127.0.0.1, and stops by itself when its standard input closes (the parent ended or closed
    the pipe) or after `--lifetime` seconds. GET /_test/first-tokens answers, per streamed call,
    the seconds from its request to its first word as the server saw them (server_first_token_s)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=serve_in_process.__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--first-token", type=float, default=0.0, help="seconds before the first word")
    parser.add_argument("--token-interval", type=float, default=0.0, help="seconds between words")
    parser.add_argument("--lifetime", type=float, default=900.0, help="stop after this many seconds at most")
    parser.add_argument("--recorded", nargs=3, metavar=("PROMPTS_DIR", "SCENARIOS_DIR", "RECORDED_DIR"),
                        help="answer with the recorded replies of these prompts and scenarios (recorded_answers)")
    args = parser.parse_args(argv)
    answers = None
    if args.recorded:
        from pathlib import Path

        from tests.servers.recorded_answers import recorded_answers

        answers = recorded_answers(*(Path(path) for path in args.recorded))
    server = OpenAICompatServer(latency_s=args.latency, first_token_s=args.first_token,
                                token_interval_s=args.token_interval, answers=answers).start()
    print(server.base_url, flush=True)
    stdin_closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stdin_closed.set()), daemon=True).start()
    stdin_closed.wait(args.lifetime)
    server.stop()


if __name__ == "__main__":
    serve_in_process()
