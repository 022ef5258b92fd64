"""The HTML report's voice panel (evaluators.report.latency_panel): latency and speaking time per
version against the budget, and a sentence instead of zeros when nothing was timed."""

from __future__ import annotations

import re

import pytest

from evaluators.release.rules import release_report
from evaluators.report.html import render_html
from evaluators.report.svg import round_ticks
from evaluators.rubric.loader import default_rubric
from tests.support.release_factory import timed, version_cases


def panel(page: str) -> str:
    return re.search(r'<section id="latency">.*?</section>', page, re.S).group(0)


def marks(section: str, css: str, kind: str) -> dict[str, float]:
    """version -> value of the `kind` marks (median | p95) in the chart of class `css`."""
    chart = re.search(rf'<svg class="chart spread-chart {css}".*?</svg>', section, re.S).group(0)
    return {version: float(value) for version, value in
            re.findall(rf'class="{kind}" data-series="([^"]+)" data-value="([0-9.]+)"', chart)}


def test_replayed_replies_show_speaking_time_and_a_sentence_never_zero_latency():
    cases = version_cases("v1", [0.8] * 8) + version_cases("v2", [0.9] * 8)
    report = release_report(cases, default_rubric())
    section = panel(render_html(report, cases, default_rubric()))
    assert "No latency measured (replayed replies)" in section
    assert "first token p50" not in section and "whole reply p50" not in section  # no timing columns at all
    assert "spread-chart time-to-first-token-s" not in section and "spread-chart total-s" not in section
    for version in ("v1", "v2"):
        spoken = report.aggregates[version].latency.speaking_s
        assert marks(section, "speaking-s", "median")[version] == pytest.approx(spoken.p50)
        assert marks(section, "speaking-s", "p95")[version] == pytest.approx(spoken.p95)
        row = re.search(rf'<tr data-version="{version}">(.*?)</tr>', section).group(1)
        assert re.findall(r'<td class="num[^"]*">([^<]+)</td>', row) == [f"{spoken.p50:.1f}", f"{spoken.p95:.1f}", "8"]


def test_measured_latency_is_drawn_against_the_budget_with_the_slow_version_marked():
    cases = (timed(version_cases("fast", [0.9] * 20), [0.3] * 20)
             + timed(version_cases("slow", [0.9] * 20), [0.3] * 10 + [1.2] * 10, cached=True))
    report = release_report(cases, default_rubric())
    section = panel(render_html(report, cases, default_rubric()))
    assert "No latency measured" not in section
    assert marks(section, "time-to-first-token-s", "p95") == {"fast": pytest.approx(0.3), "slow": pytest.approx(1.2)}
    assert marks(section, "total-s", "median") == {"fast": pytest.approx(0.8), "slow": pytest.approx(1.25)}
    assert 'class="threshold" data-value="1"' in section  # the budget line
    slow = re.search(r'<tr data-version="slow">(.*?)</tr>', section).group(1)
    assert '<td class="num flagged">1.20</td>' in slow  # p95 over budget, in red
    assert "20 (20 from cache)" in slow


@pytest.mark.parametrize(("largest", "expected"), [
    (1.08, [0.0, 0.5, 1.0, 1.5]),
    (21.6, [0, 10, 20, 30]),
    (59.6, [0, 20, 40, 60]),
])
def test_latency_axes_tick_at_round_values(largest, expected):
    assert round_ticks(largest) == expected
