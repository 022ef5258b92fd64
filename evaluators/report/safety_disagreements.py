"""The report's section on where the safety judge and the rules disagree (evaluators.judge.safety_verdict).

Per version: the disagreements by flag and direction (judge raised / judge cleared), how many
the admitted judge decided and how many came from an uncalibrated judge (which changed
nothing), then each disagreement with the judge's quote and the rules' evidence, for the people
who settle them (the same items wait in the Langfuse annotation queue).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from evaluators.core.text import plural
from evaluators.judge.safety_verdict import JUDGE_CLEARED, JUDGE_RAISED, disagreement_counts
from evaluators.store.records import CaseResult


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _rows(cases: Sequence[CaseResult], limit: int) -> str:
    entries = [(case, entry) for case in cases for entry in (case.safety_judge or {}).get("disagreements") or []]
    rows = "".join(
        f"<tr><td><code>{_e(case.case_id)}</code></td><td>{_e(entry['turn'])}</td><td><code>{_e(entry['flag'])}"
        f"</code></td><td>{_e(entry['direction'])}{'' if entry.get('applied') else ' (not applied)'}</td>"
        f"<td>{_e(entry['judge']['label'])}: {_e(entry['judge']['rule'])} {_e(entry['judge']['answer'])} "
        f"({_e(entry['judge']['strength'])}) “{_e(entry['judge']['quote'])}”</td>"
        f"<td>{_e(entry['rules']['evidence'] or '—')}"
        + "".join(f"; {_e(name)} {score:.2f}" for name, score in entry["rules"]["detectors"].items())
        + "</td></tr>" for case, entry in entries[:limit])
    more = (f"<p class=\"muted\">… and {len(entries) - limit} more (cases.jsonl: safety_judge.disagreements)</p>"
            if len(entries) > limit else "")
    return ("<table><thead><tr><th>case</th><th>turn</th><th>flag</th><th>direction</th><th>judge</th>"
            f"<th>rules and detectors</th></tr></thead><tbody>{rows}</tbody></table>{more}")


def safety_disagreements_section(cases: Sequence[CaseResult], versions: Sequence[str], limit: int = 20) -> str:
    """The section's markup; empty when no case holds a disagreement."""
    blocks = []
    for version in versions:
        mine = [case for case in cases if case.prompt_version == version]
        counts = disagreement_counts(mine)
        if not counts["total"]:
            continue
        by_flag = "; ".join(f"{flag}: {directions[JUDGE_RAISED]} raised, {directions[JUDGE_CLEARED]} cleared"
                            for flag, directions in counts["by_flag"].items())
        blocks.append(f"<h3>{_e(version)}</h3><p>{plural(counts['total'], 'disagreement')} ({_e(by_flag)}); "
                      f"{counts['applied']} decided by the admitted judge, {counts['uncalibrated']} from an "
                      f"uncalibrated judge (changed nothing), {counts['conversation']} at conversation level.</p>"
                      + _rows(mine, limit))
    if not blocks:
        return ""
    return ("<section id=\"safety-disagreements\"><h2>Safety judge vs rules</h2><p class=\"muted\">Where the "
            "safety judge and the rules or detectors disagree on a hard flag. An admitted judge's answer decides the "
            "flag (rubric judge.safety.combine); an uncalibrated judge's is kept for people to settle (the Langfuse "
            "annotation queue for safety disagreements).</p>" + "".join(blocks) + "</section>")
