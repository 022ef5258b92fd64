"""A stored case as Langfuse traces: one trace per evaluated turn, grouped by a session per
scenario conversation, each holding the companion's generation, the heuristics and the judge.

Everything is built from the run store (the record), so a run pushed live and the same run
pushed later with `penpal-eval push` produce the same ids, the same content and the same
times. Langfuse stores observations as append-only events, one row per span id *and start
time*: a span sent again with another start time would be a second observation. So start
times come from the record too (`turn_starts`): the case's conversation is laid out before
the moment it finished, turn after turn, each reply lasting its measured latency, so
latencies in Langfuse are the measured ones and every push names the same instants.

Nothing from the environment goes in: no keys, no endpoints with credentials.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from langfuse import Langfuse, propagate_attributes
from langfuse._client.attributes import LangfuseOtelSpanAttributes as Attributes
from langfuse._client.attributes import _serialize_metadata_value
from opentelemetry import trace as otel_trace

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.inputs.contracts import PromptVersion, Scenario
from evaluators.integrations.langfuse.connection import seeded_span, seeded_trace
from evaluators.integrations.langfuse.ids import (
    fit_propagated,
    observation_id,
    observation_seed,
    session_id,
    turn_trace_id,
)
from evaluators.rubric.loader import Rubric
from evaluators.run.responder import build_messages
from evaluators.store.records import CaseResult, TurnResult, play_id

TRACE_NAME = "penpal-eval"
# SDK 5 JSON-encodes each propagated metadata value (strings too) and drops, with only a log
# line, one whose encoding is longer than this (langfuse/_client/propagation.py).
METADATA_VALUE_LIMIT = 200
_CUT = "…"


def fit_metadata_value(value: str, limit: int = METADATA_VALUE_LIMIT) -> str:
    """The longest start of `value` (marked as cut) whose encoding, as the SDK sends it, fits:
    a 200-character string encodes to 202 characters with its quotes, and escapes add more."""
    if len(_serialize_metadata_value(value)) <= limit:
        return value
    low, high = 0, len(value)
    while low < high:  # the encoding grows with the prefix: the longest prefix that fits
        middle = (low + high + 1) // 2
        if len(_serialize_metadata_value(value[:middle] + _CUT)) <= limit:
            low = middle
        else:
            high = middle - 1
    return value[:low] + _CUT


@dataclass(frozen=True)
class ExperimentLink:
    """Ties a prompt version's traces to its experiment on the scenario dataset."""

    experiment_id: str
    run_name: str
    dataset_id: str
    description: str = ""


@dataclass(frozen=True)
class TurnTrace:
    """What was emitted for one turn: its trace id and its spans (id -> start ns), for delivery checks."""

    case_id: str
    turn: int
    trace_id: str
    spans: Mapping[str, int]  # observation (span) id, 16 hex digits -> start time in ns


def turn_roles(turn: TurnResult) -> list[str]:
    """The observations a turn's trace holds, by seed role."""
    return ["turn", "reply", *(["heuristics"] if turn.heuristics is not None else []),
            *(["judge"] if turn.judge is not None else [])]


def turn_span_ids(trace_id: str, turn: TurnResult) -> list[str]:
    """The span ids a turn's trace is made of, known before anything is emitted."""
    return [observation_id(trace_id, role) for role in turn_roles(turn)]


def _ns(moment: str) -> int | None:
    try:
        parsed = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return int(parsed.timestamp()) * 1_000_000_000 + parsed.microsecond * 1_000 if parsed.tzinfo else None


def turn_starts(case: CaseResult, fallback: str | None) -> list[int]:
    """When each turn's reply began, in ns, from the record alone: the replies laid end to end so
    that the last one ends when the case finished (`fallback`, the run's start, for a case
    without that time). The judge's latency is left out, so judging again moves nothing."""
    end = _ns(case.finished_at) or _ns(fallback or "") or time.time_ns()
    durations = [_nanoseconds(turn.latency_s) for turn in case.turns]
    start = end - sum(durations)
    starts = []
    for duration in durations:
        starts.append(start)
        start += duration
    return starts


def conversation_messages(case: CaseResult, turn: TurnResult, prompt: PromptVersion | None,
                          scenario: Scenario | None) -> list[dict]:
    """The messages the companion was sent for `turn`: system prompt, earlier exchanges, the user."""
    messages = build_messages(prompt, scenario) if prompt is not None and scenario is not None else []
    for earlier in case.turns[:turn.index]:
        messages += [{"role": "user", "content": earlier.user}, {"role": "assistant", "content": earlier.reply}]
    return [*messages, {"role": "user", "content": turn.user}]


