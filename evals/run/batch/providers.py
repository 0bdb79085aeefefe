"""The two batch APIs, as evalgate uses them (docs/spec.md#batch-pricing):

- **OpenAI Batch**: the requests as a JSONL file (``{"custom_id", "method": "POST", "url", "body"}`` a
  line) uploaded to ``POST <base_url>/files`` with ``purpose=batch``, then ``POST <base_url>/batches``
  (``input_file_id``, ``endpoint``, ``completion_window: 24h``); ``GET <base_url>/batches/<id>`` until
  its ``status`` is ``completed``, ``expired``, ``cancelled`` or ``failed``; the answers are the lines of
  ``output_file_id`` and ``error_file_id`` (``GET <base_url>/files/<id>/content``), each
  ``{"custom_id", "response": {"status_code", "body"}, "error"}``, in no promised order.
- **Anthropic Message Batches**: ``POST <root>/v1/messages/batches`` with ``requests: [{"custom_id",
  "params"}]``; ``GET <root>/v1/messages/batches/<id>`` until ``processing_status`` is ``ended``; the
  answers are the JSONL lines at its ``results_url``, each ``{"custom_id", "result": {"type":
  "succeeded" | "errored" | "canceled" | "expired", ...}}``.

Few requests, each once per invocation: plain blocking HTTP (urllib, which honours the proxy
variables like the runner's pool). A batch's lines are read into ``Outcome`` s: the stored reply body
of a succeeded request, or why it has none."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from evals.common import jsonsafe
from evals.common.errors import InfraError, UsageError
from evals.run.targets.base import excerpt

# What one batch takes: OpenAI's limit is 50,000 requests a file (Anthropic's 100,000); the
# smaller for both keeps one rule.
MAX_REQUESTS = 50_000
HTTP_TIMEOUT_S = 120.0


@dataclass(slots=True)
class Outcome:
    """One request's answer: ``body`` (the reply as the synchronous API would have sent it), or
    ``error``, what the batch said instead."""

    body: bytes | None = None
    error: str | None = None


@dataclass(slots=True)
class Status:
    """A batch as polled: ``done`` once it has ended (whatever became of its requests); ``state`` the
    provider's word; ``error`` what failed the whole batch, if it failed."""

    done: bool
    state: str
    counts: str
    error: str | None = None


class BatchAPI(ABC):
    """One provider's batch API at ``base`` with the target's ``headers`` (its key included)."""

    name: str

    def __init__(self, base: str, headers: dict[str, str]):
        self.base = base.rstrip("/")
        self.headers = headers

    def _call(self, method: str, url: str, body: bytes | None = None, content_type: str | None = None) -> bytes:
        headers = dict(self.headers)
        if content_type:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(url, data=body, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as reply:
                data: bytes = reply.read()
                return data
        except urllib.error.HTTPError as exc:
            said = excerpt(exc.read().decode("utf-8", errors="replace"), 300)
            what = f"{self.name}: {method} {url} answered HTTP {exc.code}: {said}"
            if exc.code in (408, 409, 429) or exc.code >= 500:
                raise InfraError(f"{what}; run again later") from None
            raise UsageError(f"{what}; check the target's base_url, key and model (batch: true)") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:  # refused, reset, cut off
            reason = getattr(exc, "reason", exc)
            raise InfraError(f"{self.name}: cannot reach {url}: {reason}; run again later") from None

    def _json(self, method: str, url: str, payload: Any = None) -> dict[str, Any]:
        body = json.dumps(payload).encode("utf-8") if payload is not None else None
        data = self._call(method, url, body, "application/json" if body is not None else None)
        return self._object(data, f"{method} {url}")

    def _object(self, data: bytes, where: str) -> dict[str, Any]:
        """``data`` as a JSON object; a reply that is none is a broken transfer (infra)."""
        try:
            value = jsonsafe.loads(data)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            said = excerpt(data.decode("utf-8", errors="replace"), 200)
            raise InfraError(f"{self.name}: {where} answered {said!r}, not a JSON object; run again later")
        return value

    def _lines(self, data: bytes, where: str) -> list[dict[str, Any]]:
        """The JSONL answers of a batch, each with its ``custom_id``."""
        lines = (self._object(raw, where) for raw in data.splitlines() if raw.strip())
        return [line for line in lines if isinstance(line.get("custom_id"), str)]

    @abstractmethod
    def submit(self, lines: list[tuple[str, dict[str, Any]]]) -> str:
        """Send ``(custom_id, request body)`` s as one batch; its id."""

    @abstractmethod
    def status(self, batch_id: str) -> Status:
        """Where the batch is."""

    @abstractmethod
    def results(self, batch_id: str) -> dict[str, Outcome]:
        """The answers of an ended batch by ``custom_id`` (requests it never answered are absent)."""


class OpenAIBatches(BatchAPI):
    name = "OpenAI Batch API"

    def __init__(self, base: str, headers: dict[str, str], endpoint: str):
        super().__init__(base, headers)
        self.endpoint = endpoint  # "/v1/chat/completions" or "/v1/responses"

    def submit(self, lines: list[tuple[str, dict[str, Any]]]) -> str:
        jsonl = "".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": self.endpoint, "body": body}, ensure_ascii=False)
            + "\n"
            for cid, body in lines
        ).encode("utf-8")
        boundary = uuid.uuid4().hex
        form = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="evalgate.jsonl"\r\n'
                "Content-Type: application/jsonl\r\n\r\n"
            ).encode()
            + jsonl
            + f"\r\n--{boundary}--\r\n".encode()
        )
        uploaded = self._call("POST", f"{self.base}/files", form, f"multipart/form-data; boundary={boundary}")
        file_id = self._object(uploaded, f"POST {self.base}/files").get("id")
        if not isinstance(file_id, str):
            raise InfraError(f"{self.name}: the file upload answered without an id: {excerpt(uploaded.decode(), 200)}")
        payload = {"input_file_id": file_id, "endpoint": self.endpoint, "completion_window": "24h"}
        batch = self._json("POST", f"{self.base}/batches", payload)
        if not isinstance(batch.get("id"), str):
            raise InfraError(f"{self.name}: creating the batch answered without an id: {excerpt(str(batch), 200)}")
        return str(batch["id"])

    def status(self, batch_id: str) -> Status:
        batch = self._json("GET", f"{self.base}/batches/{batch_id}")
        state = str(batch.get("status"))
        counts = batch.get("request_counts") or {}
        said = f"{counts.get('completed', 0)} completed, {counts.get('failed', 0)} failed of {counts.get('total', '?')}"
        error = None
        if state == "failed":
            errors = (batch.get("errors") or {}).get("data") or []
            error = "; ".join(str(e.get("message")) for e in errors if isinstance(e, dict)) or "no reason given"
        return Status(state in ("completed", "expired", "cancelled", "failed"), state, said, error)

    def results(self, batch_id: str) -> dict[str, Outcome]:
        batch = self._json("GET", f"{self.base}/batches/{batch_id}")
        out: dict[str, Outcome] = {}
        for key in ("output_file_id", "error_file_id"):
            file_id = batch.get(key)
            if not isinstance(file_id, str):
                continue
            url = f"{self.base}/files/{file_id}/content"
            for line in self._lines(self._call("GET", url), f"GET {url}"):
                out[line["custom_id"]] = _openai_outcome(line)
        return out


