"""scripts/docs_from_run.py: every figure the docs quote about the shipped versions comes from the
shipped run. The slow test runs scripts/evaluate_prompts.py again and fails when a docs figure
differs from what that run gives; the others check that no figure about a shipped version sits
outside a generated block, that the quoted prompt lines are the change from v1 to v2, and that
the lesson follows the data rather than a story told once."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from evaluators.inputs.prompts import load_prompts
from evaluators.release.rules import release_report
from evaluators.rubric.loader import default_rubric
from tests.support.paths import PROJECT_ROOT
from tests.support.release_factory import FACTORY_CALIBRATION, version_cases

SCRIPT = PROJECT_ROOT / "scripts" / "docs_from_run.py"
SHIPPED = ("v1-minimal", "v2-warm-boundaries", "v3-verbose-formatted")


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("docs_from_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.mark.slow  # the whole shipped run
def test_every_docs_figure_about_the_shipped_run_is_the_run_s(script, shipped_run):
    completed, store = shipped_run
    assert completed.returncode == 0, completed.stderr
    rendered = script.render(script.shipped_from(store.directory))
    assert script.differing(rendered) == [], ("docs quote another run than the shipped one; run "
                                              "`python scripts/docs_from_run.py` and review the diff")
    decisions = rendered["shipped-decisions"]
    assert decisions == "v1-minimal revise, v2-warm-boundaries deploy, v3-verbose-formatted revise"


def test_every_block_in_the_docs_is_written_by_the_script_and_every_block_is_somewhere(script):
    found = {}
    for doc in script.DOCS:
        for name in script.blocks_in((PROJECT_ROOT / doc).read_text(encoding="utf-8")):
            found.setdefault(name, []).append(doc)
    assert set(found) == set(script.RENDERERS), found


def _outside_blocks_and_code(text: str) -> list[str]:
    """The sentences and table rows of a doc outside its generated blocks and code."""
    text = re.sub(r"<!-- generated: ([\w-]+) -->.*?<!-- /generated: \1 -->", " ", text, flags=re.S)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    paragraphs = [" ".join(paragraph.split()) for paragraph in re.split(r"\n\s*\n|\n(?=\|)|\n\s*(?=- )", text)]  # rows, items
    return [sentence for paragraph in paragraphs for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*`])", paragraph)]


@pytest.mark.parametrize("doc", sorted({str(path.relative_to(PROJECT_ROOT)) for path in
                                        [PROJECT_ROOT / "README.md", *(PROJECT_ROOT / "docs").glob("*.md")]}))
def test_no_figure_about_a_shipped_version_sits_outside_a_generated_block(doc):
    """A number beside a shipped version's name (or 'the shipped v1') is a claim about the shipped run:
    it must come from the run. docs/rubric.md is rendered from the rubric and names no version."""
    names = re.compile(r"\b(?:" + "|".join(SHIPPED) + r"|shipped v[123])\b")
    figure = re.compile(r"\b\d+\.\d+\b|\b\d+ of \d+\b|\b\d+/\d+\b")
    stale = [line for line in _outside_blocks_and_code((PROJECT_ROOT / doc).read_text(encoding="utf-8"))
             if names.search(line) and figure.search(names.sub("", line).replace("v1", ""))]
    assert stale == [], stale


def test_each_quoted_prompt_line_is_in_v2_and_not_in_v1(script):
    prompts = {prompt.version: prompt.text for prompt in load_prompts()}
    v1, v2 = " ".join(prompts[script.BASELINE_PROMPT].split()), prompts[script.CHANGED_PROMPT]
    for topic, snippets in script.V2_LINES.items():
        for snippet in snippets:
            line = script.prompt_line(v2, snippet)
            assert snippet in line and line not in v1 and snippet not in v1, (topic, snippet)


def test_the_lesson_follows_the_data_not_a_story(script):
    """Had v1 averaged over the deploy bar and still failed a safety scenario, the lesson would say so."""
    rubric = default_rubric()
    cases = (version_cases("v1-minimal", [0.85] * 8, failed_safety=1) + version_cases("v2-warm-boundaries", [0.9] * 8))
    report = release_report(cases, rubric, baselines={"v2-warm-boundaries": "v1-minimal"},
                            calibration=FACTORY_CALIBRATION)  # the safety replies verified, as a judged run's are
    lesson = script.render_lesson(script.Shipped(report, cases, rubric))
    assert lesson.startswith("A high average does not save an unsafe version: v1-minimal averages 0.850, over the "
                             "deploy bar of 0.7, and is revised.")
    assert "v2-warm-boundaries keeps both" in lesson
    calm = version_cases("v1-minimal", [0.65] * 8, failed_safety=1)
    lesson = script.render_lesson(script.Shipped(release_report(calm, rubric, calibration=FACTORY_CALIBRATION), calm,
                                                 rubric))
    assert lesson.startswith("No shipped version is decided by its average alone")


def test_a_block_the_script_does_not_write_is_an_error(script):
    with pytest.raises(ValueError, match="block 'made-up'"):
        script.with_blocks("a <!-- generated: made-up -->x<!-- /generated: made-up --> b", {"known": "y"}, "X.md")
    assert script.with_blocks("a <!-- generated: known -->x<!-- /generated: known --> b", {"known": "y"}, "X.md") \
        == "a <!-- generated: known -->y<!-- /generated: known --> b"


def test_the_script_checks_without_writing(script, tmp_path, monkeypatch):
    """--check on a stale copy of the docs names the block and exits 1, leaving the file as it was."""
    for doc in script.DOCS:
        target = tmp_path / doc
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((PROJECT_ROOT / doc).read_text(encoding="utf-8"), encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(re.sub(r"(<!-- generated: shipped-summary -->).*?(<!-- /generated)", r"\1stale\2",
                             readme.read_text(encoding="utf-8"), flags=re.S), encoding="utf-8")
    rendered = {name: "fresh" for name in script.RENDERERS}
    assert "README.md: shipped-summary" in script.differing(rendered, root=tmp_path)
    assert "stale" in readme.read_text(encoding="utf-8")
    assert Path(script.__file__).name == "docs_from_run.py"
