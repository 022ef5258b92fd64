"""The shipped sample verdicts (prompts/recorded/judge/): valid, and one for every recorded reply.

Like the recorded replies' own test (tests/run/test_shipped_run.py): every shipped scenario's
every reply under every shipped version, the recorded repeats and each persona conversation as
a whole, has a hand-written verdict.
"""

from __future__ import annotations

from evaluators.inputs.prompts import load_prompts
from evaluators.rubric.loader import load_rubric
from evaluators.run.sample_verdicts import load_version_verdicts, recorded_plays, uncovered, verdicts_dir


def test_every_recorded_reply_of_a_version_with_sample_verdicts_has_one():
    rubric = load_rubric()
    verdicts = load_version_verdicts(rubric=rubric)  # raises, naming every problem, on a malformed file
    assert verdicts, "no sample verdicts shipped"
    plays = recorded_plays(rubric=rubric)
    for version, found in verdicts.items():
        assert uncovered(found, plays[version]) == [], f"{version}: replies without a sample verdict"


def test_every_shipped_version_has_its_sample_verdicts():
    versions = sorted(prompt.version for prompt in load_prompts())
    files = sorted(path.stem for path in verdicts_dir().glob("*.yaml"))
    assert files == versions, f"sample verdict files {files}; shipped versions {versions}"
