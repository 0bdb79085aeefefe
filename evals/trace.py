"""Public name for attempt traces (docs/spec.md#traces): the event model a Python target's
``trace`` list is checked against, its kinds and limits, and the conventions of agent traces (a
``log`` event named ``STEP`` per model call, which the ``max_steps`` scorer counts; a call nobody ran
answered by a ``tool_result`` starting with ``NOT_EXECUTED``). A stable path: the code lives in
``evals.results.trace``, which may move; this module does not."""

from evals.results.trace import (
    CONTENT_LIMIT,
    KINDS,
    NOT_EXECUTED,
    STEP,
    TOOL_RESULT_LIMIT,
    TraceError,
    TraceEvent,
    TraceKind,
)

__all__ = [
    "CONTENT_LIMIT",
    "KINDS",
    "NOT_EXECUTED",
    "STEP",
    "TOOL_RESULT_LIMIT",
    "TraceError",
    "TraceEvent",
    "TraceKind",
]
