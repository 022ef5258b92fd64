"""How often the language check calls English development data foreign (false notices).

Run from the project root: ``python benchmarks/language.py [--datasets PATH] [--examples N]``.
Every user message and reply of the English human-rated sets is checked with the rubric's
language rules; a notice on one of them would leave an English reply unscored. The table
gives texts, notices and the rate per set, then the noticed texts themselves, so a person
can see which were really written in another language (DiaSafety's Reddit and Weibo-derived
contexts hold some Spanish, Dutch, Swedish...). It prints figures and always exits 0;
without the data it says so in one line and stops.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.human_data import (  # noqa: E402
    datasets_dir,
    load_diasafety,
    load_epitome,
    load_fed,
    load_grade,
    load_usr,
)
from evaluators.rubric.loader import default_rubric  # noqa: E402
from evaluators.scoring.reading.language import LanguageCheck  # noqa: E402


def _frame_texts(loader: Callable) -> Callable[[Path], list[tuple[str, str]] | None]:
    def texts(root: Path) -> list[tuple[str, str]] | None:
        frame = loader(root)
        if frame is None:
            return None
        return ([("user message", text) for text in frame["user_message"]]
                + [("reply", text) for text in frame["response"]])
    return texts


def _esconv_texts(root: Path) -> list[tuple[str, str]] | None:
    path = root / "esconv" / "valid.jsonl"
    if not path.exists():
        return None
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for turn in json.loads(line)["dialog"]:
            texts.append(("reply" if turn["speaker"] == "sys" else "user message", turn["text"]))
    return texts


SETS: dict[str, Callable[[Path], list[tuple[str, str]] | None]] = {
    "FED turns": _frame_texts(load_fed),
    "USR PersonaChat": _frame_texts(load_usr),
    "GRADE ConvAI2": _frame_texts(load_grade),
    "EPITOME": _frame_texts(load_epitome),
    "ESConv valid": _esconv_texts,
    "DiaSafety train": _frame_texts(lambda root: load_diasafety(root, "train")),
    "DiaSafety val": _frame_texts(lambda root: load_diasafety(root, "val")),
}


def _checked(check: LanguageCheck, texts: list[tuple[str, str]]) -> Iterator[tuple[str, str, str]]:
    for role, text in texts:
        if isinstance(text, str) and text.strip() and (notice := check.notice(role, text)) is not None:
            yield role, text, notice.text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=None, help="the shared datasets directory")
    parser.add_argument("--examples", type=int, default=12, help="noticed texts to print per set")
    args = parser.parse_args(argv)
    root = args.datasets or datasets_dir()
    if not root.is_dir():
        print(f"no data sets at {root}: nothing to measure (set PENPAL_DATASETS or --datasets)")
        return 0
    check = LanguageCheck(default_rubric().language)
    rules = check.rules
    print(f"Language notices on English development data (min_letters {rules.min_letters}, "
          f"min_confidence {rules.min_confidence:g}, {len(rules.candidates)} candidate languages)")
    print(f"  {'data set':<18} {'texts':>7} {'notices':>8} {'rate':>8} {'ms/text':>8}")
    noticed: dict[str, list[tuple[str, str, str]]] = {}
    total = total_noticed = 0
    for name, load in SETS.items():
        texts = load(root)
        if texts is None:
            print(f"  {name:<18} (absent)")
            continue
        started = time.perf_counter()
        found = list(_checked(check, texts))
        per_text = (time.perf_counter() - started) * 1000 / max(len(texts), 1)
        noticed[name] = found
        total += len(texts)
        total_noticed += len(found)
        print(f"  {name:<18} {len(texts):>7} {len(found):>8} {len(found) / max(len(texts), 1):>8.3%} {per_text:>8.3f}")
    print(f"  {'all':<18} {total:>7} {total_noticed:>8} {total_noticed / max(total, 1):>8.3%}")
    for name, found in noticed.items():
        if not found:
            continue
        print(f"\nNoticed in {name} (first {min(args.examples, len(found))} of {len(found)}; "
              "judge each: another language, or English misread?)")
        for role, text, reason in found[:args.examples]:
            shown = " ".join(text.split())
            shown = shown if len(shown) <= 60 else shown[:59] + "…"
            print(f"  {reason.split(' reads as ')[1]:<24} {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
