"""How fast does the command line answer? Start-up of `penpal-eval` beside its floor.

Run from the project root: ``python benchmarks/cli_startup.py [--repeats 5]``.
Each command runs as a fresh process, as a person types it, interleaved with two
references measured in the same run: ``python -c pass`` (the interpreter alone) and a bare
``spacy.load`` of the same model the heuristics load (the floor of any scoring command).
Targets: ``--help`` and ``scenarios list`` under 0.5 s; the first ``score`` card within the
model load plus 1 s. Medians are printed, since a shared machine makes single runs noisy.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from evaluators.scoring.reading.nlp import MODEL_CANDIDATES  # noqa: E402

QUICK_LIMIT_S = 0.5  # --help and scenarios list
SCORE_MARGIN_S = 1.0  # the first score card, beyond the model load


def installed_model() -> str:
    """The model the heuristics would load: the first candidate that is installed."""
    for name in MODEL_CANDIDATES:
        if importlib.util.find_spec(name) is not None:
            return name
    raise SystemExit(f"no spaCy model installed (tried {', '.join(MODEL_CANDIDATES)})")


def commands(model: str) -> dict[str, list[str]]:
    python = sys.executable
    script = Path(python).with_name("penpal-eval")  # the console script a person types
    cli = [str(script)] if script.exists() else [python, "-m", "evaluators"]
    return {
        "python -c pass": [python, "-c", "pass"],
        f"spacy.load({model})": [python, "-c", f"import spacy; spacy.load({model!r})"],
        "penpal-eval --help": [*cli, "--help"],
        "penpal-eval scenarios list": [*cli, "scenarios", "list"],
        "penpal-eval score -r … (card)": [*cli, "score", "-u", "I had a rough day.",
                                          "-r", "That sounds hard. Do you want to tell me what happened?"],
    }


def time_once(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "COLUMNS": "100"})
    return time.perf_counter() - started


def measure(repeats: int) -> dict[str, float]:
    """Median wall time per command; the rounds interleave the commands so load hits all alike."""
    plan = commands(installed_model())
    # Not counted: warms the file cache and writes the cache directory's derived tables (the
    # cmudict syllables, the lexicon patterns), as the README's first command does.
    for argv in plan.values():
        time_once(argv)
    times: dict[str, list[float]] = {name: [] for name in plan}
    for _ in range(repeats):
        for name, argv in plan.items():
            times[name].append(time_once(argv))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    medians = measure(args.repeats)
    names = list(medians)
    floor, model_load = medians[names[0]], medians[names[1]]
    checks = {
        names[2]: (medians[names[2]] < QUICK_LIMIT_S, f"< {QUICK_LIMIT_S:.1f} s"),
        names[3]: (medians[names[3]] < QUICK_LIMIT_S, f"< {QUICK_LIMIT_S:.1f} s"),
        names[4]: (medians[names[4]] <= model_load + SCORE_MARGIN_S,
                   f"<= model load + {SCORE_MARGIN_S:.0f} s = {model_load + SCORE_MARGIN_S:.2f} s"),
    }
    if args.json:
        print(json.dumps({"repeats": args.repeats, "median_s": medians,
                          "met": {name: met for name, (met, _) in checks.items()}}, indent=2))
        return
    print(f"start-up, median of {args.repeats} fresh processes each (seconds)")
    print(f"{'command':<34} {'median':>7} {'× pass':>7}  target")
    for name in names:
        met, target = checks.get(name, (None, "reference"))
        mark = "" if met is None else ("  ✓" if met else "  ✗ MISSED")
        print(f"{name:<34} {medians[name]:>7.3f} {medians[name] / floor:>7.1f}  {target}{mark}")


if __name__ == "__main__":
    main()
