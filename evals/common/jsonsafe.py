"""JSON from outside — a model's reply, a tool call's arguments, a command's stdout, an imported
file — parsed with a bound on its nesting. ``json.loads`` recurses once per level, so a reply
nested 1,100 deep (2.2 KB of brackets) raised ``RecursionError``, which no caller expected: the
whole run ended as an internal error and its in-flight cases were lost. One nested under the
interpreter's limit parses, and then breaks whatever walks it next (masking, writing, the cache).

:func:`loads` raises :class:`json.JSONDecodeError` for both, so every caller's existing "not valid
JSON" path (an attempt's error, an import's exit 2 naming the file and line) handles it."""

from __future__ import annotations

import json
from typing import Any

# Deeper than any answer, tool call or results file we read (inspect_ai logs nest about 12 deep).
MAX_DEPTH = 128


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)``, refusing a value nested more than ``max_depth`` levels."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(text, max_depth) from None
    # Each level opens with a bracket of the text: with no more brackets than levels allowed, the
    # value cannot be too deep, and the walk (~10 µs of every model reply) is skipped.
    if _brackets(text) > max_depth and depth_exceeds(value, max_depth):
        raise _too_deep(text, max_depth)
    return value


def _brackets(text: str | bytes) -> int:
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests lists and objects more than ``limit`` deep; iterative,
    so a deep value cannot overflow the stack here either."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _too_deep(text: str | bytes, limit: int) -> json.JSONDecodeError:
    doc = text if isinstance(text, str) else text.decode("utf-8", errors="replace")
    return json.JSONDecodeError(f"nested more than {limit} levels deep", doc, 0)
