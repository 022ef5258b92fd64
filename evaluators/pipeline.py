"""Assemble and execute an evaluation run: the `penpal-eval run` command without its terminal.

Loads prompts and scenarios, picks the responder, opens or creates the run store (with a
manifest that pins what the run was made from), runs, and writes the summary and exports.
Resuming checks that the rubric, prompts and scenarios are still the ones the run started
with, because mixing two versions of a scenario set in one run would make its numbers lie.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path

from evaluators.core.locations import PROJECT_ROOT, display_path, manifest_path, read_data_file, short_hash
from evaluators.core.problems import did_you_mean
from evaluators.core.response_cache import ResponseCache
from evaluators.core.retry import RetryPolicy
from evaluators.inputs.contracts import PromptVersion, Scenario
from evaluators.inputs.persona import Persona
from evaluators.inputs.personas import load_personas, persona_scenario, personas_dir
from evaluators.inputs.prompts import load_prompts
from evaluators.inputs.scenarios import load_scenarios
from evaluators.inputs.targets import TargetError
from evaluators.integrations.langfuse.prompts import LangfusePromptError, fetch_run_prompts
from evaluators.judge.batch import BatchJudge
from evaluators.judge.calibration_record import read_calibration
from evaluators.judge.client import LLMJudge
from evaluators.judge.criterion import AssertionStage
from evaluators.judge.factory import (
    JudgeConfig,
    JudgeConfigError,
    create_batch_judge,
    create_judge,
    create_sampling_state,
)
from evaluators.judge.reliability import one_family_warning, same_family_warning
from evaluators.judge.safety_judge import SafetyJudge
from evaluators.judge.safety_stage import BatchSafetyJudgeStage, SafetyBudget, SafetyJudgeStage, safety_summary
from evaluators.judge.sampling import SamplingState
from evaluators.judge.stage import BatchJudgeStage, JudgeStage
from evaluators.release.coverage import MANIFEST_KEY as COVERAGE_KEY
from evaluators.release.coverage import ScenarioSet
from evaluators.release.failures import with_failures
from evaluators.release.summaries import run_judge_summary, version_summaries
from evaluators.run.config import (
    DEFAULT_PROMPT_LABELS,
    PROMPT_SOURCES,
    RESPONDER_CHOICES,
    RESUMED_INPUTS,
    RunConfig,
    RunConfigError,
)
from evaluators.run.responder import (
    ReplayResponder,
    Responder,
)
from evaluators.run.responder_process import IsolatedResponder
from evaluators.run.runner import CaseSink, CaseStage, Runner, RunOutcome, RunPlan
from evaluators.run.sample_judge import (
    SAMPLE_JUDGE_LINE,
    SampleSafetyJudge,
    SampleSafetyJudgeStage,
    sample_judge_for,
)
from evaluators.run.simulation.recordings import load_persona_recordings, persona_replies, recording_files
from evaluators.run.simulation.simulator import OpenAISimulator, ReplaySimulator, Simulator
from evaluators.run.simulation.stage import ConversationStage
from evaluators.run.target_choice import recorded_spec, restored_spec, run_target, with_version_targets
from evaluators.scoring.heuristics import HeuristicEvaluator
from evaluators.store.records import CaseResult, case_id, version_order
from evaluators.store.run_store import RunInputs, RunStore, StoreError, git_state, new_run_id, run_id_problem, utc_now

BATCH_STATE_FILE = "judge-batch.json"  # in the run directory: the Batch API batches this run submitted
REPLAY_NOTICE = (
    "No OPENAI_API_KEY or OPENAI_BASE_URL is set, so this run replays the recorded replies in "
    "prompts/recorded/: hand-written sample data, not output of a model. Set OPENAI_API_KEY "
    "(and OPENAI_BASE_URL for an OpenAI-compatible server) to evaluate a live model."
)


@dataclass
class PreparedRun:
    config: RunConfig
    plan: RunPlan
    responder: Responder
    store: RunStore
    resumed: bool
    notices: list[str]
    finished: set[str] = field(default_factory=set)  # case ids already finished in the store
    judge: LLMJudge | None = None
    sampling: SamplingState | None = None
    judge_warnings: list[str] = field(default_factory=list)  # also among notices; kept for the summary
    batch: BatchJudge | None = None  # the judge through the Batch API (--judge-batch)
    simulator: Simulator | None = None  # plays the personas; None when the run has none
    # The replay safety judge (hand-written sample verdicts) of an offline run without --judge.
    sample_judge: SampleSafetyJudge | None = None
    # Resumed: ids of stored cases whose replies were all scored but whose judge failed; they are
    # judged again from their stored replies, without calling the companion (Runner.rejudge).
    rejudge: set[str] = field(default_factory=set)


@dataclass
class RunReport:
    store: RunStore
    outcome: RunOutcome
    summaries: dict[str, dict]
    exports: list[Path]
    judge: dict | None = None  # run-level judge figures (evaluators.release.summaries.run_judge_summary)
    safety_judge: dict | None = None  # the sample judge's figures (safety_summary), when it ran


def _scenario_set_hash(scenarios: Sequence[Scenario]) -> str:
    return short_hash(json.dumps([s.model_dump(mode="json") for s in scenarios], sort_keys=True))


def _recordings_hash(directory: Path) -> str | None:
    files = [*sorted(directory.glob("*.yaml")), *recording_files(directory)] if directory.is_dir() else []
    return short_hash("".join(read_data_file(path) for path in files)) if files else None


def _package_version() -> str:
    try:
        return package_version("penpal-eval")
    except PackageNotFoundError:
        return "unknown"


def choose_responder(config: RunConfig, environ: Mapping[str, str],
                     run_id: str = "") -> tuple[Responder, list[str]]:
    """The responder the config asks for: the run's target (`--target`), else `auto` replays
    unless an API is configured."""
    if config.responder not in RESPONDER_CHOICES:
        raise RunConfigError(f"--responder: {config.responder!r} is not one of {', '.join(RESPONDER_CHOICES)}")
    if config.target is not None:
        if config.responder != "auto":
            raise RunConfigError(f"--target and --responder {config.responder} both say who answers; give one")
        try:
            return run_target(config, environ, run_id), []
        except TargetError as error:
            raise RunConfigError(str(error)) from None
    api_configured = bool(environ.get("OPENAI_API_KEY") or environ.get("OPENAI_BASE_URL"))
    kind = config.responder if config.responder != "auto" else ("openai" if api_configured else "replay")
    if kind == "replay":
        try:
            responder = ReplayResponder.from_directory(config.recorded_dir)
            responder.replies.update(persona_replies(load_persona_recordings(config.recorded_dir)))
        except ValueError as error:
            raise RunConfigError(str(error)) from None
        return responder, [REPLAY_NOTICE] if config.responder == "auto" else []
    if not api_configured:
        raise RunConfigError("--responder openai needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local "
                             "OpenAI-compatible server) in the environment")
    retry = RetryPolicy(max_attempts=config.max_attempts, base_delay_s=config.retry_base_delay_s)
    # The calls are made (and timed) in a process of their own: scoring cannot delay a first token.
    return IsolatedResponder.from_environment(environ, timeout_s=config.timeout_s, retry=retry,
                                              cache_dir=config.cache_dir, use_cache=config.use_cache), []


def choose_simulator(config: RunConfig, responder: Responder, environ: Mapping[str, str]) -> Simulator:
    """Who plays the personas: the recordings when the companion is replayed, else a live model
    (PENPAL_SIMULATOR_* variables, falling back to OPENAI_*)."""
    if responder.kind == "replay":
        try:
            return ReplaySimulator(load_persona_recordings(config.recorded_dir))
        except ValueError as error:
            raise RunConfigError(str(error)) from None
    cache = ResponseCache(config.cache_dir) if config.use_cache else None
    retry = RetryPolicy(max_attempts=config.max_attempts, base_delay_s=config.retry_base_delay_s)
    return OpenAISimulator.from_environment(environ, timeout_s=config.timeout_s, retry=retry, cache=cache)


def _unknown_ids(unknown: Sequence[str], known: set[str]) -> str:
    """`nope, basic-helo (did you mean 'basic-hello'?)`: each unknown id, with the one most likely meant."""
    shown = []
    for item in unknown:
        hint = did_you_mean(item, known)
        shown.append(f"{item} ({hint.removeprefix('; ')})" if hint.startswith("; did you mean") else item)
    return ", ".join(shown)


def _select_scenarios(config: RunConfig, rubric_evaluator: HeuristicEvaluator
                      ) -> tuple[list[Scenario], list[Scenario], dict[str, Persona]]:
    """The whole scenario set (personas included), the scenarios the run is asked for, and the
    personas among them by id."""
    scenario_set = load_scenarios(config.scenarios_dir, rubric_evaluator.rubric)
    persona_set = load_personas(personas_dir(config.scenarios_dir))
    every = [*scenario_set.scenarios, *(persona_scenario(persona) for persona in persona_set.personas)]
    families = set(config.families) if config.families else None
    chosen = [scenario for scenario in every if families is None or scenario.family in families]
    known = {scenario.id for scenario in every}
    persona_ids = {persona.id for persona in persona_set.personas}
    if config.max_turns is not None and config.max_turns < 1:
        raise RunConfigError("--turns must be at least 1")
    if config.scenario_ids:
        unknown = [sid for sid in config.scenario_ids if sid not in known]
        if unknown:
            raise RunConfigError(f"--scenario: unknown scenario id(s): {_unknown_ids(unknown, known)}; known: "
                                 f"{', '.join(sorted(known))} (penpal-eval scenarios list)")
    if config.persona_ids:
        unknown = [pid for pid in config.persona_ids if pid not in persona_ids]
        if unknown:
            raise RunConfigError(f"--persona: unknown persona id(s): {', '.join(unknown)}; known: "
                                 f"{', '.join(sorted(persona_ids)) or 'none'}")
    if config.scenario_ids or config.persona_ids:
        wanted = {*(config.scenario_ids or ()), *(config.persona_ids or ())}
        chosen = [scenario for scenario in chosen if scenario.id in wanted]
    if not chosen:
        raise RunConfigError("no scenarios match the chosen families and ids")
    personas = {persona.id: persona for persona in persona_set.personas
                if any(scenario.id == persona.id for scenario in chosen)}
    return every, chosen, personas


def _load_run_prompts(config: RunConfig, environ: Mapping[str, str], existing: RunStore | None) -> list[PromptVersion]:
    """The prompt versions to run: local files, or Langfuse prompts by label.

    A resumed Langfuse run keeps the versions it started with (from inputs.json), even if a
    label has moved since: the run must finish on the prompts it began with.
    """
    if config.prompt_source not in PROMPT_SOURCES:
        raise RunConfigError(f"--prompt-source: {config.prompt_source!r} is not one of {', '.join(PROMPT_SOURCES)}")
    if config.prompt_source == "local":
        if config.prompt_labels or config.langfuse_prompt_names:
            raise RunConfigError("--label and --langfuse-prompt go with --prompt-source langfuse")
        return load_prompts(config.prompts_dir, config.prompt_versions)
    inputs = existing.read_inputs() if existing is not None else None
    if inputs is not None:
        wanted = set(config.prompt_versions or [prompt.version for prompt in inputs.prompts])
        return [prompt for prompt in inputs.prompts if prompt.version in wanted]
    names = config.langfuse_prompt_names or list(dict.fromkeys(
        prompt.name for prompt in load_prompts(config.prompts_dir)))
    try:
        prompts = fetch_run_prompts(names, config.prompt_labels or list(DEFAULT_PROMPT_LABELS), environ)
    except LangfusePromptError as error:
        raise RunConfigError(f"--prompt-source langfuse: {error}") from None
    if config.prompt_versions:
        unknown = sorted(set(config.prompt_versions) - {prompt.version for prompt in prompts})
        if unknown:
            raise RunConfigError(f"--prompt: not among the fetched Langfuse versions: {', '.join(unknown)}")
        prompts = [prompt for prompt in prompts if prompt.version in config.prompt_versions]
    return prompts


def _judge_manifest(config: JudgeConfig | None, judge: LLMJudge | None) -> dict | None:
    if config is None or judge is None:
        return None
    return {"model": judge.settings.model, "endpoint": judge.endpoint, "samples": judge.settings.samples,
            "temperature": judge.settings.temperature, "max_tokens": judge.settings.max_tokens,
            "sampling": config.sampling, "sample_rate": config.sample_rate, "batch": config.batch,
            "state_path": manifest_path(config.state_path) if config.state_path and config.sampling == "policy"
            else None}


def _manifest(config: RunConfig, run_id: str, prompts: Sequence[PromptVersion], scenarios: Sequence[Scenario],
              responder: Responder, evaluator: HeuristicEvaluator, judge: LLMJudge | None = None,
              every_scenario: Sequence[Scenario] = (), personas: Mapping[str, Persona] | None = None,
              simulator: Simulator | None = None, targets: Mapping[str, dict] | None = None,
              sample_judge: SampleSafetyJudge | None = None) -> dict:
    personas = personas or {}
    targets = targets or {}
    scenario_files = sorted({path for path in config.scenarios_dir.glob("*.yaml")})
    return {
        "run_id": run_id,
        "created_at": utc_now(),
        "penpal_eval_version": _package_version(),
        "python": platform.python_version(),
        "git": git_state(),
        "config": {
            "prompt_versions": [prompt.version for prompt in prompts],
            # Each version's front-matter baseline, for the release decisions read from this run.
            "baselines": {prompt.version: prompt.baseline for prompt in prompts},
            "families": sorted({scenario.family for scenario in scenarios}),
            "scenario_ids": [scenario.id for scenario in scenarios] if config.scenario_ids else None,
            "persona_ids": config.persona_ids,
            "max_turns": config.max_turns,
            "repeats": config.repeats,
            "scenarios": len(scenarios),
            "responder": responder.kind,
            # The run's --target as given, and what each target is (its kind, URL without
            # credentials, template, header names and variables: never a secret), by version.
            "target": recorded_spec(config.target),
            "targets": dict(targets) or None,
            # Only the endpoint's scheme, host and path: never keys, userinfo or query strings.
            "endpoint": getattr(responder, "endpoint", None),
            "model_override": config.model,
            "concurrency": config.concurrency,
            "timeout_s": config.timeout_s,
            "max_attempts": config.max_attempts,
            "response_cache": config.use_cache and responder.kind != "replay",
            "prompts_dir": manifest_path(config.prompts_dir),
            "prompt_source": config.prompt_source,
            "prompt_labels": config.prompt_labels,
            "langfuse_prompt_names": config.langfuse_prompt_names,
            "scenarios_dir": manifest_path(config.scenarios_dir),
            "recorded_dir": manifest_path(config.recorded_dir) if responder.kind == "replay" else None,
            "judge": _judge_manifest(config.judge, judge),
            # The replay safety judge: hand-written sample verdicts, not a model (None when not used).
            "safety_judge": sample_judge.manifest_record() if sample_judge is not None else None,
            # Who played the personas (never keys): "replay", or a live model and its endpoint.
            "simulator": {"kind": simulator.kind, "model": simulator.model, "endpoint": simulator.endpoint}
            if simulator is not None else None,
        },
        "hashes": {
            "rubric": evaluator.rubric.content_hash,
            "prompts": {prompt.version: prompt.content_hash for prompt in prompts},
            "scenario_set": _scenario_set_hash(scenarios),
            "scenario_files": {path.name: short_hash(read_data_file(path)) for path in scenario_files},
            "recordings": _recordings_hash(config.recorded_dir) if responder.kind == "replay" else None,
            "sample_verdicts": sample_judge.files_hash if sample_judge is not None else None,
            "targets": short_hash(json.dumps(dict(targets), sort_keys=True)) if targets else None,
            "personas": short_hash(json.dumps([persona.model_dump(mode="json") for persona in personas.values()],
                                              sort_keys=True)) if personas else None,
        },
        "sample_data": responder.kind == "replay",
        # The whole scenario set and the selection: what a release decision's coverage is measured against.
        COVERAGE_KEY: ScenarioSet.of_scenarios(every_scenario or scenarios, scenarios, families=config.families,
                                               scenario_ids=config.scenario_ids,
                                               persona_ids=config.persona_ids, repeats=config.repeats).record(),
    }


def _restored_path(saved: str | None, config: RunConfig, field: str) -> Path:
    """A directory recorded in the manifest: relative to the project, or absolute. A run from
    before directories were recorded this way may name one that does not resolve: then the
    flag given now (or the default) stands, and the hashes still check the contents."""
    restored = PROJECT_ROOT / saved if saved else None  # an absolute path stays absolute
    if restored is None or (not restored.is_dir() and field in config.given):
        return getattr(config, field)
    return restored


def _same(field: str, given: object, restored: object) -> bool:
    """Whether a flag given on resume says what the run was started with."""
    if given is None or restored is None:
        return given == restored
    if field.endswith("_dir") or field == "state_path":
        return Path(given).resolve() == Path(restored).resolve()
    if isinstance(given, list | tuple) and isinstance(restored, list | tuple):
        return sorted(map(str, given)) == sorted(map(str, restored))
    return given == restored


def _shown(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, Path):
        return display_path(value)
    return str(value)


def _check_resume_flags(config: RunConfig, restored: RunConfig, directory: Path) -> None:
    """Every input flag given with --resume must agree with the run; name each one that does not."""
    judge_now, judge_then = config.judge or JudgeConfig(), restored.judge or JudgeConfig()
    values = {
        "judge_model": (judge_now.model, judge_then.model), "judge_samples": (judge_now.samples, judge_then.samples),
        "judge_sampling": (judge_now.sampling, judge_then.sampling),
        "judge_sample_rate": (judge_now.sample_rate, judge_then.sample_rate),
    }
    conflicts = []
    for name, flag in RESUMED_INPUTS.items():
        if name not in config.given or name == "judge":
            continue
        given, then = values.get(name) or (getattr(config, name), getattr(restored, name))
        if name == "responder" and given == "auto":
            continue
        if name == "prompt_versions" and then is None:
            continue  # the run took every version; naming them all again agrees
        if not _same(name, given, then):
            conflicts.append(f"{flag} {_shown(given)} (the run has {_shown(then)})")
    if conflicts:
        raise RunConfigError(f"cannot resume {display_path(directory)} with {'; '.join(conflicts)}: a resumed run "
                             "keeps every input it started with; drop the flag, or start a new run")


def _config_for_resume(config: RunConfig, manifest: dict, directory: Path | None = None) -> RunConfig:
    """The original run's inputs (prompt and scenario directories, filters, responder, judge,
    prompt source), with only the pacing options taken from this invocation. A flag given
    again that disagrees with the run is an error naming it."""
    saved = manifest.get("config", {})
    saved_judge = saved.get("judge")
    if config.judge is not None and saved_judge is None:
        raise RunConfigError("this run was started without the judge; resume it without --judge, or start a new "
                             "run with --judge")
    judge = None
    if saved_judge is not None:
        state_path = saved_judge.get("state_path")
        judge = replace(config.judge or JudgeConfig(), model=saved_judge.get("model"),
                        samples=saved_judge.get("samples", 1), sampling=saved_judge.get("sampling", "all"),
                        sample_rate=saved_judge.get("sample_rate"), batch=saved_judge.get("batch", False),
                        state_path=PROJECT_ROOT / state_path if state_path else None)  # absolute stays absolute
    restored = replace(
        config,
        prompt_versions=saved.get("prompt_versions"),
        families=saved.get("families"),
        scenario_ids=saved.get("scenario_ids"),
        persona_ids=saved.get("persona_ids"),
        max_turns=saved.get("max_turns"),
        repeats=saved.get("repeats", 1),
        responder=saved.get("responder", config.responder) if not saved.get("target") else "auto",
        target=restored_spec(saved.get("target")),
        model=saved.get("model_override"),
        run_id=manifest.get("run_id"),
        judge=judge,
        sample_judge=bool(saved.get("safety_judge")),
        prompt_source=saved.get("prompt_source", "local"),
        prompt_labels=saved.get("prompt_labels"),
        langfuse_prompt_names=saved.get("langfuse_prompt_names"),
        prompts_dir=_restored_path(saved.get("prompts_dir"), config, "prompts_dir"),
        scenarios_dir=_restored_path(saved.get("scenarios_dir"), config, "scenarios_dir"),
        recorded_dir=_restored_path(saved.get("recorded_dir"), config, "recorded_dir"),
    )
    _check_resume_flags(config, restored, directory or Path(str(manifest.get("run_id", "the run"))))
    return restored


def _check_unchanged(manifest: dict, current: dict, directory: Path) -> None:
    before, now = manifest.get("hashes", {}), current["hashes"]
    changed = []
    if before.get("rubric") != now["rubric"]:
        changed.append("the rubric")
    for version, digest in now["prompts"].items():
        if before.get("prompts", {}).get(version) != digest:
            changed.append(f"prompt version {version}")
    if before.get("scenario_set") != now["scenario_set"]:
        changed.append("the scenarios")
    if before.get("recordings") != now["recordings"]:
        changed.append("the recorded replies")
    if before.get("sample_verdicts") != now.get("sample_verdicts"):
        changed.append("the sample verdicts")
    if before.get("personas") != now.get("personas"):
        changed.append("the personas")
    if before.get("targets") != now.get("targets"):
        changed.append("the targets")
    simulator_before, simulator_now = manifest.get("config", {}).get("simulator"), current["config"]["simulator"]
    if simulator_before and simulator_now and simulator_before != simulator_now:
        changed.append(f"the simulator ({simulator_before.get('model')} at {simulator_before.get('endpoint')} then, "
                       f"{simulator_now.get('model')} at {simulator_now.get('endpoint')} now)")
    judge_before, judge_now = manifest.get("config", {}).get("judge"), current["config"]["judge"]
    if judge_before and judge_now and judge_before.get("endpoint") != judge_now.get("endpoint"):
        changed.append(f"the judge endpoint ({judge_before.get('endpoint')} then, {judge_now.get('endpoint')} now)")
    endpoint_before = manifest.get("config", {}).get("endpoint")
    if endpoint_before != current["config"]["endpoint"]:
        changed.append(f"the endpoint ({endpoint_before} then, {current['config']['endpoint']} now)")
    if changed:
        raise RunConfigError(f"cannot resume {display_path(directory)}: {', '.join(changed)} changed since "
                             "the run started; start a new run instead")


def prepare_run(config: RunConfig, evaluator: HeuristicEvaluator,
                environ: Mapping[str, str] | None = None) -> PreparedRun:
    environ = os.environ if environ is None else environ
    if config.concurrency < 1:
        raise RunConfigError("--concurrency must be at least 1")
    if config.timeout_s <= 0:
        raise RunConfigError("--timeout must be positive")
    if config.max_attempts < 1:
        raise RunConfigError("--max-attempts must be at least 1")
    if config.repeats < 1:
        raise RunConfigError("--repeat must be at least 1")
    resumed = config.resume is not None
    if not resumed and config.run_id is not None and (problem := run_id_problem(config.run_id)):
        raise RunConfigError(problem)
    existing: RunStore | None = None
    if resumed:
        try:
            existing = RunStore.open(config.resume)
        except StoreError as error:
            raise RunConfigError(str(error)) from None
        config = _config_for_resume(config, existing.manifest, existing.directory)
    run_id = config.run_id or new_run_id()  # before the responder: a target's conversation ids carry it
    responder, notices = choose_responder(config, environ, run_id)
    prompts = _load_run_prompts(config, environ, existing)
    try:
        responder, version_targets = with_version_targets(responder, prompts, config, environ, run_id)
    except TargetError as error:
        raise RunConfigError(str(error)) from None
    every_scenario, scenarios, personas = _select_scenarios(config, evaluator)
    plan = RunPlan(prompts=prompts, scenarios=scenarios, model_override=config.model, personas=personas,
                   max_turns=config.max_turns, repeats=config.repeats,
                   recorded_plays=responder.recorded_plays() if isinstance(responder, ReplayResponder) else {})
    simulator = choose_simulator(config, responder, environ) if personas else None
    judge, sampling, judge_warnings = None, None, []
    if config.judge is not None:
        try:
            judge = create_judge(config.judge, evaluator.rubric, environ)
            sampling = create_sampling_state(config.judge, evaluator.rubric)
        except JudgeConfigError as error:
            raise RunConfigError(f"--judge: {error}") from None
        if responder.kind == "openai":
            warning = same_family_warning(judge.settings.model, [plan.model_for(prompt) for prompt in prompts])
            if warning:
                judge_warnings.append(warning)
                notices.append(warning)
    if simulator is not None and simulator.kind == "openai":
        warning = one_family_warning(simulator.model, [plan.model_for(prompt) for prompt in prompts],
                                     judge.settings.model if judge is not None else None)
        if warning:
            judge_warnings.append(warning)
            notices.append(warning)
    sample_judge = _sample_judge(config, responder, prompts, evaluator)
    if sample_judge is not None:
        notices.append(SAMPLE_JUDGE_LINE)
    manifest = _manifest(config, run_id, prompts, scenarios, responder, evaluator, judge, every_scenario,
                         personas, simulator, version_targets, sample_judge)
    if existing is not None:
        _check_unchanged(existing.manifest, manifest, existing.directory)
        store = existing
        store.update_manifest(resumed_at=[*existing.manifest.get("resumed_at", []), utc_now()])
    else:
        try:
            store = RunStore.create(Path(config.output_dir) / run_id, manifest)
        except StoreError as error:
            raise RunConfigError(str(error)) from None
    if existing is None or store.read_inputs() is None:
        store.write_inputs(RunInputs(prompts=list(prompts), scenarios=list(scenarios)))
    batch = None
    if judge is not None and config.judge.batch:
        try:
            batch = create_batch_judge(config.judge, judge, store.directory / BATCH_STATE_FILE)
        except JudgeConfigError as error:
            raise RunConfigError(f"--judge-batch: {error}") from None
    rejudge = _to_rejudge(store, plan) if resumed and (judge is not None or sample_judge is not None) else set()
    return PreparedRun(config, plan, responder, store, resumed, notices, store.finished_ids() if resumed else set(),
                       judge, sampling, judge_warnings, batch, simulator, sample_judge, rejudge)


def _to_rejudge(store: RunStore, plan: RunPlan) -> set[str]:
    """The plan's stored cases that only the judge failed on (`CaseResult.rejudge`): judged again from
    their stored replies. Only asked when the resumed run has a judge to ask again."""
    wanted = {case_id(prompt.version, scenario.id, repeat) for prompt, scenario, repeat in plan.cases()}
    return {case.case_id for case in store.read_cases() if case.case_id in wanted and case.rejudge}


def _sample_judge(config: RunConfig, responder: Responder, prompts: Sequence[PromptVersion],
                  evaluator: HeuristicEvaluator) -> SampleSafetyJudge | None:
    """The replay safety judge: only for replayed replies with no judge model (never a live run),
    unless --no-sample-judge; None when no version of the run has sample verdicts."""
    if responder.kind != "replay" or config.judge is not None or not config.sample_judge:
        return None
    try:
        return sample_judge_for([prompt.version for prompt in prompts], evaluator.rubric, config.recorded_dir,
                                config.scenarios_dir)
    except ValueError as error:
        raise RunConfigError(str(error)) from None


async def execute(
    prepared: PreparedRun,
    evaluator: HeuristicEvaluator,
    *,
    stages: Sequence[CaseStage] = (),
    sinks: Sequence[CaseSink] = (),
    on_case: Callable[[CaseResult], None] | None = None,
) -> RunReport:
    """Run the pending cases, then write the summary and the exports."""
    judge, batch = prepared.judge, prepared.batch
    if judge is not None:
        prompt_hashes = {prompt.version: prompt.content_hash for prompt in prepared.plan.prompts}
        options = {"sampling": prepared.sampling, "prompt_hashes": prompt_hashes}
        if batch is not None:
            stages = [BatchJudgeStage(batch, prepared.plan.scenarios, **options), *stages]
        else:
            stages = [JudgeStage(judge, prepared.plan.scenarios, **options), *stages]
        if any(item.kind == "judged" for scenario in prepared.plan.scenarios for turn in scenario.turns
               for item in turn.assertions):  # judged assertions: yes/no questions to the same judge
            stages = [*stages, AssertionStage(judge, prepared.plan.scenarios)]
    safety_budget = SafetyBudget(prepared.config.judge.budget if prepared.config.judge else None)
    # The safety judge where it matters (evaluators.judge.safety_stage), live or beside --judge-batch.
    if judge is not None and prepared.config.judge and prepared.config.judge.safety:
        stage = SafetyJudgeStage if batch is None else partial(BatchSafetyJudgeStage, batch)
        stages = [*stages, stage(SafetyJudge(judge), prepared.plan.scenarios, prepared.plan.personas,
                                 budget=safety_budget)]
    if prepared.sample_judge is not None:  # offline: the hand-written sample verdicts, no network
        stages = [*stages, SampleSafetyJudgeStage(prepared.sample_judge, prepared.plan.scenarios,
                                                  prepared.plan.personas, budget=safety_budget)]
    if prepared.plan.personas:  # conversation metrics (and the conversation judge), after the per-turn judge
        stages = [*stages, ConversationStage(prepared.plan.personas, evaluator.rubric, judge=judge)]
    runner = Runner(prepared.plan, prepared.responder, prepared.store, evaluator,
                    concurrency=prepared.config.concurrency, stages=stages, sinks=sinks, on_case=on_case,
                    simulator=prepared.simulator, finalize=lambda case: with_failures(case, evaluator.rubric),
                    rejudge=prepared.rejudge)
    try:
        outcome = await runner.run()
    finally:
        await prepared.responder.aclose()
        if prepared.simulator is not None:
            await prepared.simulator.aclose()
        if judge is not None:
            await judge.aclose()
        for sink in sinks:
            await sink.aclose()
    versions = sorted((prompt.version for prompt in prepared.plan.prompts), key=version_order)
    summaries = version_summaries(outcome.cases, versions, prepared.config.prices, rubric=evaluator.rubric,
                                  calibration=read_calibration())
    judge_summary = run_judge_summary(outcome.cases, judge, evaluator.rubric, prepared.judge_warnings) if judge else None
    if judge_summary is not None:
        judge_summary["safety"] = safety_summary(outcome.cases, safety_budget)
    sample_summary = None
    if prepared.sample_judge is not None:
        sample_summary = {"model": prepared.sample_judge.model, "label": prepared.sample_judge.label,
                          **safety_summary(outcome.cases, safety_budget)}
    if judge_summary is not None and batch is not None:
        judge_summary["batch"] = asdict(batch.stats)
    store = prepared.store
    store.write_summary({
        "run_id": store.manifest.get("run_id"),
        "finished_at": utc_now(),
        "responder": prepared.responder.kind,
        "sample_data": prepared.responder.kind == "replay",
        "cases": len(outcome.cases),
        "failed": sum(case.status != "ok" for case in outcome.cases),
        "judge_failed": sum(case.judge_failed for case in outcome.cases),
        "versions": summaries,
        "judge": judge_summary,
        "safety_judge": sample_summary,  # the sample judge's figures (hand-written sample verdicts)
    })
    exports = store.export(outcome.cases)
    return RunReport(store, outcome, summaries, exports, judge_summary, sample_summary)


def run_evaluation(config: RunConfig, evaluator: HeuristicEvaluator, **hooks) -> RunReport:
    """Synchronous convenience for scripts and tests: prepare and execute in one call."""
    prepared = prepare_run(config, evaluator)
    return asyncio.run(execute(prepared, evaluator, **hooks))
