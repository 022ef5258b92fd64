"""Judging through the OpenAI Batch API: half the price of live calls, answers within a day.

The judge requests are the very requests live judging sends (same messages, response mode
and parameters), written as one JSONL file (`files.create`) and submitted as a batch
(`batches.create`). The wait is polled with backoff. Each answer goes through the live
judge's reading: the same verdict parser, the same repair request and fallback, the same
counts and the same per-request cache.

A state file records every batch submitted and the requests in it, written before and after
each submission, so an interrupted wait resumes the same batch and no request is submitted
twice. A request that failed or expired is retried live, or in a new batch (up to
`max_rounds` batches per request, then live), and counted.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from openai.types.chat import ChatCompletion

from evaluators.core.completion import Usage
from evaluators.core.locations import write_text_atomic
from evaluators.core.retry import CallFailed, call_with_retries
from evaluators.judge.client import AnswerSchema, LLMJudge, model_text
from evaluators.judge.prompt import judge_messages
from evaluators.judge.result import JudgeInput, JudgeResult

BATCH_ENDPOINT = "/v1/chat/completions"
RETRY_CHOICES = ("live", "batch")
# Batch statuses after which nothing changes any more.
FINISHED = frozenset({"completed", "failed", "expired", "cancelled"})


@dataclass(frozen=True)
class BatchSettings:
    poll_s: float = 30.0  # first wait between polls; it grows by `backoff` up to `poll_max_s`
    poll_max_s: float = 600.0
    backoff: float = 1.5
    retry: str = "live"  # where failed or expired requests go again: "live" calls or a new "batch"
    max_rounds: int = 2  # batches one request may go through (retry "batch"); after them, live
    completion_window: str = "24h"

    def __post_init__(self) -> None:
        if self.retry not in RETRY_CHOICES:
            raise ValueError(f"batch retry must be one of {', '.join(RETRY_CHOICES)}, not {self.retry!r}")
        if self.poll_s <= 0 or self.poll_max_s < self.poll_s or self.backoff < 1:
            raise ValueError("batch polling needs poll_s > 0, poll_max_s >= poll_s and backoff >= 1")
        if self.max_rounds < 1:
            raise ValueError("batch max_rounds must be at least 1")


@dataclass
class BatchStats:
    """What batch judging did, for the summary line."""

    batches: int = 0  # batches submitted by this process
    resumed: int = 0  # batches of an interrupted run waited for again
    submitted: int = 0  # requests submitted in those batches
    answered: int = 0  # requests answered by a batch
    expired: int = 0
    failed: int = 0  # requests a batch could not answer (error file, or a failed batch)
    retried_live: int = 0
    retried_batch: int = 0


@dataclass
class _Request:
    """One judge sample to ask for: where its answer goes, and the request itself."""

    key: str  # the judge's cache key; also the batch line's custom_id
    item: JudgeInput
    sample: int
    mode: str
    messages: list[dict]
    places: list[tuple[int, int]] = field(default_factory=list)  # (reply index, sample) it answers
    answer: AnswerSchema | None = None  # the answer's schema: None for the reply verdict


@dataclass
class _Outcome:
    text: str | None = None  # the answer, when the batch answered
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    expired: bool = False
    refused: bool = False  # a 4xx: the request itself is at fault (e.g. its response format); only live steps down


class BatchState:
    """The batches submitted and not yet finished with, in a small JSON file.

    {"batches": [{"id", "input_file_id", "custom_ids"}], "uploaded": {"input_file_id", "custom_ids"}}
    "uploaded" is a file whose batch may or may not have been created when the process stopped.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.batches: list[dict] = []
        self.uploaded: dict | None = None
        if path is not None and path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.batches = list(data.get("batches") or [])
                self.uploaded = data.get("uploaded")
            except (OSError, ValueError, AttributeError) as error:
                raise ValueError(f"batch state {path} is not readable ({error}); delete it only after checking "
                                 "that no batch it names is still running") from None

    def save(self) -> None:
        if self.path is not None:
            write_text_atomic(self.path, json.dumps({"batches": self.batches, "uploaded": self.uploaded}, indent=1))

    def rounds(self, key: str) -> int:
        return sum(key in batch["custom_ids"] for batch in self.batches)

    def latest_batch(self, key: str) -> str | None:
        return next((batch["id"] for batch in reversed(self.batches) if key in batch["custom_ids"]), None)

    def forget(self, keys: set[str]) -> None:
        """Drop batches whose every request is settled; keep those another run still waits for."""
        self.batches = [batch for batch in self.batches if not set(batch["custom_ids"]) <= keys]
        self.save()


