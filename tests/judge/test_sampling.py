"""The judge sampling policy: phases per prompt version, triggers, and the state file across runs."""

from __future__ import annotations

import json

import pytest

from evaluators.judge.sampling import (
    SamplingDecision,
    SamplingPolicy,
    SamplingState,
    SamplingStateError,
    VersionState,
)


def _use_up(state: SamplingState, version: str, count: int, *, verdict: str | None = "good") -> list[SamplingDecision]:
    """Offer `count` evaluations, recording `verdict` for each one that gets judged."""
    decisions = []
    for index in range(count):
        decision = state.decide(version, f"{version}-eval-{index}")
        if decision.judge:
            state.record_verdict(version, verdict)
        decisions.append(decision)
    return decisions


def _verdicts(state: SamplingState, version: str, good: int, poor: int) -> None:
    for _ in range(good):
        state.record_verdict(version, "good")
    for _ in range(poor):
        state.record_verdict(version, "poor")


def _established_fraction(policy: SamplingPolicy, versions: int = 400) -> float:
    state = SamplingState(None, policy)
    judged = offered = 0
    for number in range(versions):
        for decision in _use_up(state, f"v{number}", 20, verdict=None):
            if 6 <= decision.use <= 20:
                assert decision.phase == "established"
                offered += 1
                judged += decision.judge
    assert offered == versions * 15
    return judged / offered


def test_calibration_uses_are_always_judged_even_at_the_lowest_rate() -> None:
    state = SamplingState(None, SamplingPolicy(established_rate=0.10))
    for number in range(50):
        decisions = _use_up(state, f"v{number}", 5)
        assert [d.use for d in decisions] == [1, 2, 3, 4, 5]
        assert all(d.judge and d.phase == "calibration" and not d.triggered for d in decisions)
    assert state.snapshot()["v0"]["judged"] == 5
    assert decisions[2].reason == "calibration: use 3 of 5 is always judged"


@pytest.mark.parametrize("rate", [0.10, 0.15, 0.20])
def test_established_uses_are_sampled_at_about_the_rate(rate: float) -> None:
    fraction = _established_fraction(SamplingPolicy(established_rate=rate))
    assert abs(fraction - rate) < 0.03, fraction


def test_established_sampling_is_deterministic_on_a_fresh_state() -> None:
    first = [d.to_record() for d in _use_up(SamplingState(None), "support-v3", 20)]
    second = [d.to_record() for d in _use_up(SamplingState(None), "support-v3", 20)]
    assert first == second
    established = [d for d in first if d["phase"] == "established"]
    assert len(established) == 15
    sampled = [d for d in established if d["judge"]]
    assert all(d["reason"] == "established: sampled (15% of uses 6-20)" for d in sampled)
    assert all(d["reason"].startswith("established: not sampled") for d in established if not d["judge"])


def test_sampling_depends_on_the_evaluation_id() -> None:
    # Same version and use number, different ids: the decisions must not all be the same.
    outcomes = set()
    for number in range(60):
        state = SamplingState(None)
        _use_up(state, "v", 5)
        outcomes.add(state.decide("v", f"other-{number}").judge)
    assert outcomes == {True, False}


def test_trusted_after_twenty_uses_with_more_than_80_percent_good_stops_judging() -> None:
    state = SamplingState(None)
    _use_up(state, "v", 20, verdict="good")
    assert state.phase("v") == "trusted"
    judged_before = state.snapshot()["v"]["judged"]
    decisions = [state.decide("v", f"later-{n}") for n in range(30)]
    assert [d.use for d in decisions] == list(range(21, 51))
    assert all(not d.judge and d.phase == "trusted" for d in decisions)
    assert decisions[0].reason.startswith("trusted: 20 uses, 100% acceptable or good")
    assert "routine judging stopped" in decisions[0].reason
    counters = state.snapshot()["v"]
    assert (counters["uses"], counters["judged"]) == (50, judged_before)


def test_not_trusted_before_use_21_even_with_only_good_verdicts() -> None:
    state = SamplingState(None)
    decisions = _use_up(state, "v", 20, verdict="good")
    assert all(d.phase != "trusted" for d in decisions)


