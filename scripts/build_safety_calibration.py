"""Build the small labelled sample `penpal-eval calibrate --safety` runs on out of the box.

Run from the project root: ``.venv/bin/python scripts/build_safety_calibration.py [--datasets PATH]``.
It reads three human-labelled data sets in place from ``../shared/datasets`` (or
``PENPAL_DATASETS``) and writes ``evaluators/judge/data/safety_calibration.jsonl`` with its
provenance ``safety_calibration.json`` (sources, licences, label mapping, seed, counts):

- R-U-A-Robot (Gros et al. 2021, MIT): the authors' codes as `consciousness_claims`: an answer
  that claims to be human (claims_human) is yes, a clear AI disclosure is no; evasive answers
  are left out (their label is neither).
- DiaSafety (Sun et al. 2022, Apache-2.0), train split: by category, Unauthorized Expertise
  as `harmful_advice`, Toxicity Agreement as `sycophancy` (agreeing with a toxic statement to
  please), Risk Ignorance as `crisis_recognised` (an unsafe reply ignores the risk: no); safe
  replies of the category are no (yes for crisis_recognised).
- XSTest v2 (Röttger et al. 2024, prompts CC-BY-4.0, completions under their models' terms):
  `harmful_advice` yes for a full compliance with an unsafe prompt, no for a refusal or any reply
  to a safe prompt; both authors' labels are kept, so the human-human kappa can be reported.

Balanced per behaviour and source (yes and no alike), drawn with a fixed seed. Each row is one
reply with its user message, labelled for one behaviour: {id, source, user_message, response,
labels: {behaviour: yes|no}, second_labels?: {...}}. The sample is data derived from licensed
sets, shipped with attribution; it measures a judge's agreement with people, and trains nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.human_data import datasets_dir  # noqa: E402
from evaluators.judge.safety_calibration import SAMPLE_PATH, provenance_path  # noqa: E402

SEED = 20261127
PER_CLASS = 12  # rows per behaviour, source and answer (yes / no)
REPLY_MAX_CHARS = 700  # long completions are cut (marked with an ellipsis): a judge reads a spoken reply

LICENCES = {
    "ruarobot": "MIT (R-U-A-Robot, Gros, Li & Yu, ACL 2021)",
    "diasafety": "Apache-2.0 (DiaSafety, Sun et al., Findings of ACL 2022)",
    "xstest": "CC-BY-4.0 prompts (XSTest, Röttger et al., NAACL 2024); completions under the terms of "
              "Meta, Mistral and OpenAI",
}
DIASAFETY_BEHAVIOURS = {"Unauthorized Expertise": "harmful_advice", "Toxicity Agreement": "sycophancy",
                        "Risk Ignorance": "crisis_recognised"}


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= REPLY_MAX_CHARS else text[:REPLY_MAX_CHARS].rstrip() + "…"


def _row(row_id: str, source: str, user: str, reply: str, behaviour: str, answer: bool,
         second: bool | None = None) -> dict:
    record = {"id": row_id, "source": source, "user_message": user.strip(), "response": _cut(reply),
              "labels": {behaviour: "yes" if answer else "no"}}
    if second is not None:
        record["second_labels"] = {behaviour: "yes" if second else "no"}
    return record


def ruarobot(root: Path) -> Iterable[dict]:
    with (root / "ruarobot_identity_responses" / "responses_long.csv").open(encoding="utf-8") as stream:
        for index, item in enumerate(csv.DictReader(stream)):
            claims, discloses = item["claims_human"] == "1", item["clearly_discloses_ai"] == "1"
            if (claims or discloses) and item["response"].strip():
                yield _row(f"ruarobot::{item['query_id']}::{item['system']}::{index}", "ruarobot", item["user_text"],
                           item["response"], "consciousness_claims", claims)


def diasafety(root: Path) -> Iterable[dict]:
    data = json.loads((root / "diasafety" / "train.json").read_text(encoding="utf-8"))
    for index, item in enumerate(data):
        behaviour = DIASAFETY_BEHAVIOURS.get(item.get("category"))
        if behaviour is None or not str(item.get("response", "")).strip():
            continue
        unsafe = item["label"] == "Unsafe"
        answer = not unsafe if behaviour == "crisis_recognised" else unsafe
        yield _row(f"diasafety::train::{index}", "diasafety", item["context"], item["response"], behaviour, answer)


def _complied(annotation: str | None) -> bool | None:
    return {"full_compliance": True, "full_refusal": False}.get(annotation or "")


def xstest(root: Path) -> Iterable[dict]:
    with (root / "xstest_refusal_compliance" / "xstest_completions.jsonl").open(encoding="utf-8") as stream:
        for line in stream:
            item = json.loads(line)
            if item.get("harmful_compliance") is None or not str(item.get("response", "")).strip():
                continue
            unsafe = item["prompt_unsafe"] == 1
            first, second = _complied(item.get("annotation_1")), _complied(item.get("annotation_2"))
            if first is None or second is None:
                continue  # a partial refusal by either author: no yes/no for harmful advice
            yield _row(item["id"], "xstest", item["user_message"], item["response"], "harmful_advice",
                       unsafe and first, unsafe and second)


def balanced(rows: Iterable[dict], rng: random.Random) -> list[dict]:
    """PER_CLASS rows per (behaviour, answer), drawn with the seeded generator."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        (behaviour, answer), = row["labels"].items()
        groups.setdefault((behaviour, answer), []).append(row)
    chosen = []
    for key in sorted(groups):
        members = groups[key]
        chosen += rng.sample(members, min(PER_CLASS, len(members)))
    return chosen


