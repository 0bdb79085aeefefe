"""The model target (docs/spec.md#model-targets): the one loop every wire format runs — one keep-alive
connection pool, the server's ``Retry-After`` honoured, the response cache, the tool loop, the
exchange recorded as the attempt's trace, usage and cost. What a format's requests and replies
look like is its ``WireFormat`` (``evals.run.targets.formats``: ``openai_chat``, ``openai_responses``,
``anthropic``)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.common.errors import InputFileError
from evals.results.masking import mask_text
from evals.results.model import RetryRecord, TargetInfo
from evals.results.trace import MAX_STEPS_CUT, NOT_EXECUTED, STEP
from evals.run.cache import ResponseCache
from evals.run.connections import CONNECT_TIMEOUT_S, ConnectTimeout, HTTPError, KeepAlivePool, Reply
from evals.run.containment import DaemonThreads
from evals.run.targets.anthropic import AnthropicMessages
from evals.run.targets.base import EXCERPT_CHARS, Target, TargetFailure, TargetOutput, Wire, backoff_wait, excerpt
from evals.run.targets.formats import Call, Turn, Usage, WireFormat, cost, parse_retry_after
from evals.run.targets.headers import headers_digest, request_headers
from evals.run.targets.openai_chat import OpenAIChat
from evals.run.targets.openai_responses import OpenAIResponses
from evals.run.targets.tools import load_tools, run_tool
from evals.suite.config import RetrySpec
from evals.suite.targets import AnthropicTarget, ModelParams, OpenAITarget

if TYPE_CHECKING:
    from evals.run.batch.answers import BatchAnswers
    from evals.suite.cases import Case

# The share of the list price a batched request does not pay, unless price_batch_discount says:
# OpenAI Batch and Anthropic Message Batches are both 50% off (docs/spec.md#batch-pricing).
BATCH_DISCOUNT = 0.5

# Made once: json.dumps with options builds an encoder per call, ~3 µs of every request's.
_REQUEST_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


class ModelTarget(Target):
    """A model behind an API in one of the wire formats (``openai``, ``anthropic``), with the tools
    it runs itself. ``where(*key)`` is the config line of ``target.<kind>.<key>``."""

    def __init__(
        self,
        spec: OpenAITarget | AnthropicTarget,
        root: Path,
        timeout_s: float,
        retries: RetrySpec | None = None,
        where: Callable[..., str] | None = None,
        cache: ResponseCache | None = None,
        concurrency: int = 1,
    ):
        self.params: ModelParams = spec.openai if isinstance(spec, OpenAITarget) else spec.anthropic
        kind = self.kind = "openai" if isinstance(spec, OpenAITarget) else "anthropic"
        label = f"target.{kind}"
        where = where or (lambda *key: ".".join((label, *key)))
        self.cache = cache
        self.timeout_s = timeout_s
        self.retries = retries or RetrySpec()
        p = self.params
        self.tools = load_tools(p.tools, root, lambda: where("tools"), label) if p.tools else {}
        # As many sync tool calls at once as attempts run at once: one tool call per attempt at a time.
        self.tool_threads = DaemonThreads(concurrency, name="tool") if self.tools else None
        self.system_prompt: str | None = None
        if p.system_prompt:
            prompt_path = root / p.system_prompt
            try:
                self.system_prompt = prompt_path.read_text(encoding="utf-8")
            except FileNotFoundError:
                raise InputFileError(prompt_path, "system prompt file not found", f"{label}.system_prompt") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise InputFileError(prompt_path, f"cannot read the system prompt: {exc}") from None
        self.format: WireFormat
        if isinstance(spec, AnthropicTarget):
            self.format = AnthropicMessages(spec.anthropic, self.tools, self.system_prompt)
        elif spec.openai.api == "responses":
            self.format = OpenAIResponses(spec.openai, self.tools, self.system_prompt)
        else:
            self.format = OpenAIChat(spec.openai, self.tools, self.system_prompt)
        key_env = spec.anthropic.key_env if isinstance(spec, AnthropicTarget) else p.api_key_env
        # The key goes only in the one header its format carries it in (docs/spec.md#target-headers):
        # Authorization: Bearer for OpenAI, Bedrock and Vertex, x-api-key for Anthropic; the
        # config's own headers may name variables, ${NAME}.
        headers, self.secrets, given = request_headers(
            self.format, p.headers, key_env, where, label=label, named="api_key_env" in p.model_fields_set
        )
        self.headers = headers  # what the batch API's requests carry too (evals.run.batch)
        # batch: true (docs/spec.md#batch-pricing): "batch" when this run's requests go to the batch
        # API (evals.run.batch.lane decides); ``answers`` holds what a collected batch answered.
        self.tier: str | None = None
        self.answers: BatchAnswers | None = None
        self.url = self.format.url
        self.wire = Wire(self.format.name, self.url, lambda: where("base_url"))
        # What of the headers can change an answer, for the response cache's key (never a value).
        self.keyed = {"headers": digest} if (digest := headers_digest(given)) else {}
        self.fingerprints: set[str] = set()
        # Well inside the attempt's timeout, so that an endpoint nobody answers for is told apart
        # from a slow answer: the first is infra (retried, and no verdict on the model), the second
        # the candidate's timeout.
        self.pool = KeepAlivePool(self.url, headers, connect_timeout_s=min(CONNECT_TIMEOUT_S, timeout_s / 2))

    def info(self) -> TargetInfo:
        p = self.params
        params: dict[str, Any] = self.format.params()
        if self.system_prompt is not None:
            digest = hashlib.sha256(self.system_prompt.encode("utf-8")).hexdigest()
            params["system_prompt"] = {"path": p.system_prompt, "sha256": f"sha256:{digest}"}
        if self.tier is not None:  # provenance: a batch run beside a synchronous one is named in "What changed"
            params["tier"] = self.tier
        if self.tools:  # what the agent could do and for how long: a change here is a change of target
            params["tools"] = {name: tool.ref for name, tool in self.tools.items()}
            params["max_steps"] = p.max_steps
            params["tool_timeout_s"] = p.tool_timeout_s
        # The prompt is config, not a secret, but masked like all that is written: a prompt that
        # quotes a key then no longer matches its sha256, and is not used to re-run this target.
        prompt = mask_text(self.system_prompt, self.secrets) if self.system_prompt is not None else None
        return TargetInfo(kind=self.kind, model=p.model, params=params, system_prompt=prompt)

    def observed(self) -> dict[str, Any]:
        return {"system_fingerprint": sorted(self.fingerprints)} if self.fingerprints else {}

    async def call(self, case: Case) -> TargetOutput:
        resends: list[RetryRecord] = []

        def on_resend(message: str, latency_ms: float) -> None:
            resends.append(RetryRecord(message=message, wait_s=0.0, latency_ms=latency_ms))

        try:
            result = await self._loop(case, on_resend, resends)
        except TargetFailure as exc:
            exc.resends = resends
            raise
        result.resends = resends
        return result

    async def _loop(
        self, case: Case, on_resend: Callable[[str, float], None], resends: list[RetryRecord]
    ) -> TargetOutput:
        """Model → its tool calls → the tools → model, up to ``max_steps`` model calls (one without
        ``tools:``), each step traced (docs/spec.md#tool-loop)."""
        wire = self.format
        messages = wire.conversation(case.input)
        trace = wire.events(messages)
        usage = Usage()
        limit = self.params.max_steps if self.tools else 1
        metadata: dict[str, Any] = {}
        content = ""
        served, replayed_ms = 0, 0.0  # steps answered from the response cache, and their first latency
        batched = False
        for step in range(1, limit + 1):
            body, key = self.request(messages)
            answer = self.answers.answered(case.id) if self.answers is not None else None
            data = self.cached(key) if answer is None else None
            if data is not None and replayed_ms + float(data.get("latency_ms") or 0.0) > self.timeout_s * 1000.0:
                # It took longer than timeout_s allows now: live, this attempt would time out, so
                # it is asked again under the current timeout rather than replayed.
                data = None
            if answer is not None:  # a collected batch's answer (evals.run.batch; in the cache too)
                data, batched = self.parse(answer), True
            elif data is not None:
                served += 1
                replayed_ms += data.pop("latency_ms", 0.0)
            elif self.answers is not None:  # neither the batch nor the cache answered: never asked live
                raise self.answers.failure(case.id)
            else:
                # Before any tool ran, a failed request is the runner's to retry (the whole attempt,
                # as for any target); after, it is retried here, so the tools are not run twice.
                started = time.perf_counter()
                reply = await (
                    self._post(body, on_resend) if step == 1 else self._post_again(body, on_resend, resends, step)
                )
                data = self.parse(reply)
                if self.cache is not None and key is not None:  # only a complete answer is stored: errors raised above
                    self.cache.put(key, {**data, "latency_ms": (time.perf_counter() - started) * 1000.0}, self.secrets)
            turn = wire.turn(data, usage)
            if turn.fingerprint:
                self.fingerprints.add(turn.fingerprint)
                metadata["system_fingerprint"] = turn.fingerprint
            content = turn.text
            calls = turn.calls
            trace.append({"kind": "log", "name": STEP, "content": _step_line(step, calls, turn)})
            if content:
                trace.append({"kind": "message", "name": "assistant", "content": content})
            if turn.finish:
                metadata["finish_reason"] = turn.finish
            if turn.reason != turn.finish:  # the format's own word, where it has its own
                metadata["stop_reason"] = turn.reason
            if not calls:
                break
            if step == limit:  # calls nobody will run: kept for the caller, answered in the trace
                metadata["tool_calls"] = [call.raw for call in calls]
                why = f"{MAX_STEPS_CUT}{limit}) reached" if self.tools else "the target has no tools: to run it"
                for call in calls:
                    trace.append({"kind": "tool_call", "name": call.name, "content": call.arguments})
                    trace.append({"kind": "tool_result", "name": call.name, "content": f"{NOT_EXECUTED}: {why}"})
                if self.tools:
                    metadata["finish_reason"] = "max_steps"
                break
            results = [await self._run(call, trace) for call in calls]
            wire.answer(messages, turn, results)
        metadata.update(usage.metadata())
        if batched:
            metadata["tier"] = "batch"
        return TargetOutput(
            output=content,
            tokens_in=usage.tokens_in,
            tokens_out=usage.tokens_out,
            cost_usd=self._cost(usage, batched=batched),
            metadata=metadata,
            trace=trace,
            cached=served == step,
            replayed_ms=replayed_ms,
        )

    def request(self, messages: list[Any]) -> tuple[dict[str, Any], str | None]:
        """The body of the next request for the conversation so far, and its response-cache key
        (None without a cache)."""
        body = self.format.body(messages)
        if self.cache is None:
            return body, None
        return body, self.cache.key(self.format.kind, {"url": self.url, "body": body, **self.keyed})

    def cached(self, key: str | None) -> dict[str, Any] | None:
        """The cache's stored reply for ``key``, if it holds one of this format's shape."""
        data = self.cache.get(key) if self.cache is not None and key is not None else None
        if data is None or (self.format.is_stored(data) and isinstance(data.get("latency_ms", 0.0), int | float)):
            return data
        return None  # an entry of another shape (only a hand-made file can be): asked again

    async def _run(self, call: Call, trace: list[dict[str, Any]]) -> tuple[Call, bool, str]:
        """One tool call the model asked for, run and traced."""
        trace.append({"kind": "tool_call", "name": call.name, "content": call.arguments})
        assert self.tool_threads is not None  # with tools
        ok, text = await run_tool(self.tools, call.name, call.arguments, self.params.tool_timeout_s, self.tool_threads)
        trace.append({"kind": "tool_result" if ok else "tool_error", "name": call.name, "content": text})
        return call, ok, text

    async def _post_again(
        self, body: dict[str, Any], on_resend: Callable[[str, float], None], resends: list[RetryRecord], step: int
    ) -> Reply:
        """``_post``, its infra failures retried on the runner's schedule and budget (the attempt's
        retries, resends included), each one recorded with the step it stopped."""
        while True:
            started = time.perf_counter()
            try:
                return await self._post(body, on_resend)
            except TargetFailure as exc:
                if exc.kind != "infra" or len(resends) >= self.retries.max:
                    exc.message = f"step {step}: {exc.message}"
                    exc.args = (exc.message,)
                    raise
                wait = backoff_wait(self.retries, len(resends), exc.retry_after)
                resends.append(
                    RetryRecord(
                        message=f"step {step}: {exc.message}",
                        status=exc.status,
                        wait_s=wait,
                        latency_ms=(time.perf_counter() - started) * 1000.0,
                    )
                )
                await asyncio.sleep(wait)

    async def _post(self, request: dict[str, Any], on_resend: Callable[[str, float], None]) -> Reply:
        body = _REQUEST_JSON.encode(request)
        try:
            reply = await self.pool.post(body.encode("utf-8"), on_resend)
        except ConnectTimeout as exc:
            raise TargetFailure("infra", f"cannot connect to {self.url}: {exc}") from None
        except HTTPError as exc:  # refused, reset, cut-off or malformed answer, proxy refusal
            raise TargetFailure("infra", f"connection error: {type(exc).__name__}: {str(exc) or 'no detail'}") from None
        status = reply.status
        if status >= 400:
            if self.format.retryable(status):
                raise TargetFailure(
                    "infra",
                    self.format.error(reply, 200),
                    status=status,
                    retry_after=parse_retry_after(reply.header("retry-after")),
                )
            raise TargetFailure("target", self.format.error(reply, EXCERPT_CHARS), status=status)
        return reply

    def parse(self, reply: Reply) -> dict[str, Any]:
        """The reply's stored dict (``WireFormat.parse``): a 2xx body that is not a complete reply is
        a broken or cut-off transfer, infra."""
        try:
            return self.format.parse(reply)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise TargetFailure(
                "infra", f"malformed response from the server: {excerpt(reply.text, 200) or '(empty body)'}"
            ) from None

    def _cost(self, usage: Usage, *, batched: bool = False) -> float | None:
        p = self.params
        paid = cost(
            usage, p.price_in_per_mtok, p.price_out_per_mtok, p.price_cache_read_per_mtok, p.price_cache_write_per_mtok
        )
        if paid is None or not batched:
            return paid
        # Both batch APIs bill every token of a batched request at half the list price.
        return paid * (1.0 - (p.price_batch_discount if p.price_batch_discount is not None else BATCH_DISCOUNT))

    async def aclose(self) -> None:
        if self.tool_threads is not None:
            self.tool_threads.close()
        await self.pool.aclose()


def _step_line(step: int, calls: list[Call], turn: Turn) -> str:
    asked = "calls " + ", ".join(c.name for c in calls) if calls else "answers"
    reason = turn.reason
    word = "finish_reason" if reason == turn.finish else "stop_reason"
    return f"step {step}: {asked}" + (f" ({word} {reason})" if reason else "")