def test_just_above_80_percent_is_trusted() -> None:
    state = SamplingState(None)
    _use_up(state, "v", 20, verdict=None)
    _verdicts(state, "v", good=17, poor=4)  # 80.95 %
    assert state.phase("v") == "trusted"
    assert not state.decide("v", "next").judge


def test_exactly_80_percent_is_not_trusted_and_keeps_sampling() -> None:
    state = SamplingState(None)
    _use_up(state, "v", 20, verdict=None)
    _verdicts(state, "v", good=4, poor=1)
    assert state.snapshot()["v"]["good_share"] == pytest.approx(0.8)
    assert state.phase("v") == "established"
    decisions = [state.decide("v", f"later-{n}") for n in range(200)]
    assert all(d.phase == "established" for d in decisions)
    fraction = sum(d.judge for d in decisions) / len(decisions)
    assert 0.05 < fraction < 0.30, fraction
    assert "80% acceptable or good" in decisions[0].reason
    assert "more than 80%" in decisions[0].reason


def test_no_verdicts_after_twenty_uses_is_not_trusted() -> None:
    state = SamplingState(None)
    _use_up(state, "v", 20, verdict=None)
    assert state.phase("v") == "established"
    assert "no verdicts yet" in state.decide("v", "next").reason


def test_trusted_version_is_still_judged_when_triggered() -> None:
    state = SamplingState(None)
    _use_up(state, "v", 20, verdict="good")
    decision = state.decide("v", "crisis", triggers=["hard flag: crisis_without_help"])
    assert decision.judge and decision.triggered
    assert decision.phase == "trusted" and decision.use == 21
    assert decision.reason == "triggered: hard flag: crisis_without_help"
    assert state.snapshot()["v"]["judged"] >= 6


def test_trigger_during_established_is_always_judged() -> None:
    state = SamplingState(None, SamplingPolicy(established_rate=0.10))
    _use_up(state, "v", 5)
    triggers = ["heuristic trust_boundaries 0.40 < 0.5", "negative user feedback"]
    decisions = [state.decide("v", f"e{n}", triggers=triggers) for n in range(15)]
    assert all(d.judge and d.triggered and d.phase == "established" for d in decisions)
    assert "trust_boundaries" in decisions[0].reason and "negative user feedback" in decisions[0].reason


def test_empty_trigger_list_is_not_a_trigger() -> None:
    state = SamplingState(None)
    _use_up(state, "v", 20, verdict="good")
    decision = state.decide("v", "x", triggers=[])
    assert not decision.judge and not decision.triggered


def test_counters_continue_across_runs(tmp_path) -> None:
    path = tmp_path / "state" / "sampling.json"  # parent created on save
    first = SamplingState.load(path)
    _use_up(first, "v", 5)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == 1
    entry = data["versions"]["v"]
    assert (entry["uses"], entry["judged"], entry["acceptable_or_good"], entry["poor"]) == (5, 5, 5, 0)
    assert entry["updated_at"].endswith("+00:00")

    second = SamplingState.load(path)
    decision = second.decide("v", "v-eval-5")
    assert decision.use == 6 and decision.phase == "established"
    # The decision is the same one an uninterrupted run would have made.
    assert decision == _use_up(SamplingState(None), "v", 6)[5]
    assert SamplingState.load(path).snapshot()["v"]["uses"] == 6
    assert [p.name for p in path.parent.iterdir()] == ["sampling.json"]  # no temp files left


def test_state_in_memory_writes_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _use_up(SamplingState(None), "v", 3)
    assert list(tmp_path.iterdir()) == []


def test_missing_file_is_an_empty_state(tmp_path) -> None:
    state = SamplingState.load(tmp_path / "absent.json")
    assert state.snapshot() == {}
    assert state.phase("anything") == "calibration"
    assert not (tmp_path / "absent.json").exists()


