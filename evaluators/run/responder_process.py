"""The live companion calls in a process of their own, so time to first token is measured where
nothing else runs.

A run scores replies (spaCy, Python-heavy) while it waits for the next ones, and it stores
cases, publishes to Langfuse and draws a progress bar. In one process all of that shares the
interpreter lock with the event loop that reads the streams: each time the loop waits for a
socket it may then wait a whole switch interval for the lock, so the first token of a reply was
stamped late. At `-c 64` on a two-core machine that added a median 0.45 s to the measured time
to first token against 0.03 s at `-c 8`, enough to fail the voice budget on the very replies
that pass it at `-c 8`.

So the run's calls to the companion go to a child process that does nothing but them: it reads
requests as JSON lines on its standard input, makes each through `OpenAIResponder.chat` (the
same SDK, response cache, retries, timing and truncation handling), and writes the completion,
or the failure with its reason, as a JSON line on its standard output. The parent's
`IsolatedResponder` is the run's responder: same `kind`, same `endpoint`, same answers.

The child gets its settings and key on its standard input (never on its command line, which
other users can read), ignores Ctrl-C (the parent handles the interruption), and stops by
itself when its standard input closes: when the run ends, or when the parent dies.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from evaluators.core.completion import Completion
from evaluators.core.endpoints import safe_endpoint
from evaluators.core.response_cache import ResponseCache
from evaluators.core.retry import CallFailed, RetryPolicy
from evaluators.run.responder import ChatRequest, OpenAIResponder, repeat_seed

_LINE_LIMIT = 64 * 1024 * 1024  # a completion is one line; long replies must fit
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the directory that holds `evaluators`


class IsolatedResponder:
    """The live responder, with its calls made (and timed) in a child process; see the module."""

    kind = "openai"

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None, timeout_s: float = 60.0,
                 retry: RetryPolicy | None = None, cache_dir: Path | None = None, use_cache: bool = True) -> None:
        self.base_url = base_url
        self.endpoint = safe_endpoint(base_url)
        self._settings = {
            "api_key": api_key, "base_url": base_url, "timeout_s": timeout_s,
            "retry": vars(retry or RetryPolicy()), "use_cache": use_cache,
            "cache_dir": str(cache_dir) if cache_dir is not None else None,
        }
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task | None = None
        self._pending: dict[int, asyncio.Future] = {}
        self._next_id = 0
        self._ended: str | None = None  # why the child is gone, once it is
        self._starting = asyncio.Lock()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **options) -> IsolatedResponder:
        environ = os.environ if environ is None else environ
        return cls(api_key=environ.get("OPENAI_API_KEY") or None,
                   base_url=environ.get("OPENAI_BASE_URL") or None, **options)

    async def complete(self, request: ChatRequest) -> Completion:
        """The companion's reply, made in the child; CallFailed with the reason when it failed."""
        parameters = {"temperature": request.prompt.temperature, "max_tokens": request.prompt.max_tokens,
                      **repeat_seed(request.repeat)}
        await self._start()
        if self._ended is not None:
            raise CallFailed(self._ended, 0)
        self._next_id += 1
        number = self._next_id
        answer = asyncio.get_running_loop().create_future()
        self._pending[number] = answer
        line = json.dumps({"id": number, "model": request.model, "messages": request.messages,
                           "parameters": parameters})
        try:
            self._process.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
            await self._process.stdin.drain()
            result = await answer
        finally:
            self._pending.pop(number, None)
        if "error" in result:
            raise CallFailed(result["error"], result.get("attempts", 0))
        return Completion.model_validate(result["completion"])

    async def _start(self) -> None:
        async with self._starting:
            if self._process is not None:
                return
            path = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
            self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "evaluators.run.responder_process", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": path}, limit=_LINE_LIMIT,
            )
            self._process.stdin.write(json.dumps(self._settings).encode() + b"\n")
            await self._process.stdin.drain()
            self._reader = asyncio.create_task(self._read_answers())

    async def _read_answers(self) -> None:
        try:
            while line := await self._process.stdout.readline():
                result = json.loads(line)
                answer = self._pending.get(result.get("id"))
                if answer is not None and not answer.done():
                    answer.set_result(result)
        except (ValueError, asyncio.LimitOverrunError) as error:
            self._ended = f"the responder process sent an unreadable answer ({type(error).__name__})"
        code = await self._process.wait() if self._ended is None else None
        self._ended = self._ended or f"the responder process ended unexpectedly (exit code {code})"
        for answer in self._pending.values():
            if not answer.done():
                answer.set_result({"error": self._ended, "attempts": 0})

    async def aclose(self) -> None:
        """Close the child's input (it then stops by itself), wait for it briefly, else end it."""
        process, self._process = self._process, None
        if process is None:
            return
        self._ended = "the responder was closed"
        try:
            process.stdin.close()
            await asyncio.wait_for(process.wait(), timeout=10)
        except (TimeoutError, ProcessLookupError, BrokenPipeError, ConnectionResetError):
            if process.returncode is None:
                process.kill()
                await process.wait()
        if self._reader is not None:
            self._reader.cancel()


# --- the child -----------------------------------------------------------------------------------
async def _serve(settings: dict) -> None:
    """Answer requests until standard input closes; each request runs on its own, side by side."""
    retry = RetryPolicy(**settings["retry"])
    cache = ResponseCache(Path(settings["cache_dir"]) if settings["cache_dir"] else None) \
        if settings["use_cache"] else None
    responder = OpenAIResponder(api_key=settings["api_key"], base_url=settings["base_url"],
                                timeout_s=settings["timeout_s"], retry=retry, cache=cache)
    loop = asyncio.get_running_loop()
    requests: asyncio.Queue[bytes | None] = asyncio.Queue()
    answers: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries answers only; anything a library prints goes to stderr

    def read_input() -> None:  # blocking reads and writes in threads of their own: the loop only streams
        for raw in sys.stdin.buffer:
            loop.call_soon_threadsafe(requests.put_nowait, raw)
        loop.call_soon_threadsafe(requests.put_nowait, None)

    def write_answers() -> None:  # a parent busy scoring may read late: the pipe's wait is this thread's
        while (line := answers.get()) is not None:
            out.write(line)
            out.flush()

    threading.Thread(target=read_input, name="penpal-responder-input", daemon=True).start()
    writer = threading.Thread(target=write_answers, name="penpal-responder-output", daemon=True)
    writer.start()

    async def answer(raw: bytes) -> None:
        request = json.loads(raw)
        try:
            completion = await responder.chat(request["model"], request["messages"], request["parameters"],
                                              keep_truncated=True)
            result = {"id": request["id"], "completion": completion.model_dump(mode="json")}
        except CallFailed as failure:
            result = {"id": request["id"], "error": failure.reason, "attempts": failure.attempts}
        except Exception as error:  # noqa: BLE001 - a bug fails its call, with the reason, not the run
            result = {"id": request["id"], "error": f"{type(error).__name__}: {error}", "attempts": 0}
        answers.put(json.dumps(result).encode("utf-8") + b"\n")

    running: set[asyncio.Task] = set()
    while (raw := await requests.get()) is not None:
        task = asyncio.create_task(answer(raw))
        running.add(task)
        task.add_done_callback(running.discard)
    for task in list(running):
        task.cancel()
    await responder.aclose()
    answers.put(None)
    writer.join(timeout=5)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the parent handles it
    settings = json.loads(sys.stdin.buffer.readline())
    asyncio.run(_serve(settings))


if __name__ == "__main__":
    main()