class BatchTask(Protocol):
    """What one judge task gives the batch path: its cache, its requests and how to read an answer.
    The reply verdict is one (`_ReplyVerdicts`); the safety questions another (evaluators.judge.safety_judge)."""

    answer: AnswerSchema | None

    def key(self, item: JudgeInput, sample: int) -> str: ...

    def cached(self, key: str) -> Any: ...

    def messages(self, item: JudgeInput, mode: str) -> list[dict]: ...

    async def read(self, item: JudgeInput, messages: list[dict], text: str, mode: str, sample: int,
                   usage: Usage) -> Any: ...

    async def live(self, item: JudgeInput, sample: int) -> Any: ...

    def remember(self, key: str, result: Any) -> None: ...


class _ReplyVerdicts:
    """The reply verdict as a batch task: the live judge's cache, messages, reading and live call."""

    answer: AnswerSchema | None = None

    def __init__(self, batch: BatchJudge) -> None:
        self.judge = batch.judge

    def key(self, item: JudgeInput, sample: int) -> str:
        return self.judge.cache_key(item, sample)

    def cached(self, key: str) -> JudgeResult | None:
        return self.judge.cached_sample(key)

    def messages(self, item: JudgeInput, mode: str) -> list[dict]:
        return judge_messages(self.judge.rubric, item, mode)

    async def read(self, item: JudgeInput, messages: list[dict], text: str, mode: str, sample: int,
                   usage: Usage) -> JudgeResult:
        return await self.judge.read_answer(messages, text, mode, sample, attempts=1, usage=usage,
                                            started=time.perf_counter())

    async def live(self, item: JudgeInput, sample: int) -> JudgeResult:
        return await self.judge.judge_once(item, sample)

    def remember(self, key: str, result: JudgeResult) -> None:
        self.judge.remember(key, result)


