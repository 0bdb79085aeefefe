"""A python or command target served from the response cache (docs/spec.md#response-cache), which the user opts into
with ``cache.key``: the entry is keyed by the target's configuration (the callable or the command
line, never the values of its environment, which may be secrets), its code's identity (the blob
hashes of the repository files it runs, ``evals.run.targets.identity``), the case as the target
receives it, the attempt number and that key. ``cache.key`` says what no file shows (a model behind
an API the code calls, a data file read at run time) (docs/config.md).

Only a successful call is stored, and only an answer that survives JSON unchanged: a tuple or an
object a Python target returns would come back as something else, so it is asked again instead."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from evals.results.model import TargetInfo
from evals.run.cache import ResponseCache, canonical
from evals.run.targets.base import Target, TargetOutput, case_payload

if TYPE_CHECKING:
    from evals.suite.cases import Case


class CachedTarget(Target):
    def __init__(self, inner: Target, cache: ResponseCache, identity: dict[str, Any], timeout_s: float):
        self.inner = inner
        self.cache = cache
        self.timeout_s = timeout_s
        self.identity = identity
        self.kind = inner.kind
        self.secrets = inner.secrets

    def info(self) -> TargetInfo:
        return self.inner.info()

    def observed(self) -> dict[str, Any]:
        return self.inner.observed()

    async def call(self, case: Case) -> TargetOutput:
        key = self.cache.key(self.kind, {"target": self.identity, "case": case_payload(case)})
        stored = self.cache.get(key)
        # An answer that took longer than timeout_s allows now would time out live: asked again.
        slow = isinstance(stored, dict) and float(stored.get("latency_ms") or 0.0) > self.timeout_s * 1000.0
        if isinstance(stored, dict) and "output" in stored and not slow:
            return TargetOutput(
                output=stored["output"],
                tokens_in=stored.get("tokens_in"),
                tokens_out=stored.get("tokens_out"),
                cost_usd=stored.get("cost_usd"),
                metadata=dict(stored.get("metadata") or {}),
                trace=stored.get("trace"),
                cached=True,
                replayed_ms=float(stored.get("latency_ms") or 0.0),
            )
        started = time.perf_counter()
        result = await self.inner.call(case)  # a failure raises: nothing is stored
        value = {
            "output": result.output,
            "tokens_in": result.tokens_in,
            "tokens_out": result.tokens_out,
            "cost_usd": result.cost_usd,
            "metadata": result.metadata,
            "trace": result.trace,
        }
        if _survives_json(value):
            self.cache.put(key, {**value, "latency_ms": (time.perf_counter() - started) * 1000.0})
        return result

    async def aclose(self) -> None:
        await self.inner.aclose()


def _survives_json(value: Any) -> bool:
    try:
        return json.loads(canonical(value)) == value
    except (TypeError, ValueError, RecursionError):
        return False
