"""The three kinds of target (SPEC §2): a Python callable, a command, an OpenAI-compatible chat
endpoint. Each turns one case into a ``TargetOutput`` or raises ``TargetFailure`` whose ``kind``
tells the runner whether the failure is the candidate's (``target``) or the world's (``infra``,
retried). Per-attempt timeouts are the runner's job: it cancels ``call``, and every target cleans
up on cancellation (the command target kills its whole process group)."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hashlib
import importlib
import inspect
import json
import os
import shlex
import signal
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.config import CommandTarget, OpenAITarget, PythonTarget, SuiteConfig
from evals.connections import CONNECT_TIMEOUT_S, ConnectTimeout, HTTPError, KeepAlivePool, Reply
from evals.containment import ATTEMPT_ENV, DaemonThreads, attempt_mark, kill_marked, kill_session
from evals.errors import InputFileError, UsageError
from evals.results import ErrorKind, RetryRecord, TargetInfo
from evals.trace import chat_trace

if TYPE_CHECKING:
    from evals.cases import Case

EXCERPT_CHARS = 500
# A command's captured output, at most: an answer is small (results keep 8 KiB of it), and a
# target that never stops writing (`yes`) must not fill the runner's memory.
STDOUT_CAP_BYTES = 8 << 20
STDERR_CAP_BYTES = 4 << 20
PIPE_GRACE_S = 1.0  # for pipes to close once the process and all it started are killed
RETRYABLE_STATUS = frozenset({408, 409, 429})
_RESULT_KEYS = frozenset({"output", "tokens_in", "tokens_out", "cost_usd", "metadata", "trace"})


@dataclass
class TargetOutput:
    output: Any
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Infra failures the target recovered from within the call (a request sent again after a
    # stale keep-alive connection dropped it): the attempt's retry_history records them.
    resends: list[RetryRecord] = field(default_factory=list)
    trace: list[Any] | None = None  # raw events; the runner masks, clips and checks them (evals.trace)


class TargetFailure(Exception):
    """One failed try. ``retry_after`` is the server's ``Retry-After`` in seconds, if it sent one;
    ``resends`` as in ``TargetOutput``."""

    def __init__(self, kind: ErrorKind, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.resends: list[RetryRecord] = []


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The tail of a stream: where tracebacks and server errors say what went wrong."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def case_payload(case: Case) -> dict[str, Any]:
    return {"id": case.id, "input": case.input, "expected": case.expected, "tags": case.tags, "metadata": case.metadata}


def unpack_result(value: Any, where: str) -> TargetOutput:
    """A target returns either its output, or ``{"output": ..., "tokens_in": ..., ...}``."""
    if not (isinstance(value, dict) and "output" in value and set(value) <= _RESULT_KEYS):
        return TargetOutput(output=value)
    try:
        return TargetOutput(
            output=value["output"],
            tokens_in=_opt_int(value.get("tokens_in")),
            tokens_out=_opt_int(value.get("tokens_out")),
            cost_usd=_opt_float(value.get("cost_usd")),
            metadata=dict(value.get("metadata") or {}),
            trace=value.get("trace"),
        )
    except (TypeError, ValueError) as exc:
        raise TargetFailure("target", f"{where}: bad result field: {exc}") from None


def _opt_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"expected a non-negative integer, got {value!r}")
    return int(value)


def _opt_float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or float(value) < 0:
        raise ValueError(f"expected a non-negative number, got {value!r}")
    return float(value)


class Target(ABC):
    """``secrets`` are values the runner masks wherever they might show up."""

    kind: str = ""
    secrets: tuple[str, ...] = ()

    @abstractmethod
    def info(self) -> TargetInfo:
        """What the run records as ``run.target``."""

    @abstractmethod
    async def call(self, case: Case) -> TargetOutput:
        """One try at one case; raises TargetFailure."""

    def observed(self) -> dict[str, Any]:
        """Facts learnt while running (e.g. server fingerprints) for the run's target params."""
        return {}

    async def aclose(self) -> None:
        return None


# ------------------------------------------------------------------------------------------ python


def import_callable(spec: str, root: Path, extra_paths: list[str], what: str) -> Callable[..., Any]:
    """``pkg.module:function`` → the function, with the config folder (and ``extra_paths``) importable."""
    for entry in [*(str((root / p).resolve()) for p in reversed(extra_paths)), str(root)]:
        if entry not in sys.path:
            sys.path.insert(0, entry)
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(
            f"{what} {spec!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{what} {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{what} {spec!r} is not callable")
    return obj


