"""Public scoring API: one reply, many records, or a pandas DataFrame.

Bad records never sink a batch: each gets its score or an explicit per-record error with
the reason, and aggregates can skip the unscored ones knowingly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.core.text_safety import Notice, invalid_unicode_notice, valid_text
from evaluators.scoring.contracts import (
    HeuristicResult,
    ReplyCase,
    Unscored,
    validate_json_record,
    validate_strict_record,
)
from evaluators.scoring.heuristics import HeuristicEvaluator, fewer_collections
from evaluators.scoring.reading.text_cache import TextCache

if TYPE_CHECKING:
    import pandas as pd

METRIC_COLUMNS: tuple[str, ...] = (*METRIC_NAMES, OVERALL)
# Records scored together: the texts of a chunk are parsed in one `nlp.pipe` pass, whose
# batching is cheaper the fuller it is (1024 parses in ~3% less time per text than 256). A
# chunk's views are held until it is scored, so this also bounds a stream's working set.
SCORING_CHUNK = 1024


ScoreOutcome = HeuristicResult | Unscored


@lru_cache(maxsize=1)
def default_evaluator() -> HeuristicEvaluator:
    """One evaluator per process: loading spaCy and compiling matchers is the costly part."""
    return HeuristicEvaluator()


def score_reply(
    user_message: str,
    response: str,
    history: Sequence[str] = (),
    *,
    evaluator: HeuristicEvaluator | None = None,
) -> HeuristicResult:
    """Score one reply; raises ValueError for one left unscored (a user message in another language).

    An empty reply scores as silence (`silent_reply`), a reply in another language than the
    user's as `wrong_language`: failures with their flag, not errors."""
    outcome = next(score_records([{"user_message": user_message, "response": response,
                                   "history": list(history)}], evaluator=evaluator))
    if isinstance(outcome, Unscored):
        raise ValueError(outcome.error)
    return outcome


def validate_record(record: object, fallback_id: str, *, strict: bool = False) -> ReplyCase:
    """A scoring record, or ValueError saying which field is wrong. An empty reply is a record
    (a silent companion, scored by the `silent_reply` flag); a missing one is not.

    `strict` reads it by the `score` command's contract (`StrictReplyRecord`: no unknown key, no
    wrong type, `user_message` required); otherwise unknown keys are ignored, a missing
    `user_message` is empty and a lone string `history` is one turn.
    """
    return validate_record_noting(record, fallback_id, strict=strict)[0]


def validate_record_noting(record: object, fallback_id: str, *, strict: bool = False) -> tuple[ReplyCase, Notice | None]:
    """A scoring record (as `validate_record`) with any text UTF-8 cannot hold replaced
    (text_safety), and the notice that says so."""
    case = validate_strict_record(record) if strict else validate_json_record(ReplyCase, record)
    case, notice = _valid_unicode(case)
    return (case if case.id else case.model_copy(update={"id": fallback_id})), notice


def _valid_unicode(case: ReplyCase) -> tuple[ReplyCase, Notice | None]:
    id_, in_id = valid_text(case.id)
    user, in_user = valid_text(case.user_message)
    response, in_response = valid_text(case.response)
    history = [valid_text(turn) for turn in case.history]
    notice = invalid_unicode_notice([("id", in_id), ("user_message", in_user), ("response", in_response),
                                     ("history", sum(count for _, count in history))])
    if notice is None:
        return case, None
    return case.model_copy(update={"id": id_, "user_message": user, "response": response,
                                   "history": [turn for turn, _ in history]}), notice


def _with_notice(outcome: ScoreOutcome, notice: Notice | None) -> ScoreOutcome:
    if notice is None:
        return outcome
    if isinstance(outcome, Unscored):
        return Unscored(outcome.id, outcome.error, (notice, *outcome.notices))
    return outcome.model_copy(update={"notices": [notice, *outcome.notices]})


def _score_isolated(evaluator: HeuristicEvaluator, cases: list[ReplyCase], cache: TextCache) -> list[ScoreOutcome]:
    """Score `cases` together; when that raises, one at a time, so a record the evaluator cannot
    score costs that record alone, with the reason, and never the valid records of its batch."""
    try:
        return list(evaluator.score_cases(cases, cache=cache))
    except Exception:  # noqa: BLE001 - isolate the culprit below
        pass
    outcomes: list[ScoreOutcome] = []
    for case in cases:
        try:
            outcomes.extend(evaluator.score_cases([case], cache=cache))
        except Exception as error:  # noqa: BLE001 - recorded on the record, the others go on
            outcomes.append(Unscored(case.id, f"scoring failed: {type(error).__name__}: {error}"))
    return outcomes


