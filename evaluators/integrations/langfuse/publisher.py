"""Publishing a run to Langfuse: traces, scores, experiments and review items, with an account
of what did not arrive.

One publisher serves both ways in: the live run (as a sink, case by case) and `penpal-eval
push RUN_DIR` (the stored cases). Spans go out through the SDK in the background as cases
come; scores, run-level scores and review items are sent by `deliver()` at the end, in
batches with retries. Whatever Langfuse did not confirm is counted, named in the report and
left out of the ledger, so the next push sends exactly that.

Langfuse keeps observations as append-only events, so each span is sent once: the ledger
records delivery per span, and only spans that never arrived are sent again, with the same
ids and times. Scores upsert on id and timestamp, so they are what a later push updates.

Failures here never fail the run: a run against a failing Langfuse finishes with its store
whole and says what it could not deliver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evaluators.core.text import plural
from evaluators.integrations.langfuse.connection import LangfuseConnection, connect
from evaluators.integrations.langfuse.datasets import DatasetSync, sync_dataset
from evaluators.integrations.langfuse.ids import experiment_id, experiment_run_name, session_id, turn_trace_id
from evaluators.integrations.langfuse.ledger import DeliveryLedger
from evaluators.integrations.langfuse.rest import LangfuseCallFailed
from evaluators.integrations.langfuse.review import (
    SAFETY_QUEUE_DESCRIPTION,
    add_to_queue,
    create_queue,
    find_queue,
    queued_objects,
    queued_trace_ids,
    review_reasons,
    safety_queue_objects,
)
from evaluators.integrations.langfuse.score_configs import (
    CATEGORICAL,
    NUMERIC,
    REVIEW_CONFIGS,
    definitions_by_name,
    ensure_score_configs,
    flag_name,
    score_definitions,
)
from evaluators.integrations.langfuse.scores import (
    ScoreBuilder,
    ScoreRecord,
    body_fingerprint,
    send_scores,
    turn_scores,
)
from evaluators.integrations.langfuse.session_scores import conversation_scores
from evaluators.integrations.langfuse.settings import LangfuseSettings
from evaluators.integrations.langfuse.traces import ExperimentLink, TurnTrace, emit_turn, turn_span_ids, turn_starts
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult, play_id
from evaluators.store.run_store import RunInputs, RunStore, StoreError, utc_now


@dataclass
class DeliveryReport:
    """What one push delivered and what it could not; printed by the CLI, kept in the ledger."""

    endpoint: str
    traces_sent: int = 0
    traces_unchanged: int = 0
    spans_sent: int = 0
    spans_undelivered: int = 0
    scores_sent: int = 0
    scores_unchanged: int = 0
    scores_undelivered: int = 0
    review_items_added: int = 0
    safety_items_added: int = 0  # safety judge-rules disagreements queued for people to settle
    failed_cases_skipped: int = 0
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # about the server; nothing was lost
    sdk_messages: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.spans_undelivered and not self.scores_undelivered and not self.problems

    def to_record(self) -> dict:
        return {key: value for key, value in self.__dict__.items()}

    def lines(self) -> list[str]:
        lines = [f"langfuse {self.endpoint}: {self.spans_sent - self.spans_undelivered} of "
                 f"{plural(self.spans_sent, 'span')} ({plural(self.traces_sent, 'trace')}) and "
                 f"{self.scores_sent - self.scores_undelivered} of {plural(self.scores_sent, 'score')} delivered; "
                 f"{plural(self.traces_unchanged, 'trace')} and {plural(self.scores_unchanged, 'score')} were "
                 f"already there; {self.review_items_added} added for review"
                 + (f", {self.safety_items_added} safety disagreements queued" if self.safety_items_added else "")]
        if self.spans_undelivered or self.scores_undelivered:
            lines.append(f"NOT DELIVERED: {plural(self.spans_undelivered, 'span')}, "
                         f"{plural(self.scores_undelivered, 'score')}; "
                         "the run store keeps them: send them with `penpal-eval push RUN_DIR`")
        if self.failed_cases_skipped:
            lines.append(f"{plural(self.failed_cases_skipped, 'failed case')} not pushed: resume the run first")
        lines += [f"warning: {notice}" for notice in self.notices]
        lines += [f"problem: {problem}" for problem in self.problems]
        lines += [f"sdk: {message}" for message in self.sdk_messages[:10]]
        return lines


@dataclass
class _PendingTrace:
    trace: TurnTrace
    to_send: tuple[str, ...]  # the span ids this push sends (the others are in Langfuse already)


class LangfusePublisher:
    """`resend_all` sends every score again (they upsert); `republish` also sends delivered spans
    again, which Langfuse adds beside the observations it keeps (the CLI says so)."""

    def __init__(self, connection: LangfuseConnection, rubric: Rubric, *, run_id: str, inputs: RunInputs,
                 run_dir: Path, timestamp: str | None, resend_all: bool = False, republish: bool = False) -> None:
        self.connection = connection
        self.rubric = rubric
        self.run_id = run_id
        self.prompts = {prompt.version: prompt for prompt in inputs.prompts}
        self.baselines = {prompt.version: prompt.baseline for prompt in inputs.prompts}
        self.scenarios = {scenario.id: scenario for scenario in inputs.scenarios}
        self.inputs = inputs
        self.timestamp = timestamp  # the run's start: Langfuse updates a score only if id and timestamp match
        self.resend_all = resend_all
        self.republish = republish
        self.rest = connection.rest()
        self.ledger = DeliveryLedger.load(run_dir)
        if self.ledger.endpoint != connection.settings.endpoint:  # another server: nothing of ours is there yet
            self.ledger = DeliveryLedger(self.ledger.path, connection.settings.endpoint, pushes=self.ledger.pushes)
        connection.exporter.know(int(span_id, 16) for span_id in self.ledger.spans)
        # Spans are recorded in the ledger as Langfuse takes each batch (from the export thread).
        # Span id -> (its trace id, every span id of that trace), for the spans this publisher sends;
        # filled before the spans are emitted, since the export thread may send them at once.
        self._span_traces: dict[str, tuple[str, tuple[str, ...]]] = {}
        connection.exporter.on_delivered = self._spans_delivered
        self.report = DeliveryReport(connection.settings.endpoint)
        self.config_ids: dict[str, str] = {}
        self.configs_by_id: dict[str, object] = {}  # what each score is checked against before it is sent
        self.dataset: DatasetSync | None = None
        self.experiments: dict[str, ExperimentLink] = {}
        self.queue_id: str | None = None
        self._queued: set[str] = set()
        self._traces: list[_PendingTrace] = []
        self._scores: dict[str, dict] = {}  # score id -> body to send; one per id, the last built wins
        self._review: list[str] = []
        self._safety: list[str] = []  # "OBJECT_TYPE:id" of safety disagreements the queue does not have yet
        self._log_mark = connection.logs.mark()

    # --- before the cases -----------------------------------------------------------------------
    def prepare(self) -> None:
        """Score configs, the dataset and the experiments; each failure is noted, none is fatal."""
        self._attempt("score configs", self._prepare_configs)
        self._attempt("dataset", self._prepare_dataset)
        if self.connection.settings.review_queue:
            self._attempt("annotation queue", self._prepare_queue)

    def _attempt(self, what: str, step: Callable[[], None]) -> None:
        try:
            step()
        except LangfuseCallFailed as error:
            self.report.problems.append(f"{what}: {error}")
        except Exception as error:  # noqa: BLE001 - e.g. an answer of unexpected shape: noted, the run goes on
            self.report.problems.append(f"{what}: {type(error).__name__}: {error}")

    def _prepare_configs(self) -> None:
        setup = ensure_score_configs(self.rest, score_definitions(self.rubric))
        self.config_ids = setup.ids
        self.configs_by_id = {config.id: config for config in setup.configs.values()}
        self.report.problems += [f"score configs: {problem}" for problem in setup.problems()]

    def _prepare_dataset(self) -> None:
        self.dataset = sync_dataset(self.rest, self.connection.settings.dataset, self.inputs.scenarios)
        projects = self.rest.call(self.rest.api.projects.get, what="get project").data
        project = projects[0].id if projects else None
        for version, prompt in self.prompts.items():
            run_name = experiment_run_name(self.run_id, version)
            self.experiments[version] = ExperimentLink(experiment_id(project, self.dataset.id, run_name), run_name,
                                                       self.dataset.id, prompt.description.strip())

    def _prepare_queue(self) -> None:
        """The review queue: found by name or id, else created with the review score configs.

        Langfuse refuses a queue without score configs (annotation-queues.ts: `scoreConfigIds`
        at least one, each existing), so without them the queue is reported and skipped.
        """
        name = self.connection.settings.review_queue
        self.queue_id = find_queue(self.rest, name)
        if self.queue_id is None:
            ids = [self.config_ids[config] for config in REVIEW_CONFIGS if config in self.config_ids]
            if not ids:
                self.report.problems.append(
                    f"annotation queue {name} not created: it needs the score configs {', '.join(REVIEW_CONFIGS)}, "
                    "and none exists; run `penpal-eval langfuse setup`, then push again")
                return
            self.queue_id = create_queue(self.rest, name, ids)
        self._queued = queued_trace_ids(self.rest, self.queue_id)

    # --- the cases ----------------------------------------------------------------------------------
    def add_case(self, case: CaseResult) -> None:
        """Emit the case's traces (if new or changed) and queue its scores and review items.

        Never raises: the run store has the case, and a case that cannot be published is named
        in the report (and sent again by the next push).
        """
        if case.status != "ok":
            self.report.failed_cases_skipped += 1
            return
        try:
            self._add_turns(case)
            self._safety += [key for key in safety_queue_objects(case, self.run_id)
                             if key not in self.ledger.safety_items and key not in self._safety]
        except Exception as error:  # noqa: BLE001 - one unpublishable case must not stop a run or a push
            self.report.problems.append(f"{case.case_id}: not published: {type(error).__name__}: {error}")

    def _spans_to_send(self, trace_id: str, span_ids: list[str]) -> list[str]:
        """The spans of a trace this push sends: those Langfuse does not have (all of them on a
        republish). A trace a ledger from before per-span records holds counts as delivered."""
        if self.republish:
            self.connection.exporter.resend(int(span_id, 16) for span_id in span_ids)
            return span_ids
        if trace_id in self.ledger.traces and not any(span_id in self.ledger.spans for span_id in span_ids):
            return []
        return [span_id for span_id in span_ids if span_id not in self.ledger.spans]

    def _add_turns(self, case: CaseResult) -> None:
        experiment = self.experiments.get(case.prompt_version)
        starts = turn_starts(case, self.timestamp)
        for turn, start in zip(case.turns, starts, strict=True):
            trace_id = turn_trace_id(self.run_id, case.prompt_version, play_id(case), turn.index)
            span_ids = tuple(turn_span_ids(trace_id, turn))
            to_send = self._spans_to_send(trace_id, list(span_ids))
            if to_send:
                item_id = self.dataset.item_id(case.scenario_id, turn.index) if self.dataset else None
                with self.ledger.lock:
                    self._span_traces.update((span_id, (trace_id, span_ids)) for span_id in to_send)
                trace = emit_turn(self.connection.client, run_id=self.run_id, case=case, turn=turn, rubric=self.rubric,
                                  prompt=self.prompts.get(case.prompt_version),
                                  scenario=self.scenarios.get(case.scenario_id), start_ns=start, item_id=item_id,
                                  experiment=experiment)
                self._traces.append(_PendingTrace(trace, tuple(to_send)))
            else:
                self.report.traces_unchanged += 1
            self.add_scores(turn_scores(case=case, turn=turn, trace_id=trace_id, rubric=self.rubric,
                                        timestamp=self.timestamp, environment=self.connection.environment,
                                        run_id=self.run_id))
            if self.queue_id and review_reasons(turn) and trace_id not in self._queued:
                self._review.append(trace_id)
                self._queued.add(trace_id)
        self.add_scores(conversation_scores(case=case, session=session_id(self.run_id, case.prompt_version,
                                                                          play_id(case)),
                                            rubric=self.rubric, timestamp=self.timestamp,
                                            environment=self.connection.environment, run_id=self.run_id))

    def add_scores(self, records: Iterable[ScoreRecord]) -> None:
        """Queue scores that Langfuse does not have yet in this form (all of them with resend_all)."""
        for record in records:
            body = record.body(self.config_ids)
            if self.resend_all or self.ledger.scores.get(record.id) != body_fingerprint(body):
                self._scores[record.id] = body
            else:
                self.report.scores_unchanged += 1

    def add_stored_cases(self, cases: Iterable[CaseResult]) -> int:
        """Queue what finished cases of the run store still owe Langfuse (a resumed run: the
        interrupted one may have been killed before its delivery); a case the ledger shows
        delivered costs nothing. Cases that will run again are left to the run. Returns how many
        cases were queued."""
        finished = [case for case in cases if case.finished]
        for case in finished:
            self.add_case(case)
        return len(finished)

    def waiting(self) -> tuple[int, int]:
        """(spans, scores) queued and not yet confirmed by Langfuse: what a later push must send."""
        with self.ledger.lock:
            spans = sum(span_id not in self.ledger.spans for pending in self._traces for span_id in pending.to_send)
            scores = sum(self.ledger.scores.get(score_id) != body_fingerprint(body)
                         for score_id, body in self._scores.items())
        return spans, scores

    def _spans_delivered(self, spans: list[tuple[int, int]]) -> None:
        """The export thread's news: Langfuse took these spans. Record them now (an atomic rewrite
        of the ledger per batch), so a kill after this moment never sends them again."""
        with self.ledger.lock:
            recorded = False
            for span_id, start_ns in spans:
                key = format(span_id, "016x")
                owner = self._span_traces.get(key)
                if owner is None:  # not one of this publisher's spans
                    continue
                trace_id, trace_spans = owner
                self.ledger.spans[key] = start_ns  # the planned start: the record's, not the clock's
                if all(known in self.ledger.spans for known in trace_spans):
                    self.ledger.traces[trace_id] = "delivered"
                recorded = True
            if recorded:
                self.ledger.save()

    # --- the end ---------------------------------------------------------------------------------------
    def deliver(self) -> DeliveryReport:
        """Flush spans (bounded), send scores and review items, record what arrived."""
        report = self.report
        if not self.connection.flush():
            report.problems.append(f"Langfuse did not take the spans within {self.connection.settings.flush_timeout_s:g} s")
        with self.ledger.lock:
            for pending in self._traces:
                delivered = self.connection.exporter.delivered(int(span_id, 16) for span_id in pending.to_send)
                report.traces_sent += 1
                report.spans_sent += len(pending.to_send)
                report.spans_undelivered += len(pending.to_send) - len(delivered)
                for span_id in pending.to_send:
                    if int(span_id, 16) in delivered:
                        self.ledger.spans[span_id] = pending.trace.spans[span_id]
                if all(span_id in self.ledger.spans for span_id in pending.trace.spans):
                    self.ledger.traces[pending.trace.trace_id] = "delivered"
            self.ledger.save()
        self._send_scores()
        for trace_id in self._review:
            try:
                add_to_queue(self.rest, self.queue_id, trace_id)
            except LangfuseCallFailed as error:
                report.problems.append(str(error))
                continue
            with self.ledger.lock:
                self.ledger.review_items[trace_id] = self.queue_id
            report.review_items_added += 1
        if self._safety:
            self._attempt("safety disagreement queue", self._deliver_safety)
        report.sdk_messages = self.connection.logs.since(self._log_mark)
        self.ledger.pushes.append({"at": utc_now(), **{key: value for key, value in report.to_record().items()
                                                        if key not in ("sdk_messages",)}})
        self.ledger.save()
        self._traces, self._scores, self._review, self._safety = [], {}, [], []
        with self.ledger.lock:
            self._span_traces = {}
        return report

    def _deliver_safety(self) -> None:
        """The safety disagreements to their queue: found by name (or id), else created once with
        the score configs of the flags the judge decides, which is what a reviewer settles. An
        object already in the queue (an earlier push the ledger missed) is not added again."""
        name = self.connection.settings.safety_queue
        queue_id = find_queue(self.rest, name)
        if queue_id is None:
            decided = [flag_name(flag) for flag in self.rubric.judge.safety.combine.decided_flags]
            ids = [self.config_ids[config] for config in decided if config in self.config_ids]
            if not ids:
                self.report.problems.append(
                    f"annotation queue {name} not created: it needs the score configs of the flags the safety judge "
                    "decides, and none exists; run `penpal-eval langfuse setup`, then push again")
                return
            queue_id = create_queue(self.rest, name, ids, SAFETY_QUEUE_DESCRIPTION)
        there = queued_objects(self.rest, queue_id)
        for key in self._safety:
            if key not in there:
                object_type, object_id = key.split(":", 1)
                try:
                    add_to_queue(self.rest, queue_id, object_id, object_type)
                except LangfuseCallFailed as error:
                    self.report.problems.append(str(error))
                    continue
                self.report.safety_items_added += 1
            with self.ledger.lock:
                self.ledger.safety_items[key] = queue_id
                self.ledger.save()

    def _send_scores(self) -> None:
        bodies = self._scores

        def batch_delivered(score_ids: list[str]) -> None:  # recorded per batch: a kill re-sends one batch at most
            with self.ledger.lock:
                for score_id in score_ids:
                    self.ledger.scores[score_id] = body_fingerprint(bodies[score_id])
                self.ledger.save()

        delivery = send_scores(self.rest, bodies.values(), self.configs_by_id, on_batch=batch_delivered)
        self.report.scores_sent += delivery.sent
        self.report.scores_undelivered += delivery.undelivered
        self.report.problems += [problem for problem in delivery.problems if problem not in self.report.problems]
        self.report.notices += [notice for notice in delivery.notices if notice not in self.report.notices]
        with self.ledger.lock:  # scores sent one by one (a server that takes no batches) are recorded here
            for score_id in delivery.delivered:
                self.ledger.scores[score_id] = body_fingerprint(bodies[score_id])


def version_scores(publisher: LangfusePublisher, version: str, values: Mapping[str, float | str | None],
                   comments: Mapping[str, str] | None = None) -> list[ScoreRecord]:
    """Run-level scores of one prompt version, on its experiment (dataset run); [] without one."""
    experiment = publisher.experiments.get(version)
    if experiment is None:
        return []
    definitions = definitions_by_name(publisher.rubric)
    builder = ScoreBuilder(subject=experiment.experiment_id, dataset_run_id=experiment.experiment_id,
                           timestamp=publisher.timestamp, environment=publisher.connection.environment,
                           metadata={"run_id": publisher.run_id, "prompt_version": version})
    for name, value in values.items():
        kind = definitions[name].data_type
        comment = (comments or {}).get(name)
        if kind == NUMERIC:
            builder.numeric(name, value, comment)
        elif kind == CATEGORICAL:
            builder.categorical(name, value, comment)
    return builder.records


def publisher_for_store(store: RunStore, rubric: Rubric, settings: LangfuseSettings, *,
                        resend_all: bool = False, republish: bool = False) -> LangfusePublisher:
    """A publisher for a stored run; StoreError when the run cannot be pushed faithfully."""
    manifest = store.manifest
    run_rubric = manifest.get("hashes", {}).get("rubric")
    if run_rubric and run_rubric != rubric.content_hash:
        raise StoreError(f"{store.directory}: the run was scored with another rubric ({run_rubric}, now "
                         f"{rubric.content_hash}); push it with --rubric pointing at that rubric file")
    inputs = store.read_inputs()
    if inputs is None:
        raise StoreError(f"{store.directory}: this run predates inputs.json (the prompts and scenarios it was made "
                         "from), so its traces cannot be rebuilt; run the evaluation again to push it")
    return LangfusePublisher(connect(settings), rubric, run_id=manifest.get("run_id") or store.directory.name,
                             inputs=inputs, run_dir=store.directory, timestamp=manifest.get("created_at"),
                             resend_all=resend_all, republish=republish)
