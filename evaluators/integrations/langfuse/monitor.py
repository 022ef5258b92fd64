"""Monitoring production: the companion's live replies, read from Langfuse, scored by the
heuristics and (under the sampling policy) the judge, with the scores written back.

A production reply is a generation observation: its input is the chat messages the
companion was sent (OpenAI style, as Langfuse's integrations record them) and its output
the reply. Scores go on its trace and observation with ids derived from the observation,
and timestamped with the observation's start, so a second pass updates rather than adds.

Each scored reply also gets a `rubric_version` marker whose id includes the rubric's content
hash; it is written only after the reply's other scores were accepted. A pass first reads the
markers of its window and skips replies already scored under the same rubric, so running
the monitor twice adds nothing, and changing the rubric scores everything again.

Langfuse v4 reads observations from GET /api/public/v2/observations and scores from
GET /api/public/v3/scores (the SDK's `api.observations.get_many` and `api.scores.get_many`).

Production only, by default: the suite's own evaluation traces (environment `penpal-eval`)
live in the same project, and scoring them again would add a second overall quality to
every evaluated turn. The observations API's structured `filter` (which wins over its query
parameters, fern/apis/server/definition/observations-v2.yml) leaves that environment out on
the server; `include_evaluation` or naming it reads it. The report says which environments
were read and how many replies each gave.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from statistics import fmean

from evaluators.core.problems import did_you_mean
from evaluators.core.text_safety import valid_text
from evaluators.integrations.langfuse.ids import score_id
from evaluators.integrations.langfuse.rest import LangfuseCallFailed, LangfuseRest
from evaluators.integrations.langfuse.score_configs import RUBRIC_VERSION, ensure_score_configs, score_definitions
from evaluators.integrations.langfuse.scores import ScoreBuilder, heuristic_scores, judge_scores, send_scores
from evaluators.judge.client import LLMJudge
from evaluators.judge.result import HistoryItem
from evaluators.judge.sampling import SamplingState
from evaluators.rubric.loader import Rubric
from evaluators.run.production import ProductionReply, score_production
from evaluators.scoring.contracts import HeuristicResult, ReplyCase, Unscored
from evaluators.scoring.heuristics import HeuristicEvaluator
from evaluators.store.records import TurnResult

DEFAULT_FEEDBACK_SCORE = "user_feedback"
EVALUATION_ENVIRONMENT = "penpal-eval"  # where the suite's own runs go (LangfuseConnection's environment)
# What score ingestion takes as an environment (PublicEnvironmentName in
# packages/shared/src/server/ingestion/types.ts); an OTel app may have sent another name.
_SCORE_ENVIRONMENT = re.compile(r"^(?!langfuse)[a-z0-9_-]{1,40}$")
_NEGATIVE_WORDS = frozenset({"negative", "thumbs_down", "down", "bad", "-1", "false", "no"})


def _decoded(value: object) -> object:
    """Input or output as JSON when it is JSON text: Langfuse v4 returns them as raw strings."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text(content: object) -> str | None:
    """Message content as text: a string, or the text parts of a content list; made valid
    (text_safety), since production text can carry what UTF-8 cannot hold."""
    if isinstance(content, str):
        return valid_text(content)[0]
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, Mapping) and part.get("type") == "text"]
        return valid_text(" ".join(part for part in parts if isinstance(part, str)))[0] or None
    return None


def _messages(value: object) -> list[Mapping] | None:
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, list) and all(isinstance(item, Mapping) for item in value):
        return list(value)
    return None


def _reply_text(output: object) -> str | None:
    if isinstance(output, str):
        return valid_text(output)[0]
    if isinstance(output, Mapping):
        if "content" in output:
            return _text(output["content"])
        choices = output.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            return _reply_text(choices[0].get("message"))
    messages = _messages(output)
    return _text(messages[-1].get("content")) if messages else None


