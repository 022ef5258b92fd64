"""JUnit XML from a run: one test case per (prompt version, scenario), for CI pages.

CI systems (Jenkins, GitLab, GitHub annotations, Azure) read JUnit XML for per-test results.
`run --junit FILE` and `decide --junit FILE` write it: a test suite per prompt version (its
decision and average as properties), a test case per scenario (classname = the version, name =
the scenario id) with its scores as properties, and the typed failures of the case
(evaluators.release.failures), and what a failed case failed on (`failure_concern`: safety,
format_only or other; the suite says how many safety scenarios failed on each, and what its
safety-relevant replies rest on: how many, verified by the judge or a detector, unverified, and
the command that verifies them when the gate refused the version): a quality failure (a hard flag, an expectation, an
assertion, ...) as <failure>, missing evidence (a failed call, a reply cut short, the judge
failing, an assertion not verified) as <error>, each with the kinds as its type and the reasons
as its message. Written with xml.etree, so every value is escaped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from evaluators.core.failures import Failure
from evaluators.core.names import SCORE_COLUMNS
from evaluators.core.text_safety import printable
from evaluators.release.concerns import case_failure_concern
from evaluators.release.contracts import Decision, ReleaseReport, SafetyFailureSplit
from evaluators.release.failures import case_failures
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult, version_order


def _properties(parent: ET.Element, values: dict[str, object]) -> None:
    shown = {name: value for name, value in values.items() if value is not None}
    if shown:
        element = ET.SubElement(parent, "properties")
        for name, value in shown.items():
            ET.SubElement(element, "property", name=name, value=_text(value))


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4f}"
    return printable(str(value))  # a reason may quote a server: no control characters in XML


def _seconds(case: CaseResult) -> float:
    return sum(turn.latency_s or 0.0 for turn in case.turns)


def _outcome(parent: ET.Element, tag: str, failures: Sequence[Failure]) -> None:
    """One <failure> or <error> for the case: every kind as its type, every reason as its message."""
    if not failures:
        return
    kinds = list(dict.fromkeys(failure.label for failure in failures))
    element = ET.SubElement(parent, tag, type=", ".join(kinds),
                            message=_text("; ".join(f"{failure.label}: {failure.reason}" for failure in failures)))
    element.text = _text("\n".join(f"{failure.label}: {failure.reason}" for failure in failures))


def _case_properties(case: CaseResult, rubric: Rubric) -> dict[str, object]:
    values: dict[str, object] = {name: case.scores.get(name) for name in SCORE_COLUMNS}
    values |= {"family": case.family, "safety": case.safety, "turns": len(case.turns)}
    # What a failed case failed on (safety, format_only, other): a CI page can tell an unsafe
    # reply from a reply in markdown without reading the reasons.
    values["failure_concern"] = case_failure_concern(case, rubric) if case.status == "ok" else None
    if case.judge and case.judge.get("overall") is not None:
        values["judge_overall"] = case.judge["overall"]
    if case.flags:
        values["flags"] = ", ".join(case.flags)
    return values


def _split_properties(split: SafetyFailureSplit | None) -> dict[str, object]:
    """How many safety scenarios failed on safety, on format only, on other criteria, and which."""
    if split is None:
        return {}
    return {"safety_failed_on_safety": len(split.on_safety),
            "safety_failed_on_safety_criteria": ", ".join(split.safety_criteria) or None,
            "safety_failed_on_format_only": len(split.format_only),
            "safety_failed_on_format_criteria": ", ".join(split.format_criteria) or None,
            "safety_failed_on_other": len(split.other)}


def _evidence_properties(decision: Decision | None) -> dict[str, object]:
    """What the version's safety-relevant replies rest on (evaluators.release.safety_evidence), and
    when the gate refused the version for it, the command that verifies them: a CI page shows why a
    version was held back and what to run, without the run directory."""
    if decision is None or decision.safety_evidence is None:
        return {}
    evidence = decision.safety_evidence
    return {"safety_relevant": evidence.relevant, "safety_verified_by_judge": evidence.by_judge,
            "safety_verified_by_detector": evidence.by_detector, "safety_unverified": evidence.unverified,
            "safety_refused": decision.refused,
            "safety_verify_command": (evidence.verify or None) if decision.refused else None}


def junit_tree(cases: Sequence[CaseResult], rubric: Rubric, *, run_id: str = "",
               release: ReleaseReport | None = None) -> ET.ElementTree:
    """The JUnit document for the cases (the latest record of each), with the decisions when given."""
    versions = sorted({case.prompt_version for case in cases}, key=version_order)
    root = ET.Element("testsuites", name=f"penpal-eval {run_id}".strip())
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for version in versions:
        mine = [case for case in cases if case.prompt_version == version]
        suite = ET.SubElement(root, "testsuite", name=version)
        decision = release.decision(version) if release is not None else None
        _properties(suite, {"run_id": run_id or None, "prompt_name": mine[0].prompt_name,
                            "decision": decision.outcome if decision else None,
                            "average": decision.average if decision else None,
                            "decision_summary": decision.summary if decision else None,
                            **_split_properties(decision.safety_failures if decision else None),
                            **_evidence_properties(decision)})
        counts = {"tests": len(mine), "failures": 0, "errors": 0}
        for case in mine:
            element = ET.SubElement(suite, "testcase", classname=version, name=case.scenario_id,
                                    time=f"{_seconds(case):.3f}")
            _properties(element, _case_properties(case, rubric))  # first, as pytest writes a test case's properties
            failures = case_failures(case, rubric)
            quality = [failure for failure in failures
                       if not failure.kind.is_missing_evidence and not failure.kind.is_advisory]
            missing = [failure for failure in failures if failure.kind.is_missing_evidence]
            _outcome(element, "failure", quality)
            _outcome(element, "error", missing)
            counts["failures"] += bool(quality)
            counts["errors"] += bool(missing) and not quality
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", str(counts["errors"]))
        suite.set("skipped", "0")
        suite.set("time", f"{sum(_seconds(case) for case in mine):.3f}")
        finished = max((case.finished_at for case in mine if case.finished_at), default="")
        if finished:
            suite.set("timestamp", finished[:19])
        for key in totals:
            totals[key] += counts[key]
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: Path, cases: Sequence[CaseResult], rubric: Rubric, *, run_id: str = "",
                release: ReleaseReport | None = None) -> Path:
    """Write the JUnit XML file (its directory made when missing); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    junit_tree(cases, rubric, run_id=run_id, release=release).write(path, encoding="utf-8", xml_declaration=True)
    return path
