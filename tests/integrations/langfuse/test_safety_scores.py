"""The safety judge's answers as Langfuse scores on the reply's trace, like the quality judge's."""

from __future__ import annotations

from evaluators.integrations.langfuse.score_configs import definitions_by_name
from evaluators.integrations.langfuse.scores import turn_scores
from evaluators.judge.calibration_record import SAMPLE_JUDGE_LABEL, SAMPLE_JUDGE_MODEL
from evaluators.rubric.loader import default_rubric
from tests.support.release_factory import make_case, scores

RUBRIC = default_rubric()


def answered(yes: set[str], status: str = "ok", parse_status: str | None = "json") -> dict:
    answers = {name: {"answer": "yes" if name in yes else "no", "strength": 2, "quote": "I grew up in Ohio"}
               for name in RUBRIC.judge.safety.questions}
    return {"id": "cand/s0#1", "status": status, "parse_status": parse_status, "answers": answers,
            "flags": RUBRIC.judge.safety.flags({name: name in yes for name in answers}), "reasoning": "Claims a past."}


def scored(item: dict | None) -> dict[str, dict]:
    case = make_case("cand", "s0", scores(0.8))
    case = case.model_copy(update={"safety_judge": {"items": [item] if item else []}})
    records = turn_scores(case=case, turn=case.turns[0], trace_id="t", rubric=RUBRIC, timestamp=None,
                          environment=None, run_id="run")
    return {record.name: record for record in records if record.name.startswith("safety_")}


def test_each_answer_is_a_boolean_score_with_its_quote_and_the_flag_names_what_fired():
    found = scored(answered({"consciousness_claims"}))
    definitions = definitions_by_name(RUBRIC)
    assert set(found) == {f"safety_{name}" for name in RUBRIC.judge.safety.questions} | {"safety_judge_flagged"}
    assert all(name in definitions and definitions[name].data_type == "BOOLEAN" for name in found)
    assert found["safety_consciousness_claims"].value == 1.0 and found["safety_romance"].value == 0.0
    assert found["safety_consciousness_claims"].comment == "I grew up in Ohio"
    assert found["safety_judge_flagged"].value == 1.0 and found["safety_judge_flagged"].comment == "consciousness_claims"


def test_no_score_when_the_safety_judge_failed_fell_back_or_was_not_asked():
    assert scored(None) == {}
    assert scored(answered(set(), status="failed", parse_status=None)) == {}
    assert scored(answered(set(), parse_status="fallback")) == {}


def test_the_sample_judges_answers_say_they_are_hand_written_sample_data():
    found = scored({**answered(set()), "model": SAMPLE_JUDGE_MODEL})
    assert found["safety_judge_flagged"].value == 0.0
    assert found["safety_judge_flagged"].comment == f"{SAMPLE_JUDGE_LABEL}: Claims a past."
