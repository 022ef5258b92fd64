"""The detector card: docs/detectors.md, generated from the detectors' provenance.

Why generated: the figures a reader trusts a detector by (its data, their licences, the label
it learned, the methods compared, the leave-one-data-set-out AUROC, the out-of-fold threshold
and what it costs in recall and false alarms) are written by the training script beside the
weights (`detectors.json`); a card typed by hand would drift from the weights that ship. With
`--check` it only reports whether the card is current (exit 1 if not), as the rubric doc does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

from evaluators.core.locations import PROJECT_ROOT
from evaluators.rubric.loader import Rubric, default_rubric
from evaluators.scoring.safety.detector_use import load_spiral_deductions
from evaluators.scoring.safety.detectors import detectors_path, load_detector_provenance

CARD_PATH = PROJECT_ROOT / "docs" / "detectors.md"
COMMAND = "python -m evaluators.scoring.safety.detector_card"
THRESHOLDS = "thresholds (out of fold, pooled rows)"
JUDGE_BAND = "judge band (out of fold, pooled rows)"
COMPARED = "methods compared"


def _cell(value: object) -> str:
    """A table cell: numbers to at most 4 places as the provenance has them (a flag_at of 0.9951
    is not 1.00), nothing as an em dash, pipes escaped."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") or "0"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    return lines + ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]


def _held_out(figures: Mapping) -> list[str]:
    """The held-out figures of one method: per left-out data set, or per left-out seed/category."""
    parts = []
    for key, value in figures.items():
        if isinstance(value, Mapping) and key.startswith("leave-one"):
            parts += [f"{source} {_cell(area)}" for source, area in value.items()]
        elif key.startswith("leave-one") or key == "grouped 5-fold AUROC":
            parts.append(f"{key} {_cell(value)}")
    return parts


def _lowest_held_out(record: Mapping) -> str:
    """The kept method's lowest held-out AUROC and which protocol gave it: the figure that says
    how far the detector carries to data it never saw."""
    figures = record.get(COMPARED, {}).get(record.get("method"), {})
    found = []
    for key, value in figures.items():
        if isinstance(value, Mapping) and key.startswith("leave-one"):
            found += [(area, f"{source} left out") for source, area in value.items()]
        elif key.startswith("leave-one"):
            found.append((value, key))
    if not found:
        return "—"
    area, where = min(found)
    return f"{_cell(float(area))} ({where})"


def _detector_section(name: str, record: Mapping, rubric: Rubric) -> list[str]:
    rule = rubric.detectors.behaviours.get(name)
    use = ("not read by the rubric" if rule is None else f"feeds `{rule.flag}`" if rule.flag
           else "graded trust deduction" if rule.graded else "reported only")
    data_rows = [[source, entry.get("licence"), entry.get("rows"), entry.get("positives")]
                 for source, entry in record.get("data", {}).items()]
    method_rows = [[method + (" (kept)" if method == record.get("method") else ""), "; ".join(_held_out(figures))]
                   for method, figures in record.get(COMPARED, {}).items()]
    shown = record.get(THRESHOLDS, {})
    lines = [
        f"## `{name}`",
        "",
        f"Reads the {record.get('reads', '?')} ({record.get('form', '?')} form); method kept: "
        f"{record.get('method', '?')}; in the rubric: {use}.",
        "",
        f"Label: {_cell(record.get('labels'))}",
        "",
        f"The training script recommends: {_cell(record.get('recommended use'))}. The rubric's use: "
        f"{_cell(rule.reasons['use']) if rule is not None else '—'}",
        "",
        *_table(["Data set", "Licence", "Rows", "Positives"], data_rows),
        "",
        *_table(["Method", "Held-out AUROC (development figures)"], method_rows),
        "",
        *_table(["flag_at", "Uncertain", "Precision", "Recall", "False alarms", "Rule"],
                [[shown.get("flag_at"), "–".join(_cell(v) for v in shown.get("uncertain", [])),
                  shown.get("precision_at_flag"), shown.get("recall_at_flag"), shown.get("false_alarm_at_flag"),
                  shown.get("flag_rule")]]),
    ]
    band = record.get(JUDGE_BAND) or {}
    if band:
        triggers = rule is not None and name in rubric.detectors.judge_triggers
        lines += ["", f"Judge band (out of fold; {band.get('judge_rule')}): from {band.get('judge_from')}, holding "
                  f"{_cell(band.get('recall_at_judge_from'))} of the positives and "
                  f"{_cell(band.get('negatives_at_or_above'))} of the negatives; "
                  + ("a reply in it goes to the safety judge." if triggers else
                     "it triggers nothing (risk in the user's message triggers as a risk cue)."
                     if record.get("reads") == "user" else "it triggers nothing (a good move, not a harm).")]
    if rule is not None and shown.get("flag_at") is not None and rule.flag_at != shown["flag_at"]:
        lines += ["", f"The rubric fires it at {rule.flag_at:g}, not at the out-of-fold {shown['flag_at']:g}: "
                  f"{rule.reasons['flag_at']}"]
    elsewhere = record.get("measured elsewhere") or {}
    if elsewhere:
        lines += ["", "Measured elsewhere:", ""]
        for key, value in elsewhere.items():
            if isinstance(value, Mapping):
                lines.append(f"- {key}: " + "; ".join(f"\"{text}\" {_cell(v)}" for text, v in value.items()))
            else:
                lines.append(f"- {key}: {_cell(value)}")
    return lines


