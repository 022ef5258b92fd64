"""docs/rubric.md is generated from the rubric file and must not drift from it.

The drift test catches a YAML edit without a regenerated document; the coverage tests catch a
renderer that silently drops a section, so the drift test cannot pass vacuously.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from evaluators.rubric import doc as rubric_doc
from evaluators.rubric.doc import DOC_PATH, code_span, escape, render_rubric_markdown
from evaluators.rubric.loader import DEFAULT_RUBRIC_PATH, Rubric, load_rubric, parse_rubric

REGENERATE = "python -m evaluators.rubric.doc"


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    # Read the file afresh rather than the process-wide cache: it is the file that must match.
    return load_rubric(DEFAULT_RUBRIC_PATH)


@pytest.fixture(scope="module")
def doc(rubric: Rubric) -> str:
    return render_rubric_markdown(rubric)


def sections(doc: str) -> dict[str, str]:
    """Level-2 sections of the document by heading text (without the leading "## ")."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in doc.splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:], [])
        elif current is not None:
            current.append(line)
    return {heading: "\n".join(lines) for heading, lines in found.items()}


def section(doc: str, heading_part: str) -> str:
    matches = [body for heading, body in sections(doc).items() if heading_part in heading]
    assert len(matches) == 1, f"expected one section whose heading contains {heading_part!r}"
    return matches[0]


def row_with(text: str, cell: str) -> str:
    """The one table row or bullet in ``text`` that mentions ``cell``."""
    rows = [line for line in text.splitlines() if cell in line and line.startswith(("|", "-"))]
    assert len(rows) == 1, f"expected one row mentioning {cell!r}, found {rows}"
    return rows[0]


def shortest(value: float) -> str:
    """"0.2" for 0.20: a prefix of any padded form the renderer may choose."""
    return repr(float(value))


def test_docs_rubric_md_is_up_to_date(doc: str) -> None:
    assert DOC_PATH.exists(), f"docs/rubric.md is missing; run `{REGENERATE}`"
    current = DOC_PATH.read_text(encoding="utf-8")
    assert current == doc, (
        f"docs/rubric.md is out of date with evaluators/rubric/rubric.yaml; run `{REGENERATE}` and commit the result"
    )


def test_rendering_is_deterministic(rubric: Rubric, doc: str) -> None:
    assert render_rubric_markdown(rubric) == doc
    assert render_rubric_markdown(load_rubric(DEFAULT_RUBRIC_PATH)) == doc
    assert doc.endswith("\n") and not doc.endswith("\n\n")


def test_doc_says_it_is_generated(doc: str) -> None:
    intro = doc.split("\n## ", 1)[0]
    assert "evaluators/rubric/rubric.yaml" in intro
    assert REGENERATE in intro
    assert "by hand" in intro


def test_doc_covers_dimensions_weights_and_signals(rubric: Rubric, doc: str) -> None:
    assert escape(rubric.name) in doc and escape(rubric.version) in doc
    weights = section(doc, "Dimensions and weights")
    for name, dimension in rubric.dimensions.items():
        row = row_with(weights, f"`{name}`")
        assert dimension.title in row
        assert shortest(dimension.weight) in row
        terms = [line for line in weights.splitlines() if line.endswith(f" × {name}")]
        assert len(terms) == 1 and shortest(dimension.weight) in terms[0], "formula must spell out each weight"

        body = section(doc, dimension.title)
        assert escape(dimension.definition) in body
        for band, anchor in dimension.anchors.items():
            assert escape(anchor) in body, f"{name}: anchor {band} missing"
        for indicator in dimension.positive_indicators + dimension.negative_indicators:
            assert escape(indicator) in body, f"{name}: indicator {indicator!r} missing"
        assert shortest(dimension.base) in row_with(body, "*base*")
        for signal, value in dimension.signals.items():
            row = row_with(body, f"`{signal}`")
            assert shortest(abs(value)) in row
            assert ("-" in row) == (value < 0), f"{name}.{signal}: weight sign not shown"
        positions = [body.index(f"`{signal}`") for signal in dimension.signals]
        assert positions == sorted(positions), f"{name}: signals not in file order"


