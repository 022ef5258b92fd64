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

from evaluators.models import PromptVersion
from evaluators.locations import PROJECT_ROOT, display_path, field_path, read_data_file, short_hash
from evaluators.yaml_io import describe_yaml_error, parse_yaml

DEFAULT_PROMPTS_DIR = PROJECT_ROOT / "prompts"
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?\n?(.*)\Z", re.DOTALL | re.MULTILINE)
REQUIRED_FIELDS = ("name", "version", "model", "temperature", "max_tokens")


class PromptError(ValueError):
    """Problems in the prompt files; each line names the file and the field."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def parse_prompt(text: str, source: str) -> PromptVersion:
    """One prompt version from its file text; raises PromptError naming `source` and the field."""
    match = _FRONT_MATTER.match(text.lstrip("\ufeff"))
    if not match:
        raise PromptError([f"{source}: expected YAML front matter between '---' lines at the top of the file"])
    header, body = match.groups()
    try:
        meta = parse_yaml(header)
    except yaml.YAMLError as error:
        raise PromptError([f"{source}: front matter: {describe_yaml_error(error, line_offset=1)}"]) from None
    if not isinstance(meta, dict):
        raise PromptError([f"{source}: front matter: expected a mapping of fields"])
    missing = [name for name in REQUIRED_FIELDS if name not in meta]
    if missing:
        raise PromptError([f"{source}: {name}: field required" for name in missing])
    if "text" in meta:
        raise PromptError([f"{source}: text: the prompt text is the body below the front matter, not a field"])
    try:
        return PromptVersion.model_validate({
            **meta,
            "text": body.strip(),
            "content_hash": short_hash(text),
        })
    except ValidationError as error:
        problems = [f"{source}: {field_path(item['loc']) or 'front matter'}: "
                    f"{item['msg'].removeprefix('Value error, ')}" for item in error.errors()]
        raise PromptError(problems) from None


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
    origin: dict[str, str] = {}
    for path in files:
        source = display_path(path)
        try:
            prompt = parse_prompt(read_data_file(path), source)
        except PromptError as error:
            problems += error.problems
            continue
        except ValueError as error:
            problems.append(str(error))
            continue
        if prompt.version in origin:
            problems.append(f"{source}: version: duplicate version {prompt.version!r}, already in {origin[prompt.version]}")
            continue
        origin[prompt.version] = source
        loaded.append(prompt)
    for prompt in loaded:
        if prompt.baseline is not None and prompt.baseline not in origin:
            problems.append(f"{origin[prompt.version]}: baseline: {prompt.baseline!r} is not a prompt version in "
                            f"{display_path(directory)} (known: {', '.join(origin)})")
    if problems:
        raise PromptError(problems)
    if versions is not None:
        wanted = list(dict.fromkeys(versions))
        unknown = [version for version in wanted if version not in origin]
        if unknown:
            raise PromptError([f"unknown prompt version(s): {', '.join(unknown)} (known: {', '.join(origin)})"])
        loaded = [prompt for prompt in loaded if prompt.version in wanted]
    return loaded
