"""Prompt management: versions, labels (unique per prompt, `latest` kept by the server), reads
by label or version."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from tests.servers.langfuse.core import Reply, Request, Route, bad_request, cites, invalid, iso, not_found, now

# packages/shared/src/features/prompts/constants.ts (PROMPT_LABEL_REGEX, its maximum length)
PROMPT_LABEL_PATTERN = re.compile(r"^[a-z0-9_\-.]+$")
PROMPT_LABEL_MAX_LENGTH = 36


@cites("packages/shared/src/features/prompts/constants.ts")
def check_prompt_labels(labels: Iterable[Any]) -> None:
    """Lowercase letters, digits, `_`, `-` and `.`, at most 36 characters."""
    for label in labels:
        if not isinstance(label, str) or not PROMPT_LABEL_PATTERN.match(label) or len(label) > PROMPT_LABEL_MAX_LENGTH:
            raise invalid("labels", f"{label!r}: Label must be lowercase alphanumeric with optional underscores, "
                                    f"hyphens, or periods, at most {PROMPT_LABEL_MAX_LENGTH} characters")


class PromptsResource:
    def _init_prompts(self) -> None:
        self._prompts: dict[str, list[dict]] = {}

    def _prompts_routes(self, p: str) -> list[Route]:
        return [Route("POST", f"{p}/v2/prompts", self._post_prompt),
                Route("GET", f"{p}/v2/prompts/{{promptName}}", self._get_prompt, resource="prompts"),
                Route("PATCH", f"{p}/v2/prompts/{{name}}/versions/{{version}}", self._patch_prompt_version)]

    @property
    def prompts(self) -> dict[str, list[dict]]:
        return self.snapshot(self._prompts)

    def add_prompt(self, *, name: str, prompt: Any, config: dict | None = None, labels: Iterable[str] = (),
                   type: str = "text", tags: Iterable[str] | None = None,  # noqa: A002
                   commit_message: str | None = None) -> dict:
        """A new version of a prompt, as if created in the UI. Returns it as the API would."""
        with self._lock:
            return self._create_prompt_version({"name": name, "prompt": prompt, "config": config or {},
                                                "labels": list(labels), "type": type,
                                                "tags": list(tags) if tags is not None else None,
                                                "commitMessage": commit_message})

    def _create_prompt_version(self, body: dict) -> dict:
        name = body["name"]
        prompt_type = body.get("type") or "text"
        versions = self._prompts.setdefault(name, [])
        labels = [label for label in dict.fromkeys(body.get("labels") or []) if label != "latest"]
        tags = body.get("tags")
        if tags is None:
            tags = versions[-1]["tags"] if versions else []
        moment = iso(now())
        for version in versions:  # labels are unique per prompt: they move to the new version
            version["labels"] = [label for label in version["labels"] if label not in labels and label != "latest"]
            version["tags"] = list(tags)  # tags are the same across the versions of a prompt
        record = {"name": name, "version": len(versions) + 1, "type": prompt_type, "prompt": body["prompt"],
                  "config": body.get("config") if body.get("config") is not None else {},
                  "labels": [*labels, "latest"], "tags": list(tags), "commitMessage": body.get("commitMessage"),
                  "resolutionGraph": None, "createdAt": moment, "updatedAt": moment}
        versions.append(record)
        return copy.deepcopy(record)

    def _post_prompt(self, request: Request) -> Reply:
        check_prompt_labels(request.body.get("labels") or [])
        return Reply(200, self._create_prompt_version(request.body))

    def _get_prompt(self, request: Request) -> Reply:
        """By version, or by label (default `production`); 404 when none matches."""
        name = request.params["promptName"]
        version, label = request.arg("version"), request.arg("label")
        versions = self._prompts.get(name, [])
        if version is not None:
            found = [v for v in versions if str(v["version"]) == version]
        else:
            wanted = label or "production"
            found = [v for v in versions if wanted in v["labels"]]
        if not found:
            raise not_found("Prompt not found")
        return Reply(200, copy.deepcopy(found[-1]))

    @cites("packages/shared/src/features/prompts/constants.ts")
    def _patch_prompt_version(self, request: Request) -> Reply:
        """New labels move onto this version; `latest` is the server's to set."""
        name, version = request.params["name"], request.params["version"]
        new_labels = list(dict.fromkeys(request.body.get("newLabels") or []))
        if "latest" in new_labels:
            raise bad_request("The 'latest' label is reserved and managed by Langfuse")
        check_prompt_labels(new_labels)
        versions = self._prompts.get(name, [])
        target = next((v for v in versions if str(v["version"]) == version), None)
        if target is None:
            raise not_found("Prompt not found")
        for other in versions:
            if other is not target:
                other["labels"] = [label for label in other["labels"] if label not in new_labels]
        target["labels"] = [*target["labels"], *(label for label in new_labels if label not in target["labels"])]
        target["updatedAt"] = iso(now())
        return Reply(200, copy.deepcopy(target))
