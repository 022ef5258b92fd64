"""The scenario sets as one Langfuse dataset, so every prompt version's run is an experiment
on the same items and Langfuse compares versions side by side.

One item per scripted user turn (a trace is one turn), with a deterministic id, so syncing
twice updates instead of duplicating. Items are only written when they changed. A run syncs
the scenarios it played; `penpal-eval langfuse setup` syncs the whole scenario directory and
archives items whose scenario or turn no longer exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from evaluators.inputs.contracts import Scenario
from evaluators.integrations.langfuse.ids import dataset_item_id
from evaluators.integrations.langfuse.rest import LangfuseCallFailed, LangfuseRest

DATASET_DESCRIPTION = ("Penpal scenario sets (basic, emotional support, small talk, trust-building, continuity, "
                       "age demographics): one item per scripted user turn. Written by penpal-eval.")


@dataclass(frozen=True)
class ItemSpec:
    id: str
    scenario_id: str
    turn_index: int
    input: dict
    expected_output: dict  # always sent, an empty list included: an omitted or null one is kept
    metadata: dict


@dataclass
class DatasetSync:
    name: str
    id: str
    item_ids: dict[tuple[str, int], str] = field(default_factory=dict)  # (scenario id, turn index) -> item id
    written: int = 0
    unchanged: int = 0
    archived: int = 0

    def item_id(self, scenario_id: str, turn_index: int) -> str | None:
        return self.item_ids.get((scenario_id, turn_index))


def scenario_items(dataset: str, scenarios: Iterable[Scenario]) -> list[ItemSpec]:
    """What each turn's item holds: the user's turns so far, the profile, and the turn's checks."""
    specs = []
    for scenario in scenarios:
        profile = scenario.profile.model_dump(mode="json", exclude_defaults=True)
        for index, turn in enumerate(scenario.turns):
            expectations = [expectation.label() for expectation in scenario.expectations_for(index)]
            specs.append(ItemSpec(
                id=dataset_item_id(dataset, scenario.id, index),
                scenario_id=scenario.id,
                turn_index=index,
                input={"scenario_id": scenario.id, "title": scenario.title, "profile": profile,
                       "earlier_user_turns": [earlier.user for earlier in scenario.turns[:index]],
                       "user_message": turn.user},
                # Never None: the server keeps an omitted or null expectedOutput on an update
                # (publicDatasetService.createDatasetItemForApi), so removed expectations would stay.
                expected_output={"expectations": expectations},
                metadata={"scenario_id": scenario.id, "turn": index + 1, "family": scenario.family,
                          "safety": scenario.safety, "age_group": scenario.profile.age_group,
                          "demographic_group": scenario.profile.demographic_group, "tags": list(scenario.tags),
                          "rubric_example": scenario.rubric_example, "source": "penpal-eval"},
            ))
    return specs


def _ensure_dataset(rest: LangfuseRest, name: str) -> str:
    try:
        return rest.call(rest.api.datasets.get, name, what=f"get dataset {name}").id
    except LangfuseCallFailed as error:
        if error.status != 404:
            raise
    return rest.call(rest.api.datasets.create, name=name, description=DATASET_DESCRIPTION,
                     metadata={"source": "penpal-eval"}, what=f"create dataset {name}").id


def _active(item) -> bool:
    status = item.status
    return str(getattr(status, "value", status)) == "ACTIVE"  # an enum from the SDK, a string from older servers


def _unchanged(item, spec: ItemSpec) -> bool:
    return (item.input == spec.input and item.expected_output == spec.expected_output
            and item.metadata == spec.metadata and _active(item))


def _ours(item) -> bool:
    return isinstance(item.metadata, dict) and item.metadata.get("source") == "penpal-eval"


def sync_dataset(rest: LangfuseRest, name: str, scenarios: Sequence[Scenario], *, archive_missing: bool = False
                 ) -> DatasetSync:
    """Create the dataset if needed and write the items that are new or changed."""
    sync = DatasetSync(name=name, id=_ensure_dataset(rest, name))
    existing = {item.id: item for item in rest.pages(rest.api.dataset_items.list, dataset_name=name,
                                                      what=f"list items of dataset {name}")}
    specs = scenario_items(name, scenarios)
    for spec in specs:
        sync.item_ids[(spec.scenario_id, spec.turn_index)] = spec.id
        if spec.id in existing and _unchanged(existing[spec.id], spec):
            sync.unchanged += 1
            continue
        rest.call(rest.api.dataset_items.create, dataset_name=name, id=spec.id, input=spec.input,
                  expected_output=spec.expected_output, metadata=spec.metadata, status="ACTIVE",
                  what=f"write dataset item {spec.scenario_id} turn {spec.turn_index + 1}")
        sync.written += 1
    if archive_missing:
        wanted = {spec.id for spec in specs}
        for item_id, item in existing.items():
            if item_id not in wanted and _ours(item) and _active(item):
                rest.call(rest.api.dataset_items.create, dataset_name=name, id=item_id, input=item.input,
                          expected_output=item.expected_output, metadata=item.metadata, status="ARCHIVED",
                          what=f"archive dataset item {item_id}")
                sync.archived += 1
    return sync
