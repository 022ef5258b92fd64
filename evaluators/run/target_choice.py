"""Which target answers each prompt version: the run's (`--target`), a version's own (front matter
`target:`), or today's responder; every configuration problem reported in one pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from evaluators.core.locations import PROJECT_ROOT, manifest_path
from evaluators.core.response_cache import ResponseCache
from evaluators.core.retry import RetryPolicy
from evaluators.inputs.contracts import PromptVersion
from evaluators.inputs.targets import (
    HttpTarget,
    OpenAITarget,
    PythonTarget,
    TargetError,
    resolve_target,
    target_identity,
)
from evaluators.run.config import RunConfig
from evaluators.run.responder import Responder
from evaluators.run.responder_process import IsolatedResponder
from evaluators.run.targets import HttpResponder, PythonResponder, RoutedResponder

Target = OpenAITarget | HttpTarget | PythonTarget


def build_responder(target: Target, source: str, *, config: RunConfig, environ: Mapping[str, str],
                    run_id: str) -> Responder:
    """The responder for one target, with the run's timeout, retry policy and cache; its
    `identity` (evaluators.inputs.targets.target_identity) goes to the manifest."""
    responder = _responder(target, source, config=config, environ=environ, run_id=run_id)
    responder.identity = target_identity(target)
    return responder


def _responder(target: Target, source: str, *, config: RunConfig, environ: Mapping[str, str],
               run_id: str) -> Responder:
    retry = RetryPolicy(max_attempts=config.max_attempts, base_delay_s=config.retry_base_delay_s)
    if isinstance(target, OpenAITarget):
        api_key = environ.get(target.api_key_env) or None
        base_url = target.base_url or environ.get("OPENAI_BASE_URL") or None
        if api_key is None and base_url is None:
            raise TargetError([f"{source}: kind: openai needs {target.api_key_env} (or base_url, or "
                               "OPENAI_BASE_URL for a local server) in the environment"])
        return IsolatedResponder(api_key=api_key, base_url=base_url, timeout_s=config.timeout_s, retry=retry,
                                 cache_dir=config.cache_dir, use_cache=config.use_cache)
    cache = ResponseCache(config.cache_dir) if config.use_cache else None
    options = {"run_id": run_id, "source": source, "timeout_s": config.timeout_s, "retry": retry, "cache": cache}
    if isinstance(target, HttpTarget):
        return HttpResponder(target, environ=environ, **options)
    return PythonResponder(target, **options)


def recorded_spec(spec: str | None) -> str | None:
    """`--target` as the manifest keeps it: a file as `manifest_path` writes paths (relative to the
    project, else absolute), so a resumed run finds it from any directory; other forms as given."""
    if spec is None or not spec.strip().endswith((".yaml", ".yml")) or not Path(spec).is_file():
        return spec
    return manifest_path(Path(spec))


def restored_spec(saved: str | None) -> str | None:
    """The manifest's `target` as `--target` takes it again (see `recorded_spec`)."""
    if saved is None or Path(saved).is_absolute() or not (PROJECT_ROOT / saved).is_file():
        return saved
    return str(PROJECT_ROOT / saved)


def run_target(config: RunConfig, environ: Mapping[str, str], run_id: str) -> Responder:
    """The run's target from `--target` (a file relative to the current directory)."""
    target, source = resolve_target(config.target or "", base=Path.cwd(), where="--target")
    return build_responder(target, source, config=config, environ=environ, run_id=run_id)


def with_version_targets(default: Responder, prompts: Sequence[PromptVersion], config: RunConfig,
                         environ: Mapping[str, str], run_id: str) -> tuple[Responder, dict[str, dict]]:
    """The run's responder, routed per version where a prompt names its own target (a file relative
    to the prompts directory); TargetError with every version's problems at once. The run's own
    `--target` wins over the front matter, so one command can point every version at one backend."""
    if config.target is not None:  # the run's target answers every version
        return default, {prompt.version: default.identity for prompt in prompts}
    by_version: dict[str, Responder] = {}
    identities: dict[str, dict] = {}
    problems: list[str] = []
    for prompt in prompts:
        if prompt.target is None:
            continue
        where = f"prompt {prompt.version}: target"
        try:
            target, source = resolve_target(prompt.target, base=Path(config.prompts_dir), where=where)
            by_version[prompt.version] = build_responder(target, source, config=config, environ=environ,
                                                         run_id=run_id)
            identities[prompt.version] = target_identity(target)
        except TargetError as error:
            problems += error.problems
    if problems:
        raise TargetError(problems)
    if not by_version:
        return default, {}
    return RoutedResponder(default, by_version), identities
