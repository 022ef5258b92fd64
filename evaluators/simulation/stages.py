"""The case stages a run adds when it plays personas: where conversation-level scoring plugs in.

A stage (evaluators.runner.CaseStage) enriches a scored case before it is stored. Stages made
here run after the judge, on every case of the run; each must leave cases of other families
untouched (`case.family != "personas"`). They get the run's personas, whose facts tell a
correct recall from a false memory. The conversation metrics fill `CaseResult.conversation`
through a stage returned here.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.runner import CaseStage
from evaluators.simulation.persona import Persona


def persona_stages(personas: Mapping[str, Persona]) -> list[CaseStage]:
    """The stages for a run whose plan holds `personas` (by id); none yet."""
    return []