def trace_tags(case: CaseResult) -> list[str]:
    tags = [f"version:{case.prompt_version}", f"family:{case.family}", f"age:{case.age_group}"]
    if case.demographic_group != case.age_group:
        tags.append(f"group:{case.demographic_group}")
    if case.safety:
        tags.append("safety")
    return [fit_propagated(tag) for tag in tags]


def trace_metadata(run_id: str, case: CaseResult, turn: TurnResult, rubric: Rubric) -> dict[str, str]:
    """Trace metadata for filtering in Langfuse; short values only, never configuration secrets."""
    values = {
        "run_id": run_id, "prompt_name": case.prompt_name, "prompt_version": case.prompt_version,
        "prompt_source": case.prompt_source, "scenario_id": case.scenario_id, "family": case.family,
        "age_group": case.age_group, "demographic_group": case.demographic_group, "turn": str(turn.index + 1),
        "turns": str(len(case.turns)), "safety": str(case.safety).lower(), "responder": case.responder,
        "rubric_version": f"{rubric.version}+{rubric.content_hash}",
    }
    return {key: fit_metadata_value(value) for key, value in values.items()}


def _experiment_attributes(link: ExperimentLink, item_id: str, root_id: str, case: CaseResult) -> dict[str, str]:
    """The span attributes Langfuse reads experiment items from (as the SDK's experiment runner sets them)."""
    return {
        Attributes.EXPERIMENT_ID: link.experiment_id,
        Attributes.EXPERIMENT_NAME: link.run_name,
        Attributes.EXPERIMENT_DATASET_ID: link.dataset_id,
        Attributes.EXPERIMENT_ITEM_ID: item_id,
        Attributes.EXPERIMENT_ITEM_ROOT_OBSERVATION_ID: root_id,
        Attributes.EXPERIMENT_DESCRIPTION: link.description,
        Attributes.EXPERIMENT_METADATA: json.dumps({"prompt_version": case.prompt_version}),
        Attributes.EXPERIMENT_ITEM_METADATA: json.dumps({"scenario_id": case.scenario_id, "family": case.family}),
    }


def _current_span_id() -> str:
    """The id of the span just started (the current one), as Langfuse will name the observation."""
    return format(otel_trace.get_current_span().get_span_context().span_id, "016x")


def _child(client: Langfuse, seed: str, attributes: Mapping[str, str], start_ns: int, seconds: float = 0.0,
           **options) -> tuple[str, int, int]:
    """One child observation with a seeded id, a planned start and the experiment attributes,
    lasting `seconds` (the measured call); returns its span id, start and end."""
    end = start_ns + _nanoseconds(seconds)
    with seeded_span(seed, start_ns), client.start_as_current_observation(end_on_exit=False, **options) as observation:
        otel_trace.get_current_span().set_attributes(dict(attributes))
        span_id = _current_span_id()
        observation.end(end_time=end)
    return span_id, start_ns, end


