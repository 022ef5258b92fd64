"""Load companion prompt versions from prompts/*.md (YAML front matter + Markdown body).

The body is the system prompt exactly as written; the front matter carries the model
settings, so a version is everything needed to reproduce its replies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml
from pydantic import ValidationError

from evaluators.core.locations import PROJECT_ROOT, display_path, read_data_file, short_hash
from evaluators.core.problems import did_you_mean, validation_problems
from evaluators.core.yaml_io import describe_yaml_error, parse_yaml
from evaluators.inputs.contracts import PromptVersion

DEFAULT_PROMPTS_DIR = PROJECT_ROOT / "prompts"
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?\n?(.*)\Z", re.DOTALL | re.MULTILINE)
REQUIRED_FIELDS = ("name", "version", "model", "temperature", "max_tokens")
FRONT_MATTER_FIELDS = (*REQUIRED_FIELDS, "baseline", "description", "target")


class PromptError(ValueError):
    """Problems in the prompt files; each line names the file and the field."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def parse_prompt(text: str, source: str) -> PromptVersion:
    """One prompt version from its file text; raises PromptError naming `source` and every wrong field."""
    prompt, problems, _ = _read_prompt(text, source)
    if prompt is None:
        raise PromptError(problems)
    return prompt


def _read_prompt(text: str, source: str) -> tuple[PromptVersion | None, list[str], str | None]:
    """The prompt or every problem in its front matter (one pass), and the version as written."""
    match = _FRONT_MATTER.match(text.lstrip("\ufeff"))
    if not match:
        return None, [f"{source}: expected YAML front matter between '---' lines at the top of the file"], None
    header, body = match.groups()
    try:
        meta = parse_yaml(header)
    except yaml.YAMLError as error:
        return None, [f"{source}: front matter: {describe_yaml_error(error, line_offset=1)}"], None
    if not isinstance(meta, dict):
        return None, [f"{source}: front matter: expected a mapping of fields"], None
    written_version = str(meta["version"]) if isinstance(meta.get("version"), str | int | float) else None
    problems = []
    if "text" in meta:
        problems.append(f"{source}: text: the prompt text is the body below the front matter, not a field")
    fields = {key: value for key, value in meta.items() if key != "text"}
    try:
        prompt = PromptVersion.model_validate({**fields, "text": body.strip(), "content_hash": short_hash(text)})
    except ValidationError as error:
        problems += [f"{source}: {where or 'front matter'}: {message}"
                     for where, message in validation_problems(error, PromptVersion, FRONT_MATTER_FIELDS)]
        return None, problems, written_version
    return (None if problems else prompt), problems, written_version


def prompt_files(directory: Path) -> list[Path]:
    return sorted(path for path in directory.glob("*.md") if path.is_file() and path.name != "README.md")


def load_prompts(directory: Path | None = None, versions: Iterable[str] | None = None) -> list[PromptVersion]:
    """All prompt versions in `directory` (or the chosen ones), checked as a set.

    Versions must be unique and a baseline must name a version that exists in the directory.
    """
    directory = Path(directory) if directory is not None else DEFAULT_PROMPTS_DIR
    files = prompt_files(directory) if directory.is_dir() else []
    if not files:
        raise PromptError([f"{display_path(directory)}: no prompt files (*.md) found"])
    problems: list[str] = []
    loaded: list[PromptVersion] = []
    origin: dict[str, str] = {}  # valid versions -> their file
    written: dict[str, str] = {}  # every version written, valid file or not -> its file
    for path in files:
        source = display_path(path)
        try:
            prompt, file_problems, version = _read_prompt(read_data_file(path), source)
        except ValueError as error:
            problems.append(str(error))
            continue
        problems += file_problems
        # Versions are compared as written, valid file or not: a duplicate is named in the same pass.
        if version is not None and version in written:
            problems.append(f"{source}: version: duplicate version {version!r}, already in {written[version]}")
            continue
        if version is not None:
            written[version] = source
        if prompt is not None:
            origin[prompt.version] = source
            loaded.append(prompt)
    for prompt in loaded:
        if prompt.baseline is not None and prompt.baseline not in written:
            problems.append(f"{origin[prompt.version]}: baseline: {prompt.baseline!r} is not a prompt version in "
                            f"{display_path(directory)}{did_you_mean(prompt.baseline, written)}")
    if problems:
        raise PromptError(problems)
    if versions is not None:
        wanted = list(dict.fromkeys(versions))
        unknown = [version for version in wanted if version not in origin]
        if unknown:
            raise PromptError([f"unknown prompt version(s): {', '.join(unknown)} (known: {', '.join(origin)})"])
        loaded = [prompt for prompt in loaded if prompt.version in wanted]
    return loaded
