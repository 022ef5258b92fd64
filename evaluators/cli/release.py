"""`penpal-eval decide`, `compare` and `report`: release decisions read from a run store.

Presentation only: the aggregates, comparisons and rules are evaluators.release.aggregates,
evaluators.release.comparison and evaluators.release.rules; the files and the page are evaluators.report.
`decide` exits with a code a CI pipeline can gate on (see EXIT_* below).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from evaluators.cli.common import EXIT_OK, EXIT_USAGE, RubricOption, fail, fail_all
from evaluators.core.locations import display_path
from evaluators.core.text import plural
from evaluators.integrations.langfuse.prompts import label_problem
from evaluators.integrations.langfuse.release_labels import apply_release_labels
from evaluators.integrations.langfuse.settings import LangfuseConfigError
from evaluators.judge.calibration_record import read_calibration
from evaluators.release.comparison import compare_versions
from evaluators.release.contracts import Decision, ReleaseReport
from evaluators.release.coverage import MANIFEST_KEY as COVERAGE_KEY
from evaluators.release.coverage import ScenarioSet
from evaluators.release.head_to_head import head_to_head_from_records
from evaluators.release.rules import ReleaseError, release_report
from evaluators.release.stored_run import ReleaseRun, read_run, report_for_run
from evaluators.report.console import stderr_console, stdout_console
from evaluators.report.frames import write_release_files
from evaluators.report.html import render_html
from evaluators.report.junit import write_junit
from evaluators.report.terminal import comparison_table, print_notices, print_release
from evaluators.rubric.loader import Rubric, RubricError, default_rubric, load_rubric
from evaluators.store.records import CaseResult, versions_of
from evaluators.store.run_store import RunStore, StoreError

# `decide` exit codes, most severe outcome wins. 1 and 2 keep their meaning across the CLI.
EXIT_DEPLOY = EXIT_OK  # every decided version: deploy
EXIT_APPLY_FAILED = 1  # --apply could not move the labels (the decisions were printed)
EXIT_AB_TEST = 3  # no version to revise, at least one A/B candidate
EXIT_REVISE = 4  # at least one version needs revision
EXIT_INCOMPLETE = 5  # some version's run lacks evidence (interrupted, filtered, failed cases): finish it
# some version would ship (deploy, or A/B test) but has safety-relevant replies no admitted judge or
# hard-flag detector verified (rubric decision.safety_evidence): its outcome is incomplete, refused
EXIT_SAFETY_UNVERIFIED = 6
# `compare` exit codes.
EXIT_NO_REGRESSION = EXIT_OK
EXIT_REGRESSION = 1  # run B is significantly worse than run A on some metric

RunDirArgument = Annotated[Path, typer.Argument(help="A run directory (runs/RUN_ID).", show_default=False)]
BaselineOption = Annotated[str | None, typer.Option(
    "--baseline", "-b", help="Compare every version against this one instead of the baseline in its front matter.",
    show_default=False)]
PartialOption = Annotated[bool, typer.Option(
    "--partial", help="Decide versions whose run does not cover the whole scenario set (filtered or unfinished) "
                      "on the evidence there is; such a version is never deployed.")]
JunitOption = Annotated[Path | None, typer.Option(
    "--junit", help="Also write JUnit XML to this file for CI: a test case per (version, scenario) with its "
                    "scores as properties and its typed failures.", dir_okay=False, show_default=False)]
VersionsOption = Annotated[list[str] | None, typer.Option(
    "--prompt", "-p", help="Decide only this prompt version; repeatable. Default: every version in the run.",
    show_default=False)]


def _results_console() -> Console:
    """stdout; in logs and pipes wide enough that a table row is never folded."""
    console = stdout_console()
    if not console.is_terminal:
        console.width = max(console.width, 160)
    return console


def load_rubric_option(rubric_path: Path | None) -> Rubric:
    """The packaged rubric, or the --rubric file (exit 2 naming the key when it is invalid)."""
    if rubric_path is None:
        return default_rubric()
    try:
        return load_rubric(rubric_path)
    except RubricError as error:
        raise fail_all(error.problems, EXIT_USAGE) from None


def _read(run_dir: Path, rubric: Rubric) -> ReleaseRun:
    if not run_dir.exists():
        raise fail(f"error: {display_path(run_dir)}: no such run directory", EXIT_USAGE)
    try:
        return read_run(run_dir, rubric)
    except (StoreError, ReleaseError) as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None


def _release(run: ReleaseRun, rubric: Rubric, versions: Sequence[str] | None, baseline: str | None,
             partial: bool = False) -> ReleaseReport:
    try:
        return report_for_run(run, rubric, versions=list(versions) if versions else None,
                              baseline_override=baseline, partial=partial)
    except ReleaseError as error:
        raise fail(f"error: {display_path(run.directory)}: {error}", EXIT_USAGE) from None


def decision_exit_code(decisions: Sequence[Decision]) -> int:
    """6 when any version's shipping outcome was refused for unverified safety evidence, else 5 when
    any version's evidence is incomplete, else 4 when any is to be revised, else 3 when any is an
    A/B candidate, else 0. 6 comes first: a version that would reach users on unverified safety
    evidence is what a pipeline must never miss."""
    outcomes = {decision.outcome for decision in decisions}
    if any(decision.refused for decision in decisions):
        return EXIT_SAFETY_UNVERIFIED
    if "incomplete" in outcomes:
        return EXIT_INCOMPLETE
    if "revise" in outcomes:
        return EXIT_REVISE
    if "ab_test" in outcomes:
        return EXIT_AB_TEST
    return EXIT_DEPLOY


def _apply_labels(decisions: list[Decision], ab_label: str, run_dir: Path) -> None:
    """Move the Langfuse labels for the decisions onto the prompt versions the run evaluated; say what changed."""
    try:
        inputs = RunStore.open(run_dir).read_inputs()
    except StoreError as error:
        raise fail(f"error: --apply: {error}", EXIT_USAGE) from None
    if inputs is None:
        raise fail(f"error: --apply: {display_path(run_dir)} predates inputs.json, so the prompts it evaluated are "
                   "unknown; run the evaluation again", EXIT_USAGE)
    try:
        lines = apply_release_labels(decisions, prompts=inputs.prompts, ab_label=ab_label, environ=os.environ)
    except LangfuseConfigError as error:
        raise fail(f"error: --apply: {error}", EXIT_USAGE) from None
    except (RuntimeError, ValueError, OSError) as error:
        raise fail(f"error: --apply failed; labels may be partly moved: {error}", EXIT_APPLY_FAILED) from None
    console = stdout_console()
    for line in lines or ["--apply: no label changed"]:
        console.print(Text(line), soft_wrap=True)  # one change per line, never folded: logs are grepped


def decide(
    run_dir: RunDirArgument,
    baseline: BaselineOption = None,
    version: VersionsOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the decisions as JSON instead of the table.")] = False,
    apply: Annotated[bool, typer.Option(
        "--apply", help="Move Langfuse prompt labels by the decisions: production for deploy, --ab-label for an A/B "
                        "candidate; prints exactly what changed. Without it nothing is changed anywhere.")] = False,
    ab_label: Annotated[str | None, typer.Option(
        "--ab-label", help="With --apply: the label for A/B candidates. Default: decision.ab_label in the rubric.",
        show_default=False)] = None,
    partial: PartialOption = False,
    junit: JunitOption = None,
    rubric_path: RubricOption = None,
) -> None:
    """Decide deploy / A/B test / revise for each prompt version of a run, with the rules that fired.

    Deploy: average ≥ 0.7, no metric mean below 0.5, no safety scenario failed its hard
    criteria, and the run scored every scenario of its scenario set. A/B candidate: average ≥
    0.6 and better than its baseline beyond noise on some metric (paired bootstrap) without a
    significant trust & boundaries regression. Otherwise revise. The thresholds are the
    rubric's `decision:` section. A run that does not cover the whole scenario set (interrupted,
    filtered, failed cases) is incomplete: the decision says what is missing and how to finish
    (run --resume); --partial decides it on the evidence there is, never to deploy. A version
    that would deploy or be an A/B candidate with safety-relevant replies that no admitted judge
    verified (rubric decision.safety_evidence) is refused: incomplete, with the count and the
    command that verifies them.

    Exit codes (the most severe decision wins): 0 every version deploy; 3 no version to
    revise and at least one A/B candidate; 4 at least one version to revise; 5 some version's
    evidence is incomplete; 6 some version's deploy or A/B test refused for unverified
    safety-relevant replies; 2 bad arguments or inputs (missing run, no scored case, unknown
    version or baseline, --apply with --partial); 1 --apply failed.
    """
    if ab_label is not None and not apply:
        raise typer.BadParameter("--ab-label goes with --apply", param_hint="--ab-label")
    if apply and partial:  # an A/B label puts the prompt in front of real users: never on partial evidence
        raise typer.BadParameter("--apply moves Langfuse labels, and an A/B label puts the prompt in front of "
                                 "users, so it never acts on --partial evidence: finish the run (run --resume), "
                                 "then decide --apply on the complete run", param_hint="--apply / --partial")
    if ab_label is not None and (problem := label_problem(ab_label)):
        raise typer.BadParameter(problem, param_hint="--ab-label")
    rubric = load_rubric_option(rubric_path)
    run = _read(run_dir, rubric)
    report = _release(run, rubric, version, baseline, partial)
    if as_json:
        typer.echo(json.dumps([decision.model_dump(mode="json") for decision in report.decisions], indent=2,
                              ensure_ascii=False))
    else:
        print_release(report, rubric, _results_console())
    print_notices(report, stderr_console())
    if junit is not None:
        written = write_junit(junit, [case for case in run.cases if case.prompt_version in
                                      {decision.prompt_version for decision in report.decisions}],
                              rubric, run_id=str(run.manifest.get("run_id", "")), release=report)
        stderr_console().print(Text(f"JUnit XML: {display_path(written)}"))
    if apply:
        _apply_labels(report.decisions, ab_label or rubric.decision.ab_label, run.directory)
    raise typer.Exit(code=decision_exit_code(report.decisions))


def report(
    run_dir: RunDirArgument,
    baseline: BaselineOption = None,
    version: VersionsOption = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Directory for report.html, decisions.json and the release CSV/Parquet files. "
                               "Default: the run directory.", file_okay=False, show_default=False)] = None,
    worst: Annotated[int, typer.Option(min=0, help="Worst cases shown per version.")] = 5,
    partial: PartialOption = False,
    rubric_path: RubricOption = None,
) -> None:
    """Write the release report of a run: report.html (self-contained), decisions.json, CSV and Parquet.

    Prints the decisions table and where the files went. Exit codes: 0 written; 2 bad
    arguments or inputs.
    """
    rubric = load_rubric_option(rubric_path)
    run = _read(run_dir, rubric)
    release = _release(run, rubric, version, baseline, partial)
    html = render_html(release, run.cases, rubric, worst=worst)
    target = output if output is not None else run.directory
    try:
        written = write_release_files(release, target, html)
    except OSError as error:
        raise fail(f"error: cannot write the report to {display_path(target)}: {error.strerror}", EXIT_USAGE) from None
    print_release(release, rubric, _results_console())
    errors = stderr_console()
    print_notices(release, errors)
    errors.print(Text(f"report: {display_path(target / 'report.html')} (and {plural(len(written) - 1, 'more file')} in "
                      f"{display_path(target)})"))


def _pairs(a: ReleaseRun, b: ReleaseRun, versions: Sequence[str] | None) -> list[tuple[str, str]]:
    """(version in A, version in B) pairs: the same name in both runs, or each run's only version."""
    in_a = versions_of(a.cases)
    in_b = versions_of(b.cases)
    if versions:
        missing = [f"{name} (not in {side.run_id})" for name in versions for side, present in ((a, in_a), (b, in_b))
                   if name not in present]
        if missing:
            raise fail(f"error: --prompt: {', '.join(missing)}", EXIT_USAGE)
        return [(name, name) for name in versions]
    common = [name for name in in_b if name in in_a]
    if common:
        skipped = [f"{name} (only in {a.run_id})" for name in in_a if name not in in_b]
        skipped += [f"{name} (only in {b.run_id})" for name in in_b if name not in in_a]
        if skipped:
            stderr_console().print(Text(f"not compared: {', '.join(skipped)}", style="yellow"))
        return [(name, name) for name in common]
    if len(in_a) == 1 and len(in_b) == 1:
        return [(in_a[0], in_b[0])]
    raise fail(f"error: the runs share no prompt version ({a.run_id}: {', '.join(in_a)}; {b.run_id}: "
               f"{', '.join(in_b)}); compare runs of the same versions, or of one version each", EXIT_USAGE)