def _openai_outcome(line: dict[str, Any]) -> Outcome:
    response = line.get("response") or {}
    error = line.get("error")
    status = response.get("status_code")
    if not error and status == 200 and isinstance(response.get("body"), dict):
        return Outcome(body=json.dumps(response["body"]).encode("utf-8"))
    if isinstance(error, dict):
        return Outcome(error=f"{error.get('code') or 'error'}: {error.get('message')}")
    body = response.get("body")
    message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
    return Outcome(error=f"HTTP {status}: {message or excerpt(json.dumps(body), 200)}")


class AnthropicBatches(BatchAPI):
    name = "Anthropic Message Batches API"

    def submit(self, lines: list[tuple[str, dict[str, Any]]]) -> str:
        payload = {"requests": [{"custom_id": cid, "params": body} for cid, body in lines]}
        batch = self._json("POST", f"{self.base}/v1/messages/batches", payload)
        if not isinstance(batch.get("id"), str):
            raise InfraError(f"{self.name}: creating the batch answered without an id: {excerpt(str(batch), 200)}")
        return str(batch["id"])

    def _batch(self, batch_id: str) -> dict[str, Any]:
        return self._json("GET", f"{self.base}/v1/messages/batches/{batch_id}")

    def status(self, batch_id: str) -> Status:
        batch = self._batch(batch_id)
        state = str(batch.get("processing_status"))
        counts = batch.get("request_counts") or {}
        said = ", ".join(f"{counts[k]} {k}" for k in ("processing", "succeeded", "errored", "expired") if k in counts)
        return Status(state == "ended", state, said)

    def results(self, batch_id: str) -> dict[str, Outcome]:
        url = self._batch(batch_id).get("results_url")
        if not isinstance(url, str):
            raise InfraError(f"{self.name}: batch {batch_id} ended without a results_url; run again later")
        out: dict[str, Outcome] = {}
        for line in self._lines(self._call("GET", url), f"GET {url}"):
            result = line.get("result") or {}
            kind = result.get("type")
            if kind == "succeeded" and isinstance(result.get("message"), dict):
                out[line["custom_id"]] = Outcome(body=json.dumps(result["message"]).encode("utf-8"))
                continue
            detail = ((result.get("error") or {}).get("error") or {}) if kind == "errored" else {}
            said = f": {detail.get('type')}: {detail.get('message')}" if detail else ""
            out[line["custom_id"]] = Outcome(error=f"{kind}{said}")
        return out