class BatchJudge:
    """Judges many replies at once through the Batch API, with the live judge's reading and cache."""

    def __init__(self, judge: LLMJudge, state_path: Path | None, settings: BatchSettings | None = None) -> None:
        self.judge = judge
        self.settings = settings or BatchSettings()
        self.state = BatchState(state_path)
        self.stats = BatchStats()
        self._client = judge.client
        self._rounds_read: dict[str, int] = {}  # per request, the batches of it already read by this process

    async def aclose(self) -> None:
        await self.judge.aclose()

    async def judge_all(self, items: Sequence[JudgeInput]) -> list[JudgeResult]:
        """The verdicts on every item, in order; never raises for API or parse trouble."""
        count = self.judge.settings.samples
        samples = await self.ask_all(items, _ReplyVerdicts(self), count)
        return [self.judge.combined([samples[index, sample] for sample in range(count)]) for index in range(len(items))]

    async def ask_all(self, items: Sequence[JudgeInput], task: BatchTask, count: int = 1) -> dict[tuple[int, int], Any]:
        """Each (item, sample)'s result for a task (the reply verdict, the safety questions): from the
        cache, else through batches, else live; never raises for API or parse trouble."""
        samples: dict[tuple[int, int], Any] = {}
        requests: dict[str, _Request] = {}
        mode = self.judge.current_mode()
        for index, item in enumerate(items):
            for sample in range(count):
                key = task.key(item, sample)
                if (hit := task.cached(key)) is not None:
                    samples[index, sample] = hit
                    continue
                if key not in requests:
                    requests[key] = _Request(key, item, sample, mode, task.messages(item, mode), answer=task.answer)
                requests[key].places.append((index, sample))
        await self._adopt_upload()
        settled: set[str] = set()
        pending = dict(requests)
        while pending:
            outcomes = await self._through_batches(pending)
            answered = [request for key, request in pending.items() if outcomes[key].text is not None]
            results = await asyncio.gather(*(self._read(task, request, outcomes[request.key]) for request in answered))
            settled |= self._settle(task, samples, answered, results)
            pending, live = self._retries(pending, outcomes)
            settled |= self._settle(task, samples, live, await asyncio.gather(*(self._live(task, request)
                                                                                 for request in live)))
        self.state.forget(settled)
        return samples

    def _retries(self, pending: dict[str, _Request],
                 outcomes: dict[str, _Outcome]) -> tuple[dict[str, _Request], list[_Request]]:
        """The unanswered requests, counted and split: those for a new batch, and those to judge live.

        A 4xx (the request itself refused, e.g. its response format) always goes live, where the
        judge steps down to a format the server accepts.
        """
        again: dict[str, _Request] = {}
        live: list[_Request] = []
        for key, request in pending.items():
            outcome = outcomes[key]
            if outcome.text is not None:
                continue
            self.stats.expired += outcome.expired
            self.stats.failed += not outcome.expired
            if (self.settings.retry == "batch" and not outcome.refused
                    and self.state.rounds(key) < self.settings.max_rounds):
                again[key] = request
            else:
                live.append(request)
        self.stats.retried_batch += len(again)
        self.stats.retried_live += len(live)
        return again, live

    def _settle(self, task: BatchTask, samples: dict[tuple[int, int], Any], requests: Sequence[_Request],
                results: Sequence[Any]) -> set[str]:
        """Each result cached (when usable) and put in every place that asked for it; the keys settled."""
        for request, result in zip(requests, results, strict=True):
            task.remember(request.key, result)
            for place in request.places:
                samples[place] = result
        return {request.key for request in requests}

    async def _read(self, task: BatchTask, request: _Request, outcome: _Outcome) -> Any:
        """A batch answer read as a live one; a repair request, if needed, is a live call within the judge's slots."""
        self.judge.modes.set(self.judge.endpoint, self.judge.settings.model, request.mode)
        self.judge.stats.usage += outcome.usage
        async with self.judge.slots:
            return await task.read(request.item, request.messages, outcome.text or "", request.mode, request.sample,
                                   outcome.usage)

    async def _live(self, task: BatchTask, request: _Request) -> Any:
        """A request the batches did not answer, asked by a live call (which steps down modes itself)."""
        async with self.judge.slots:
            return await task.live(request.item, request.sample)

    # --- batches -----------------------------------------------------------------------------------
    async def _through_batches(self, pending: dict[str, _Request]) -> dict[str, _Outcome]:
        """Each pending request's outcome: from the batch that already holds it, else from a new one."""
        waiting: dict[str, list[str]] = {}
        fresh = []
        for key in pending:
            batch_id = self.state.latest_batch(key)
            if batch_id is not None and self.state.rounds(key) > self._rounds_read.get(key, 0):
                waiting.setdefault(batch_id, []).append(key)
            else:
                fresh.append(key)
        self.stats.resumed += len(waiting)
        if fresh:
            batch_id = await self._submit([pending[key] for key in fresh])
            waiting.setdefault(batch_id, []).extend(fresh)
        for key in pending:
            self._rounds_read[key] = self.state.rounds(key)
        outcomes: dict[str, _Outcome] = {}
        for found in await asyncio.gather(*(self._wait(batch_id, set(keys)) for batch_id, keys in waiting.items())):
            outcomes.update(found)
        return outcomes

    async def _submit(self, requests: list[_Request]) -> str:
        """Upload the requests and create their batch; the state is saved around each step."""
        keys = [request.key for request in requests]
        lines = [json.dumps({"custom_id": request.key, "method": "POST", "url": BATCH_ENDPOINT,
                             "body": self.judge.request_body(request.messages, request.mode, request.sample,
                                                             request.answer)},
                            ensure_ascii=False) for request in requests]
        content = ("\n".join(lines) + "\n").encode("utf-8")
        name = f"penpal-judge-{hashlib.sha256(content).hexdigest()[:12]}.jsonl"
        file = await self._api(lambda: self._client.files.create(file=(name, content), purpose="batch"))
        self.state.uploaded = {"input_file_id": file.id, "custom_ids": keys}
        self.state.save()
        batch = await self._api(lambda: self._client.batches.create(
            input_file_id=file.id, endpoint=BATCH_ENDPOINT, completion_window=self.settings.completion_window,
            metadata={"source": "penpal-eval judge"}))
        self._record(batch.id, self.state.uploaded)
        self.stats.batches += 1
        self.stats.submitted += len(keys)
        return batch.id

    async def _adopt_upload(self) -> None:
        """A file uploaded by a process stopped before it recorded the batch: find that batch, if it was made."""
        uploaded = self.state.uploaded
        if uploaded is None:
            return
        batch_id = await self._batch_for_file(uploaded["input_file_id"])
        if batch_id is not None:
            self._record(batch_id, uploaded)
        else:  # never submitted: nothing runs, the requests go into the next batch
            self.state.uploaded = None
            self.state.save()

    def _record(self, batch_id: str, uploaded: dict) -> None:
        self.state.batches.append({"id": batch_id, **uploaded})
        self.state.uploaded = None
        self.state.save()

    async def _batch_for_file(self, file_id: str) -> str | None:
        page = await self._api(lambda: self._client.batches.list(limit=100))
        return next((batch.id for batch in page.data if batch.input_file_id == file_id), None)

    async def _wait(self, batch_id: str, keys: set[str]) -> dict[str, _Outcome]:
        """Poll one batch with backoff until it finishes; then the outcome of each of `keys`."""
        delay = self.settings.poll_s
        while True:
            batch = await self._api(lambda: self._client.batches.retrieve(batch_id))
            if batch.status in FINISHED:
                break
            await asyncio.sleep(delay)
            delay = min(delay * self.settings.backoff, self.settings.poll_max_s)
        outcomes: dict[str, _Outcome] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                for line in await self._lines(file_id):
                    if line.get("custom_id") in keys:
                        outcomes[line["custom_id"]] = _outcome(line)
        why = f"batch {batch_id} {batch.status} without an answer to this request"
        for key in keys - outcomes.keys():
            outcomes[key] = _Outcome(error=why, expired=batch.status == "expired")
        self.stats.answered += sum(outcome.text is not None for outcome in outcomes.values())
        return outcomes

    async def _lines(self, file_id: str) -> list[dict]:
        content = await self._api(lambda: self._client.files.content(file_id))
        lines = []
        for raw in content.text.splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:
                continue  # a damaged line: its request counts as unanswered and is retried
        return lines

    async def _api(self, call):
        """One Batch API call with the judge's retry policy (429, 5xx, timeouts)."""
        async def attempt():
            return await call()
        try:
            result, _ = await call_with_retries(attempt, self.judge.retry)
        except CallFailed as failure:
            raise BatchError(f"Batch API at {self.judge.endpoint}: {failure.reason}") from None
        return result


class BatchError(RuntimeError):
    """The Batch API itself cannot be reached or refuses; the state file keeps what was submitted."""


def _outcome(line: dict) -> _Outcome:
    """A batch output or error line as an answer or a reason."""
    error = line.get("error") or {}
    if error:
        code = error.get("code") or "error"
        return _Outcome(error=f"batch request {code}: {error.get('message', '')}".strip(),
                        expired=code == "batch_expired")
    response = line.get("response") or {}
    status = response.get("status_code")
    body = response.get("body") or {}
    if status != 200:
        message = (body.get("error") or {}).get("message", "") if isinstance(body, dict) else ""
        return _Outcome(error=f"HTTP {status}: {message}", refused=isinstance(status, int) and 400 <= status < 500)
    try:
        text, usage = model_text(ChatCompletion.model_validate(body))
    except ValueError as error:
        return _Outcome(error=f"batch answer is not a chat completion: {error}")
    return _Outcome(text=text, usage=usage)