def compare(
    run_a: Annotated[Path, typer.Argument(help="The reference run directory.", show_default=False)],
    run_b: Annotated[Path, typer.Argument(help="The run to compare with it.", show_default=False)],
    version: Annotated[list[str] | None, typer.Option(
        "--prompt", "-p", help="Compare only this prompt version (present in both runs); repeatable.",
        show_default=False)] = None,
    rubric_path: RubricOption = None,
) -> None:
    """Compare two runs version by version: B minus A per metric, paired by scenario, with intervals.

    Versions with the same name are compared (those in only one run are named as not
    compared); two runs of one version each are compared with each other. Exit codes: 0 no
    metric significantly worse in B; 1 B is significantly worse on some metric; 2 bad
    arguments or inputs.
    """
    rubric = load_rubric_option(rubric_path)
    a, b = _read(run_a, rubric), _read(run_b, rubric)
    console = _results_console()
    regressed = []
    for version_a, version_b in _pairs(a, b, version):
        comparison = compare_versions(version_b, version_a, b.cases, rubric, baseline_cases=a.cases)
        if comparison.pairs == 0:
            raise fail(f"error: {version_a} in {a.run_id} and {version_b} in {b.run_id} share no scored scenario",
                       EXIT_USAGE)
        label_a, label_b = f"{a.run_id}/{version_a}", f"{b.run_id}/{version_b}"
        console.print(comparison_table(comparison, title=f"B {label_b} against A {label_a}"))
        console.print(_side_line("A", label_a, a, version_a, rubric))
        console.print(_side_line("B", label_b, b, version_b, rubric))
        regressed += [f"{label_b} {delta.metric} {delta.delta:+.3f}" for delta in comparison.deltas
                      if delta.change == "regressed"]
    errors = stderr_console()
    for notice in dict.fromkeys(a.notices + b.notices):
        errors.print(Text(f"notice: {notice}", style="yellow"))
    if a.sample_data or b.sample_data:
        errors.print(Text("notice: recorded sample replies (replay) are among these scores, not a live model",
                          style="yellow"))
    if regressed:
        errors.print(Text(f"significantly worse in B: {'; '.join(regressed)}", style="red"))
        raise typer.Exit(code=EXIT_REGRESSION)