# The chat message the contract reads (OpenAI's chat-completions message): its keys and roles.
MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id", "function_call", "refusal", "audio")
MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _kind(value: object) -> str:
    return "null" if value is None else {str: "a string", list: "a list", dict: "an object", bool: "true or false",
                                         int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def contract_problems(observation) -> list[str]:
    """Where a generation's input breaks the chat-message contract: an unknown key or role (with the
    one most likely meant), a content that is neither text nor a list of parts. `--lenient` skips
    this and reads what it can, as before."""
    messages = _messages(_decoded(observation.input))
    problems = []
    for index, message in enumerate(messages or []):
        where = f"input.messages[{index}]"
        problems += [f"{where}.{key}: unknown key{did_you_mean(str(key), MESSAGE_KEYS)}"
                     for key in message if key not in MESSAGE_KEYS]
        role = message.get("role")
        if "role" not in message:
            problems.append(f"{where}.role: missing")
        elif not isinstance(role, str):
            problems.append(f"{where}.role: expected a string, got {_kind(role)}")
        elif role not in MESSAGE_ROLES:
            problems.append(f"{where}.role: unknown role {role!r}{did_you_mean(role, MESSAGE_ROLES)}")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            problems.append(f"{where}.content: expected text or a list of parts, got {_kind(content)}")
    return problems


def read_reply(observation) -> ProductionReply | str:
    """The reply on a generation, or the reason it cannot be read (counted, never guessed at).

    An output whose text is empty is silence, a reply like any other (scored by `silent_reply`);
    an output with no text at all (none, or a tool call) is not a reply.
    """
    source, output = _decoded(observation.input), _decoded(observation.output)
    messages = [{"role": "user", "content": source}] if isinstance(source, str) and source.strip() else _messages(source)
    if not messages:
        return "input is not a list of chat messages"
    users = [index for index, message in enumerate(messages) if message.get("role") == "user"]
    if not users:
        return "no user message in the input"
    user_message = _text(messages[users[-1]].get("content"))
    reply = _reply_text(output)
    if not user_message or reply is None:
        return "no user message text" if not user_message else "no reply text in the output"
    history = tuple(HistoryItem(role="user" if message.get("role") == "user" else "companion",
                                text=_text(message.get("content")) or "")
                    for message in messages[:users[-1]] if message.get("role") in ("user", "assistant"))
    version = (f"{observation.prompt_name}@{observation.prompt_version}" if observation.prompt_name
               else observation.version or "production")
    return ProductionReply(observation.id, observation.trace_id, observation.start_time, user_message, history,
                           reply, observation.model or "", version, observation.environment)


def marker_id(observation_id: str, rubric: Rubric) -> str:
    return score_id(observation_id, f"{RUBRIC_VERSION}/{rubric.content_hash}")


def observation_filter(since: datetime, *, name: str | None, environment: str | None,
                       include_evaluation: bool = False) -> list[dict]:
    """The structured filter for the generations to score: since `since`, of `name`, in
    `environment` when one is named, else in every environment but the suite's own."""
    conditions: list[dict] = [{"type": "string", "column": "type", "operator": "=", "value": "GENERATION"},
                              {"type": "datetime", "column": "startTime", "operator": ">=",
                               "value": since.isoformat()}]
    if name:
        conditions.append({"type": "string", "column": "name", "operator": "=", "value": name})
    if environment:
        conditions.append({"type": "stringOptions", "column": "environment", "operator": "any of",
                           "value": [environment]})
    elif not include_evaluation:
        conditions.append({"type": "stringOptions", "column": "environment", "operator": "none of",
                           "value": [EVALUATION_ENVIRONMENT]})
    return conditions


def list_generations(rest: LangfuseRest, since: datetime, *, name: str | None, environment: str | None,
                     include_evaluation: bool = False) -> list:
    """Every generation observation to score (see observation_filter)."""
    conditions = observation_filter(since, name=name, environment=environment, include_evaluation=include_evaluation)
    return rest.cursor_pages(rest.api.observations.get_many, filter=json.dumps(conditions),
                             fields="core,basic,io,model,prompt", what="list production generations")


def score_environment(environment: str | None) -> str | None:
    """The observation's environment for its scores, or None (the server's "default") when
    score ingestion would refuse the name."""
    return environment if environment and _SCORE_ENVIRONMENT.match(environment) else None


def list_scores(rest: LangfuseRest, since: datetime, name: str) -> list:
    return rest.cursor_pages(rest.api.scores.get_many, name=name, from_timestamp=since, fields="subject",
                             what=f"list {name} scores")


def negative_feedback(scores: Sequence) -> dict[str, str]:
    """Trace id -> 'negative' for traces whose feedback score is negative (0 or less, false, thumbs down)."""
    negative = {}
    for score in scores:
        value = getattr(score, "value", None)
        bad = (value is False or (isinstance(value, int | float) and not isinstance(value, bool) and value <= 0)
               or (isinstance(value, str) and value.strip().lower() in _NEGATIVE_WORDS))
        subject = getattr(score, "subject", None)
        trace_id = getattr(subject, "trace_id", None) or (getattr(subject, "id", None)
                                                          if getattr(subject, "kind", None) == "trace" else None)
        if bad and trace_id:
            negative[trace_id] = "negative"
    return negative


@dataclass
class MonitorReport:
    fetched: int = 0
    environments: Counter[str] = field(default_factory=Counter)  # replies read per environment
    evaluation_left_out: bool = True  # the suite's own environment was not read
    already_scored: int = 0
    unreadable: dict[str, int] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)  # observation id -> how its input breaks the contract
    scored: int = 0
    judged: int = 0
    not_judged_by_policy: int = 0
    judge_failed: int = 0
    scores_sent: int = 0
    scores_undelivered: int = 0
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # about the server; nothing was lost
    heuristic_mean: float | None = None
    judge_mean: float | None = None
    flagged: int = 0

    def lines(self) -> list[str]:
        unreadable = sum(self.unreadable.values())
        read = ", ".join(f"{name} ({count})" for name, count in self.environments.most_common()) or "none"
        left_out = (f"; {EVALUATION_ENVIRONMENT} (the suite's own runs) left out, --include-evaluation reads it"
                    if self.evaluation_left_out else "")
        lines = [f"{self.fetched} production replies read; {self.already_scored} already scored under this rubric; "
                 f"{unreadable} unreadable; " + (f"{len(self.invalid)} breaking the chat-message contract; "
                                                  if self.invalid else "")
                 + f"{self.scored} scored now ({self.flagged} with a hard flag)",
                 f"environments read: {read}{left_out}",
                 f"judge: {self.judged} judged, {self.not_judged_by_policy} left out by the sampling policy, "
                 f"{self.judge_failed} failed",
                 f"scores: {self.scores_sent} sent, {self.scores_undelivered} not delivered"]
        if self.heuristic_mean is not None:
            judge = f", judge {self.judge_mean:.2f}" if self.judge_mean is not None else ""
            lines.append(f"mean overall quality of the replies scored now: heuristics {self.heuristic_mean:.2f}{judge}")
        lines += [f"unreadable ({count}): {reason}" for reason, count in self.unreadable.items()]
        lines += [f"warning: {notice}" for notice in self.notices]
        lines += [f"not read (observation {observation}): {reason}; --lenient reads it anyway"
                  for observation, reason in self.invalid.items()]
        lines += [f"problem: {problem}" for problem in self.problems]
        return lines