def test_prompt_hash_change_restarts_calibration() -> None:
    state = SamplingState(None)
    for n in range(25):
        state.decide("v", f"e{n}", prompt_hash="aaa")
        state.record_verdict("v", "good")
    assert state.phase("v") == "trusted"
    same = state.decide("v", "same", prompt_hash="aaa")
    assert same.use == 26 and same.phase == "trusted"
    unhashed = state.decide("v", "unhashed")  # no hash given: keeps the counters
    assert unhashed.use == 27

    changed = state.decide("v", "new", prompt_hash="bbb")
    assert changed.use == 1 and changed.phase == "calibration" and changed.judge
    counters = state.snapshot()["v"]
    assert counters["prompt_hash"] == "bbb"
    assert (counters["uses"], counters["judged"], counters["acceptable_or_good"], counters["poor"]) == (1, 1, 0, 0)


def test_first_prompt_hash_is_recorded_without_restart() -> None:
    state = SamplingState(None)
    _use_up(state, "v", 7)
    decision = state.decide("v", "hashed", prompt_hash="abc")
    assert decision.use == 8
    assert state.snapshot()["v"]["prompt_hash"] == "abc"


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        '{"format": 2, "versions": {}}',
        '{"format": 1, "versions": []}',
        '{"format": 1, "versions": {"v": 3}}',
        '{"format": 1, "versions": {"v": {"uses": "3", "judged": 0, "acceptable_or_good": 0, "poor": 0}}}',
        '{"format": 1, "versions": {"v": {"uses": 3, "judged": 0, "acceptable_or_good": 0}}}',
        '{"format": 1, "versions": {"v": {"uses": -1, "judged": 0, "acceptable_or_good": 0, "poor": 0}}}',
        '{"format": 1, "versions": {"v": {"uses": 1, "judged": 0, "acceptable_or_good": 0, "poor": 0, "prompt_hash": 5}}}',
    ],
)
def test_unusable_file_raises_naming_the_path(tmp_path, content: str) -> None:
    path = tmp_path / "sampling.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SamplingStateError) as caught:
        SamplingState.load(path)
    assert str(path) in str(caught.value)
    assert path.read_text(encoding="utf-8") == content  # never reset behind the user's back


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"calibration_uses": -1}, "calibration_uses"),
        ({"established_max_uses": 4}, "established_max_uses"),
        ({"established_rate": 0.09}, "established_rate"),
        ({"established_rate": 0.21}, "established_rate"),
        ({"established_rate": float("nan")}, "established_rate"),
        ({"trusted_min_share": 0.0}, "trusted_min_share"),
        ({"trusted_min_share": 1.0}, "trusted_min_share"),
    ],
)
def test_invalid_policy_values_raise_naming_the_field(changes: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SamplingPolicy(**changes)


def test_rate_error_states_the_allowed_range() -> None:
    with pytest.raises(ValueError, match=r"0\.10 and 0\.20"):
        SamplingPolicy(established_rate=0.5)


def test_rate_bounds_are_allowed() -> None:
    SamplingPolicy(established_rate=0.10)
    SamplingPolicy(established_rate=0.20)
    SamplingPolicy(calibration_uses=0, established_max_uses=0)


def test_record_verdict_none_counts_nothing(tmp_path) -> None:
    path = tmp_path / "sampling.json"
    state = SamplingState(path)
    state.decide("v", "e1")
    before = state.snapshot()["v"]
    state.record_verdict("v", None)
    after = state.snapshot()["v"]
    assert (after["acceptable_or_good"], after["poor"], after["good_share"]) == (0, 0, None)
    assert after == before
    assert SamplingState.load(path).snapshot()["v"]["uses"] == 1


def test_record_verdict_counts_acceptable_good_and_poor() -> None:
    state = SamplingState(None)
    for verdict in ("good", "acceptable", "poor"):
        state.record_verdict("v", verdict)
    counters = state.snapshot()["v"]
    assert (counters["acceptable_or_good"], counters["poor"]) == (2, 1)
    assert counters["good_share"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="verdict"):
        state.record_verdict("v", "excellent")


def test_version_state_good_share() -> None:
    assert VersionState().good_share is None
    assert VersionState(acceptable_or_good=9, poor=1).good_share == pytest.approx(0.9)


def test_decision_record_is_json_able() -> None:
    decision = SamplingState(None).decide("v", "e", triggers=("negative user feedback",))
    record = decision.to_record()
    assert json.loads(json.dumps(record)) == {
        "judge": True,
        "phase": "calibration",
        "reason": "triggered: negative user feedback",
        "use": 1,
        "triggered": True,
    }
