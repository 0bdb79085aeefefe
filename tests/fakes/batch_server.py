"""A local server of the two batch APIs for tests: OpenAI Batch (over Chat Completions and the
Responses API) and Anthropic Message Batches, on one port.

Built from the public references (read 2026-12-05):

- OpenAI Batch, https://platform.openai.com/docs/guides/batch and
  https://platform.openai.com/docs/api-reference/batch — the requests uploaded as a JSONL file
  (``POST /v1/files``, multipart, ``purpose=batch``; a line ``{"custom_id", "method": "POST",
  "url", "body"}``, every ``url`` the batch's ``endpoint``), ``POST /v1/batches`` (``input_file_id``,
  ``endpoint``, ``completion_window: "24h"``), ``GET /v1/batches/{id}`` (``status``: validating,
  in_progress, finalizing, completed, failed, expired, cancelled; ``request_counts``,
  ``output_file_id``, ``error_file_id``), ``GET /v1/files/{id}/content``; an output line is
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}``, an
  error line ``{"id", "custom_id", "response": null, "error": {"code", "message"}}``; lines come in
  no promised order; an expired batch's finished requests are in its output file, the others in
  its error file as ``batch_expired``.
- Anthropic Message Batches, https://docs.anthropic.com/en/api/creating-message-batches,
  /retrieving-message-batches and /retrieving-message-batch-results — ``POST
  /v1/messages/batches`` with ``requests: [{"custom_id", "params"}]``, ``GET
  /v1/messages/batches/{id}`` (``processing_status``: in_progress, canceling, ended;
  ``request_counts``; ``results_url`` once ended), the results as JSONL lines ``{"custom_id",
  "result": {"type": "succeeded", "message"} | {"type": "errored", "error": {"type": "error",
  "error": {"type", "message"}}} | {"type": "expired"} | {"type": "canceled"}}``, in any order.

Each request is answered as the synchronous fakes answer it (``OpenAIServer.completion``,
``ResponsesServer.response``, ``AnthropicServer.message``, their request checks included), when the
batch is created. A batch stays ``in_progress`` until the test calls ``finish()``; requests whose
last user text is in ``failing`` end errored, those in ``expiring`` unanswered (their batch then
ends ``expired``); with ``refusing`` set, an OpenAI batch ends ``failed`` (validation) with that
message in ``errors`` and no file; with ``cutting``, results files end mid-line; results come
back in the reverse of the submitted order. Any other route is 404: a batched run must make no
synchronous request (``paths`` records every one)."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from typing import Any

from fakes.anthropic_server import AnthropicServer, Invalid
from fakes.anthropic_server import last_user_text as messages_text
from fakes.responses_server import Invalid as ResponsesInvalid
from fakes.responses_server import ResponsesServer
from fakes.responses_server import last_user_text as input_text

try:
    import pytest
except ImportError:  # run without pytest
    pytest = None  # type: ignore[assignment]

OPENAI_KEY = "sk-test-batch-0123456789"
ENDPOINTS = ("/v1/chat/completions", "/v1/responses")
_BATCH = re.compile(r"^/v1/batches/([^/]+)$")
_FILE = re.compile(r"^/v1/files/([^/]+)/content$")
_MESSAGE_BATCH = re.compile(r"^/v1/messages/batches/([^/]+)(/results)?$")


def text_of(body: dict[str, Any]) -> str:
    """The last user text of a chat, Responses or Messages body (the key of ``failing`` and ``expiring``)."""
    return input_text(body) if "input" in body else messages_text(body)


class BatchServer(AnthropicServer):
    """The HTTP plumbing and answers of the synchronous fakes, behind both batch APIs. ``url`` is
    the Anthropic host root; ``openai_url`` the OpenAI base URL (``.../v1``)."""

    def __init__(self) -> None:
        super().__init__(responder=text_of, min_cache_tokens=10**9)
        self.prefixes: set[str] = set()  # what ResponsesServer.response reads and writes
        self.finished = False
        self.failing: set[str] = set()
        self.expiring: set[str] = set()
        self.refusing: str | None = None  # OpenAI: new batches fail validation with this message
        self.cutting = False  # results downloads lose their last bytes, in the middle of the last line
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.lines: list[dict[str, Any]] = []  # every batched request, as submitted
        self._numbers = itertools.count(1)

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    def finish(self) -> None:
        """Every batch submitted so far has ended at its next poll."""
        self.finished = True

    # ------------------------------------------------------------------------------ answers

    def answer(self, endpoint: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The synchronous fake's reply to one batched request: (status, body)."""
        try:
            if endpoint == "/v1/messages":
                self.check(body, "anthropic")
                return 200, self.message(body, body["model"])
            if endpoint == "/v1/responses":
                ResponsesServer.check(self, body)  # type: ignore[arg-type]
                return 200, ResponsesServer.response(self, body)  # type: ignore[arg-type]
            return 200, self.completion(body)
        except (Invalid, ResponsesInvalid) as exc:
            return exc.code, {"error": {"type": "invalid_request_error", "message": str(exc)}}

    def _run(self, kind: str, endpoint: str, requests: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """A new batch, each request answered now (reported once ``finish()`` is called)."""
        number = next(self._numbers)
        results = []
        for custom_id, body in requests:
            self.lines.append(body)
            text = text_of(body)
            if text in self.expiring:
                results.append((custom_id, "expired", None))
            elif text in self.failing:
                results.append((custom_id, "errored", (500, {"error": {"message": f"the model failed on {text}"}})))
            else:
                results.append((custom_id, "succeeded", self.answer(endpoint, body)))
        results.reverse()  # no promised order: the client matches by custom_id
        batch = {"kind": kind, "endpoint": endpoint, "results": results, "number": number, "refused": self.refusing}
        batch_id = f"{'msgbatch' if kind == 'anthropic' else 'batch'}_fake{number:04d}"
        self.batches[batch_id] = batch
        return self._view(batch_id)

    def _view(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        results = batch["results"]
        ended = self.finished
        count = {k: sum(1 for r in results if r[1] == k) for k in ("succeeded", "errored", "expired")}
        if batch["kind"] == "anthropic":
            return {
                "id": batch_id,
                "type": "message_batch",
                "processing_status": "ended" if ended else "in_progress",
                "request_counts": {
                    "processing": 0 if ended else len(results),
                    "succeeded": count["succeeded"] if ended else 0,
                    "errored": count["errored"] if ended else 0,
                    "canceled": 0,
                    "expired": count["expired"] if ended else 0,
                },
                "results_url": f"{self.url}/v1/messages/batches/{batch_id}/results" if ended else None,
            }
        status = ("expired" if count["expired"] else "completed") if ended else "in_progress"
        failed = count["errored"] + count["expired"]
        if batch["refused"]:  # failed validation: no request ran, no file
            error = {"code": "invalid_request", "message": batch["refused"], "line": None, "param": None}
            return {
                "id": batch_id,
                "object": "batch",
                "endpoint": batch["endpoint"],
                "status": "failed" if ended else "validating",
                "errors": {"object": "list", "data": [error]},
                "output_file_id": None,
                "error_file_id": None,
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
            }
        return {
            "id": batch_id,
            "object": "batch",
            "endpoint": batch["endpoint"],
            "completion_window": "24h",
            "status": status,
            "output_file_id": f"file-out{batch['number']:04d}" if ended else None,
            "error_file_id": f"file-err{batch['number']:04d}" if ended and failed else None,
            "request_counts": {
                "total": len(results),
                "completed": count["succeeded"] if ended else 0,
                "failed": failed if ended else 0,
            },
        }

    def _openai_file(self, file_id: str) -> bytes | None:
        if file_id in self.files:
            return self.files[file_id]
        for batch in self.batches.values():
            for prefix, wanted in (("file-out", ("succeeded",)), ("file-err", ("errored", "expired"))):
                if file_id != f"{prefix}{batch['number']:04d}":
                    continue
                out = []
                for custom_id, kind, answer in batch["results"]:
                    if kind not in wanted:
                        continue
                    line: dict[str, Any] = {"id": f"batch_req_{custom_id}", "custom_id": custom_id}
                    if kind == "succeeded" or (kind == "errored" and answer is not None):
                        code, body = answer
                        line.update(response={"status_code": code, "request_id": "req_fake", "body": body}, error=None)
                    else:
                        line.update(response=None, error={"code": "batch_expired", "message": "This request could "
                                    "not be executed before the completion window expired."})  # fmt: skip
                    out.append(json.dumps(line))
                return ("\n".join(out) + "\n").encode()
        return None

    def _anthropic_results(self, batch_id: str) -> bytes:
        out = []
        for custom_id, kind, answer in self.batches[batch_id]["results"]:
            if kind == "succeeded":
                code, body = answer
                result: dict[str, Any] = (
                    {"type": "succeeded", "message": body}
                    if code == 200
                    else {"type": "errored", "error": {"type": "error", "error": body["error"]}}
                )
            elif kind == "errored":
                error = {"type": "api_error", "message": answer[1]["error"]["message"]}
                result = {"type": "errored", "error": {"type": "error", "error": error}}
            else:
                result = {"type": "expired"}
            out.append(json.dumps({"custom_id": custom_id, "result": result}))
        return ("\n".join(out) + "\n").encode()

    # ---------------------------------------------------------------------------------- HTTP

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        method, path, headers, raw = await self._read(reader)
        with self._lock:
            self.paths.append(f"{method} {path}")
        code, payload = self._serve(method, path, headers, raw)
        if isinstance(payload, bytes):
            self._send_bytes(writer, code, payload[:-10] if self.cutting else payload)
        else:
            self._reply(writer, code, json.dumps(payload))
        await writer.drain()
        return headers.get("Connection", "").lower() != "close"

    def _serve(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        if path.startswith("/v1/messages/batches"):
            if headers.get("X-Api-Key") != self.api_key or not headers.get("Anthropic-Version"):
                return 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
            if method == "POST" and path == "/v1/messages/batches":
                requests = json.loads(raw)["requests"]
                return 200, self._run("anthropic", "/v1/messages", [(r["custom_id"], r["params"]) for r in requests])
            if method == "GET" and (m := _MESSAGE_BATCH.match(path)) and m.group(1) in self.batches:
                if m.group(2):
                    return (
                        (200, self._anthropic_results(m.group(1))) if self.finished else (404, {"error": "not ended"})
                    )
                return 200, self._view(m.group(1))
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": f"{method} {path}"}}
        if headers.get("Authorization") != f"Bearer {OPENAI_KEY}":
            return 401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
        if method == "POST" and path == "/v1/files":
            form = _multipart(raw, headers.get("Content-Type", ""))
            if form.get("purpose") != b"batch" or "file" not in form:
                return 400, {"error": {"message": "purpose must be batch, with a file"}}
            file_id = f"file-in{len(self.files) + 1:04d}"
            self.files[file_id] = form["file"]
            return 200, {"id": file_id, "object": "file", "purpose": "batch", "bytes": len(form["file"])}
        if method == "POST" and path == "/v1/batches":
            body = json.loads(raw)
            endpoint, data = body.get("endpoint"), self.files.get(body.get("input_file_id"))
            if endpoint not in ENDPOINTS or data is None or body.get("completion_window") != "24h":
                return 400, {"error": {"message": "endpoint, input_file_id and completion_window 24h are required"}}
            requests = [json.loads(line) for line in data.splitlines() if line.strip()]
            if any(r.get("url") != endpoint or r.get("method") != "POST" for r in requests):
                return 400, {"error": {"message": f"every line must POST to the batch's endpoint {endpoint}"}}
            return 200, self._run("openai", endpoint, [(r["custom_id"], r["body"]) for r in requests])
        if method == "GET" and (m := _BATCH.match(path)) and m.group(1) in self.batches:
            return 200, self._view(m.group(1))
        if method == "GET" and (m := _FILE.match(path)) and (content := self._openai_file(m.group(1))) is not None:
            return 200, content
        return 404, {"error": {"message": f"no route {method} {path}"}}

    def _send_bytes(self, writer: asyncio.StreamWriter, code: int, data: bytes) -> None:
        head = [f"HTTP/1.1 {code} OK", "Content-Type: application/jsonl", f"Content-Length: {len(data)}"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)


def _multipart(raw: bytes, content_type: str) -> dict[str, bytes]:
    """The fields of a multipart/form-data body, by name."""
    boundary = content_type.partition("boundary=")[2].strip('"').encode()
    fields = {}
    for part in raw.split(b"--" + boundary):
        head, sep, value = part.partition(b"\r\n\r\n")
        if sep and (m := re.search(rb'name="([^"]+)"', head)):
            fields[m.group(1).decode()] = value.removesuffix(b"\r\n")
    return fields


if pytest is not None:

    @pytest.fixture
    def batch_server():
        """A running server of both batch APIs."""
        with BatchServer() as server:
            yield server
