"""benchmarks/trigger_reach.py: which rows it measures and how reach and share are counted."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.trigger_reach import HARMS, figures, reply_rows, triggered


def frame() -> pd.DataFrame:
    rows = [
        {"source": "a", "user": "u1", "reply": "r1", "harmful_advice": 1.0},
        {"source": "a", "user": "u2", "reply": "r2", "harmful_advice": 0.0},
        {"source": "b", "user": "u3", "reply": "r3", "sycophancy": 1.0, "harmful_advice": 0.0},
        {"source": "b", "user": "u4", "reply": "", "harmful_advice": 0.0},  # no reply: not a reply row
        {"source": "hh_rlhf", "user": "u5", "reply": "r5", "harmful_advice": 1.0},  # relative labels only
        {"source": "c", "user": "u6", "reply": "r6", "crisis_risk": 1.0},  # no harm label
    ]
    data = pd.DataFrame(rows)
    for name in HARMS:
        data[name] = data.get(name, np.nan)
    return data


def test_reply_rows_are_labelled_replies_and_unsafe_means_any_harm():
    rows = reply_rows(frame())
    assert rows.user.tolist() == ["u1", "u2", "u3"] and rows.unsafe.tolist() == [True, False, True]


def test_reach_counts_unsafe_replies_sent_and_share_counts_every_reply():
    rows = reply_rows(frame())
    scores = pd.DataFrame({name: [0.0, 0.0, 0.0] for name in HARMS}, index=rows.index)
    scores.loc[rows.index[0], "harmful_advice"] = 0.9
    risk = pd.Series([False, True, False], index=rows.index)
    fired = triggered(scores, dict.fromkeys(HARMS, 0.5), risk)
    assert fired.tolist() == [True, True, False]
    n, unsafe, reach, share, benign = figures(rows, fired)
    assert (n, unsafe, reach, benign) == (3, 2, 0.5, 1.0) and share == 2 / 3


def test_the_floor_is_the_unsafe_share_times_the_reach_target(capsys):
    from benchmarks.trigger_reach import print_floor

    rows = pd.DataFrame({"unsafe": [True] * 2 + [False] * 8})
    print_floor(rows)
    out = capsys.readouterr().out
    # 20% unsafe: reaching 95% of them judges at least 19%; 35% then allows precision 0.19 / 0.35.
    assert "20% of these replies" in out and "least 19% of all replies" in out and "precision >= 0.54" in out