def _rule_s_section(spiral: Mapping) -> list[str]:
    """Rule S's figures (benchmarks/spiral_deductions.py): does each Spiral-labelled detector's
    graded deduction, fed scores out of fold by seed prompt, lift trust, at what cost elsewhere."""
    lines = [
        "## Rule S: graded deductions of the Spiral-labelled detectors",
        "",
        "Written by `benchmarks/spiral_deductions.py` into `evaluators/scoring/safety/spiral_deductions.json`; "
        "the rule was stated before these were measured. A detector Spiral-Bench labels takes the graded trust "
        f"deduction (its ramp to flag_at, weight {spiral.get('weight')} under trust_boundaries) when (1) on "
        "spiral_bench_dev, fed its score out of fold by seed prompt, trust's AUROC for its own label rises by at "
        f"least {spiral.get('min gain (1)')}; (2) with all passing deductions on, trust's AUROC for harm on no other "
        f"development set falls by more than {spiral.get('max fall (2)')}; (3) the look-alike tests and the offline "
        "job's decisions hold. Trust is the real scorer's.",
        "",
        *_table(["Detector", "Positives", "Rows", "Trust AUROC without", "With (out of fold)", "Gain", "(1)"],
                [[f"`{name}`", item["positives"], item["rows"], item["trust AUROC without"],
                  item["trust AUROC with (oof)"], item["gain"], "pass" if item["passes (1)"] else "fail"]
                 for name, item in spiral.get("spiral_bench (1)", {}).items()]),
    ]
    for round_ in spiral.get("other sets (2)", []):
        on = ", ".join(f"`{name}`" for name in round_["deducting"]) or "none"
        lines += ["", f"Other sets, deducting {on}:", "",
                  *_table(["Data set", "Rows", "Harmful", "Trust AUROC without", "With", "Fall", "(2)"],
                          [[name, item["rows"], item["harmful"], item["trust AUROC without"], item["trust AUROC with"],
                            item["fall"], "pass" if item["passes (2)"] else "fail"]
                           for name, item in round_["sets"].items()])]
    if spiral.get("dropped for (3)"):
        lines += ["", "Dropped for (3): " + ", ".join(f"`{name}`" for name in spiral["dropped for (3)"]) + "."]
    deducting = ", ".join(f"`{name}`" for name in spiral.get("deducting", [])) or "none"
    return [*lines, "", f"Verdict: {deducting} take the graded deduction."]


def render_card(provenance: Mapping, rubric: Rubric, spiral: Mapping | None = None) -> str:
    """The card as Markdown; deterministic, ending in one newline; with Rule S's figures
    (benchmarks/spiral_deductions.py) where they were measured."""
    detectors = provenance.get("detectors", {})
    intro = [
        "# Safety detector card",
        "",
        "Generated from `evaluators/scoring/safety/detectors.json` (the provenance the training "
        f"script writes beside the weights) by `{COMMAND}`; do not edit by hand.",
        "",
        f"- Trained by: `{provenance.get('script', '?')}`, seed {provenance.get('seed', '?')}, "
        f"on {provenance.get('date', '?')}.",
        f"- Features: {provenance.get('features', '?')}.",
        f"- Weighting: {provenance.get('weighting', '?')}.",
        f"- Not measured: {provenance.get('not measured', '—')}.",
        "",
        "Every figure is a development figure from rows the head never saw: leave-one-data-set-out "
        "(trained on the other sets), or leave-one-seed-out / leave-one-category-out for detectors "
        "only Spiral-Bench labels. The thresholds are out of fold. How the rubric reads each detector "
        "is in docs/rubric.md (Learned safety detectors).",
        "",
        *_table(["Detector", "Reads", "Method", "Lowest held-out AUROC", "flag_at", "Recall", "False alarms"],
                [[f"`{name}`", record.get("reads"), record.get("method"), _lowest_held_out(record),
                  record.get(THRESHOLDS, {}).get("flag_at"), record.get(THRESHOLDS, {}).get("recall_at_flag"),
                  record.get(THRESHOLDS, {}).get("false_alarm_at_flag")] for name, record in detectors.items()]),
    ]
    sections = [intro, *(_detector_section(name, record, rubric) for name, record in detectors.items())]
    if spiral is not None:
        sections.append(_rule_s_section(spiral))
    return "\n\n".join("\n".join(section) for section in sections) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write docs/detectors.md, or with --check report whether it is current."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/detectors.md differs from the rendering; write nothing")
    args = parser.parse_args(argv)
    rubric = default_rubric()
    rendered = render_card(load_detector_provenance(detectors_path(rubric.detectors.model)), rubric,
                           load_spiral_deductions())
    shown = CARD_PATH.relative_to(PROJECT_ROOT).as_posix()
    if args.check:
        current = CARD_PATH.read_text(encoding="utf-8") if CARD_PATH.exists() else None
        if current != rendered:
            state = "is missing" if current is None else "is out of date with detectors.json"
            print(f"{shown} {state}; run `{COMMAND}` to regenerate it.", file=sys.stderr)
            return 1
        print(f"{shown} is up to date.")
        return 0
    CARD_PATH.write_text(rendered, encoding="utf-8", newline="\n")
    print(f"wrote {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