def _score_configs(rest: LangfuseRest, rubric: Rubric, report: MonitorReport) -> tuple[dict[str, str], dict]:
    """The config ids to put on scores and the configs to check them against; a config that
    cannot be had costs its scores their configId, never the pass (the problem is reported)."""
    try:
        setup = ensure_score_configs(rest, score_definitions(rubric))
    except LangfuseCallFailed as error:
        report.problems.append(f"score configs: {error}; scores are sent without a configId")
        return {}, {}
    report.problems += [f"score configs: {problem}" for problem in setup.problems()]
    return setup.ids, {config.id: config for config in setup.configs.values()}


def monitor(rest: LangfuseRest, evaluator: HeuristicEvaluator, since: datetime, *, judge: LLMJudge | None,
            sampling: SamplingState | None, name: str | None = None, environment: str | None = None,
            include_evaluation: bool = False, feedback_score: str = DEFAULT_FEEDBACK_SCORE,
            score_cases: Callable[[list[ReplyCase]], Iterable[HeuristicResult | Unscored]] | None = None,
            strict: bool = True) -> MonitorReport:
    """One pass: read, skip what is scored, score the rest, write the scores back.

    `strict`: a generation whose input breaks the chat-message contract (`contract_problems`) is
    not read, and named in the report; the rest are scored.

    The scoring is evaluators.run.production's; this reads the replies and writes the scores.
    The judge, when given, is closed at the end of the pass. `score_cases` scores elsewhere
    (on Ray: evaluators.integrations.scale); by default the evaluator scores here.
    """
    rubric = evaluator.rubric
    report = MonitorReport()
    config_ids, configs = _score_configs(rest, rubric, report)
    generations = list_generations(rest, since, name=name, environment=environment,
                                   include_evaluation=include_evaluation)
    report.fetched = len(generations)
    report.environments = Counter(observation.environment or "default" for observation in generations)
    report.evaluation_left_out = not environment and not include_evaluation
    unfit = sorted(read for read in report.environments if read != "default" and score_environment(read) is None)
    if unfit:
        report.notices.append(f"environment {', '.join(unfit)}: not a name score ingestion takes (a-z, 0-9, _ and -, "
                              "at most 40, not starting with langfuse), so those replies' scores go without one "
                              "(the server's default)")
    done = {score.id for score in list_scores(rest, since, RUBRIC_VERSION)}
    feedback = negative_feedback(list_scores(rest, since, feedback_score)) if feedback_score else {}
    replies: list[ProductionReply] = []
    for observation in generations:
        if strict and (problems := contract_problems(observation)):
            report.invalid[observation.id] = "; ".join(problems)
            continue
        reply = read_reply(observation)
        if isinstance(reply, str):
            report.unreadable[reply] = report.unreadable.get(reply, 0) + 1
        elif marker_id(reply.observation_id, rubric) in done:
            report.already_scored += 1
        else:
            replies.append(reply)
    scored = score_production(replies, evaluator, judge=judge, sampling=sampling, feedback=feedback,
                              score_cases=score_cases)
    for reason, count in scored.unscored.items():
        report.unreadable[reason] = report.unreadable.get(reason, 0) + count
    report.judged, report.judge_failed = scored.judged, scored.judge_failed
    report.not_judged_by_policy = scored.not_judged_by_policy
    replies, heuristics, judgements = scored.replies, scored.heuristics, scored.judgements
    if not replies:
        return report
    bodies_by_reply: dict[str, list[dict]] = {}
    for reply, result in zip(replies, heuristics, strict=True):
        record = result.to_record()
        turn = TurnResult(index=0, user=reply.user_message, reply=reply.reply, model=reply.model, heuristics=record)
        builder = ScoreBuilder(subject=reply.observation_id, trace_id=reply.trace_id,
                               observation_id=reply.observation_id, timestamp=reply.started.isoformat(),
                               environment=score_environment(reply.environment),
                               metadata={"rubric_version": f"{rubric.version}+{rubric.content_hash}",
                                         "source": "penpal-eval monitor"})
        heuristic_scores(builder, turn, rubric)
        judgement = judgements.get(reply.observation_id)
        judge_scores(builder, judgement.to_record() if judgement else None, rubric)
        bodies_by_reply[reply.observation_id] = [score.body(config_ids) for score in builder.records]
        report.flagged += bool(result.flags)
    delivery = send_scores(rest, [body for bodies in bodies_by_reply.values() for body in bodies], configs)
    delivered = set(delivery.delivered)
    markers = []
    for reply in replies:
        if all(body["id"] in delivered for body in bodies_by_reply[reply.observation_id]):
            markers.append({"id": marker_id(reply.observation_id, rubric), "name": RUBRIC_VERSION,
                            "value": f"{rubric.version}+{rubric.content_hash}", "dataType": "CATEGORICAL",
                            "traceId": reply.trace_id, "observationId": reply.observation_id,
                            "timestamp": reply.started.isoformat(),
                            "environment": score_environment(reply.environment),
                            "comment": "scored by penpal-eval monitor under this rubric"})
    marker_delivery = send_scores(rest, [{key: value for key, value in marker.items() if value is not None}
                                         for marker in markers])
    report.scored = len(replies)
    report.scores_sent = delivery.sent + marker_delivery.sent
    report.scores_undelivered = delivery.undelivered + marker_delivery.undelivered
    report.problems += delivery.problems + marker_delivery.problems
    report.notices += delivery.notices + marker_delivery.notices
    report.heuristic_mean = round(fmean(result.overall_quality for result in heuristics), 4)
    usable = [result.overall for result in judgements.values() if result.usable]
    report.judge_mean = round(fmean(usable), 4) if usable else None
    return report
