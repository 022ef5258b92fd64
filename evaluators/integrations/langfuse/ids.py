"""Deterministic Langfuse ids: the same run pushed twice names the same traces, observations,
scores and dataset items, so Langfuse updates them instead of adding copies.

Every id is derived from what the thing is (run, prompt version, scenario, turn, score
name), never from when it was sent.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from langfuse import Langfuse

from evaluators.integrations.langfuse.connection import span_id_for

_NAMESPACE = uuid.UUID("5b0e7c1e-4f1d-4b7a-9d38-7a9c2f1e6a10")  # penpal-eval's own uuid5 namespace
# SDK 5 drops a propagated session id, version, tag or trace name longer than this, with only
# a log line (langfuse/_client/propagation.py, _validate_propagated_value).
PROPAGATED_LIMIT = 200


def fit_propagated(value: str) -> str:
    """`value`, or when it is too long to propagate, its start and a hash of the whole: still
    one value per original, and short enough that the SDK keeps it."""
    if len(value) <= PROPAGATED_LIMIT:
        return value
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:12]
    return f"{value[:PROPAGATED_LIMIT - len(digest) - 1]}~{digest}"


def turn_trace_id(run_id: str, prompt_version: str, scenario_id: str, turn_index: int) -> str:
    """One trace per evaluated turn: run, prompt version, scenario and turn (1-based) make it."""
    return Langfuse.create_trace_id(seed=f"penpal-eval/{run_id}/{prompt_version}/{scenario_id}/turn-{turn_index + 1}")


def session_id(run_id: str, prompt_version: str, scenario_id: str) -> str:
    """The scenario conversation of one prompt version in one run: its turns share a session
    (made to fit the SDK's limit, so the traces and the conversation scores name the same one)."""
    return fit_propagated(f"{run_id}/{prompt_version}/{scenario_id}")


def observation_seed(trace_id: str, role: str) -> str:
    """The seed of an observation's span id within its trace (role: turn, reply, heuristics, judge)."""
    return f"{trace_id}/{role}"


def observation_id(trace_id: str, role: str) -> str:
    return span_id_for(observation_seed(trace_id, role))


def score_id(subject: str, name: str) -> str:
    """A score's id from what it is about (a trace or an experiment) and its name."""
    return str(uuid.uuid5(_NAMESPACE, f"score/{subject}/{name}"))


def dataset_item_id(dataset: str, scenario_id: str, turn_index: int) -> str:
    """One dataset item per scripted user turn of a scenario."""
    return str(uuid.uuid5(_NAMESPACE, f"dataset-item/{dataset}/{scenario_id}/turn-{turn_index + 1}"))


def experiment_run_name(run_id: str, prompt_version: str) -> str:
    """The experiment (dataset run) of one prompt version in one evaluation run."""
    return f"{prompt_version} @ {run_id}"


def experiment_id(project_id: str | None, dataset_id: str, run_name: str) -> str:
    """The id Langfuse derives for an experiment on a dataset, so run-level scores can name it.

    It follows the server's derivation (the SDK's experiment runner computes the same): a
    SHA-256 prefix of ["langfuse-experiment-v1", project, dataset, run name] as compact JSON.
    Without a project id the run name alone seeds it, which still groups the run's traces.
    """
    if project_id is None:
        return hashlib.sha256(f"penpal-eval/experiment/{dataset_id}/{run_name}".encode()).hexdigest()[:16]
    payload = json.dumps(["langfuse-experiment-v1", project_id, dataset_id, run_name],
                         separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