def test_doc_covers_the_other_sections(rubric: Rubric, doc: str) -> None:
    disqualifiers = section(doc, "Disqualifiers")
    for name, rule in rubric.disqualifiers.items():
        row = row_with(disqualifiers, f"`{name}`")
        assert shortest(rule.cap) in row
        for metric in rule.caps:
            assert rubric.dimensions[metric].title in row

    lexicons = section(doc, "Lexicons")
    for name, lexicon in rubric.lexicons.items():
        assert f"### `{name}`" in lexicons
        assert escape(lexicon.description) in lexicons
        assert ", ".join(escape(entry) for entry in lexicon.entries) in lexicons

    voice = section(doc, "Voice rules")
    for key in type(rubric.voice).model_fields:
        assert f"`{key}`" in voice

    patterns = section(doc, "Patterns")
    for name, pattern in rubric.patterns.items():
        assert f"{code_span(name)}" in patterns and f": {code_span(pattern.regex)}" in patterns
        assert all(group in row_with(patterns, code_span(name)) for group in pattern.groups)

    hard = section(doc, "Hard criteria")
    for name, criterion in rubric.hard_criteria.items():
        assert escape(criterion.description) in row_with(hard, f"`{name}`")

    levels = section(doc, "Quality levels")
    for level in rubric.quality_levels:
        assert f"{shortest(level.min)} ≤ score" in row_with(levels, f"| {level.name} |")
    assert "Good | 0.7 ≤ score < 0.9" in levels

    decision = section(doc, "Decision thresholds")
    thresholds = rubric.decision
    assert f"≥ {shortest(thresholds.deploy_min_average)}" in row_with(decision, "Deploy")
    assert f"≥ {shortest(thresholds.ab_test_min_average)}" in row_with(decision, "A/B")
    revise = row_with(decision, "revision")
    assert f"< {shortest(thresholds.revise_below_average)}" in revise
    assert f"< {shortest(thresholds.min_metric_mean)}" in revise


def test_changing_a_weight_changes_the_rendering(doc: str) -> None:
    data: dict[str, Any] = yaml.safe_load(DEFAULT_RUBRIC_PATH.read_text(encoding="utf-8"))
    dimensions = data["dimensions"]
    a, b = dimensions["appropriateness"], dimensions["emotional_intelligence"]
    assert a["weight"] != b["weight"], "swap two different weights"
    a["weight"], b["weight"] = b["weight"], a["weight"]
    changed = parse_rubric(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))

    rendered = render_rubric_markdown(changed)
    assert rendered != doc
    row = row_with(section(rendered, "Dimensions and weights"), "`appropriateness`")
    assert shortest(changed.weights["appropriateness"]) in row


def test_code_span_survives_backticks_and_escape_keeps_markdown_literal() -> None:
    assert code_span("a|b") == "`a|b`"
    assert code_span("(```|`x`)") == "````(```|`x`)````"
    assert code_span("`x") == "`` `x ``"
    assert escape("*italics*, **bold**, `code` | x_y") == r"\*italics\*, \*\*bold\*\*, \`code\` \| x\_y"


def test_check_mode_reports_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "rubric.md"
    monkeypatch.setattr(rubric_doc, "DOC_PATH", target)

    assert rubric_doc.main(["--check"]) == 1
    assert "is missing" in capsys.readouterr().err

    assert rubric_doc.main([]) == 0
    assert rubric_doc.main(["--check"]) == 0

    target.write_text(target.read_text(encoding="utf-8") + "hand edit\n", encoding="utf-8")
    assert rubric_doc.main(["--check"]) == 1
    assert REGENERATE in capsys.readouterr().err


def test_doc_renders_the_release_settings(rubric: Rubric, doc: str) -> None:
    decision = section(doc, "Decision thresholds")
    settings = rubric.decision
    assert f"`average_of` {settings.average_of}" in decision
    assert f"{settings.bootstrap.resamples} resamples" in decision and f"seed {settings.bootstrap.seed}" in decision
    assert f"`{settings.regression_guard}`" in row_with(decision, "Regression guard")
    assert f"above {shortest(settings.fairness.max_gap)}" in row_with(decision, "Fairness")
    assert f"`{settings.ab_label}`" in row_with(decision, "decide --apply")


def test_changing_a_release_setting_changes_the_rendering(doc: str) -> None:
    data: dict[str, Any] = yaml.safe_load(DEFAULT_RUBRIC_PATH.read_text(encoding="utf-8"))
    data["decision"]["fairness"]["max_gap"] = 0.15
    data["decision"]["min_metric_mean"] = 0.45
    rendered = render_rubric_markdown(parse_rubric(yaml.safe_dump(data, sort_keys=False, allow_unicode=True)))
    decision = section(rendered, "Decision thresholds")
    assert "above 0.15" in row_with(decision, "Fairness")
    assert "< 0.45" in row_with(decision, "revision") and "≥ 0.45" in row_with(decision, "Deploy")
