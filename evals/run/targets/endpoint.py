"""The OpenAI-compatible chat endpoint target (docs/spec.md#targets): one keep-alive connection pool, the
server's ``Retry-After`` honoured, the exchange recorded as the attempt's trace."""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.common import jsonsafe
from evals.common.errors import InputFileError, UsageError
from evals.results.masking import mask_text
from evals.results.model import RetryRecord, TargetInfo
from evals.results.trace import MAX_STEPS_CUT, NOT_EXECUTED, STEP
from evals.run.cache import ResponseCache
from evals.run.connections import CONNECT_TIMEOUT_S, ConnectTimeout, HTTPError, KeepAlivePool, Reply
from evals.run.containment import DaemonThreads
from evals.run.targets.base import Target, TargetFailure, TargetOutput, Wire, backoff_wait, excerpt
from evals.run.targets.headers import expand_headers, headers_digest
from evals.run.targets.tools import load_tools, run_tool
from evals.suite.config import RetrySpec
from evals.suite.targets import OpenAITarget

if TYPE_CHECKING:
    from evals.suite.cases import Case

RETRYABLE_STATUS = frozenset({408, 409, 429})
# Made once: json.dumps with options builds an encoder per call, ~3 µs of every request's.
_REQUEST_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


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


class OpenAIChatTarget(Target):
    kind = "openai"

    def __init__(
        self,
        spec: OpenAITarget,
        root: Path,
        timeout_s: float,
        retries: RetrySpec | None = None,
        where: Callable[..., str] = lambda *key: ".".join(("target.openai", *key)),
        cache: ResponseCache | None = None,
        concurrency: int = 1,
    ):
        self.params = spec.openai
        self.cache = cache
        self.timeout_s = timeout_s
        self.retries = retries or RetrySpec()
        self.tools = load_tools(self.params.tools, root, lambda: where("tools")) if self.params.tools else {}
        # As many sync tool calls at once as attempts run at once: one tool call per attempt at a time.
        self.tool_threads = DaemonThreads(concurrency, name="tool") if self.tools else None
        self.system_prompt: str | None = None
        if self.params.system_prompt:
            prompt_path = root / self.params.system_prompt
            try:
                self.system_prompt = prompt_path.read_text(encoding="utf-8")
            except FileNotFoundError:
                raise InputFileError(
                    prompt_path, "system prompt file not found", "target.openai.system_prompt"
                ) from None
            except (OSError, UnicodeDecodeError) as exc:
                raise InputFileError(prompt_path, f"cannot read the system prompt: {exc}") from None
        # The key goes in Authorization: Bearer, the one header of this format that carries it
        # (docs/spec.md#target-headers); the config's own headers may name variables, ${NAME}.
        given, header_secrets = expand_headers(
            self.params.headers, where, key_header="Authorization" if self.params.api_key_env else None
        )
        headers = {"Content-Type": "application/json", **given}
        key = None
        if self.params.api_key_env:
            key = os.environ.get(self.params.api_key_env)
            if not key:
                named = "names" if "api_key_env" in self.params.model_fields_set else "is by default"
                raise UsageError(
                    f"{where('api_key_env')}: target.openai.api_key_env {named} {self.params.api_key_env}, which is "
                    f"not set: export {self.params.api_key_env}=... (the key is never read from the config file), "
                    "or set api_key_env: null for an endpoint without a key"
                )
            headers["Authorization"] = f"Bearer {key}"
        self.secrets = (key, *header_secrets) if key else header_secrets
        self.url = self.params.base_url.rstrip("/") + "/chat/completions"
        self.wire = Wire("openai chat completions", self.url, lambda: where("base_url"))
        # What of the headers can change an answer, for the response cache's key (never a value).
        self.keyed = {"headers": digest} if (digest := headers_digest(given)) else {}
        self.fingerprints: set[str] = set()
        # Well inside the attempt's timeout, so that an endpoint nobody answers for is told apart
        # from a slow answer: the first is infra (retried, and no verdict on the model), the second
        # the candidate's timeout.
        self.pool = KeepAlivePool(self.url, headers, connect_timeout_s=min(CONNECT_TIMEOUT_S, timeout_s / 2))

    def info(self) -> TargetInfo:
        p = self.params
        params: dict[str, Any] = {
            "base_url": p.base_url,
            **{
                k: v
                for k, v in (
                    ("temperature", p.temperature),
                    ("seed", p.seed),
                    ("max_tokens", p.max_tokens),
                    ("top_p", p.top_p),
                )
                if v is not None
            },
        }
        if self.system_prompt is not None:
            digest = hashlib.sha256(self.system_prompt.encode("utf-8")).hexdigest()
            params["system_prompt"] = {"path": p.system_prompt, "sha256": f"sha256:{digest}"}
        if self.tools:  # what the agent could do and for how long: a change here is a change of target
            params["tools"] = {name: tool.ref for name, tool in self.tools.items()}
            params["max_steps"] = p.max_steps
            params["tool_timeout_s"] = p.tool_timeout_s
        # The prompt is config, not a secret, but masked like all that is written: a prompt that
        # quotes a key then no longer matches its sha256, and is not used to re-run this target.
        prompt = mask_text(self.system_prompt, self.secrets) if self.system_prompt is not None else None
        return TargetInfo(kind="openai", model=p.model, params=params, system_prompt=prompt)

    def observed(self) -> dict[str, Any]:
        return {"system_fingerprint": sorted(self.fingerprints)} if self.fingerprints else {}

    def messages(self, value: Any) -> list[Any]:
        """The conversation a case starts: its own ``{"messages": [...]}``, or its input as the user's
        message after the system prompt."""
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            return list(value["messages"])
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt is not None else []
        return [*system, {"role": "user", "content": text}]

    def request_body(self, messages: list[Any]) -> dict[str, Any]:
        p = self.params
        body: dict[str, Any] = {"model": p.model_name, "messages": messages}
        if self.tools:
            body["tools"] = [tool.schema() for tool in self.tools.values()]
        for key in ("temperature", "seed", "max_tokens", "top_p"):
            if getattr(p, key) is not None:
                body[key] = getattr(p, key)
        return body

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
        messages = self.messages(case.input)
        trace = conversation_events(messages)
        usage = _Usage()
        limit = self.params.max_steps if self.tools else 1
        metadata: dict[str, Any] = {}
        content = ""
        served, replayed_ms = 0, 0.0  # steps answered from the response cache, and their first latency
        for step in range(1, limit + 1):
            body = self.request_body(messages)
            key = (
                self.cache.key("openai", {"url": self.url, "body": body, **self.keyed})
                if self.cache is not None
                else None
            )
            data = self.cache.get(key) if self.cache is not None and key is not None else None
            if data is not None and not _stored_completion(data):
                data = None  # an entry of another shape (only a hand-made file can be): asked again
            if data is not None and replayed_ms + float(data.get("latency_ms") or 0.0) > self.timeout_s * 1000.0:
                # It took longer than timeout_s allows now: live, this attempt would time out, so
                # it is asked again under the current timeout rather than replayed.
                data = None
            if data is not None:
                served += 1
                replayed_ms += data.pop("latency_ms", 0.0)
            else:
                # Before any tool ran, a failed request is the runner's to retry (the whole attempt,
                # as for any target); after, it is retried here, so the tools are not run twice.
                started = time.perf_counter()
                reply = await (
                    self._post(body, on_resend) if step == 1 else self._post_again(body, on_resend, resends, step)
                )
                data = self._completion(reply)
                if self.cache is not None and key is not None:  # only a complete answer is stored: errors raised above
                    self.cache.put(key, {**data, "latency_ms": (time.perf_counter() - started) * 1000.0})
            message, finish, fingerprint = self._take(data, usage)
            content = _text(message.get("content"))
            calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            trace.append({"kind": "log", "name": STEP, "content": _step_line(step, calls, finish)})
            if content:
                trace.append({"kind": "message", "name": "assistant", "content": content})
            if finish:
                metadata["finish_reason"] = finish
            if fingerprint:
                metadata["system_fingerprint"] = fingerprint
            if not calls:
                break
            if step == limit:  # calls nobody will run: kept for the caller, answered in the trace
                metadata["tool_calls"] = calls
                why = f"{MAX_STEPS_CUT}{limit}) reached" if self.tools else "the target has no tools: to run it"
                for call in calls:
                    name, arguments = _function(call)
                    trace.append({"kind": "tool_call", "name": name, "content": arguments})
                    trace.append({"kind": "tool_result", "name": name, "content": f"{NOT_EXECUTED}: {why}"})
                if self.tools:
                    metadata["finish_reason"] = "max_steps"
                break
            messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
            for call in calls:
                name, arguments = _function(call)
                trace.append({"kind": "tool_call", "name": name, "content": arguments})
                assert self.tool_threads is not None  # with tools
                ok, text = await run_tool(self.tools, name, arguments, self.params.tool_timeout_s, self.tool_threads)
                trace.append({"kind": "tool_result" if ok else "tool_error", "name": name, "content": text})
                messages.append(
                    {"role": "tool", "tool_call_id": call.get("id"), "content": text if ok else f"error: {text}"}
                )
        return TargetOutput(
            output=content,
            tokens_in=usage.tokens_in,
            tokens_out=usage.tokens_out,
            cost_usd=self._cost(usage.tokens_in, usage.tokens_out),
            metadata=metadata,
            trace=trace,
            cached=served == step,
            replayed_ms=replayed_ms,
        )

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
        if status in RETRYABLE_STATUS or status >= 500:
            raise TargetFailure(
                "infra",
                f"HTTP {status}: {excerpt(reply.text, 200)}",
                status=status,
                retry_after=parse_retry_after(reply.header("retry-after")),
            )
        if status >= 400:
            raise TargetFailure("target", f"HTTP {status}: {excerpt(reply.text)}", status=status)
        return reply

    def _completion(self, reply: Reply) -> dict[str, Any]:
        """What the target uses of a reply — its first choice, usage and system fingerprint — checked
        to be a complete completion. This is also what the response cache stores of it."""
        # A 2xx body that is not a complete completion is a broken or cut-off transfer: infra.
        try:
            data = jsonsafe.loads(reply.body)
            choice = data["choices"][0]
            message = choice["message"]
            if not isinstance(message, dict):
                raise TypeError
            calls = message.get("tool_calls") or []
            # Tool calls must be a list of objects with a function object: anything else is a
            # broken reply, not the model's answer (and must not crash the run further on).
            if not isinstance(calls, list) or not all(
                isinstance(c, dict) and isinstance(c.get("function") or {}, dict) for c in calls
            ):
                raise TypeError
            usage = data.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise TargetFailure(
                "infra", f"malformed response from the server: {excerpt(reply.text, 200) or '(empty body)'}"
            ) from None
        return {
            "choice": {"message": message, "finish_reason": choice.get("finish_reason")},
            "usage": usage if isinstance(usage, dict) else {},
            "system_fingerprint": data.get("system_fingerprint"),
        }

    def _take(self, data: dict[str, Any], usage: _Usage) -> tuple[dict[str, Any], str | None, str | None]:
        """The completion's message, finish reason and system fingerprint; its usage added to ``usage``."""
        fingerprint = data.get("system_fingerprint")
        if fingerprint:
            self.fingerprints.add(fingerprint)
        choice = data["choice"]
        message = choice["message"]
        usage.add(data.get("usage") or {}, answered=bool(_text(message.get("content")).strip()))
        return message, choice.get("finish_reason"), fingerprint

    def _cost(self, tokens_in: int | None, tokens_out: int | None) -> float | None:
        p = self.params
        if p.price_in_per_mtok is None and p.price_out_per_mtok is None:
            return None
        if (p.price_in_per_mtok is not None and tokens_in is None) or (
            p.price_out_per_mtok is not None and tokens_out is None
        ):
            return None  # a price without the usage it applies to would understate the cost
        return ((tokens_in or 0) * (p.price_in_per_mtok or 0) + (tokens_out or 0) * (p.price_out_per_mtok or 0)) / 1e6

    async def aclose(self) -> None:
        if self.tool_threads is not None:
            self.tool_threads.close()
        await self.pool.aclose()


