"""The target kinds that run the user's code (docs/spec.md#targets): a Python callable and a command; the
model targets (every wire format) are in ``evals.run.targets.endpoint``, and ``build_target`` makes the
configured one. Per-attempt timeouts are the runner's job: it cancels ``call``, and every target
cleans up on cancellation (the command target kills its whole process group)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import shlex
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.common import jsonsafe
from evals.common.errors import UsageError
from evals.results import console
from evals.results.masking import env_secrets
from evals.results.model import TargetInfo
from evals.run.cache import ResponseCache
from evals.run.containment import ATTEMPT_ENV, DaemonThreads, attempt_mark, kill_marked, kill_session
from evals.run.targets.base import Target, TargetFailure, TargetOutput, case_payload, excerpt, unpack_result
from evals.run.targets.cached import CachedTarget
from evals.run.targets.endpoint import ModelTarget
from evals.run.targets.identity import command_code, python_code
from evals.run.targets.loading import import_callable
from evals.suite.config import SuiteConfig
from evals.suite.targets import CommandTarget, OpenAITarget, PythonTarget

if TYPE_CHECKING:
    from evals.suite.cases import Case

# A command's captured output, at most: an answer is small (results keep 8 KiB of it), and a
# target that never stops writing (`yes`) must not fill the runner's memory.
STDOUT_CAP_BYTES = 8 << 20
STDERR_CAP_BYTES = 4 << 20
PIPE_GRACE_S = 1.0  # for pipes to close once the process and all it started are killed


# ------------------------------------------------------------------------------------------ python


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
        self._said_object = False

    def info(self) -> TargetInfo:
        return TargetInfo(kind="python", params={"callable": self.spec.python})

    async def call(self, case: Case) -> TargetOutput:
        args = (case.input, case.as_written()) if self.with_case else (case.input,)
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
        result = unpack_result(value, self.spec.python)
        if isinstance(value, dict) and "output" not in value and not self._said_object:
            # Documented (json_equal judges objects), but also what a forgotten "output" key looks
            # like: said once, so a 0% pass rate is not the first sign of it.
            self._said_object = True
            shown = ", ".join(sorted(str(k) for k in value)[:6])
            console.notice(
                f"{self.spec.python} returned a JSON object ({{{shown}}}) with no "
                '"output" key: the whole object is the answer the scorers judge; to return an answer with '
                'tokens or cost, return {"output": ..., "cost_usd": ...} (docs/running.md)',
                source="run",
            )
        return result

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
    it started (``evals.run.containment``), so nothing outlives its attempt and no helper holding its
    pipes delays the answer."""

    kind = "command"

    def __init__(self, spec: CommandTarget, root: Path, where: str = "target.command"):
        self.spec = spec
        self.argv = shlex.split(spec.command) if isinstance(spec.command, str) else list(spec.command)
        if not self.argv:
            raise UsageError(f"{where}: target.command is empty")
        self.cwd = (root / spec.cwd).resolve() if spec.cwd else root
        self._require_program(where)
        # The target reads these on top of our own environment (whose values are masked anyway).
        self.secrets = env_secrets(spec.env)

    def _require_program(self, where: str) -> None:
        """A program that cannot start would fail every case as a wrong answer: say so before the
        run. Found as the attempt's exec will look for it: a path with a slash from the target's
        folder, a bare name on the PATH it runs with."""
        program = self.argv[0]
        if "/" in program:
            path = self.cwd / program
            if path.is_file() and os.access(path, os.X_OK):
                return
            why = f"{path} is not an executable file" if path.exists() else f"no such file {path}"
            fix = "check the path (it is relative to the config's folder, or target.cwd)"
            if path.is_file():
                fix = f"make it executable (chmod +x {program}) or run it through its interpreter"
        else:
            # Relative PATH entries (".", "bin", empty) are looked up from the target's folder, as
            # the exec in that folder will.
            entries = self.spec.env.get("PATH", os.environ.get("PATH", os.defpath)).split(os.pathsep)
            search = os.pathsep.join(str(self.cwd / entry) if not os.path.isabs(entry) else entry for entry in entries)
            if shutil.which(program, path=search):
                return
            why, fix = f"{program!r} is not on the PATH", "install it, or give its path"
        raise UsageError(f"{where}: the command target cannot start: {why}; {fix}")

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
            ending: list[asyncio.Future[Any]] = [protocol.exited, *streams]
            await asyncio.wait(ending, timeout=PIPE_GRACE_S)
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
        # "\n" only: str.splitlines would also cut at U+2028/U+2029/U+0085, which JSON may hold raw.
        lines = [line for line in text.split("\n") if line.strip()]
        if len(lines) > 1:
            candidates.append(lines[-1])  # tolerate log lines printed before the result
        for candidate in candidates:
            try:
                value = jsonsafe.loads(candidate)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and "output" in value:
                return value
        raise TargetFailure(
            "target",
            'command did not print {"output": ...} as JSON on stdout; '
            f"stdout: {excerpt(stdout) or '(empty)'}; stderr: {excerpt(stderr) or '(empty)'}",
        )


def build_target(config: SuiteConfig, cache: ResponseCache | None = None) -> Target:
    """The configured target, ready to call. UsageError when the config has none or it cannot load.
    ``cache``: the response cache, used when ``cache.targets`` lists the target's kind."""
    spec = config.target
    if spec is None:
        raise UsageError(
            f"{config.path or 'config'}: no target: to run the suite, add target: with python:, command:, openai: "
            "or anthropic:"
        )
    serves = config.cache.serves if config.cache is not None else None
    if isinstance(spec, PythonTarget):
        try:
            target: Target = PythonCallableTarget(spec, config.root, config.concurrency)
        except UsageError as exc:  # a misspelt module or function: point at the line to fix
            raise UsageError(f"{config.where('target', 'python')}: {exc}") from None
        if cache is not None and serves is not None and serves("python"):
            code = python_code(config.root)
            target = CachedTarget(
                target, cache, {"python": spec.python, "path": spec.path, "code": code}, config.timeout_s
            )
        return target
    if isinstance(spec, CommandTarget):
        target = CommandProcessTarget(spec, config.root, config.where("target", "command"))
        if cache is not None and serves is not None and serves("command"):
            # The environment's names only: its values may be secrets (cache.key covers them).
            code = command_code(target.argv, target.cwd)
            identity = {"command": target.argv, "cwd": spec.cwd, "env": sorted(spec.env), "code": code}
            target = CachedTarget(target, cache, identity, config.timeout_s)
        return target
    kind = "openai" if isinstance(spec, OpenAITarget) else "anthropic"
    return ModelTarget(
        spec,
        config.root,
        config.timeout_s,
        config.retries,
        lambda *key: config.where("target", kind, *key),
        cache=cache if serves is not None and serves(kind) else None,
        concurrency=config.concurrency,
    )
