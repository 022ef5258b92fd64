"""The HTML report's simulated conversations: each persona's trust-per-turn line per version,
the metrics per version and persona, and each version's worst conversation with its turns and
flags; a run without simulated conversations has no such section."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from evaluators.release.rules import release_report
from evaluators.report.frames import write_release_files
from evaluators.report.html import render_html
from evaluators.report.svg import line_chart
from evaluators.rubric.loader import default_rubric
from evaluators.run.simulation.stage import with_conversation_metrics
from tests.support.conversations import ERODING, LONELY, STEADY, scored_case
from tests.support.release_factory import version_cases

RUBRIC = default_rubric()
INJECTED = "<script>window.__pwned = 1</script> You don't need anyone else."


@pytest.fixture(scope="module")
def run():
    cases = version_cases("v1", [0.8] * 8) + version_cases("v2", [0.85] * 8)
    personas = {"lonely-young-only-friend": LONELY.model_copy(update={"id": "lonely-young-only-friend"}),
                "skeptic-over-promise": LONELY.model_copy(update={"id": "skeptic-over-promise"})}
    eroding = [*ERODING[:-1], (ERODING[-1][0], INJECTED)]
    for version, lonely in (("v1", eroding), ("v2", STEADY)):
        cases.append(scored_case(lonely, persona="lonely-young-only-friend", version=version))
        cases.append(scored_case(STEADY[:4], persona="skeptic-over-promise", version=version))
    cases = with_conversation_metrics(cases, personas, RUBRIC)
    return release_report(cases, RUBRIC, baselines={"v2": "v1"}), cases


@pytest.fixture(scope="module")
def page(run):
    report, cases = run
    return render_html(report, cases, RUBRIC)


def section(page: str) -> str:
    start = page.index('<section id="conversations">')
    return page[start:page.index("</section>", start)]


def test_each_persona_has_a_trust_line_per_version(run, page):
    _, cases = run
    shown = section(page)
    for persona in ("lonely-young-only-friend", "skeptic-over-promise"):
        figure = re.search(rf'<figure data-persona="{persona}">(.*?)</figure>', shown).group(1)
        lines = dict(re.findall(r'<polyline class="line" data-series="([^"]+)" data-values="([^"]+)"', figure))
        assert set(lines) == {"v1", "v2"}
        for version, values in lines.items():
            case = next(case for case in cases if case.case_id == f"{version}/{persona}")
            assert values.split() == [f"{turn.heuristics['trust_boundaries']:.4f}" for turn in case.turns]
    assert "Trust &amp; Boundaries per turn" in shown


def test_the_metrics_table_marks_erosion_and_the_first_flag(run, page):
    record = next(case for case in run[1] if case.case_id == "v1/lonely-young-only-friend").conversation["trajectory"]
    assert record["erosion"] > RUBRIC.decision.conversation.max_trust_erosion
    row = re.search(r'<tr data-version="v1" data-persona="lonely-young-only-friend">(.*?)</tr>', section(page)).group(1)
    assert f'<td class="num flagged">{record["erosion"]:+.3f}</td>' in row and "turn 5: over_promising" in row
    assert f"{record['worst_value']:.2f} (turn 6)" in row and "33% (+0.67)" in row
    steady = re.search(r'<tr data-version="v2" data-persona="lonely-young-only-friend">(.*?)</tr>', section(page)).group(1)
    assert "flagged" not in steady


def test_the_worst_conversation_of_each_version_is_shown_turn_by_turn_with_its_flags(page):
    shown = section(page)
    worst = re.search(r'<details class="worst-conversation" data-version="v1" '
                      r'data-persona="lonely-young-only-friend">(.*?)</details>', shown).group(1)
    assert re.search(r"lowest trust 0\.\d\d at turn 6 · first hard flag at turn 5 \(over_promising\)", worst)
    assert worst.count('<div class="turn">') == len(ERODING)
    assert "user · turn 6" in worst and "companion · heuristic trust boundaries 0.80" in worst  # turn 1
    assert "<code>dependency_encouraging</code>" in worst  # the flag on turn 6, from the turn's evidence
    assert "turn 5: over_promising" in worst and "turn 6: dependency_encouraging" in worst  # the findings
    assert "<script" not in page and "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in worst
    assert 'data-version="v2" data-persona=' in shown


def test_a_run_without_simulated_conversations_has_no_such_section():
    cases = version_cases("v1", [0.8] * 8)
    assert 'id="conversations"' not in render_html(release_report(cases, RUBRIC), cases, RUBRIC)


def test_the_line_chart_draws_each_value_at_its_turn():
    svg = line_chart("trust", [("v1", [0.9, 0.5, 0.1])])
    points = re.findall(r'data-turn="(\d)" data-value="([\d.]+)" cx="([\d.]+)" cy="([\d.]+)"', svg)
    assert [(turn, value) for turn, value, _, _ in points] == [("1", "0.9000"), ("2", "0.5000"), ("3", "0.1000")]
    xs, ys = [float(x) for *_, x, _ in points], [float(y) for *_, y in points]
    assert xs == sorted(xs) and ys == sorted(ys)  # later turns to the right; lower values further down


def test_the_conversations_are_written_for_pandas_one_row_per_turn(run, tmp_path):
    report, cases = run
    written = {path.name for path in write_release_files(report, tmp_path)}
    assert {"release_conversations.csv", "release_conversations.parquet"} <= written
    frame = pd.read_parquet(tmp_path / "release_conversations.parquet")
    assert len(frame) == sum(len(case.turns) for case in cases if case.conversation)
    lonely = frame[(frame.prompt_version == "v1") & (frame.persona == "lonely-young-only-friend")]
    assert lonely.turn.tolist() == [1, 2, 3, 4, 5, 6] and lonely.trust.iloc[0] == 0.8
    assert set(lonely.first_flag_turn) == {5} and (lonely.erosion > 0.02).all()


def test_a_run_without_simulated_conversations_writes_no_conversations_file(tmp_path):
    cases = version_cases("v1", [0.8] * 8)
    written = {path.name for path in write_release_files(release_report(cases, RUBRIC), tmp_path)}
    assert not any("conversations" in name for name in written)


def test_the_trust_charts_draw_the_erosion_rule_s_own_figures(page):
    limits = RUBRIC.decision.conversation
    figure = re.search(r'<figure data-persona="lonely-young-only-friend">(.*?)</figure>', section(page)).group(1)
    guides = dict(re.findall(r'<polyline class="guide (\w+)" data-points="([^"]+)"', figure))
    assert set(guides) == {"slope", "floor"}
    (start_turn, start), (end_turn, end) = [tuple(map(float, point.split(":"))) for point in guides["slope"].split()]
    assert (start_turn, end_turn) == (1, 6) and start - end == pytest.approx(limits.max_trust_erosion * 5, abs=1e-4)
    floor = [tuple(map(float, point.split(":"))) for point in guides["floor"].split()]
    assert floor == [(4.0, limits.eroded_below), (6.0, limits.eroded_below)]  # the second half the rule averages
    assert f"fall limit {limits.max_trust_erosion:g}/turn" in figure and f"2nd-half floor {limits.eroded_below:g}" in figure
    assert "floor 0.5" not in figure  # the metric floor is not the erosion rule's figure


def test_an_erosion_cell_is_red_only_where_the_rule_fails(run):
    """Trust falling 0.05 a turn but staying high passes the rule (its second half averages 0.75): not red."""
    report, cases = run
    gentle = [0.95, 0.9, 0.85, 0.8, 0.75, 0.7]
    changed = []
    for case in cases:
        if case.case_id == "v2/lonely-young-only-friend":
            record = {**case.conversation, "trajectory": {**case.conversation["trajectory"], "values": gentle,
                                                          "erosion": 0.05}}
            case = case.model_copy(update={"conversation": record})
        changed.append(case)
    report = release_report(changed, RUBRIC, baselines={"v2": "v1"})
    row = re.search(r'<tr data-version="v2" data-persona="lonely-young-only-friend">(.*?)</tr>',
                    section(render_html(report, changed, RUBRIC))).group(1)
    assert "+0.050" in row and "flagged" not in row
    assert next(rule for rule in report.decision("v2").rules if rule.name == "conversation_erosion").passed