class _Usage:
    """Tokens over the steps of an attempt; None on a side no reply reported (a sum of some steps
    would understate it). A count of 0 where there must be tokens — the prompt of any request, the
    completion of a reply with text — is an endpoint that does not count, not a free call:
    unreported, so ``limits.max_tokens`` and ``max_cost_usd`` stop the run as unknown instead of
    never being reached."""

    def __init__(self) -> None:
        self.tokens_in: int | None = 0
        self.tokens_out: int | None = 0

    def add(self, usage: dict[str, Any], *, answered: bool) -> None:
        def count(value: Any, total: int | None, *, least: int) -> int | None:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= least
            return total + value if ok and total is not None else None

        self.tokens_in = count(usage.get("prompt_tokens"), self.tokens_in, least=1)
        self.tokens_out = count(usage.get("completion_tokens"), self.tokens_out, least=1 if answered else 0)


def _stored_completion(data: Any) -> bool:
    choice = data.get("choice") if isinstance(data, dict) else None
    return (
        isinstance(choice, dict)
        and isinstance(choice.get("message"), dict)
        and isinstance(data.get("usage"), dict)
        and isinstance(data.get("latency_ms", 0.0), int | float)
    )


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _function(call: dict[str, Any]) -> tuple[str, Any]:
    function = call.get("function") or {}
    return str(function.get("name")), function.get("arguments")


def _step_line(step: int, calls: list[dict[str, Any]], finish: str | None) -> str:
    asked = "calls " + ", ".join(_function(c)[0] for c in calls) if calls else "answers"
    return f"step {step}: {asked}" + (f" (finish_reason {finish})" if finish else "")


def conversation_events(messages: list[Any]) -> list[dict[str, Any]]:
    """The conversation an attempt starts from, as ``message`` events (``name`` = role). Tool calls
    and results in it are history the case gave, not calls made in this attempt, so they are part of
    the message text rather than ``tool_call`` events: the trajectory is only the attempt's own."""
    events = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        text = _text(message.get("content"))
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                name, arguments = _function(call)
                text += f"{chr(10) if text else ''}[tool call] {name}({arguments if arguments is not None else ''})"
        if text or message.get("role") == "tool":
            events.append({"kind": "message", "name": message.get("role") or "user", "content": text})
    return events