def score_records(
    records: Iterable[object], *, evaluator: HeuristicEvaluator | None = None, strict: bool = False
) -> Iterator[ScoreOutcome]:
    """Score raw records in order; invalid ones come back as `Unscored` with the reason (`strict`:
    by the `score` command's contract, see `validate_record`).

    Records are scored SCORING_CHUNK at a time through one `TextCache`, so texts that recur
    anywhere in the input (a conversation's earlier turns) share one parse, within the
    cache's bound.
    """
    evaluator = evaluator or default_evaluator()
    cache = TextCache()
    pending: list[tuple[ReplyCase, Notice | None] | Unscored] = []

    def flush() -> Iterator[ScoreOutcome]:
        cases = [item[0] for item in pending if isinstance(item, tuple)]
        scored = iter(_score_isolated(evaluator, cases, cache))
        for item in pending:
            yield _with_notice(next(scored), item[1]) if isinstance(item, tuple) else item
        pending.clear()

    for index, record in enumerate(records):
        fallback_id = str(index)
        try:
            pending.append(validate_record_noting(record, fallback_id, strict=strict))
        except ValueError as error:
            record_id = str(record.get("id", fallback_id)) if isinstance(record, dict) else fallback_id
            pending.append(Unscored(valid_text(record_id)[0], str(error)))
        if len(pending) >= SCORING_CHUNK:
            yield from flush()
    yield from flush()


def without_missing(record: dict) -> dict:
    """Drop the cells pandas fills in for absent values (NaN, None, NA), so field defaults apply."""
    import pandas as pd

    return {key: value for key, value in record.items()
            if not (pd.api.types.is_scalar(value) and pd.isna(value))}


FRAME_COLUMNS: tuple[str, ...] = ("id", *METRIC_COLUMNS, "quality_level", "flags", "evidence", "notices", "error")


def outcome_row(outcome: ScoreOutcome) -> dict:
    """One output row of `score_frame` (and of Ray scoring): the scores, or NaN cells and the reason."""
    if isinstance(outcome, Unscored):
        return {"id": outcome.id, **{c: float("nan") for c in METRIC_COLUMNS},
                "quality_level": None, "flags": [], "evidence": {},
                "notices": [notice.name for notice in outcome.notices], "error": outcome.error}
    record = outcome.to_record()
    return {**record, "flags": [flag["name"] for flag in record["flags"]], "notices": [], "error": None}


def rows_frame(rows: Sequence[dict]) -> pd.DataFrame:
    """The rows as `score_frame`'s DataFrame; pandas is imported here, since one reply needs none."""
    import pandas as pd

    result = pd.DataFrame(list(rows), columns=list(FRAME_COLUMNS))
    # Object dtype keeps None as None; pandas 3 would infer a string column and turn it to NaN.
    result["error"] = pd.Series([row["error"] for row in rows], index=result.index, dtype=object)
    return result


def score_frame(frame: pd.DataFrame, *, evaluator: HeuristicEvaluator | None = None) -> pd.DataFrame:
    """DataFrame in (id, history, user_message, response), DataFrame out (one row per input).

    Output columns: id, the six metrics, overall_quality, quality_level, flags (names),
    evidence (per metric), notices (names, e.g. unsupported_language) and error: None for a
    scored row, else the reason it was not scored (its metric cells are then NaN, so
    aggregates skip it knowingly).
    """
    if "response" not in frame.columns:
        raise ValueError("score_frame: the DataFrame needs a 'response' column")
    records = [without_missing(record) for record in frame.to_dict(orient="records")]
    # The rows too, not only the batches: building them allocates a few dozen small objects
    # per record, which at the default threshold set off the collector's full passes over
    # every parse the batches hold (`fewer_collections`). No caller's code runs inside.
    with fewer_collections():
        rows = [outcome_row(outcome) for outcome in score_records(records, evaluator=evaluator)]
    return rows_frame(rows)
