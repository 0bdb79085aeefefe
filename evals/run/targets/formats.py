"""The wire formats of the model targets (docs/spec.md#model-targets): what one format knows — the URL
and headers it posts with, the request body it builds from a conversation and the tools, how its
reply reads (text, tool calls, finish reason, usage), how its conversation goes on after tool calls,
which HTTP statuses are the world's (retried) and how its error JSON names what went wrong. One
module per format (``openai_chat``, ``openai_responses``, ``anthropic``) implements ``WireFormat``; the one loop that
uses them — connection pool, retries, cache, tool runs, traces, usage and cost — is
``evals.run.targets.endpoint``.

A reply is kept as the format's *stored* dict: the part of the body the loop uses, checked to be
complete, which is also what the response cache stores (so an entry replays like a live reply)."""

from __future__ import annotations

import email.utils
import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from evals.results.spend import is_count
from evals.run.connections import Reply
from evals.run.targets.base import excerpt

# 408 timeout, 409 conflict (a lock the next try may find free), 429 rate limit; 5xx likewise
# (Anthropic's 529 overloaded is one): the world's, retried on the runner's schedule.
RETRYABLE_STATUS = frozenset({408, 409, 429})


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` is either seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(slots=True)
class Call:
    """A tool call the model asked for: ``arguments`` as it sent them (JSON text or an object)
    and ``raw``, the call in the format's own shape (kept when the loop stops before running it)."""

    id: Any
    name: str
    arguments: Any
    raw: dict[str, Any]


@dataclass(slots=True)
class Turn:
    """One reply read: its text, tool calls, the format's own finish reason and the finish reason in
    the OpenAI words evalgate records (``stop``, ``length``, ``tool_calls``, ``content_filter``)."""

    text: str
    calls: list[Call]
    message: Any  # the reply as the conversation carries it on
    reason: str | None
    finish: str | None
    fingerprint: str | None = None


class Usage:
    """Tokens over the steps of an attempt; None on a side no reply reported (a sum of some steps
    would understate it). A count of 0 where there must be tokens — the prompt of any request, the
    completion of a reply with text — is an endpoint that does not count, not a free call:
    unreported, so ``limits.max_tokens`` and ``max_cost_usd`` stop the run as unknown instead of
    never being reached. ``tokens_in`` is every input token, those read from or written to the
    provider's prompt cache included (counted apart too, as they are priced apart); ``reasoning``
    is part of ``tokens_out``."""

    __slots__ = ("cache_read", "cache_write", "reasoning", "tokens_in", "tokens_out")

    def __init__(self) -> None:
        self.tokens_in: int | None = 0
        self.tokens_out: int | None = 0
        self.cache_read = 0
        self.cache_write = 0
        self.reasoning = 0

    def add(
        self, tokens_in: Any, tokens_out: Any, *, answered: bool, read: Any = 0, write: Any = 0, reasoning: Any = 0
    ) -> None:
        self.tokens_in = _count(tokens_in, self.tokens_in, least=1)
        self.tokens_out = _count(tokens_out, self.tokens_out, least=1 if answered else 0)
        self.cache_read += read if is_count(read) else 0
        self.cache_write += write if is_count(write) else 0
        self.reasoning += reasoning if is_count(reasoning) else 0

    def metadata(self) -> dict[str, int]:
        """The parts of the tokens an attempt records beside ``tokens_in``/``tokens_out``."""
        parts = (
            ("tokens_cache_read", self.cache_read),
            ("tokens_cache_write", self.cache_write),
            ("tokens_reasoning", self.reasoning),
        )
        return {k: v for k, v in parts if v}


def cost(
    usage: Usage, price_in: float | None, price_out: float | None, read: float | None, write: float | None
) -> float | None:
    """What ``usage`` cost at these prices (USD per million tokens): prompt-cache reads and writes
    at their own prices (at the input price when those are not given); None without prices, or
    when a price's tokens are unreported (a sum without them would understate the cost)."""
    if price_in is None and price_out is None:
        return None
    tokens_in, tokens_out = usage.tokens_in, usage.tokens_out
    if (price_in is not None and tokens_in is None) or (price_out is not None and tokens_out is None):
        return None
    price_in = price_in or 0.0
    read_price = read if read is not None else price_in
    write_price = write if write is not None else price_in
    fresh = (tokens_in or 0) - usage.cache_read - usage.cache_write
    return (
        fresh * price_in
        + usage.cache_read * read_price
        + usage.cache_write * write_price
        + (tokens_out or 0) * (price_out or 0)
    ) / 1e6


def _count(value: Any, total: int | None, *, least: int) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= least
    return total + value if ok and total is not None else None


class WireFormat(ABC):
    """One API's request and reply shapes, made from the target's params and tools. ``name`` is
    what messages call it (``openai chat completions``), ``kind`` what keys the response cache
    (so two formats never share an entry); ``url`` where every request
    goes; ``key_header`` the one header the key of ``api_key_env`` goes in (``key_value`` its
    value), ``fixed_headers`` what else the format sends with every request."""

    name: str
    kind: str
    url: str
    key_header: str
    fixed_headers: dict[str, str]

    def key_value(self, key: str) -> str:
        return f"Bearer {key}"

    # The messages before the user's own: the system prompt, where the format puts it among them.
    preamble: tuple[dict[str, Any], ...] = ()

    def conversation(self, value: Any) -> list[Any]:
        """The messages a case starts: its own ``{"messages": [...]}``, or its input as the user's
        message (after :attr:`preamble`)."""
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            return list(value["messages"])
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        return [*self.preamble, {"role": "user", "content": text}]

    @abstractmethod
    def events(self, messages: list[Any]) -> list[dict[str, Any]]:
        """The conversation an attempt starts from, as trace ``message`` events (``name`` = role).
        Tool calls and results in it are history the case gave, not calls made in this attempt, so
        they are part of the message text rather than ``tool_call`` events."""

    @abstractmethod
    def body(self, messages: list[Any]) -> dict[str, Any]:
        """The request body for the conversation so far, with the format's tools and parameters."""

    @abstractmethod
    def parse(self, reply: Reply) -> dict[str, Any]:
        """A 2xx reply's stored dict; ValueError, KeyError, IndexError, TypeError or AttributeError
        when it is not a complete reply (a broken or cut-off transfer: infra)."""

    @abstractmethod
    def is_stored(self, data: Any) -> bool:
        """Whether a cache entry has this format's stored shape (a hand-made file may not)."""

    @abstractmethod
    def turn(self, data: dict[str, Any], usage: Usage) -> Turn:
        """The stored reply read, its usage added to ``usage``."""

    @abstractmethod
    def answer(self, messages: list[Any], turn: Turn, results: list[tuple[Call, bool, str]]) -> None:
        """Append the model's reply and the tools' results (``(call, ok, text)``) to ``messages``."""

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The format's own params the run records in ``run.target.params`` (beside the common ones)."""

    def prompt(self, static: str, rest: str) -> list[Any]:
        """A one-message conversation whose text starts with ``static``, the same for every call
        (the judge's instructions and rubric, docs/spec.md#judge): one user message, which OpenAI's
        automatic prompt caching serves by its prefix; a format that must mark the prefix to
        cache it does so."""
        return self.conversation(static + rest)

    def retryable(self, status: int) -> bool:
        return status in RETRYABLE_STATUS or status >= 500

    def error(self, reply: Reply, limit: int) -> str:
        """An error reply in words: ``HTTP <status>`` and what its body says."""
        return f"HTTP {reply.status}: {excerpt(reply.text, limit)}"
