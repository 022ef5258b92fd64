"""Does scoring a conversation cost the same per turn however long the conversation is?

Run from the project root: ``python benchmarks/conversation_cost.py [--repeat 3]``. Builds one
deterministic conversation of 10, 20 and 40 turns (user turns and replies from the throughput
benchmark's templates, so turns repeat as they do in real chats) and scores every turn with
its growing history in one batch, as the runner does (the history of a turn is the user's
earlier turns). The three lengths are timed interleaved in one run, best of the repeats, and
the per-turn cost at 40 turns is compared with the one at 10: the target is at most 1.5x,
i.e. a turn does not pay again for the whole history before it. Models load in an untimed
warm-up. The conversation-level metrics of a simulated conversation (evaluators.run.simulation)
are timed the same way on the scored turns, against the same target.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import deque
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.throughput import (  # noqa: E402
    HISTORY_TURNS,
    USER_TEMPLATES,
    fill,
    make_reply,
    measure,
    warn_if_loaded,
)
from evaluators.inputs.persona import Persona, PersonaFact  # noqa: E402
from evaluators.rubric.loader import default_rubric  # noqa: E402
from evaluators.run.simulation.conversation_metrics import conversation_metrics  # noqa: E402
from evaluators.scoring.contracts import ReplyCase  # noqa: E402
from evaluators.scoring.heuristics import HeuristicEvaluator  # noqa: E402
from evaluators.store.records import CaseResult, TurnResult  # noqa: E402

LENGTHS = (10, 20, 40)
TARGET_RATIO = 1.5
SEED = 20251123


def conversation(turns: int, seed: int = SEED) -> list[ReplyCase]:
    """One conversation's reply cases, each turn with the user's earlier turns as its history."""
    rng = random.Random(seed)
    cases, history = [], []
    for index in range(turns):
        user = fill(rng.choice(USER_TEMPLATES + HISTORY_TURNS), rng)
        cases.append(ReplyCase(id=f"turn-{index}", history=list(history), user_message=user,
                               response=make_reply(rng)))
        history.append(user)
    return cases


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per length; best is kept")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    evaluator = HeuristicEvaluator()
    conversations = {turns: conversation(turns) for turns in LENGTHS}
    deque(evaluator.score_cases(conversation(8, seed=SEED + 1)), maxlen=0)  # warm-up, untimed

    works = {f"{turns} turns": (lambda cases=cases: deque(evaluator.score_cases(cases), maxlen=0))
             for turns, cases in conversations.items()}
    timings = {turns: timing for turns, timing in zip(LENGTHS, measure(works, 1, args.repeat))}

    print(f"\n  {'conversation':<14}{'wall ms/turn':>14}{'CPU ms/turn':>13}")
    for turns, timing in timings.items():
        print(f"  {f'{turns} turns':<14}{1000 * timing.wall / turns:>14.1f}{1000 * timing.cpu / turns:>13.1f}")
    print()
    longest, shortest = max(LENGTHS), min(LENGTHS)
    for clock in ("wall", "cpu"):
        per_turn = {turns: getattr(timings[turns], clock) / turns for turns in (shortest, longest)}
        ratio = per_turn[longest] / per_turn[shortest]
        verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
        print(f"  per turn, {longest} / {shortest} turns ({clock.upper():<4}) = {ratio:.2f}   "
              f"(target <= {TARGET_RATIO:.2f})   {verdict}")
    print_metrics_cost(evaluator, conversations, args.repeat)
    warn_if_loaded()
    return 0


def simulated(cases: list[ReplyCase], records: list[dict]) -> CaseResult:
    """A scored conversation as the runner stores a simulated one (family `personas`)."""
    turns = [TurnResult(index=index, user=case.user_message, reply=case.response, model="benchmark",
                        heuristics=record) for index, (case, record) in enumerate(zip(cases, records))]
    return CaseResult(case_id="benchmark/persona", prompt_name="benchmark", prompt_version="benchmark",
                      scenario_id="persona", family="personas", age_group="unspecified",
                      demographic_group="unspecified", responder="replay", status="ok", turns=turns)


def print_metrics_cost(evaluator: HeuristicEvaluator, conversations: dict[int, list[ReplyCase]], repeat: int) -> None:
    """The conversation-level metrics (evaluators.run.simulation) on the scored turns: per-turn cost
    at the longest length against the shortest, the same linear target as scoring."""
    rubric = default_rubric()
    persona = Persona(id="benchmark", title="Benchmark", name="Sam", situation="A benchmark user.", goal="Talk.",
                      style="Plain.", opening="Hi.", max_turns=max(LENGTHS),
                      facts=tuple(PersonaFact(id=f"fact_{index}", says=f"Fact {index}.", reveal_turn=index + 1,
                                              recall=(f"recall{index}",), wrong=(f"wrong{index}",))
                                  for index in range(5)))
    cases = {turns: simulated(items, [result.to_record() for result in evaluator.score_cases(items)])
             for turns, items in conversations.items()}  # scoring is untimed here: only the metrics
    works = {f"{turns} turns": (lambda case=case: conversation_metrics(case, persona, rubric))
             for turns, case in cases.items()}
    timings = dict(zip(LENGTHS, measure(works, 1, repeat)))
    longest, shortest = max(LENGTHS), min(LENGTHS)
    per_turn = {turns: timings[turns].cpu / turns for turns in (shortest, longest)}
    ratio = per_turn[longest] / per_turn[shortest]
    verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
    print(f"\n  conversation metrics: {1000 * per_turn[shortest]:.2f} CPU ms/turn at {shortest} turns, "
          f"{1000 * per_turn[longest]:.2f} at {longest}")
    print(f"  per turn, {longest} / {shortest} turns (CPU ) = {ratio:.2f}   (target <= {TARGET_RATIO:.2f})   {verdict}")


if __name__ == "__main__":
    sys.exit(main())
