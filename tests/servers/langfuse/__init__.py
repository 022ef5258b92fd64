"""A local Langfuse stand-in for tests: the real `langfuse` SDK and the real OTLP exporter talk
to it over HTTP on 127.0.0.1.

Langfuse itself cannot run here (it needs ClickHouse, Redis and Postgres), yet the suite's
Langfuse integration must be tested over the real wire. The stand-in plays the routes the
suite calls, and only those, with the server's rules as its source shows them: each rule is
a function marked `@cites(...)` with the file of langfuse/langfuse it mirrors (see core.py
and server_paths.txt). One module per resource:

- core: HTTP, routing, auth, faults, recorded requests, the two error shapes, rate limits;
- otlp: spans in, observations, the events table, root events, v2 observations out;
- scores, configs, datasets, prompts, queues, dashboards.

    with LangfuseCompatServer(public_key="pk-lf-this-test") as server:  # one key per SDK client
        langfuse = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
        ...
        langfuse.flush()
        assert server.scores[...]

Everything the server received is exposed as thread-safe snapshots (`requests`, `spans`,
`observations`, `traces`, `scores`, ...): changing a snapshot changes nothing on the server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from tests.servers.langfuse.configs import ConfigsResource
from tests.servers.langfuse.core import (
    DEFAULT_SPEC,
    DROP,
    OK,
    SERVER_VERSION,
    Fault,
    FaultPlan,
    RateLimit,
    RecordedRequest,
    Reply,
    Request,
    Route,
    ServerCore,
    cites,
    delay,
    hang,
    rate_limited,
    refusal,
    server_error,
)
from tests.servers.langfuse.dashboards import DashboardsResource
from tests.servers.langfuse.datasets import DatasetsResource
from tests.servers.langfuse.otlp import OtlpResource, ReceivedSpan
from tests.servers.langfuse.prompts import PromptsResource
from tests.servers.langfuse.queues import QueuesResource
from tests.servers.langfuse.scores import ScoresResource

__all__ = [
    "DEFAULT_SPEC", "DROP", "OK", "SERVER_VERSION", "Fault", "FaultPlan", "LangfuseCompatServer", "RateLimit",
    "ReceivedSpan", "RecordedRequest", "delay", "hang", "rate_limited", "refusal", "server_error",
]


class LangfuseCompatServer(OtlpResource, ScoresResource, ConfigsResource, DatasetsResource, PromptsResource,
                           QueuesResource, DashboardsResource, ServerCore):
    """A Langfuse stand-in on 127.0.0.1 for one test (or one module) at a time.

    Start it, point the SDK at `base_url` with `public_key`/`secret_key`, flush, then assert on
    what arrived. `faults` may be swapped at any time. `stop()` makes the port refuse
    connections (the "Langfuse is down" case); `start()` again brings it back on the same
    address with its state.

    `scores_mode`: "array" (the SDK 5 batch, timestamps kept), "object" or "object-zod4" (one
    score per request, timestamps ignored; an array is a zod error in that zod's wording).
    `rate_limit`: one RateLimit or several (per resource), as Langfuse Cloud applies them.
    `dashboards=False` plays a server without the unstable dashboards API (404).
    """

    def __init__(self, *, public_key: str = "pk-lf-test", secret_key: str = "sk-lf-test",
                 project_id: str = "project-test", faults: FaultPlan | None = None,
                 openapi_spec: Path | None = DEFAULT_SPEC, check_responses: bool = True,
                 scores_mode: str = "array", rate_limit: RateLimit | Iterable[RateLimit] | None = None,
                 dashboards: bool = True, version: str = SERVER_VERSION,
                 score_rejections: Callable[[dict], str | None] | None = None) -> None:
        ServerCore.__init__(self, public_key=public_key, secret_key=secret_key, project_id=project_id,
                            faults=faults, openapi_spec=openapi_spec, check_responses=check_responses,
                            rate_limit=rate_limit, version=version)
        self._init_otlp()
        self._init_scores(scores_mode)
        self._init_configs()
        self._init_datasets()
        self._init_prompts()
        self._init_queues()
        self._init_dashboards(dashboards)
        # A fault of our choosing, not a server rule: a score in a batch for which this returns a
        # reason is refused with it (207), as Langfuse refuses scores it cannot ingest; may be
        # swapped at any time.
        self.score_rejections = score_rejections
        # Every ingestion request taken, in order: ("spans", span ids) for an OTLP export,
        # ("scores", the score ids accepted) for a score batch; a client's batches can be counted.
        self._batches: list[tuple[str, list[str]]] = []
        p = "/api/public"
        self._routes = [Route("GET", f"{p}/health", self._health, auth=False, resource=None),
                        Route("GET", f"{p}/projects", self._projects),
                        *self._otlp_routes(p), *self._scores_routes(p), *self._configs_routes(p),
                        *self._datasets_routes(p), *self._prompts_routes(p), *self._queues_routes(p),
                        *self._dashboards_routes(p)]

    @property
    def received_batches(self) -> list[tuple[str, list[str]]]:
        """Each ingestion request taken, in order: ("spans", span ids) or ("scores", accepted ids)."""
        with self._lock:
            return [(kind, list(ids)) for kind, ids in self._batches]

    def route_available(self, route: Route) -> bool:
        return self.dashboards_api or "/unstable/dashboard" not in route.template

    @cites("web/src/pages/api/public/health.ts")
    def _health(self, request: Request) -> Reply:
        """{"status": "OK", "version": VERSION without the "v"}."""
        return Reply(200, {"status": "OK", "version": self.version})

    def _projects(self, request: Request) -> Reply:
        return Reply(200, {"data": [{"id": self.project_id, "name": "penpal-eval tests",
                                     "organization": {"id": "org-test", "name": "Test organization"},
                                     "metadata": {}}]})
