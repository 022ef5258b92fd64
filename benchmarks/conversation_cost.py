"""Does scoring a conversation cost the same per turn however long the conversation is?

Run from the project root: ``python benchmarks/conversation_cost.py [--repeat 3]``. Builds one
deterministic conversation of 10, 20 and 40 turns (user turns and replies from the throughput
benchmark's templates, so turns repeat as they do in real chats) and scores every turn with
its growing history in one batch, as the runner does (the history of a turn is the user's
earlier turns). The three lengths are timed interleaved in one run, best of the repeats, and
the per-turn cost at 40 turns is compared with the one at 10: the target is at most 1.5x,
i.e. a turn does not pay again for the whole history before it. Models load in an untimed
warm-up.
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
from evaluators.heuristics import HeuristicEvaluator  # noqa: E402
from evaluators.models import ReplyCase  # noqa: E402

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
    warn_if_loaded()
    return 0


if __name__ == "__main__":
    sys.exit(main())
