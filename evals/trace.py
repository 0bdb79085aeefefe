"""Public name for attempt traces (SPEC §3 ``trace``): the event model a Python target's
``trace`` list is checked against, its kinds and limits. A stable path: the code lives in
``evals.results.trace``, which may move; this module does not."""

from evals.results.trace import CONTENT_LIMIT, KINDS, TOOL_RESULT_LIMIT, TraceError, TraceEvent, TraceKind

__all__ = ["CONTENT_LIMIT", "KINDS", "TOOL_RESULT_LIMIT", "TraceError", "TraceEvent", "TraceKind"]
