"""The OpenAI-compatible chat endpoint target (SPEC §2): one keep-alive connection pool, the
server's ``Retry-After`` honoured, the exchange recorded as the attempt's trace."""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.common.errors import InputFileError, UsageError
from evals.results.model import RetryRecord, TargetInfo
from evals.results.trace import chat_trace
from evals.run.connections import CONNECT_TIMEOUT_S, ConnectTimeout, HTTPError, KeepAlivePool, Reply
from evals.run.targets.base import Target, TargetFailure, TargetOutput, excerpt
from evals.suite.config import OpenAITarget

if TYPE_CHECKING:
    from evals.suite.cases import Case

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


class OpenAIChatTarget(Target):
    kind = "openai"

    def __init__(self, spec: OpenAITarget, root: Path, timeout_s: float):
        self.params = spec.openai
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
        headers = {"Content-Type": "application/json", **self.params.headers}
        key = None
        if self.params.api_key_env:
            key = os.environ.get(self.params.api_key_env)
            if not key:
                raise UsageError(
                    f"target.openai.api_key_env names {self.params.api_key_env}, which is not set: "
                    f"export {self.params.api_key_env}=... (the key is never read from the config file)"
                )
            headers["Authorization"] = f"Bearer {key}"
        self.secrets = (key,) if key else ()
        self.url = self.params.base_url.rstrip("/") + "/chat/completions"
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
        return TargetInfo(kind="openai", model=p.model, params=params)

    def observed(self) -> dict[str, Any]:
        return {"system_fingerprint": sorted(self.fingerprints)} if self.fingerprints else {}

    def request_body(self, value: Any) -> dict[str, Any]:
        p = self.params
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            messages = value["messages"]
        else:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            messages = [{"role": "user", "content": text}]
            if self.system_prompt is not None:
                messages.insert(0, {"role": "system", "content": self.system_prompt})
        body: dict[str, Any] = {"model": p.model_name, "messages": messages}
        for key in ("temperature", "seed", "max_tokens", "top_p"):
            if getattr(p, key) is not None:
                body[key] = getattr(p, key)
        return body

    async def call(self, case: Case) -> TargetOutput:
        resends: list[RetryRecord] = []

        def on_resend(message: str, latency_ms: float) -> None:
            resends.append(RetryRecord(message=message, wait_s=0.0, latency_ms=latency_ms))

        try:
            result = await self._call(case, on_resend)
        except TargetFailure as exc:
            exc.resends = resends
            raise
        result.resends = resends
        return result

    async def _call(self, case: Case, on_resend: Callable[[str, float], None]) -> TargetOutput:
        request = self.request_body(case.input)
        body = json.dumps(request, ensure_ascii=False, separators=(",", ":"), default=str)
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
        return self._parse(reply, request["messages"])

    def _parse(self, reply: Reply, sent: list[Any] | tuple[Any, ...] = ()) -> TargetOutput:
        # A 2xx body that is not a complete completion is a broken or cut-off transfer: infra.
        try:
            data = json.loads(reply.body)
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise TargetFailure(
                "infra", f"malformed response from the server: {excerpt(reply.text, 200) or '(empty body)'}"
            ) from None
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        metadata: dict[str, Any] = {}
        if message.get("tool_calls"):
            metadata["tool_calls"] = message["tool_calls"]
        finish = data["choices"][0].get("finish_reason")
        if finish:
            metadata["finish_reason"] = finish
        fingerprint = data.get("system_fingerprint")
        if fingerprint:
            metadata["system_fingerprint"] = fingerprint
            self.fingerprints.add(fingerprint)
        usage = data.get("usage") or {}
        tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
        tokens_in = tokens_in if isinstance(tokens_in, int) and tokens_in >= 0 else None
        tokens_out = tokens_out if isinstance(tokens_out, int) and tokens_out >= 0 else None
        return TargetOutput(
            output=content if content is not None else "",
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=self._cost(tokens_in, tokens_out),
            metadata=metadata,
            trace=chat_trace(sent, message),
        )

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
        await self.pool.aclose()