def _side_line(side: str, label: str, run: ReleaseRun, version: str, rubric: Rubric) -> Text:
    """The version's decision within its own run, for context beside the differences."""
    try:
        decision = report_for_run(run, rubric, versions=[version]).decisions[0]
    except ReleaseError as error:
        return Text(f"{side} {label}: {error}", style="yellow")
    return Text(f"{side} {label}: {decision.summary}")


def print_run_decisions(store: RunStore, cases: list[CaseResult], rubric: Rubric) -> ReleaseReport | None:
    """The end of `penpal-eval run`: the decision per version with its reasons (baselines and the
    scenario set from the manifest); returns them (None when no version could be decided)."""
    manifest = store.manifest
    baselines = manifest.get("config", {}).get("baselines") or {}
    record = manifest.get(COVERAGE_KEY)
    scenario_set = ScenarioSet.from_record(record) if isinstance(record, dict) and record.get("scenarios") else None
    present = versions_of(cases)
    decidable = [version for version in present
                 if any(case.status == "ok" for case in cases if case.prompt_version == version)]
    errors = stderr_console()
    for version in present:
        if version not in decidable:
            errors.print(Text(f"no release decision for {version}: every case failed", style="yellow"))
    if not decidable:
        return None
    try:
        release = release_report(cases, rubric, baselines=baselines, versions=decidable, scenario_set=scenario_set,
                                 run_dir=display_path(store.directory),
                                 head_to_head=head_to_head_from_records(store.read_pairwise(), rubric),
                                 calibration=read_calibration())
    except (ReleaseError, StoreError) as error:
        errors.print(Text(f"no release decision: {error}", style="yellow"))
        return None
    print_release(release, rubric, _results_console())
    return release
