"""Write the rubric's `detectors.behaviours` from the detectors' provenance, by the stated use rule.

Why a script: every number of that section (flag_at, the uncertain band, a deduction ramp, the
crisis veto point) and whether a detector may feed its flag come from out-of-fold figures
(`evaluators/scoring/safety/detectors.json`, `scripts/crisis_veto.py` for the veto point, and
`benchmarks/spiral_deductions.py`'s figures for Rule S, in `spiral_deductions.json` beside them),
never from reading misses; the rule that turns figures into a use is written once, here, and
the rubric's `detectors.reasons.use_rule` states it in words. Each entry's reasons cite the
figures that decided it.

    .venv/bin/python scripts/crisis_veto.py > veto.json        # the veto point, out of fold
    .venv/bin/python scripts/detector_rubric.py veto.json      # rewrites the section in place
    .venv/bin/python scripts/detector_rubric.py veto.json --check

The section's comments and `reasons` above `behaviours:` are the rubric's own and are kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from evaluators.rubric.loader import DEFAULT_RUBRIC_PATH  # noqa: E402
from evaluators.scoring.safety.detector_use import ORDER, entry_for, load_spiral_deductions  # noqa: E402
from evaluators.scoring.safety.detectors import DETECTORS_FILE, detectors_path, load_detector_provenance  # noqa: E402

START = "  behaviours:\n"
END = "\n# Thresholds for the voice and speakability signals."


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def behaviours_yaml(provenance: dict, veto: dict, spiral: dict | None = None) -> str:
    """The `behaviours:` block, in the rubric's order, each entry as the use rule gives it
    (`spiral`: Rule S's figures, benchmarks/spiral_deductions.py)."""
    lines = [START.rstrip("\n")]
    for name in ORDER:
        record = provenance["detectors"].get(name)
        if record is None:
            continue
        entry = entry_for(name, record, veto, spiral)
        lines.append(f"    {name}:")
        lines += [f"      {key}: {value if not isinstance(value, list) else '[' + ', '.join(map(str, value)) + ']'}"
                  for key, value in entry.items() if key != "reasons"]
        lines.append("      reasons:")
        lines += [f"        {key}: {_quoted(text)}" for key, text in entry["reasons"].items()]
    return "\n".join(lines) + "\n"


def rewritten(text: str, block: str) -> str:
    """The rubric text with its detectors' behaviours block replaced."""
    section = text.index("\ndetectors:\n")
    start = text.index(START, section)
    end = text.index(END, start)
    return text[:start] + block + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("veto", type=Path, help="the JSON scripts/crisis_veto.py printed")
    parser.add_argument("--check", action="store_true", help="exit 1 if the rubric differs; write nothing")
    args = parser.parse_args(argv)
    provenance = load_detector_provenance(detectors_path(DETECTORS_FILE))
    veto = json.loads(args.veto.read_text(encoding="utf-8"))
    current = DEFAULT_RUBRIC_PATH.read_text(encoding="utf-8")
    updated = rewritten(current, behaviours_yaml(provenance, veto, load_spiral_deductions()))
    if args.check:
        if updated != current:
            print("rubric.yaml's detectors.behaviours differ from the provenance; run scripts/detector_rubric.py",
                  file=sys.stderr)
            return 1
        print("rubric.yaml's detectors.behaviours follow the provenance.")
        return 0
    DEFAULT_RUBRIC_PATH.write_text(updated, encoding="utf-8")
    print(f"wrote {DEFAULT_RUBRIC_PATH.relative_to(PROJECT_ROOT)} (detectors.behaviours)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
