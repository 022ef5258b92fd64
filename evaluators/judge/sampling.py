"""Which evaluations of a prompt version the LLM judge sees: cost control for production traffic.

Judging every evaluation of live traffic is too expensive, and judging none leaves a new prompt
unchecked. The policy therefore follows a prompt version through three phases:

- calibration: its first `calibration_uses` evaluations are always judged, so a new (or
  changed) prompt is seen before anything is trusted about it;
- established: uses `calibration_uses + 1` .. `established_max_uses` are judged at a sample
  rate of 10-20%, enough to notice a drift at a fraction of the cost;
- trusted: past `established_max_uses`, and only while more than `trusted_min_share` of its
  judged evaluations were acceptable or good, routine judging stops. A version that has not
  earned that share stays established and keeps being sampled.

Whatever the phase, an evaluation with a trigger (a hard flag, a low heuristic score, negative
user feedback) is always judged: triggers are exactly the cases where a judgement matters most.

The counters per version live in a small JSON file, so the phases carry over from one run to the
next; the file is rewritten atomically after every change, so a killed run never leaves it torn.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path

from evaluators.core.locations import write_text_atomic

FORMAT = 1
CALIBRATION, ESTABLISHED, TRUSTED = "calibration", "established", "trusted"
_COUNTERS = ("uses", "judged", "acceptable_or_good", "poor")
_GOOD_VERDICTS = frozenset({"good", "acceptable"})
_RATE_RANGE = (0.10, 0.20)


class SamplingStateError(ValueError):
    """The sampling state file cannot be read or has the wrong shape.

    Raised rather than starting afresh: a silent reset would put every version back into
    calibration and quietly undo what the counters had established.
    """


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class SamplingPolicy:
    """The thresholds of the phases; validated up front so a typo cannot silently stop judging."""

    calibration_uses: int = 5
    established_max_uses: int = 20
    established_rate: float = 0.15
    trusted_min_share: float = 0.8

    def __post_init__(self) -> None:
        if not _is_int(self.calibration_uses) or self.calibration_uses < 0:
            raise ValueError(f"calibration_uses must be an integer >= 0, got {self.calibration_uses!r}")
        if not _is_int(self.established_max_uses) or self.established_max_uses < self.calibration_uses:
            raise ValueError(
                "established_max_uses must be an integer >= calibration_uses "
                f"({self.calibration_uses}), got {self.established_max_uses!r}"
            )
        low, high = _RATE_RANGE
        if not _is_number(self.established_rate) or not low <= self.established_rate <= high:
            raise ValueError(
                f"established_rate must be between {low:.2f} and {high:.2f} inclusive, "
                f"got {self.established_rate!r}"
            )
        if not _is_number(self.trusted_min_share) or not 0 < self.trusted_min_share < 1:
            raise ValueError(
                f"trusted_min_share must be strictly between 0 and 1, got {self.trusted_min_share!r}"
            )


@dataclass(frozen=True)
class SamplingDecision:
    """Whether one evaluation is judged, and why: the reason goes into reports as it stands."""

    judge: bool
    phase: str  # "calibration" | "established" | "trusted": the phase of this use
    reason: str
    use: int  # 1-based use number of this evaluation for the version
    triggered: bool

    def to_record(self) -> dict:
        """The fields as a JSON-able dict, for case records and traces."""
        return asdict(self)


@dataclass
class VersionState:
    """The counters of one prompt version; `prompt_hash` ties them to the prompt text they saw."""

    uses: int = 0
    judged: int = 0
    acceptable_or_good: int = 0
    poor: int = 0
    prompt_hash: str = ""

    @property
    def good_share(self) -> float | None:
        """Share of verdicts that were acceptable or good; None before any verdict is known.

        Only real verdicts count: a failed call or an unreadable verdict says nothing about the
        prompt, so it must neither help nor hurt its way to trusted.
        """
        total = self.acceptable_or_good + self.poor
        return self.acceptable_or_good / total if total else None


def _sampled(version: str, evaluation_id: str, use: int, rate: float) -> bool:
    """A hash, not a random draw: the same evaluation gets the same decision in every run."""
    digest = hashlib.sha256(f"{version}\n{evaluation_id}\n{use}".encode()).hexdigest()
    return int(digest[:8], 16) / 0xFFFFFFFF < rate


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class SamplingState:
    """Per prompt version counters, persisted as JSON at `path` (written atomically: temp file + os.replace).

    A new instance starts empty; use `load` to continue from an earlier run. With `path` None
    the state lives in memory only (tests, dry runs).
    """

    def __init__(self, path: Path | None, policy: SamplingPolicy = SamplingPolicy()) -> None:
        self.path = Path(path) if path is not None else None
        self.policy = policy
        self._versions: dict[str, VersionState] = {}
        self._updated_at: dict[str, str] = {}

    @classmethod
    def load(cls, path: Path, policy: SamplingPolicy = SamplingPolicy()) -> SamplingState:
        """The state saved at `path`, or an empty one if there is no file yet.

        A file that exists but cannot be used raises `SamplingStateError` naming it: resetting
        instead would silently send every version back to calibration.
        """
        path = Path(path)
        state = cls(path, policy)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return state
        except (OSError, UnicodeDecodeError) as error:
            raise SamplingStateError(f"{path}: cannot read the sampling state: {error}") from error
        try:
            data = json.loads(text)
        except ValueError as error:
            raise SamplingStateError(f"{path}: not valid JSON: {error}") from error
        try:
            parsed = _parse(data)
        except SamplingStateError as error:
            raise SamplingStateError(f"{path}: {error}") from None
        for version, (counters, updated_at) in parsed.items():
            state._versions[version] = counters
            if updated_at:
                state._updated_at[version] = updated_at
        return state

    def decide(
        self, version: str, evaluation_id: str, *, triggers: Sequence[str] = (), prompt_hash: str = ""
    ) -> SamplingDecision:
        """Count this use of `version` and say whether the judge should see it; saves the state.

        Synchronous on purpose: concurrent asyncio callers cannot interleave between reading the
        counters and updating them, so no two evaluations get the same use number.
        """
        counters = self._versions.setdefault(version, VersionState())
        if prompt_hash and prompt_hash != counters.prompt_hash:
            if counters.prompt_hash:  # the prompt text changed: what was learnt no longer applies
                counters = self._versions[version] = VersionState()
            counters.prompt_hash = prompt_hash
        use = counters.uses + 1
        phase = self._phase_of(counters, use)
        reasons = [str(trigger) for trigger in triggers if str(trigger).strip()]
        if reasons:
            judge, reason = True, "triggered: " + "; ".join(reasons)
        else:
            judge, reason = self._routine(version, evaluation_id, counters, use, phase)
        counters.uses = use
        if judge:
            counters.judged += 1
        self._touch(version)
        return SamplingDecision(judge=judge, phase=phase, reason=reason, use=use, triggered=bool(reasons))

    def record_verdict(self, version: str, verdict: str | None) -> None:
        """Count the verdict of a judgement of `version`; saves the state.

        None (a failed call, a verdict that could not be read) counts nothing: it is no evidence
        either way about the prompt.
        """
        if verdict is None:
            return
        if verdict not in _GOOD_VERDICTS and verdict != "poor":
            raise ValueError(f"verdict must be 'good', 'acceptable', 'poor' or None, got {verdict!r}")
        counters = self._versions.setdefault(version, VersionState())
        if verdict in _GOOD_VERDICTS:
            counters.acceptable_or_good += 1
        else:
            counters.poor += 1
        self._touch(version)

    def phase(self, version: str) -> str:
        """The phase the next use of `version` would be in (for display)."""
        counters = self._versions.get(version, VersionState())
        return self._phase_of(counters, counters.uses + 1)

    def snapshot(self) -> dict[str, dict]:
        """Version -> counters, share of good verdicts and current phase, for reports."""
        return {
            version: {
                **asdict(counters),
                "good_share": counters.good_share,
                "phase": self.phase(version),
                "updated_at": self._updated_at.get(version, ""),
            }
            for version, counters in sorted(self._versions.items())
        }

    def save(self) -> None:
        """Write the state to `path` atomically (no-op in memory): a reader never sees half a file."""
        if self.path is None:
            return
        versions = {
            version: {**asdict(counters), "updated_at": self._updated_at.get(version, "")}
            for version, counters in sorted(self._versions.items())
        }
        text = json.dumps({"format": FORMAT, "versions": versions}, indent=2, ensure_ascii=False) + "\n"
        write_text_atomic(self.path, text)

    def _touch(self, version: str) -> None:
        self._updated_at[version] = _now()
        self.save()

    def _phase_of(self, counters: VersionState, use: int) -> str:
        policy = self.policy
        if use <= policy.calibration_uses:
            return CALIBRATION
        if use <= policy.established_max_uses:
            return ESTABLISHED
        share = counters.good_share
        return TRUSTED if share is not None and share > policy.trusted_min_share else ESTABLISHED

    def _routine(
        self, version: str, evaluation_id: str, counters: VersionState, use: int, phase: str
    ) -> tuple[bool, str]:
        """The decision without triggers, with a reason a reader of a report can check."""
        policy = self.policy
        share = counters.good_share
        share_text = "no verdicts yet" if share is None else f"{share:.0%} acceptable or good"
        if phase == CALIBRATION:
            return True, f"calibration: use {use} of {policy.calibration_uses} is always judged"
        if phase == TRUSTED:
            return False, f"trusted: {counters.uses} uses, {share_text}; routine judging stopped"
        sampled = _sampled(version, evaluation_id, use, policy.established_rate)
        if use <= policy.established_max_uses:
            window = f"uses {policy.calibration_uses + 1}-{policy.established_max_uses}"
        else:  # past the window but not trusted: say why, since it is not the usual case
            window = f"use {use}; {share_text}, trusted needs more than {policy.trusted_min_share:.0%}"
        outcome = "sampled" if sampled else "not sampled"
        return sampled, f"established: {outcome} ({policy.established_rate:.0%} of {window})"


def _parse(data: object) -> dict[str, tuple[VersionState, str]]:
    """Check the file's shape field by field, so a bad file is reported, never half-used."""
    if not isinstance(data, dict):
        raise SamplingStateError(f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise SamplingStateError(f"unsupported format {data.get('format')!r} (expected {FORMAT})")
    versions = data.get("versions")
    if not isinstance(versions, dict):
        raise SamplingStateError("'versions' must be an object of version -> counters")
    parsed: dict[str, tuple[VersionState, str]] = {}
    for version, entry in versions.items():
        if not isinstance(entry, dict):
            raise SamplingStateError(f"version {version!r}: expected an object, got {type(entry).__name__}")
        for name in _COUNTERS:
            value = entry.get(name)
            if not _is_int(value) or value < 0:
                raise SamplingStateError(f"version {version!r}: {name!r} must be an integer >= 0, got {value!r}")
        for name in ("prompt_hash", "updated_at"):
            if not isinstance(entry.get(name, ""), str):
                raise SamplingStateError(f"version {version!r}: {name!r} must be a string")
        counters = VersionState(**{field.name: entry.get(field.name, "") for field in fields(VersionState)})
        parsed[version] = (counters, entry.get("updated_at", ""))
    return parsed
