"""Does scoring N repeats of a run cost N times the scoring of one?

Run from the project root: ``python benchmarks/repeat_cost.py [--repeats 4] [--repeat 3]``.
Builds one run's transcripts from the shipped scenarios and the first prompt version (replies
from the throughput benchmark's templates, a different draw per repeat, as a model at a
temperature above zero answers differently each time), then times what the runner and the
release stage do with them: the heuristics and expectations in the runner's batches, the typed
failures stored on each case, and the version's aggregate (pass rates over repeats, failure
kinds, safety rule inputs). One repeat and N repeats are timed interleaved in the same run,
best of the timed runs, and the ratio N-repeat cost / (N x one-repeat cost) is printed: the
target is at most 1.10, i.e. repeats add no cost beyond their replies. Below 1 is expected: the
repeats share their user turns, which the scorer parses once per stream. Models load in an
untimed warm-up.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.throughput import make_reply, measure, warn_if_loaded  # noqa: E402
from evaluators.core.completion import Completion  # noqa: E402
from evaluators.inputs.prompts import load_prompts  # noqa: E402
from evaluators.inputs.scenarios import load_scenarios  # noqa: E402
from evaluators.release.aggregates import version_aggregate  # noqa: E402
from evaluators.release.failures import with_failures  # noqa: E402
from evaluators.run.responder import ReplayResponder  # noqa: E402
from evaluators.run.runner import SCORING_BATCH, Runner, RunPlan, Transcript  # noqa: E402
from evaluators.scoring.heuristics import HeuristicEvaluator  # noqa: E402
from evaluators.store.run_store import RunStore  # noqa: E402

TARGET = 0.10  # at most 10% over linear
SEED = 20261127


def transcripts(prompt, scenarios, repeats: int) -> list[Transcript]:
    """Every scripted scenario played `repeats` times, each repeat with replies of its own."""
    played = []
    for repeat in range(repeats):
        rng = random.Random(SEED + repeat)
        for scenario in scenarios:
            users = [turn.user for turn in scenario.turns]
            played.append(Transcript(prompt, scenario, prompt.model, repeat, users,
                                     [Completion(text=make_reply(rng), model="benchmark") for _ in users]))
    return played


def score_run(runner: Runner, played: list[Transcript]) -> None:
    """What the run does after the calls: score in the runner's batches, type the failures, aggregate."""
    cases = []
    for start in range(0, len(played), SCORING_BATCH):
        cases += runner._score(played[start:start + SCORING_BATCH])  # noqa: SLF001 - the runner's own scoring step
    rubric = runner.evaluator.rubric
    cases = [with_failures(case, rubric) for case in cases]
    version_aggregate(cases[0].prompt_version, cases, rubric)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=4, help="repeats of the run compared with one (N)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per size; best is kept")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    evaluator = HeuristicEvaluator()
    prompt = load_prompts()[0]
    scenarios = list(load_scenarios(rubric=evaluator.rubric).scenarios)
    with tempfile.TemporaryDirectory() as directory:
        store = RunStore.create(Path(directory) / "run", {"run_id": "benchmark"})
        runner = Runner(RunPlan(prompts=[prompt], scenarios=scenarios), ReplayResponder(), store, evaluator)
        one, many = transcripts(prompt, scenarios, 1), transcripts(prompt, scenarios, args.repeats)
        score_run(runner, transcripts(prompt, scenarios[:8], 1))  # warm-up, untimed
        works = {"1 repeat": lambda: score_run(runner, one), f"{args.repeats} repeats": lambda: score_run(runner, many)}
        single, repeated = measure(works, 1, args.repeat)
    turns = sum(len(item.users) for item in one)
    print(f"\n  {len(scenarios)} scenarios, {turns} turns per repeat ({prompt.version})")
    print(f"  {'run':<12}{'wall s':>10}{'CPU s':>10}")
    for timing in (single, repeated):
        print(f"  {timing.label:<12}{timing.wall:>10.3f}{timing.cpu:>10.3f}")
    print()
    for clock in ("wall", "cpu"):
        ratio = getattr(repeated, clock) / (args.repeats * getattr(single, clock))
        verdict = "PASS" if ratio <= 1.0 + TARGET else "MISS"
        print(f"  {args.repeats} repeats / ({args.repeats} x 1 repeat) ({clock.upper():<4}) = {ratio:.2f}   "
              f"(target <= {1.0 + TARGET:.2f})   {verdict}")
    warn_if_loaded()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
