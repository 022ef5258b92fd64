"""The HTML release report: self-contained, escaped, complete, and rendered by a real browser."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

import pytest

from evaluators.core.names import METRIC_NAMES, OVERALL, SCORE_COLUMNS
from evaluators.judge.result import PairwiseComparison
from evaluators.release.contracts import ReleaseReport
from evaluators.release.coverage import ScenarioSet
from evaluators.release.head_to_head import head_to_head
from evaluators.release.rules import release_report
from evaluators.report.frames import write_release_files
from evaluators.report.html import render_html
from evaluators.report.svg import Interval, Threshold, bar_chart, interval_chart
from evaluators.rubric.loader import default_rubric
from tests.support.browser import ARTIFACTS, browser_unavailable, offline_page
from tests.support.release_factory import FACTORY_CALIBRATION, FAMILIES, make_case, rubric_with, scores, version_cases

INJECTION = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
REASONING = 'Ignores the feeling & rushes to advice </p><script>window.__pwned = 3</script>'
BASELINE = [0.52, 0.55, 0.58, 0.5, 0.6, 0.54, 0.57, 0.53, 0.56, 0.59, 0.51, 0.55]


def _judged_case(version: str, index: int) -> object:
    judge = {"overall": 0.3, "dimensions": {name: 0.3 for name in METRIC_NAMES}, "verdict": "poor",
             "failure_modes": ["tone-deaf"], "review": []}
    turn_judge = {"status": "ok", "parse_status": "json", "overall": 0.3, "verdict": "poor",
                  "failure_mode": "tone-deaf", "reasoning": REASONING}
    return make_case(version, f"z-injected-{index}", scores(0.35), reply=INJECTION, user=f"user says {INJECTION}",
                     family="emotional_support", safety=True, fails_hard_criteria=True, judge=judge,
                     turn_judge=turn_judge, flags=["crisis_without_help"])


def build() -> tuple[ReleaseReport, list]:
    cases = (version_cases("v1", BASELINE, failed_safety=1) + [_judged_case("v1", 1)]
             + version_cases("v2", [0.85] * 12)
             + version_cases("v3", [round(value + 0.1, 6) for value in BASELINE]))
    # The scenario set is s00..s11; v1's extra judged case lies outside it, so every run is complete.
    report = release_report(cases, default_rubric(), baselines={"v1": None, "v2": "v1", "v3": "v1"},
                            run_id="test-run", sample_data=True,
                            scenario_set=ScenarioSet.of_cases(version_cases("v2", [0.85] * 12)),
                            calibration=FACTORY_CALIBRATION)
    return report, cases


@pytest.fixture(scope="module")
def page_html() -> str:
    report, cases = build()
    return render_html(report, cases, default_rubric(), worst=3)


def test_text_from_data_is_escaped(page_html):
    assert "<script" not in page_html  # neither ours (there is none) nor any reply's
    assert "window.__pwned" in page_html  # the text is shown ...
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page_html  # ... as text
    assert 'onerror="' not in page_html and "&lt;img src=x onerror=&quot;" in page_html
    assert "Ignores the feeling &amp; rushes to advice &lt;/p&gt;" in page_html


def test_the_page_is_self_contained(page_html):
    assert not re.search(r"\b(src|href)=\"(?!data:|#)", page_html), "nothing may be loaded from elsewhere"
    assert "@import" not in page_html and "url(" not in page_html
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page_html))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls  # an XML namespace name, never fetched


def test_the_page_shows_decisions_charts_deltas_worst_cases_and_thresholds(page_html):
    report, _ = build()
    assert [decision.outcome for decision in report.decisions] == ["revise", "deploy", "ab_test"]
    for decision in report.decisions:
        assert f'data-outcome="{decision.outcome}"' in page_html
        for rule in decision.reasons:
            assert escape(rule.message) in page_html
    assert page_html.count('class="bar"') == 3 * len(SCORE_COLUMNS)
    assert page_html.count('class="cell"') == len(SCORE_COLUMNS) * (len(FAMILIES) * 3)
    assert page_html.count('class="estimate"') == 2 * len(SCORE_COLUMNS)  # v2 and v3 against v1
    assert page_html.count('class="worst-case"') == 6  # v2's 0.85 replies are not bad cases
    assert 'data-case="v2/' not in page_html and "No case below 0.7 and none failing a hard criterion" in page_html
    assert 'data-case="v1/z-injected-1"' in page_html  # the failed safety scenario comes first
    assert "tone-deaf" in page_html and "crisis_without_help" in page_html
    # what the failed safety scenarios failed on: safety (named, counted) or format only
    assert ("<summary>v1: 2 safety scenarios failed, 2 on safety (points_to_help 2, crisis_without_help 1), "
            "0 on format only</summary>") in page_html
    assert "metric floor 0.5 (each metric)" in page_html and "deploy 0.7 (average)" in page_html
    assert "recorded sample replies" in page_html


def test_thresholds_on_the_page_follow_the_rubric():
    report, cases = build()
    rubric = rubric_with(min_metric_mean=0.55, deploy_min_average=0.8)
    page = render_html(report, cases, rubric)
    assert "metric floor 0.55" in page and "deploy 0.8" in page
    chart = page[page.index('class="chart metric-chart"'):]
    chart = chart[:chart.index("</svg>")]
    lines = re.findall(r'class="threshold" data-value="([\d.]+)" data-category="(\w+)"', chart)
    # Each rule's line where the rule applies: the metric floor across the six metrics, the average's bars
    # (revise below 0.6, deploy at 0.8 here) across overall quality only; no deploy line across a metric.
    assert sorted(category for value, category in lines if value == "0.55") == sorted(METRIC_NAMES)
    assert {category for value, category in lines if value in ("0.8", "0.6")} == {OVERALL}
    assert len(lines) == len(METRIC_NAMES) + 2


def test_write_release_files_puts_the_page_beside_the_data(tmp_path):
    report, cases = build()
    written = write_release_files(report, tmp_path, render_html(report, cases, default_rubric()))
    assert {path.name for path in written} >= {"report.html", "decisions.json", "release_aggregates.csv",
                                               "release_rules.parquet", "release_deltas.csv"}


_MEASURE = """() => {
  const box = el => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  return {
    charts: [...document.querySelectorAll('svg.chart')].map(el => ({cls: el.getAttribute('class'), size: box(el)})),
    bars: [...document.querySelectorAll('svg.metric-chart rect.bar')].map(el => ({
      series: el.dataset.series, category: el.dataset.category, value: parseFloat(el.dataset.value),
      width: el.getBBox().width, visible: box(el)[0] > 0 && box(el)[1] > 0})),
    cells: document.querySelectorAll('svg.heatmap rect.cell').length,
    estimates: [...document.querySelectorAll('svg.delta-chart circle.estimate')].map(el => box(el)[0]),
    cards: [...document.querySelectorAll('article.card')].map(el => el.dataset.outcome),
    section: document.querySelector('#metrics').getBoundingClientRect().width,
    pwned: window.__pwned === undefined ? null : window.__pwned,
  };
}"""


@pytest.mark.slow  # a headless browser
@pytest.mark.skipif(browser_unavailable() is not None, reason=browser_unavailable() or "")
def test_the_report_opens_in_headless_chromium_with_no_network_and_no_errors(tmp_path):
    report, cases = build()
    target = tmp_path / "report"
    write_release_files(report, target, render_html(report, cases, default_rubric(), worst=3))
    page_path = target / "report.html"
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "release-report.png"
    screenshot.unlink(missing_ok=True)

    with offline_page() as (page, log):
        page.goto(page_path.as_uri(), wait_until="load")
        measured = page.evaluate(_MEASURE)
        page.screenshot(path=str(screenshot), full_page=True)

    assert log.console_errors == [] and log.page_errors == [], (log.console_errors, log.page_errors)
    assert log.outside_requests == [] and log.failed_requests == []
    assert measured["pwned"] is None, "a reply's markup ran in the page"
    assert measured["cards"] == ["revise", "deploy", "ab_test"]
    classes = [chart["cls"] for chart in measured["charts"]]
    assert classes.count("chart metric-chart") == 1 and classes.count("chart heatmap") == 3
    assert classes.count("chart delta-chart") == 2
    [metric_chart] = [chart for chart in measured["charts"] if chart["cls"] == "chart metric-chart"]
    assert metric_chart["size"][0] >= 0.95 * measured["section"]  # the page width, not half of it
    assert all(width > 100 and height > 50 for width, height in (chart["size"] for chart in measured["charts"]))
    bars = measured["bars"]
    assert len(bars) == 3 * len(SCORE_COLUMNS) and all(bar["visible"] for bar in bars)
    # Bars are drawn to scale: width proportional to the value they show.
    by_key = {(bar["series"], bar["category"]): bar for bar in bars}
    v2, v1 = by_key[("v2", OVERALL)], by_key[("v1", OVERALL)]
    assert v2["width"] / v1["width"] == pytest.approx(v2["value"] / v1["value"], rel=0.02)
    assert measured["cells"] == len(SCORE_COLUMNS) * len(FAMILIES) * 3
    assert len(measured["estimates"]) == 2 * len(SCORE_COLUMNS) and all(width > 0 for width in measured["estimates"])
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000


_PHONE = """() => {
  const root = document.documentElement;
  const labels = [...document.querySelectorAll('svg.chart text')].map(el => {
    const scale = el.ownerSVGElement.getScreenCTM().a;
    return {chart: el.ownerSVGElement.getAttribute('class'), text: el.textContent,
            px: parseFloat(getComputedStyle(el).fontSize) * scale};
  });
  const boxes = [...document.querySelectorAll('.table-box, .chart-box')].map(el => ({
    right: el.getBoundingClientRect().right, scrolls: el.scrollWidth > el.clientWidth}));
  return {pageWidth: root.scrollWidth, viewport: window.innerWidth, labels: labels, boxes: boxes,
          failed: [...document.querySelectorAll('#failed-cases tr[data-case]')].map(el => el.textContent)};
}"""


def phone_report(tmp_path: Path) -> Path:
    """A report with every kind of chart and a failed case: metric bars, heatmaps, deltas, latency, personas."""
    from evaluators.run.simulation.stage import with_conversation_metrics
    from tests.support.conversations import ERODING, LONELY, STEADY, scored_case
    from tests.support.release_factory import timed

    cases = timed(version_cases("v1-minimal", BASELINE, failed_safety=1), [0.4 + index / 20 for index in range(12)])
    cases += version_cases("v2-warm-boundaries-long-name", [0.85] * 12)
    cases += [make_case("v2-warm-boundaries-long-name", "s12-never-answered", {}, status="failed")]
    personas = {"lonely-young-only-friend": LONELY.model_copy(update={"id": "lonely-young-only-friend"})}
    cases.append(scored_case(ERODING, persona="lonely-young-only-friend", version="v1-minimal"))
    cases.append(scored_case(STEADY, persona="lonely-young-only-friend", version="v2-warm-boundaries-long-name"))
    cases = with_conversation_metrics(cases, personas, default_rubric())
    report = release_report(cases, default_rubric(), baselines={"v2-warm-boundaries-long-name": "v1-minimal"},
                            run_id="phone-run")
    write_release_files(report, tmp_path, render_html(report, cases, default_rubric(), worst=3))
    return tmp_path / "report.html"


@pytest.mark.slow  # a headless browser
@pytest.mark.skipif(browser_unavailable() is not None, reason=browser_unavailable() or "")
@pytest.mark.parametrize("width", [390, 1280])
def test_on_a_phone_the_page_never_scrolls_sideways_and_every_chart_label_is_10_px_or_more(tmp_path, width):
    page_path = phone_report(tmp_path)
    with offline_page(width=width, height=844) as (page, log):
        page.goto(page_path.as_uri(), wait_until="load")
        measured = page.evaluate(_PHONE)
        if width == 390:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "release-report-390.png"), full_page=True)
    assert log.console_errors == [] and log.page_errors == [] and log.outside_requests == []
    assert measured["pageWidth"] <= measured["viewport"], measured["pageWidth"]  # no horizontal page scroll
    assert all(box["right"] <= measured["viewport"] + 0.5 for box in measured["boxes"])
    labels = measured["labels"]
    kinds = {label["chart"] for label in labels}
    assert {"chart metric-chart", "chart heatmap", "chart delta-chart", "chart line-chart"} <= kinds
    assert any("spread-chart" in kind for kind in kinds)
    small = [label for label in labels if label["px"] < 10 - 1e-6]
    if width == 390:
        assert not small, small[:5]  # every chart label rendered at 10 px or more
        assert any(box["scrolls"] for box in measured["boxes"])  # the wide ones scroll in their own box
    assert measured["failed"] and "s12-never-answered" in measured["failed"][0]
    assert "HTTP 500" in measured["failed"][0]  # the failed case is named with its reason


def test_failed_cases_are_listed_with_their_reasons_and_the_banner_links_to_them(tmp_path):
    page = phone_report(tmp_path).read_text(encoding="utf-8")
    section = page[page.index('<section id="failed-cases">'):]
    section = section[:section.index("</section>")]
    assert 'data-case="v2-warm-boundaries-long-name/s12-never-answered"' in section
    assert "HTTP 500 after 5 attempts" in section and "1 case failed" in section
    assert '<a href="#failed-cases">' in page


def test_browser_helper_says_why_it_is_unavailable(monkeypatch):
    import tests.support.browser as browser

    monkeypatch.setattr(browser, "CHROMIUM", Path("/nonexistent/chromium"))
    assert "install Debian's chromium" in browser.browser_unavailable()


def test_counts_print_as_integers_and_the_average_reads_as_a_sentence(page_html):
    rows = re.findall(r"<tr class=\"[^\"]*\"><td><code>(\w+)</code></td><td>\w+</td><td>\w+</td>"
                      r"<td class=\"num\">([^<]*)</td><td class=\"num\">([^<]*)</td>", page_html)
    counted = [(name, observed, threshold) for name, observed, threshold in rows
               if name in {"coverage", "safety_hard_criteria", "beats_baseline", "all_cases_scored"}]
    assert counted and all("." not in observed + threshold for _, observed, threshold in counted), counted
    assert ("coverage", "12", "12") in counted
    assert "in a blend)" not in page_html
    assert "heuristic overall quality" in page_html  # the shipped average_of: the judge counts once calibrated
    blended = render_html(*build(), rubric_with(average_of="blend"))
    assert "0.5 × judge overall + 0.5 × heuristic overall" in blended


def test_charts_take_the_page_width_and_keep_their_drawn_size_on_a_phone():
    css = render_html(*build(), default_rubric())
    assert re.search(r"\.chart \{[^}]*\bwidth:100%", css)
    assert re.search(r"@media \(max-width: 760px\) \{[^@]*\.chart \{ min-width:calc\(var\(--natural\) \+ 2px\); \}",
                     css)
    width = int(re.search(r'class="chart metric-chart"[^>]*viewBox="0 0 (\d+)', css).group(1))
    assert f"--natural:{width}px" in css


def test_a_value_just_below_a_threshold_is_drawn_and_labelled_below_its_line():
    floor = Threshold(0.5, "metric floor 0.5")
    chart = bar_chart("t", ["a", "b"], [("v", {"a": 0.4998, "b": 0.5})], thresholds=[floor])
    line = float(re.search(r'class="threshold" data-value="0.5" data-category="a" x1="([\d.]+)"', chart).group(1))
    ends = {category: float(x) + float(width) for category, x, width in
            re.findall(r'data-category="(\w)" data-value="[\d.]+" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', chart)}
    assert ends["a"] <= line - 2 < line <= ends["b"] + 0.1
    assert ">0.4998</text>" in chart and ">0.50</text>" in chart


@pytest.mark.parametrize(("largest", "expected"), [(0.93, 1.0), (0.31, 0.4), (0.06, 0.075), (0.14, 0.15)])
def test_delta_axes_tick_at_round_values(largest, expected):
    chart = interval_chart("d", [Interval("x", "x", largest / 2, -largest, largest, "no_difference")])
    ticks = [float(value) for value in re.findall(r'class="tick" data-value="([-\d.e]+)"', chart)]
    assert max(ticks) == pytest.approx(expected) and min(ticks) == pytest.approx(-expected) and 0.0 in ticks
    step = ticks[1] - ticks[0]
    assert any(step == pytest.approx(nice) for nice in (0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5))


def test_the_head_to_head_panel_draws_win_tie_loss_per_family_with_the_interval():
    rubric = default_rubric()
    outcomes = ["win"] * 9 + ["tie", "loss", "win"]
    comparisons = [PairwiseComparison(scenario_id=f"s{index:02d}", family=FAMILIES[index % 2], turn=1,
                                      outcome=outcome, position_bias=outcome == "tie")
                   for index, outcome in enumerate(outcomes)]
    figures = head_to_head("v3", "v1", comparisons, rubric, judge_model="judge-model")
    cases = version_cases("v1", BASELINE) + version_cases("v3", [round(value + 0.1, 6) for value in BASELINE])
    report = release_report(cases, rubric, baselines={"v1": None, "v3": "v1"},
                            head_to_head={("v3", "v1"): figures})
    page = render_html(report, cases, rubric)
    section = page[page.index('<section id="head-to-head">'):]
    section = section[:section.index("</section>")]
    chart = section[section.index("<svg"):section.index("</svg>")]
    for family in (FAMILIES[0], FAMILIES[1], "overall"):
        rate = figures.overall if family == "overall" else figures.by_family[family]
        counts = {outcome: int(count) for outcome, count in re.findall(
            rf'<rect class="(win|tie|loss)" data-family="{family}" data-count="(\d+)"', chart)}
        assert counts == {outcome: count for outcome, count in
                          (("win", rate.wins), ("tie", rate.ties), ("loss", rate.losses)) if count}
        assert f'data-family="{family}" data-low="{rate.low:.4f}" data-high="{rate.high:.4f}"' in chart
    assert (figures.overall.wins, figures.overall.ties, figures.overall.losses) == (10, 1, 1)
    assert "Position bias 8%: 1 of 12 comparisons changed verdict with the order" in section
    assert "Judge: judge-model" in section


def test_without_pairwise_results_the_panel_says_how_to_get_them(page_html):
    assert "No pairwise results in this run" in page_html and "penpal-eval pairwise RUN_DIR" in page_html


def test_a_deploy_refused_for_unverified_safety_replies_has_a_banner_and_its_figures_on_the_card():
    cases = [case.model_copy(update={"safety_judge": None}) for case in version_cases("v2", [0.85] * 12)]
    report = release_report(cases, default_rubric(), run_id="unjudged", calibration=FACTORY_CALIBRATION)
    decision = report.decisions[0]
    assert decision.outcome == "incomplete" and decision.refused == "deploy"
    html = render_html(report, cases, default_rubric(), worst=3)
    assert ('<p class="banner safety-refused" data-refused="deploy"><strong>Safety not verified: deploy of v2 '
            "refused</strong> (3 of 3 safety-relevant replies unverified;") in html
    assert escape(decision.safety_evidence.verify) in html and "penpal-eval verify RUN_DIR -p v2 --judge-model" in html
    assert 'class="safety-evidence" data-unverified="3"' in html and "deploy refused until they are verified" in html
    verified = release_report(version_cases("v2", [0.85] * 12), default_rubric(), calibration=FACTORY_CALIBRATION)
    page = render_html(verified, version_cases("v2", [0.85] * 12), default_rubric(), worst=3)
    assert "safety-refused" not in page.split("<style>")[0] + page.split("</style>")[1]
    assert 'data-unverified="0"' in page and "3 verified by an admitted judge" in page
