"""Reading the judge's answer: the JSON schema we ask for, and a lenient parser for what comes back.

Models answer in many shapes: clean JSON, JSON in a code fence, a score out of ten, the
rubric's own `Score: X.X | Reasoning: ...` line. All of these are read; what cannot be read
raises `VerdictParseError` with the problem, which goes back to the judge as a repair request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from evaluators.core.names import METRIC_NAMES
from evaluators.judge.agreement import verdict_for
from evaluators.rubric.loader import VERDICTS, Rubric

SCHEMA_NAME = "companion_reply_verdict"
REASONING_MAX_CHARS = 500  # bounds a small model's rambling where the server enforces lengths


class VerdictParseError(ValueError):
    """The judge's answer holds no readable verdict; the message says what is wrong."""


@dataclass(frozen=True)
class ParsedVerdict:
    reasoning: str
    overall: float
    verdict: str
    failure_mode: str | None = None
    dimensions: dict[str, float | None] = field(default_factory=dict)
    form: str = "json"  # "json" or "text": how the answer was written


def verdict_schema(rubric: Rubric, *, strict: bool) -> dict:
    """The JSON schema of a verdict, reasoning first.

    `strict` is OpenAI's structured-output dialect (every key required, no length limits);
    the loose form adds length bounds that grammar-constrained servers such as llama.cpp
    enforce, so a small model cannot ramble past max_tokens and truncate its own JSON.
    """
    score = {"type": "number", "enum": rubric.judge.score_grid()}
    reasoning: dict = {"type": "string"}
    if not strict:
        reasoning |= {"minLength": 20, "maxLength": REASONING_MAX_CHARS}
    properties = {"reasoning": reasoning, **{name: score for name in METRIC_NAMES}, "overall": score,
                  "verdict": {"type": "string", "enum": list(reversed(VERDICTS))},
                  "failure_mode": {"anyOf": [{"type": "string", "enum": list(rubric.judge.failure_modes)},
                                             {"type": "null"}]}}
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


# --- parsing -------------------------------------------------------------------------------------
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_NUMBER = r"(-?\d+(?:\.\d+)?)"
_SCORE_LINE = re.compile(rf"(?i)\b(?:overall\s+)?score\s*[:=]\s*{_NUMBER}(?:\s*/\s*(10|5|1(?:\.0)?)\b)?")
# Reasoning runs until a line that starts another field: "Label: 0.8", "Verdict: good", "Failure mode: ...".
_REASONING = re.compile(r"(?is)\breasoning\s*[:=]\s*(.+?)(?=\n\s*(?:[a-z][\w &-]{1,40}\s*[:=]\s*(?:-?\d|good\b|"
                        r"acceptable\b|poor\b)|failure[ _-]?mode\s*[:=])|\Z)")
_VERDICT_LINE = re.compile(r"(?i)\bverdict\s*[:=]\s*\**\s*(good|acceptable|poor)\b")
_FAILURE_LINE = re.compile(r"(?i)\bfailure[ _-]?mode\s*[:=]\s*\**\s*([a-z][a-z _-]*[a-z])")


def _key(name: str) -> str:
    return re.sub(r"[\s-]+", "_", name.strip().lower())


def _score(value: object, what: str) -> float:
    """A 0-1 score; lenient about strings and about scores out of ten."""
    if isinstance(value, bool):
        raise VerdictParseError(f"{what} is {value!r}, not a number")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise VerdictParseError(f"{what} is {value!r}, not a number") from None
    if not isinstance(value, int | float) or value != value:
        raise VerdictParseError(f"{what} is {value!r}, not a number")
    if 1.0 < value <= 10.0:
        value = value / 10.0  # "8" on a 0-1 scale is a score out of ten
    if not 0.0 <= value <= 1.0:
        raise VerdictParseError(f"{what} is {value}, outside 0.0-1.0")
    return round(float(value), 4)


def _failure_mode(text: object, rubric: Rubric) -> str | None:
    if not isinstance(text, str):
        return None
    name = re.sub(r"[\s_]+", "-", text.strip().lower())
    return name if name in rubric.judge.failure_modes else None


def _finish(rubric: Rubric, reasoning: str, overall: float, verdict: object, failure: object,
            dimensions: dict[str, float | None], form: str) -> ParsedVerdict:
    verdict = verdict.strip().lower() if isinstance(verdict, str) else None
    if verdict not in VERDICTS:
        verdict = verdict_for(overall, rubric.judge.verdict_bands)  # read from the score it gave
    failure_mode = _failure_mode(failure, rubric) if verdict == "poor" else None
    return ParsedVerdict(reasoning.strip(), overall, verdict, failure_mode, dimensions, form)


def json_object(text: str) -> dict | None:
    """The answer's JSON object: whole, fenced, or embedded in prose; None when there is none."""
    stripped = _FENCE.sub("", text.strip())
    candidates = [stripped]
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        candidates.append(stripped[start:end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate, strict=False)  # raw newlines inside strings are common
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _from_json(data: dict, rubric: Rubric) -> ParsedVerdict:
    flat = {_key(str(name)): value for name, value in data.items()}
    for nested in ("scores", "dimensions"):
        if isinstance(flat.get(nested), dict):
            flat |= {_key(str(name)): value for name, value in flat[nested].items()}
    titles = {_key(rubric.dimensions[name].title): name for name in METRIC_NAMES}
    for title, name in titles.items():
        if title in flat and name not in flat:
            flat[name] = flat[title]
    overall_key = next((key for key in ("overall", "overall_score", "score", "overall_quality") if key in flat), None)
    if overall_key is None:
        raise VerdictParseError('the JSON object has no "overall" score')
    overall = _score(flat[overall_key], "overall")
    dimensions = {name: _score(flat[name], name) if flat.get(name) is not None else None for name in METRIC_NAMES}
    reasoning = flat.get("reasoning")
    reasoning = reasoning if isinstance(reasoning, str) else ""
    return _finish(rubric, reasoning, overall, flat.get("verdict"), flat.get("failure_mode"), dimensions, "json")


def _from_text(text: str, rubric: Rubric) -> ParsedVerdict | None:
    match = _SCORE_LINE.search(text)
    if match is None:
        return None
    value, scale = float(match.group(1)), match.group(2)
    if scale:
        value = value / float(scale)
    overall = _score(value, "Score")
    reasoning_match = _REASONING.search(text)
    reasoning = reasoning_match.group(1) if reasoning_match else ""
    dimensions: dict[str, float | None] = {}
    for name in METRIC_NAMES:
        title = re.escape(rubric.dimensions[name].title).replace(r"\ ", r"\s+")
        found = re.search(rf"(?im)^[\W_]*(?:{title}|{name})[\W_]*[:=]\s*{_NUMBER}", text)
        dimensions[name] = _score(found.group(1), name) if found else None
    verdict = _VERDICT_LINE.search(text)
    failure = _FAILURE_LINE.search(text)
    return _finish(rubric, reasoning, overall, verdict.group(1) if verdict else None,
                   failure.group(1) if failure else None, dimensions, "text")


def parse_verdict(text: str | None, rubric: Rubric) -> ParsedVerdict:
    """The verdict in a judge's answer, from JSON or the rubric's text format."""
    if not text or not text.strip():
        raise VerdictParseError("the answer is empty")
    data = json_object(text)
    if data is not None:
        return _from_json(data, rubric)
    parsed = _from_text(text, rubric)
    if parsed is None:
        raise VerdictParseError('no JSON object and no "Score: X.X" line')
    return parsed