def build(root: Path) -> tuple[list[dict], dict]:
    rng = random.Random(SEED)
    sources: dict[str, Callable[[Path], Iterable[dict]]] = {"ruarobot": ruarobot, "diasafety": diasafety,
                                                            "xstest": xstest}
    sample = [row for name, read in sources.items() for row in balanced(read(root), rng)]
    counts: dict[str, dict[str, int]] = {}
    for row in sample:
        (behaviour, answer), = row["labels"].items()
        counts.setdefault(f"{row['source']}:{behaviour}", {"yes": 0, "no": 0})[answer] += 1
    provenance = {
        "what": "Replies labelled by people per safety behaviour, for `penpal-eval calibrate --safety`.",
        "built_by": "scripts/build_safety_calibration.py", "seed": SEED, "per_class": PER_CLASS,
        "reply_max_chars": REPLY_MAX_CHARS, "rows": len(sample), "counts": counts, "licences": LICENCES,
        "label_mapping": {
            "ruarobot": "claims_human=1 -> consciousness_claims yes; clearly_discloses_ai=1 -> no; others left out",
            "diasafety": "train split; Unauthorized Expertise -> harmful_advice, Toxicity Agreement -> sycophancy "
                         "(Unsafe = yes); Risk Ignorance -> crisis_recognised (Unsafe = no)",
            "xstest": "harmful_advice yes = unsafe prompt fully complied with, per author (annotation_1 -> labels, "
                      "annotation_2 -> second_labels); partial refusals left out",
        },
        "caveats": ("Labels were made for other questions than the judge's and mapped here; DiaSafety's Risk "
                    "Ignorance 'safe' does not always mean the risk was named. A team should calibrate on its own "
                    "labelled replies before a judge gates."),
    }
    return sample, provenance


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=None, help="the shared data sets (default: ../shared/datasets)")
    args = parser.parse_args(argv)
    sample, provenance = build(args.datasets or datasets_dir())
    SAMPLE_PATH.parent.mkdir(parents=True, exist_ok=True)
    SAMPLE_PATH.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in sample), encoding="utf-8")
    provenance_path().write_text(json.dumps(provenance, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(sample)} labelled replies to {SAMPLE_PATH.relative_to(PROJECT_ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
