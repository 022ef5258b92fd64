"""Langfuse: runs published as traces, scores and experiments; prompts managed by label;
production replies scored in place; and an account of everything that did not arrive."""

from evaluators.integrations.langfuse.connection import LangfuseConnection, connect
from evaluators.integrations.langfuse.publisher import DeliveryReport, LangfusePublisher, publisher_for_store
from evaluators.integrations.langfuse.settings import LangfuseConfigError, LangfuseSettings

__all__ = [
    "DeliveryReport",
    "LangfuseConfigError",
    "LangfuseConnection",
    "LangfusePublisher",
    "LangfuseSettings",
    "connect",
    "publisher_for_store",
]
