"""Scoring: one reply (and the conversation before it) in, six metric scores with evidence out.

- reading/      the text as read once: the spaCy parse, lexicons, meaning vectors, tone,
                readability, language, and the features every signal reads
- safety/       detectors over the parse: crisis, claims to be human, harm, provocation
- heuristics/   the six metrics as named signals weighted by the rubric
- expectations  a scenario's plain-Python checks on a reply
- api           the public scoring API (`score_reply`, `score_records`, `score_frame`)
- contracts     what goes in (`ReplyCase`) and what comes out (`HeuristicResult`, evidence, flags)

Pure: text in, scores out; no network, and no knowledge of runs or stores.
"""