def _utc(nanoseconds: int) -> datetime:
    """An epoch time in ns as an aware datetime, in integers (a float loses the microseconds)."""
    seconds, rest = divmod(nanoseconds, 1_000_000_000)
    return datetime.fromtimestamp(seconds, tz=timezone.utc) + timedelta(microseconds=rest // 1_000)


def _nanoseconds(seconds: float | None) -> int:
    """A duration in ns; an unmeasured one (a replayed reply) takes no time."""
    return int(max(seconds or 0.0, 0.0) * 1_000_000_000)


def _heuristics_output(heuristics: Mapping) -> dict:
    return {"scores": {name: heuristics.get(name) for name in (*METRIC_NAMES, OVERALL)},
            "quality_level": heuristics.get("quality_level"),
            "flags": [flag.get("name") for flag in heuristics.get("flags", [])]}


def _reply(client: Langfuse, seed: str, attributes: Mapping[str, str], start_ns: int, case: CaseResult,
           turn: TurnResult, prompt: PromptVersion | None, scenario: Scenario | None) -> tuple[str, int, int]:
    """The companion's generation, linked to its Langfuse prompt version when it came from there."""
    link = ({"name": prompt.langfuse_name, "version": prompt.langfuse_version}
            if prompt is not None and prompt.langfuse_name and prompt.langfuse_version is not None else None)
    usage = ({"input": turn.usage.prompt_tokens, "output": turn.usage.completion_tokens,
              "total": turn.usage.total_tokens} if turn.usage.total_tokens else None)
    parameters = {"temperature": prompt.temperature, "max_tokens": prompt.max_tokens} if prompt else None
    # Langfuse reads time to first token as completion start minus start: its latency charts
    # then show what a voice user waits for. A replayed reply was never timed: no start is set.
    first_token = (None if turn.time_to_first_token_s is None
                   else _utc(start_ns + _nanoseconds(turn.time_to_first_token_s)))
    with propagate_attributes(prompt=link) if link else nullcontext():
        return _child(client, seed, attributes, start_ns, turn.latency_s, name="companion-reply", as_type="generation",
                      model=turn.model, model_parameters=parameters,
                      input=conversation_messages(case, turn, prompt, scenario), output=turn.reply,
                      usage_details=usage, completion_start_time=first_token,
                      metadata={"cached": turn.cached, "attempts": turn.attempts, "responder": case.responder,
                                "latency_measured": turn.latency_s is not None})


def _judge(client: Langfuse, seed: str, attributes: Mapping[str, str], start_ns: int,
           turn: TurnResult) -> tuple[str, int, int]:
    """The judge call: its reasoning and scores, marked ERROR when it failed or fell back."""
    judge = turn.judge or {}
    failed = judge.get("status") == "failed" or judge.get("parse_status") == "fallback"
    return _child(client, seed, attributes, start_ns, judge.get("latency_s") or 0.0, name="penpal-judge",
                  as_type="evaluator",
                  input={"user_message": turn.user, "reply": turn.reply},
                  output={key: judge.get(key) for key in ("reasoning", "dimensions", "overall", "verdict",
                                                         "failure_mode")},
                  metadata={key: judge.get(key) for key in ("model", "parse_status", "mode", "cached", "usage",
                                                           "review")},
                  level="ERROR" if failed else None,
                  status_message=(judge.get("error") or "verdict unreadable: fallback score") if failed else None)


def emit_turn(client: Langfuse, *, run_id: str, case: CaseResult, turn: TurnResult, rubric: Rubric,
              prompt: PromptVersion | None, scenario: Scenario | None, start_ns: int, item_id: str | None = None,
              experiment: ExperimentLink | None = None) -> TurnTrace:
    """Hand one turn's trace to the SDK (exported in the background), starting at `start_ns`
    (from `turn_starts`); returns its spans. The exporter leaves out spans Langfuse already has."""
    trace_id = turn_trace_id(run_id, case.prompt_version, play_id(case), turn.index)
    # The root has no parent (not trace_context, which gives it a random one): Langfuse v4 reads
    # a score's trace version and tags from the trace's parentless event.
    root_manager = client.start_as_current_observation(
        name="companion-turn", as_type="span", input=turn.user, output=turn.reply,
        metadata={"scenario_title": scenario.title if scenario else None}, end_on_exit=False)
    with seeded_trace(trace_id), seeded_span(observation_seed(trace_id, "turn"), start_ns), root_manager as root:
        spans = {_current_span_id(): start_ns}
        attributes = (_experiment_attributes(experiment, item_id, root.id, case)
                      if experiment is not None and item_id is not None else {})
        otel_trace.get_current_span().set_attributes(attributes)
        with propagate_attributes(session_id=session_id(run_id, case.prompt_version, play_id(case)),
                                  tags=trace_tags(case), trace_name=TRACE_NAME,
                                  version=fit_propagated(case.prompt_version),
                                  metadata=trace_metadata(run_id, case, turn, rubric)):
            children = [_reply(client, observation_seed(trace_id, "reply"), attributes, start_ns, case, turn, prompt,
                               scenario)]
            replied = children[0][2]  # the evaluators start when the reply is there
            if turn.heuristics is not None:
                children.append(_child(client, observation_seed(trace_id, "heuristics"), attributes, replied,
                                       name="penpal-heuristics", as_type="evaluator",
                                       input={"user_message": turn.user, "reply": turn.reply},
                                       output=_heuristics_output(turn.heuristics),
                                       metadata={"rubric_version": rubric.version,
                                                 "rubric_hash": rubric.content_hash}))
            if turn.judge is not None:
                children.append(_judge(client, observation_seed(trace_id, "judge"), attributes, replied, turn))
        spans.update({span_id: start for span_id, start, _ in children})
        root.end(end_time=max(end for _, _, end in children))
    return TurnTrace(case.case_id, turn.index, trace_id, spans)
