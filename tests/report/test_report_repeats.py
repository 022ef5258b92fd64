"""Acceptance 4: `decide --json` gives the failure kinds with their counts, and the HTML report
shows the pass rates over repeats, the flaky scenarios and the failure kinds."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from evaluators.cli import app
from tests.release.test_repeats import repeated
from tests.support.release_factory import make_case, scores, version_cases, write_run


def repeated_run(tmp_path):
    cases = repeated(version_cases("cand", [0.85] * 12), 4, {"s04": {1, 3}})
    broken = make_case("cand", "s05", scores(0.8), status="failed").model_copy(
        update={"case_id": "cand/s05#r2", "repeat": 2, "error": "turn 1: timeout: no answer within the per-call timeout"})
    cases = [case for case in cases if case.case_id != "cand/s05#r2"] + [broken]
    return write_run(tmp_path / "run", cases)


def test_decide_json_lists_failure_kinds_with_counts(tmp_path):
    run = repeated_run(tmp_path)
    result = CliRunner().invoke(app, ["decide", "--json", "--partial", str(run)])
    decision = json.loads(result.stdout)[0]
    assert decision["failure_kinds"] == {"expectation": 2, "timeout": 1}
    assert decision["flaky"] == ["s04"]
    rates = {row["scenario_id"]: row for row in decision["pass_rates"]}
    assert (rates["s04"]["passed"], rates["s04"]["scored"]) == (2, 4)
    assert (rates["s05"]["passed"], rates["s05"]["scored"], rates["s05"]["repeats"]) == (3, 3, 4)


def test_the_report_shows_pass_rates_flaky_scenarios_and_failure_kinds(tmp_path):
    run = repeated_run(tmp_path)
    result = CliRunner().invoke(app, ["report", "--partial", str(run), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    rates = page[page.index('id="pass-rates"'):page.index("</section>", page.index('id="pass-rates"'))]
    assert "Flaky scenarios" in rates and "<code>s04</code> passed 2 of 4 repeats (50%)" in rates
    assert re.search(r'<tr class="flaky"><td><code>s04</code> \(safety\)</td><td class="num">2/4</td>'
                     r'<td class="num">50%</td>', rates)
    assert '<tr><td><code>s01</code></td><td class="num">4/4</td><td class="num">100%</td>' in rates
    kinds = page[page.index('id="failure-kinds"'):page.index("</section>", page.index('id="failure-kinds"'))]
    assert '<td><code>expectation</code></td><td class="num">2</td>' in kinds
    assert '<td><code>timeout</code></td><td class="num">1</td>' in kinds


def test_a_run_without_repeats_shows_no_pass_rate_section(tmp_path):
    run = write_run(tmp_path / "run", version_cases("cand", [0.85] * 12))
    CliRunner().invoke(app, ["report", str(run), "-o", str(tmp_path / "out")])
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert 'id="pass-rates"' not in page and "No case failed any rule." in page


def test_the_terminal_marks_flaky_scenarios_with_their_rates_in_80_columns(tmp_path):
    run = repeated_run(tmp_path)
    result = CliRunner().invoke(app, ["decide", "--partial", str(run)], env={"COLUMNS": "80"})
    table = result.stdout[result.stdout.index("Pass rates over repeats"):]
    assert re.search(r"cand\s+s04 \(safety\)\s+2/4\s+50%\s+15%–85%\s+0\.85\s+0\.00\s+flaky", table)
    assert "s01" not in table.split("scenario(s) below 100%")[0]  # passing every repeat: not listed
    assert "flaky_scenarios: 1 scenario passes in some repeats and fails in others (flaky): s04 passed 2 of 4 " \
           "repeats (50%)" in " ".join(result.stdout.split())
    assert all(len(line) <= 80 for line in table.split("cand: ")[0].splitlines())
