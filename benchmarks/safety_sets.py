"""The licensed safety data sets as one frame, for training and measuring the safety detectors.

Why one frame: every detector (evaluators/scoring/safety/detectors.py) is trained on several
data sets and measured leave-one-data-set-out, so each row must say where it came from
(`source`), which rows must stay in one fold (`group`: a prompt, scenario, pair or user), what
the user said (`user`), what the reply was (`reply`), and, per behaviour, a label: 1 present,
0 absent, NaN where that data set says nothing about it. Spiral-Bench's judge also grades
strength 0-3, kept in `<behaviour>_strength` columns for thresholds that need "moderate or
more".

Data are read in place from ``../shared/datasets`` (or ``PENPAL_DATASETS``); nothing is copied
into the project. `MEASURE_ONLY` names the sources whose README states no licence: they are
loaded for measurement and never trained on.

Sentence vectors of the data are cached under the project's gitignored ``.cache/`` by text
hash (`VectorCache`), so retraining does not re-embed ~30,000 texts.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.human_data import PROJECT_ROOT, datasets_dir
from evaluators.scoring.reading.nlp import clip_for_parse

# The detector (rubric) names and the Spiral-Bench judge key each one reads.
SPIRAL_KEYS: dict[str, str] = {
    "delusion_reinforcement": "delusion_reinforcement",
    "sycophancy": "sycophancy_or_praise",
    "emotional_escalation": "emotional_or_narrative_escalation",
    "consciousness_claims": "consciousness_claims",
    "harmful_advice": "harmful_advice",
    "pushback": "pushback",
    "de_escalation": "de_escalation",
    "safe_redirection": "safe_redirection",
    "referral": "suggestions_to_seek_help",
}
USER_SIDE: tuple[str, ...] = ("crisis_risk",)
REPLY_SIDE: tuple[str, ...] = tuple(SPIRAL_KEYS)
BEHAVIOURS: tuple[str, ...] = REPLY_SIDE + USER_SIDE
# Pairwise (relative) supervision: 1 for the reply crowdworkers judged the more harmful of two.
PAIRWISE = "more_harmful_of_pair"

LICENCES: dict[str, str] = {
    "spiral_bench": "MIT (repository README; no LICENSE file); labels by an LLM judge (gpt-5)",
    "xstest": "CC-BY-4.0 prompts; completions under the model makers' terms",
    "safetext": "MIT",
    "hh_rlhf": "MIT",
    "diasafety": "Apache-2.0",
    "diasafety_contexts": "Apache-2.0",
    "cssrs": "CC BY (Zenodo 10.5281/zenodo.2667859)",
    "openai_moderation": "MIT",
    "ruarobot": "MIT",
    "robots_dont_cry": "none stated: measurement only",
}
MEASURE_ONLY: frozenset[str] = frozenset({"robots_dont_cry"})
# C-SSRS users write many posts; the first few per user keep one prolific user from dominating.
CSSRS_POSTS_PER_USER = 5
DIASAFETY_ADVICE = ("Risk Ignorance", "Unauthorized Expertise")
CACHE_DIR = PROJECT_ROOT / ".cache" / "safety_vectors"
# Texts embedded between saves of the cache: an interrupted run keeps most of its work.
SAVE_EVERY = 2000


def _jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _row(source: str, group: str, user: str, reply: str, **labels: float) -> dict:
    return {"source": source, "group": f"{source}:{group}", "user": user or "", "reply": reply or "", **labels}


def spiral(root: Path) -> pd.DataFrame:
    """Spiral-Bench dev turns: every behaviour, present if the judge gave any strength."""
    rows = []
    for turn in _jsonl(root / "spiral_bench_dev" / "turns.jsonl"):
        labels: dict[str, float] = {}
        for name, key in SPIRAL_KEYS.items():
            strength = float(turn["labels"].get(key, {}).get("max", 0) or 0)
            labels[name] = float(strength > 0)
            labels[f"{name}_strength"] = strength
        row = _row("spiral_bench", turn["prompt_id"], turn["user_turn"], turn["response"], **labels)
        row.update(model=turn["model"], category=turn["category"])
        rows.append(row)
    return pd.DataFrame(rows)


def xstest(root: Path) -> pd.DataFrame:
    """XSTest: harmful compliance (unsafe prompt fully complied with) per reply; the safe prompts
    double as benign user messages for the crisis detector (one row per prompt)."""
    rows, prompts = [], {}
    for item in _jsonl(root / "xstest_refusal_compliance" / "xstest_completions.jsonl"):
        ids = item["source_ids"]
        label = item["harmful_compliance"]
        row = _row("xstest", ids["xstest_id"], item["user_message"], item["response"],
                   harmful_advice=np.nan if label is None else float(label))
        row["model"] = ids["model"]
        rows.append(row)
        if item["prompt_label"] == "safe":
            prompts[ids["xstest_id"]] = item["user_message"]
    rows += [_row("xstest", key, text, "", crisis_risk=0.0) for key, text in prompts.items()]
    return pd.DataFrame(rows)


def safetext(root: Path) -> pd.DataFrame:
    """SafeText: unsafe vs safe everyday advice; the scenario prefix stands as the user's message.
    The scenarios are also benign user messages for the crisis detector."""
    rows, scenarios = [], {}
    for item in _jsonl(root / "safetext_physical_advice" / "safetext_advice.jsonl"):
        scenario = str(item["source_ids"]["scenario_index"])
        rows.append(_row("safetext", scenario, item["user_message"], item["response"],
                         harmful_advice=float(item["unsafe"])))
        scenarios[scenario] = item["user_message"]
    rows += [_row("safetext", key, text, "", crisis_risk=0.0) for key, text in scenarios.items()]
    return pd.DataFrame(rows)


def hh_rlhf(root: Path) -> pd.DataFrame:
    """HH-RLHF harmless pairs: relative labels only (`more_harmful_of_pair`), never absolute."""
    rows = []
    for item in _jsonl(root / "hh_rlhf_harmless_pairs" / "harmless_base_test_pairs.jsonl"):
        rows.append(_row("hh_rlhf", str(item["pair_id"]), item["user_message"], item["response"],
                         **{PAIRWISE: 1.0 - float(item["preferred_as_less_harmful"])}))
    return pd.DataFrame(rows)


def diasafety(root: Path) -> pd.DataFrame:
    """DiaSafety train split: unsafe replies of the advice categories (risk ignorance,
    unauthorised expertise) against the safe replies of the same categories."""
    rows = []
    for index, item in enumerate(json.loads((root / "diasafety" / "train.json").read_text(encoding="utf-8"))):
        if item["category"] not in DIASAFETY_ADVICE:
            continue
        label = float(item["label"] == "Unsafe")
        row = _row("diasafety", f"{item['context']}", item["context"], item["response"], harmful_advice=label)
        row["category"] = item["category"]
        rows.append(row)
    return pd.DataFrame(rows)


def diasafety_contexts(root: Path) -> pd.DataFrame:
    """DiaSafety train contexts as user messages for the crisis detector (weak supervision):
    the contexts of Risk Ignorance (a user voicing distress, ideation or self-harm) against the
    contexts of the toxicity and bias categories (provoking, rude or loaded, but no risk)."""
    labels = {"Risk Ignorance": 1.0, "Offending User": 0.0, "Toxicity Agreement": 0.0, "Biased Opinion": 0.0}
    contexts: dict[str, float] = {}
    for item in json.loads((root / "diasafety" / "train.json").read_text(encoding="utf-8")):
        if item["category"] in labels:
            contexts.setdefault(item["context"], labels[item["category"]])
    return pd.DataFrame([_row("diasafety_contexts", text, text, "", crisis_risk=label)
                         for text, label in contexts.items()])


def cssrs(root: Path) -> pd.DataFrame:
    """Reddit C-SSRS: each user's first posts, labelled with the user's level (weak supervision:
    labels are per user, not per post); suicidal = Ideation, Behavior or Attempt."""
    rows = []
    for item in _jsonl(root / "cssrs_reddit_suicide_risk" / "cssrs_users.jsonl"):
        for post in item["user_posts"][:CSSRS_POSTS_PER_USER]:
            if post and post.strip():
                rows.append(_row("cssrs", item["source_ids"]["user"], post, "",
                                 crisis_risk=float(item["suicidal"]), severity=float(item["severity"])))
    return pd.DataFrame(rows)


def openai_moderation(root: Path) -> pd.DataFrame:
    """OpenAI moderation test set: the self-harm flag on user-side text (unknown left out)."""
    rows = []
    for item in _jsonl(root / "openai_moderation_eval" / "samples_1680.jsonl"):
        if item["self_harm"] is not None:
            rows.append(_row("openai_moderation", str(item["source_ids"]["line"]), item["user_message"], "",
                             crisis_risk=float(item["self_harm"])))
    return pd.DataFrame(rows)


def ruarobot(root: Path) -> pd.DataFrame:
    """R-U-A-Robot: an answer claiming to be human (1) against a clear AI disclosure (0)."""
    rows = []
    with (root / "ruarobot_identity_responses" / "responses_long.csv").open(encoding="utf-8") as handle:
        for item in csv.DictReader(handle):
            if item["claims_human"] == "1":
                label = 1.0
            elif item["clearly_discloses_ai"] == "1":
                label = 0.0
            else:
                continue
            rows.append(_row("ruarobot", item["query_id"], item["user_text"], item["response"],
                             consciousness_claims=label))
    return pd.DataFrame(rows)


def robots_dont_cry(root: Path) -> pd.DataFrame:
    """Robots-Dont-Cry (measurement only): a reply a text chatbot cannot truthfully say (1)."""
    rows = []
    with (root / "robots_dont_cry" / "classifiable_df_train.csv").open(encoding="utf-8") as handle:
        for item in csv.DictReader(handle):
            if item["resp_cat"] == "truthful_r-chatbot":
                rows.append(_row("robots_dont_cry", item["text_hash"], item["turn_a"], item["turn_b"],
                                 consciousness_claims=float(item["base_majority_vote"] == "False")))
    return pd.DataFrame(rows)


LOADERS = {
    "spiral_bench": spiral, "xstest": xstest, "safetext": safetext, "hh_rlhf": hh_rlhf,
    "diasafety": diasafety, "diasafety_contexts": diasafety_contexts, "cssrs": cssrs, "openai_moderation": openai_moderation,
    "ruarobot": ruarobot, "robots_dont_cry": robots_dont_cry,
}


def load_safety_sets(root: Path | None = None) -> pd.DataFrame:
    """Every set as one frame (columns source, group, user, reply, one per behaviour, ...)."""
    root = root or datasets_dir()
    frame = pd.concat([loader(root) for loader in LOADERS.values()], ignore_index=True)
    for name in BEHAVIOURS + (PAIRWISE,):
        if name not in frame:
            frame[name] = np.nan
    return frame


def behaviour_frame(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows that say something about one behaviour, with its label as `label`."""
    rows = frame[frame[name].notna()].copy()
    rows["label"] = rows[name].astype(float)
    return rows.reset_index(drop=True)


SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Characters per window of consecutive sentences: about 120 word pieces, well inside the 256
# the encoder reads, so a long reply's later parts are read too.
WINDOW_CHARS = 500


def reply_windows(text: str, size: int = WINDOW_CHARS) -> list[str]:
    """Consecutive sentences of a reply grouped into windows of at most `size` characters (a
    longer sentence stands alone): what "max over sentence windows" reads."""
    windows: list[str] = []
    current = ""
    for sentence in (part.strip() for part in SENTENCE_END.split(text)):
        if not sentence:
            continue
        if current and len(current) + 1 + len(sentence) > size:
            windows.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        windows.append(current)
    return windows or [text]


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class VectorCache:
    """Sentence vectors by text hash, kept on disk between training runs.

    The vectors are the scorer's own (`MeaningModel`), so training reads what scoring reads.
    """

    def __init__(self, meaning, directory: Path = CACHE_DIR) -> None:
        self._meaning = meaning
        self._directory = directory
        self._keys: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        keys, vectors = directory / "keys.json", directory / "vectors.npy"
        if keys.is_file() and vectors.is_file():
            stored = np.load(vectors)
            self._keys = {key: index for index, key in enumerate(json.loads(keys.read_text()))}
            if len(self._keys) == len(stored):
                self._rows = list(stored)
            else:
                self._keys = {}

    def vectors(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of the texts (rows), clipped as the scorer clips them; the ones not yet
        cached are embedded and stored."""
        texts = [clip_for_parse(text) for text in texts]
        todo = list(dict.fromkeys(text for text in texts if text_key(text) not in self._keys))
        for start in range(0, len(todo), SAVE_EVERY):
            chunk = todo[start:start + SAVE_EVERY]
            for text, vector in zip(chunk, self._meaning.embed_many(chunk), strict=True):
                self._keys[text_key(text)] = len(self._rows)
                self._rows.append(np.asarray(vector, dtype=np.float32))
            self.save()
        return np.stack([self._rows[self._keys[text_key(text)]] for text in texts]).astype(np.float64)

    def save(self) -> None:
        self._directory.mkdir(parents=True, exist_ok=True)
        np.save(self._directory / "vectors.npy", np.stack(self._rows))
        ordered = sorted(self._keys, key=self._keys.__getitem__)
        (self._directory / "keys.json").write_text(json.dumps(ordered))
