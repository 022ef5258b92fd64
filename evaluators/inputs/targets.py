"""Target configurations: what the companion under test is, read and checked before a run starts.

A team ships more than a system prompt: a backend with its own memory, tools and safety layers,
often behind a text API. A target says how to reach it:

- `openai`: an OpenAI-compatible chat endpoint given the prompt version's system prompt (today's
  responder, the default);
- `http`: a JSON body POSTed to a URL (a template with `{{placeholders}}`), the reply read at a
  dotted JSON path, headers whose secret parts come from environment variables;
- `python`: `package.module:function` or `package.module:Class.method`, called with the
  conversation (sync or async).

A target is given per run (`run --target FILE.yaml`, `--target http:URL`,
`--target python:module:function`) or per prompt version (front matter `target:`). Every mistake
in a file is reported in one pass, naming the file and the field, with the key most likely meant
for an unknown one, as scenario files are. Secrets are never in a target file: a header value
names its variable (`Bearer ${COMPANION_TOKEN}`), and only the name is ever recorded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from evaluators.core.locations import display_path, read_data_file, url_without_credentials
from evaluators.core.problems import did_you_mean, validation_problems
from evaluators.core.yaml_io import describe_yaml_error, parse_yaml

# What a request template may ask for. `turn` is the 0-based index of the user turn in the
# conversation (as the run store numbers turns); `messages` the whole conversation so far (the
# system prompt first), for a backend that keeps no memory of its own.
PLACEHOLDERS = ("message", "messages", "system", "conversation_id", "turn", "model", "scenario_id",
                "prompt_version")
PLACEHOLDER_PATTERN = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
ENV_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$")

# `--target http:URL` with nothing else: the conversation id, the turn and the user's message.
DEFAULT_HTTP_REQUEST = {"conversation_id": "{{conversation_id}}", "turn": "{{turn}}", "message": "{{message}}"}
DEFAULT_REPLY_PATH = "reply"


class TargetError(ValueError):
    """Problems in a target configuration; each line names the file (or option) and the field."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class OpenAITarget(BaseModel):
    """An OpenAI-compatible chat endpoint, given the prompt version's system prompt and settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["openai"]
    base_url: str | None = None  # None: OPENAI_BASE_URL, else OpenAI
    api_key_env: str = "OPENAI_API_KEY"  # the variable that holds the key (never the key)

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            raise ValueError(f"{value!r} is not an environment variable name")
        return value


class HttpTarget(BaseModel):
    """A JSON API in front of the team's companion. The backend keeps its own memory, keyed by
    the conversation id it is sent; the run sends each user turn once, in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["http"]
    url: str = Field(pattern=r"^https?://")
    request: dict = Field(default_factory=lambda: dict(DEFAULT_HTTP_REQUEST))
    reply_path: str = Field(default=DEFAULT_REPLY_PATH, min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    # The backend remembers the conversation by its id: a cached reply is then only reused for the
    # same conversation (a resumed run), never for a new one the backend has not heard.
    memory: bool = True

    @field_validator("request")
    @classmethod
    def _known_placeholders(cls, value: dict) -> dict:
        unknown = sorted({name for text in _strings(value) for name in PLACEHOLDER_PATTERN.findall(text)}
                         - set(PLACEHOLDERS))
        if unknown:
            raise ValueError(f"unknown placeholder {{{{{unknown[0]}}}}}{did_you_mean(unknown[0], PLACEHOLDERS)}")
        return value

    @field_validator("headers")
    @classmethod
    def _variables_named(cls, value: dict[str, str]) -> dict[str, str]:
        for name, template in value.items():
            for variable in ENV_REFERENCE.findall(template):
                if not _ENV_NAME.match(variable):
                    raise ValueError(f"{name}: ${{{variable}}} is not an environment variable name")
        return value

    def header_variables(self) -> dict[str, list[str]]:
        """Header name -> the environment variables its value is built from."""
        return {name: ENV_REFERENCE.findall(template) for name, template in self.headers.items()}


class PythonTarget(BaseModel):
    """A function or a class's method in an importable module, given the conversation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["python"]
    callable: str = Field(description="package.module:function or package.module:Class.method")
    init: dict = Field(default_factory=dict)  # keyword arguments for the class, made once per run
    memory: bool = False  # True: the object keeps its own memory by conversation id (see HttpTarget)

    @field_validator("callable")
    @classmethod
    def _reference(cls, value: str) -> str:
        if not _CALLABLE.match(value):
            raise ValueError(f"{value!r} is not 'package.module:function' or 'package.module:Class.method'")
        return value


TargetConfig = Annotated[OpenAITarget | HttpTarget | PythonTarget, Field(discriminator="kind")]
_ADAPTER: TypeAdapter[OpenAITarget | HttpTarget | PythonTarget] = TypeAdapter(TargetConfig)
KINDS = ("openai", "http", "python")
_MODELS = {"openai": OpenAITarget, "http": HttpTarget, "python": PythonTarget}


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def parse_target(data: object, source: str) -> OpenAITarget | HttpTarget | PythonTarget:
    """A target from its parsed mapping; TargetError naming `source` and every wrong field."""
    if not isinstance(data, dict):
        raise TargetError([f"{source}: expected a mapping with kind: {' | '.join(KINDS)}"])
    kind = data.get("kind")
    if kind not in _MODELS:
        shown = f"{kind!r} is not a target kind" if kind is not None else "field required"
        hint = did_you_mean(str(kind), KINDS) if isinstance(kind, str) else f"; known: {', '.join(KINDS)}"
        raise TargetError([f"{source}: kind: {shown}{hint}"])
    model = _MODELS[kind]
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise TargetError([f"{source}: {where or 'target'}: {message}"
                           for where, message in validation_problems(error, model)]) from None


def load_target_file(path: Path) -> OpenAITarget | HttpTarget | PythonTarget:
    """A target from its YAML file."""
    source = display_path(path)
    try:
        data = parse_yaml(read_data_file(path))
    except ValueError as error:  # unreadable or not UTF-8: the message names the file
        raise TargetError([str(error)]) from None
    except yaml.YAMLError as error:
        raise TargetError([f"{source}: {describe_yaml_error(error)}"]) from None
    return parse_target(data, source)


def resolve_target(spec: str, *, base: Path, where: str) -> tuple[OpenAITarget | HttpTarget | PythonTarget, str]:
    """A target from how a user names it: `openai`, `http:URL`, `python:module:function`, or a
    YAML file (relative to `base`); and what later errors name it by: the file, else `where`
    (the option or front-matter field)."""
    spec = spec.strip()
    if spec == "openai":
        return OpenAITarget(kind="openai"), where
    if spec.startswith(("http:", "https:")) and not spec.endswith((".yaml", ".yml")):
        url = spec.removeprefix("http:") if spec.startswith("http:http") else spec
        return parse_target({"kind": "http", "url": url}, where), where
    if spec.startswith("python:"):
        return parse_target({"kind": "python", "callable": spec.removeprefix("python:")}, where), where
    path = Path(spec) if Path(spec).is_absolute() else base / spec
    if not path.is_file():
        raise TargetError([f"{where}: {spec!r} is neither a target file nor one of openai, http:URL, "
                           "python:module:function"])
    return load_target_file(path), display_path(path)


def target_identity(target: OpenAITarget | HttpTarget | PythonTarget) -> dict:
    """What identifies a target in the manifest and the response cache: never a secret (a header
    is recorded as its template, which names variables, not their values)."""
    record = target.model_dump(mode="json")
    if isinstance(target, HttpTarget | OpenAITarget) and getattr(target, "url", None):
        record["url"] = url_without_credentials(target.url)
    if isinstance(target, OpenAITarget) and target.base_url:
        record["base_url"] = url_without_credentials(target.base_url)
    return record
