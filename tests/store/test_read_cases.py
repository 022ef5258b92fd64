"""Reading cases.jsonl: a damaged line is skipped, and named unless its case is recorded again after it.

A run killed while writing leaves a torn last line; resuming writes that case again on a new
line, so the torn line then sits in the middle, and nothing was lost. A line damaged any other
way (edited by hand, written by another version), or a torn line whose case was never written
again, drops a record: the reader must say so, with the file, the line and the reason.
"""

from __future__ import annotations

import logging

import pytest

from evaluators.store.run_store import CASES, RunStore
from tests.support.release_factory import make_case, scores

STORE_LOG = "evaluators.store.run_store"


@pytest.fixture
def store(tmp_path):
    return RunStore.create(tmp_path / "run", {"run_id": "run"})


def lines(store: RunStore) -> list[str]:
    return (store.directory / CASES).read_text(encoding="utf-8").splitlines()


def rewrite(store: RunStore, new_lines: list[str]) -> None:
    (store.directory / CASES).write_text("\n".join(new_lines) + "\n", encoding="utf-8")


def named(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == STORE_LOG]


def write_three(store: RunStore) -> None:
    for scenario in ("a", "b", "c"):
        store.append(make_case("v1", scenario, scores(0.8)))


def test_a_torn_line_whose_case_was_run_again_is_passed_over_quietly(store, caplog):
    write_three(store)
    first, second, third = lines(store)
    rewrite(store, [first, second[: len(second) // 2], third, second])  # killed mid-line, then resumed
    with caplog.at_level(logging.WARNING, logger=STORE_LOG):
        cases = store.read_cases()
    assert [case.case_id for case in cases] == ["v1/a", "v1/c", "v1/b"]
    assert named(caplog) == []


def test_a_torn_last_line_is_named_and_its_case_counts_as_not_run(store, caplog):
    write_three(store)
    first, second, third = lines(store)
    rewrite(store, [first, second, third[:40]])
    with caplog.at_level(logging.WARNING, logger=STORE_LOG):
        assert store.finished_ids() == {"v1/a", "v1/b"}
    [message] = named(caplog)
    assert f"{CASES} line 3 is skipped" in message
    assert "case v1/c counts as not run" in message
    assert "run --resume" in message


def test_a_line_damaged_in_the_middle_is_named_with_its_reason(store, caplog):
    write_three(store)
    first, second, third = lines(store)
    rewrite(store, [first, second.replace('"scenario_id":"b"', '"scenario_id":b'), third])
    with caplog.at_level(logging.WARNING, logger=STORE_LOG):
        cases = store.read_cases()
    assert [case.case_id for case in cases] == ["v1/a", "v1/c"]
    [message] = named(caplog)
    assert "line 2 is skipped (not valid JSON: expected a JSON value at column" in message
    assert "case v1/b counts as not run" in message


def test_a_newer_record_that_is_not_a_case_is_named_and_the_older_one_stands(store, caplog):
    write_three(store)
    newer = lines(store)[1].replace('"status":"ok"', '"status":7')
    rewrite(store, [*lines(store), newer])
    with caplog.at_level(logging.WARNING, logger=STORE_LOG):
        cases = store.read_cases()
    assert [case.case_id for case in cases] == ["v1/a", "v1/b", "v1/c"]
    [message] = named(caplog)
    assert "line 4 is skipped (not a case record: status:" in message
    assert "case v1/b keeps its record of line 2" in message


def test_each_damaged_line_is_named_once_however_often_the_store_is_read(store, caplog):
    write_three(store)
    first, second, third = lines(store)
    rewrite(store, [first, "{not json", third])
    with caplog.at_level(logging.WARNING, logger=STORE_LOG):
        store.read_cases()
        store.finished_ids()
        RunStore.open(store.directory).read_cases()
    [message] = named(caplog)
    assert "line 2 is skipped" in message
    assert "its case counts as not run" in message