def _wants_case(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


class PythonCallableTarget(Target):
    """Sync callables run on daemon threads, as many as the concurrency, so they overlap like async
    ones do. A sync call that overruns its timeout cannot be interrupted: its result is discarded,
    a new thread takes its place, and it does not hold up the end of the run."""

    kind = "python"

    def __init__(self, spec: PythonTarget, root: Path, concurrency: int):
        self.spec = spec
        self.fn = import_callable(spec.python, root, spec.path, "target")
        self.with_case = _wants_case(self.fn)
        self.is_async = inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(
            getattr(self.fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
        )
        self._threads = None if self.is_async else DaemonThreads(concurrency)

    def info(self) -> TargetInfo:
        return TargetInfo(kind="python", params={"callable": self.spec.python})

    async def call(self, case: Case) -> TargetOutput:
        args = (case.input, case) if self.with_case else (case.input,)
        try:
            if self._threads is None:
                value = await self.fn(*args)
            else:
                value = await self._threads.call(lambda: self.fn(*args))
        except asyncio.CancelledError:
            raise
        except TargetFailure:
            raise
        except Exception as exc:  # the candidate's own failure, not ours
            raise TargetFailure("target", f"{type(exc).__name__}: {exc}") from None
        return unpack_result(value, self.spec.python)

    async def aclose(self) -> None:
        if self._threads is not None:
            self._threads.close()


# ----------------------------------------------------------------------------------------- command


class _ExitAware(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's subprocess protocol, telling when the process exits (``Process.wait`` also waits
    for its pipes to close)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        super().__init__(limit=1 << 16, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _feed(pipe: asyncio.StreamWriter, data: bytes) -> None:
    """Write the case to the target's stdin; one that does not read it all is its own business."""
    with contextlib.suppress(ConnectionError, OSError):
        pipe.write(data)
        await pipe.drain()
        pipe.close()


async def read_capped(stream: asyncio.StreamReader, into: bytearray, cap: int) -> bool:
    """Read ``stream`` to EOF into ``into``; False, having stopped, when it holds more than ``cap`` bytes."""
    while chunk := await stream.read(1 << 16):
        into += chunk
        if len(into) > cap:
            return False
    return True


class CommandProcessTarget(Target):
    """One process per attempt, in its own session and marked in its environment: when it exits,
    overflows its output caps, or its attempt ends (timeout, cancellation), it is killed with all
    it started (``evals.containment``), so nothing outlives its attempt and no helper holding its
    pipes delays the answer."""

    kind = "command"

    def __init__(self, spec: CommandTarget, root: Path):
        self.spec = spec
        self.argv = shlex.split(spec.command) if isinstance(spec.command, str) else list(spec.command)
        if not self.argv:
            raise UsageError("target.command is empty")
        self.cwd = (root / spec.cwd).resolve() if spec.cwd else root

    def info(self) -> TargetInfo:
        return TargetInfo(kind="command", params={"command": self.argv})

    async def call(self, case: Case) -> TargetOutput:
        stdin = json.dumps(case_payload(case), ensure_ascii=False, default=str).encode("utf-8")
        mark = attempt_mark()
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _ExitAware(loop),
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env={**os.environ, **self.spec.env, ATTEMPT_ENV: mark},
                start_new_session=True,
            )
        except OSError as exc:
            raise TargetFailure("target", f"cannot start {self.argv[0]!r}: {exc}") from None
        assert protocol.stdin is not None and protocol.stdout is not None and protocol.stderr is not None
        pid = transport.get_pid()
        out, err = bytearray(), bytearray()
        streams = {
            asyncio.ensure_future(read_capped(protocol.stdout, out, STDOUT_CAP_BYTES)): ("stdout", STDOUT_CAP_BYTES),
            asyncio.ensure_future(read_capped(protocol.stderr, err, STDERR_CAP_BYTES)): ("stderr", STDERR_CAP_BYTES),
        }
        feeder = asyncio.ensure_future(_feed(protocol.stdin, stdin))
        overflow = None
        try:
            # Done when the process exits — not when its pipes close: a helper it left running
            # may hold them open for ever — or when an output overflows its cap.
            pending: set[asyncio.Future[Any]] = {protocol.exited, *streams}
            while overflow is None and not protocol.exited.done():
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                overflow = next((streams[t] for t in done if t in streams and not t.result()), None)
        finally:
            # Exited, overflowing, timed out or cancelled: what it started goes with it, and with
            # them the last holders of its pipes.
            kill_session(pid)
            kill_marked(ATTEMPT_ENV, mark, spare=frozenset({pid}))
            await asyncio.wait([protocol.exited, *streams], timeout=PIPE_GRACE_S)
            for task in [*streams, feeder]:
                task.cancel()
            transport.close()  # a pipe some unkillable holder keeps open is closed on our side
        returncode = transport.get_returncode()
        if returncode is None:  # not even reaped within the grace period after its SIGKILL
            returncode = -signal.SIGKILL
        stderr = err[-STDERR_CAP_BYTES:].decode("utf-8", errors="replace")
        if overflow is not None:
            name, cap = overflow
            tail = f"; stderr: {excerpt(stderr) or '(empty)'}" if name == "stdout" else ""
            raise TargetFailure(
                "target",
                f"command wrote more than {cap >> 20} MiB to {name} and was stopped "
                f"(print the answer on stdout, logs in moderation on stderr){tail}",
            )
        if returncode != 0:
            how = f"killed by signal {-returncode}" if returncode < 0 else f"exit {returncode}"
            raise TargetFailure("target", f"command {how}; stderr: {excerpt(stderr) or '(empty)'}")
        return unpack_result(self._parse(out.decode("utf-8", errors="replace"), stderr), "command")

    @staticmethod
    def _parse(stdout: str, stderr: str) -> dict[str, Any]:
        text = stdout.strip()
        candidates = [text]
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1:
            candidates.append(lines[-1])  # tolerate log lines printed before the result
        for candidate in candidates:
            try:
                value = json.loads(candidate)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and "output" in value:
                return value
        raise TargetFailure(
            "target",
            'command did not print {"output": ...} as JSON on stdout; '
            f"stdout: {excerpt(stdout) or '(empty)'}; stderr: {excerpt(stderr) or '(empty)'}",
        )


# ------------------------------------------------------------------------------------------ openai


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


def build_target(config: SuiteConfig) -> Target:
    """The configured target, ready to call. UsageError when the config has none or it cannot load."""
    spec = config.target
    if spec is None:
        raise UsageError(
            f"{config.path or 'config'}: no target: to run the suite, add target: with python:, command: or openai:"
        )
    if isinstance(spec, PythonTarget):
        return PythonCallableTarget(spec, config.root, config.concurrency)
    if isinstance(spec, CommandTarget):
        return CommandProcessTarget(spec, config.root)
    return OpenAIChatTarget(spec, config.root, config.timeout_s)
