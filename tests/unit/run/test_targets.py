"""The three targets against real things: an imported module, a real subprocess, a local HTTP server."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fakes.openai_server import OpenAIServer, hang, malformed, reset, status
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import echo_cases, load_suite, process_alive
from test_connections import full_backlog

from evals.common.errors import InputFileError, UsageError
from evals.compare.analysis import compare
from evals.run.execution import execute
from evals.run.targets.code import TargetFailure, build_target
from evals.run.targets.formats import parse_retry_after
from evals.suite.cases import Case

CASE = Case(id="c1", input="hello", expected="hello", tags={"language": "ko"}, metadata={"m": 1})


def call(target, case: Case = CASE, timeout: float | None = None):
    async def go():
        try:
            if timeout is None:
                return await target.call(case)
            return await asyncio.wait_for(target.call(case), timeout)
        finally:
            await target.aclose()

    return asyncio.run(go())


def failure(target, case: Case = CASE) -> TargetFailure:
    with pytest.raises(TargetFailure) as info:
        call(target, case)
    return info.value


# ------------------------------------------------------------------------------------------ python


@pytest.fixture
def module_dir(tmp_path: Path) -> Path:
    (tmp_path / "mytarget.py").write_text(
        textwrap.dedent(
            """
            import asyncio

            def upper(text):
                return text.upper()

            def with_case(text, case):
                return {"output": f"{case.id}:{text}", "tokens_in": 3, "tokens_out": 2, "cost_usd": 0.5}

            async def async_echo(text):
                await asyncio.sleep(0)
                return {"answer": text}

            def broken(text):
                raise ValueError("model exploded")

            def no_output(text):
                return {"answer": text, "cost_usd": 0.01}

            def output_and_more(text):
                return {"output": text, "cost": 0.01}
            """
        )
    )
    return tmp_path


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        ("upper", ("HELLO", None, None, None)),
        ("with_case", ("c1:hello", 3, 2, 0.5)),
        ("async_echo", ({"answer": "hello"}, None, None, None)),
    ],
)
def test_python_target_sync_async_and_case_argument(module_dir: Path, fn: str, expected: tuple) -> None:
    config = load_suite(module_dir, [], target={"python": f"mytarget:{fn}"})
    out = call(build_target(config))
    assert (out.output, out.tokens_in, out.tokens_out, out.cost_usd) == expected


def test_python_target_exception_is_a_target_error(module_dir: Path) -> None:
    config = load_suite(module_dir, [], target={"python": "mytarget:broken"})
    err = failure(build_target(config))
    assert err.kind == "target" and "ValueError: model exploded" in err.message


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        ("no_output", 'returned {answer, cost_usd}: a result dict needs "output" (the answer) beside cost_usd'),
        ("output_and_more", "returned {cost, output}: a result dict has only cost_usd, metadata, output, tokens_in"),
    ],
)
def test_a_result_dict_with_a_wrong_key_is_a_target_error(module_dir: Path, fn: str, says: str) -> None:
    """Before: the whole dict was the output, scored as its JSON text (0% pass), cost_usd unread,
    no error anywhere."""
    config = load_suite(module_dir, [], target={"python": f"mytarget:{fn}"})
    err = failure(build_target(config))
    assert err.kind == "target" and f"mytarget:{fn} {says}" in err.message, err.message


def test_a_json_object_answer_is_kept_and_said_once(module_dir: Path, capsys) -> None:
    """A dict with no result key is the answer (json_equal judges objects); that it is one is
    said once, since a forgotten "output" looks the same."""
    target = build_target(load_suite(module_dir, [], target={"python": "mytarget:async_echo"}))

    async def twice():
        try:
            return [await target.call(CASE), await target.call(CASE)]
        finally:
            await target.aclose()

    assert [out.output for out in asyncio.run(twice())] == [{"answer": "hello"}] * 2
    note = capsys.readouterr().err
    assert note.count('no "output" key: the whole object is the answer') == 1, note


def test_python_target_import_errors_are_usage_errors(module_dir: Path) -> None:
    with pytest.raises(UsageError, match="no attribute 'nope'"):
        build_target(load_suite(module_dir, [], target={"python": "mytarget:nope"}))
    with pytest.raises(UsageError, match="cannot import module 'missing_mod'"):
        build_target(load_suite(module_dir, [], target={"python": "missing_mod:fn"}))


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("mytargett:upper", "cannot import module 'mytargett': ModuleNotFoundError: No module named 'mytargett' "
         "(did you mean 'mytarget'?)"),
        ("mytarget:uper", "module 'mytarget' has no attribute 'uper' (did you mean 'upper'?)"),
    ],
)  # fmt: skip
def test_a_misspelt_python_target_names_the_config_line_and_the_closest_name(module_dir: Path, spec, says) -> None:
    """`target: {python: bott:answer}` said what failed, not where: the config's file and
    line lead, as for every other config error."""
    config = load_suite(module_dir, [], target={"python": spec})
    with pytest.raises(UsageError) as info:
        build_target(config)
    assert str(info.value) == f"{config.path}:4: target {spec!r}: {says}"


# ----------------------------------------------------------------------------------------- command


def script_target(tmp_path: Path, body: str, **extra):
    (tmp_path / "target.py").write_text(textwrap.dedent(body))
    return build_target(load_suite(tmp_path, [], target={"command": [sys.executable, "target.py"], **extra}))


def test_command_target_reads_case_on_stdin_and_prints_output(tmp_path: Path) -> None:
    target = script_target(
        tmp_path,
        """
        import json, sys
        case = json.load(sys.stdin)
        print("a log line before the result")
        print(json.dumps({"output": [case["id"], case["input"], case["tags"]["language"]], "tokens_out": 4}))
        """,
    )
    out = call(target)
    assert out.output == ["c1", "hello", "ko"] and out.tokens_out == 4


def test_command_target_answer_after_log_lines_may_hold_raw_line_separators(tmp_path: Path) -> None:
    """json.dumps(ensure_ascii=False) writes U+2028 raw; it is not a line break of the output."""
    target = script_target(
        tmp_path,
        """
        import json, sys
        json.load(sys.stdin)
        print("loading model...")
        print(json.dumps({"output": "one\u2028two\u0085three"}, ensure_ascii=False))
        """,
    )
    assert call(target).output == "one\u2028two\u0085three"


def test_command_target_nonzero_exit_and_bad_stdout_are_target_errors(tmp_path: Path) -> None:
    err = failure(script_target(tmp_path, "import sys\nsys.stderr.write('boom: no model file')\nsys.exit(4)\n"))
    assert err.kind == "target" and "exit 4" in err.message and "boom: no model file" in err.message
    err = failure(script_target(tmp_path, "print('not json at all')\n"))
    assert err.kind == "target" and "not json at all" in err.message


def test_command_target_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids.txt"
    target = script_target(
        tmp_path,
        f"""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open({str(pids)!r} + ".tmp", "w") as fh:
            fh.write(f"{{os.getpid()}} {{child.pid}}")
        os.rename({str(pids)!r} + ".tmp", {str(pids)!r})
        time.sleep(120)
        """,
    )

    async def run_until_both_started_then_time_out() -> None:
        task = asyncio.ensure_future(target.call(CASE))
        try:
            deadline = time.monotonic() + 60
            while not pids.exists() and not task.done() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert pids.exists(), "the target never started its child"
            await asyncio.wait_for(task, 0.1)
        finally:
            await target.aclose()

    with pytest.raises(TimeoutError):
        asyncio.run(run_until_both_started_then_time_out())
    parent, child = (int(p) for p in pids.read_text().split())
    deadline = time.monotonic() + 10
    while (process_alive(parent) or process_alive(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(parent), "the target process survived its timeout"
    assert not process_alive(child), "the target's child survived the timeout"


# ------------------------------------------------------------------------------------------ openai


def openai_target(tmp_path: Path, server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, **params):
    monkeypatch.setenv("EVALGATE_TEST_KEY", "sk-test-0123456789")
    (tmp_path / "system.md").write_text("You are terse.")
    spec = {"base_url": server.url, "model": "local:tiny-model", "api_key_env": "EVALGATE_TEST_KEY", **params}
    return build_target(load_suite(tmp_path, [], target={"openai": spec}))


def test_openai_request_and_response(tmp_path: Path, openai_server: OpenAIServer, monkeypatch) -> None:
    target = openai_target(
        tmp_path,
        openai_server,
        monkeypatch,
        temperature=0,
        seed=7,
        max_tokens=64,
        top_p=0.5,
        system_prompt="system.md",
        price_in_per_mtok=2.0,
        price_out_per_mtok=10.0,
    )
    info = target.info()
    out = call(target)
    body = openai_server.requests[0]
    assert body["model"] == "tiny-model"
    assert body["messages"] == [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello"}]
    assert (body["temperature"], body["seed"], body["max_tokens"], body["top_p"]) == (0, 7, 64, 0.5)
    assert openai_server.headers[0]["Authorization"] == "Bearer sk-test-0123456789"
    assert out.output == "hello"
    assert out.metadata["system_fingerprint"] == "fp_local" and out.metadata["finish_reason"] == "stop"
    assert (out.tokens_in, out.tokens_out) == (4, 1)  # "You are terse." + "hello"
    assert out.cost_usd == pytest.approx((4 * 2.0 + 1 * 10.0) / 1e6)
    assert info.model == "local:tiny-model" and info.params["seed"] == 7
    assert info.params["system_prompt"]["sha256"].startswith("sha256:")
    assert "sk-test" not in repr(info) and target.secrets == ("sk-test-0123456789",)
    assert target.observed() == {"system_fingerprint": ["fp_local"]}


def test_openai_cached_and_reasoning_tokens_are_counted_and_priced(tmp_path, openai_server, monkeypatch) -> None:
    """Prompt-cache hits are part of prompt_tokens, priced at price_cache_read_per_mtok instead of
    the input price; reasoning tokens are part of completion_tokens, recorded apart."""
    openai_server.cached_tokens, openai_server.reasoning_tokens = 3, 5
    prices = {"price_in_per_mtok": 2.0, "price_out_per_mtok": 10.0, "price_cache_read_per_mtok": 0.5}
    target = openai_target(tmp_path, openai_server, monkeypatch, system_prompt="system.md", **prices)
    out = call(target)
    assert (out.tokens_in, out.tokens_out) == (4, 6)
    assert out.metadata["tokens_cache_read"] == 3 and out.metadata["tokens_reasoning"] == 5
    assert "tokens_cache_write" not in out.metadata
    assert out.cost_usd == pytest.approx((1 * 2.0 + 3 * 0.5 + 6 * 10.0) / 1e6)


def test_openai_messages_input_is_sent_as_is_and_tool_calls_kept(tmp_path, openai_server, monkeypatch) -> None:
    tool_call = {"id": "t1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    openai_server.responder = lambda body: {"content": None, "tool_calls": [tool_call]}
    target = openai_target(tmp_path, openai_server, monkeypatch, system_prompt="system.md")
    messages = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"}]
    out = call(target, Case(id="m", input={"messages": messages}))
    assert openai_server.requests[0]["messages"] == messages
    assert out.output == "" and out.metadata["tool_calls"] == [tool_call]


def test_openai_missing_key_env_is_a_usage_error_naming_it(tmp_path, openai_server, monkeypatch) -> None:
    """Like every config error, it names the file and the line to change: api_key_env's own, or
    the openai: block's when the variable is the default one."""
    monkeypatch.delenv("EVALGATE_NO_SUCH_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = {"base_url": openai_server.url, "model": "local:m", "api_key_env": "EVALGATE_NO_SUCH_KEY"}
    config = load_suite(tmp_path, [], target={"openai": spec})
    lines = config.path.read_text(encoding="utf-8").splitlines()
    with pytest.raises(UsageError) as info:
        build_target(config)
    line = next(i for i, text in enumerate(lines, start=1) if "api_key_env:" in text)
    assert str(info.value).startswith(f"{config.path}:{line}: target.openai.api_key_env names EVALGATE_NO_SUCH_KEY")
    assert "or set api_key_env: null for an endpoint without a key" in str(info.value)
    spec.pop("api_key_env")
    config = load_suite(tmp_path, [], target={"openai": spec})
    lines = config.path.read_text(encoding="utf-8").splitlines()
    with pytest.raises(UsageError) as info:
        build_target(config)
    line = next(i for i, text in enumerate(lines, start=1) if text.strip() == "openai:")
    assert str(info.value).startswith(f"{config.path}:{line}: target.openai.api_key_env is by default OPENAI_API_KEY")


def test_openai_missing_system_prompt_file(tmp_path, openai_server, monkeypatch) -> None:
    with pytest.raises(InputFileError, match="system prompt file not found"):
        openai_target(tmp_path, openai_server, monkeypatch, system_prompt="nope.md")


@pytest.mark.parametrize(
    ("fault", "kind", "code"),
    [
        (status(429, retry_after="3"), "infra", 429),
        (status(408), "infra", 408),
        (status(409), "infra", 409),
        (status(500), "infra", 500),
        (status(503), "infra", 503),
        (reset(), "infra", None),
        (malformed(), "infra", None),
        (status(400), "target", 400),
        (status(404), "target", 404),
    ],
)
def test_openai_error_classification(tmp_path, openai_server, monkeypatch, fault, kind, code) -> None:
    openai_server.script(None, fault)
    err = failure(openai_target(tmp_path, openai_server, monkeypatch))
    assert (err.kind, err.status) == (kind, code)
    if code == 429:
        assert err.retry_after == 3.0


def test_openai_hang_is_cut_by_the_callers_timeout(tmp_path, openai_server, monkeypatch) -> None:
    openai_server.script(None, hang(20))
    with pytest.raises(TimeoutError):
        call(openai_target(tmp_path, openai_server, monkeypatch), timeout=0.3)


def test_openai_unreachable_endpoint_is_infra_not_a_timeout(tmp_path, openai_server, monkeypatch) -> None:
    """A black-holed endpoint (a full listen backlog on 127.0.0.1: connects just wait) must not
    read as the model timing out: the connect timeout, half the attempt's, fires first and is infra;
    a refused connection is infra too. A run against it is retried per the policy and the gate
    calls it incomplete, where before every attempt was a `timeout` (a wrong answer) and it failed."""
    listener, fillers = full_backlog()
    try:
        black_hole = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        target = {"openai": {"base_url": black_hole, "model": "local:echo", "api_key_env": None}}
        err = failure(build_target(load_suite(tmp_path, [], target=target, timeout_s=0.4)))
        assert err.kind == "infra" and "cannot connect to" in err.message and "within 0.2s" in err.message

        retries = {"max": 1, "backoff_s": [0.01], "max_retry_after_s": 0.1}
        good = {"openai": {"base_url": openai_server.url, "model": "local:echo", "api_key_env": None}}
        base = execute(load_suite(tmp_path, echo_cases(3), target=good), tmp_path / "base.json", progress=False)
        cand = execute(
            load_suite(tmp_path, echo_cases(3), target=target, timeout_s=0.4, retries=retries),
            tmp_path / "cand.json",
            progress=False,
        )
        for case in cand.cases:
            (attempt,) = case.attempts
            assert attempt.error is not None and attempt.error.kind == "infra", attempt.error
            assert [r.kind for r in attempt.retry_history] == ["infra"]
        assert compare(base, cand).verdict == "incomplete"
    finally:
        for sock in [listener, *fillers]:
            sock.close()

    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))
    port = refused.getsockname()[1]
    refused.close()  # nothing listens there now
    target = {"openai": {"base_url": f"http://127.0.0.1:{port}/v1", "model": "local:echo", "api_key_env": None}}
    err = failure(build_target(load_suite(tmp_path, [], target=target)))
    assert err.kind == "infra" and "ConnectError" in err.message


def test_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after(later) <= 31
    assert parse_retry_after(email.utils.formatdate(time.time() - 30, usegmt=True)) == 0.0


def test_command_program_on_a_relative_path_entry_is_found_from_the_target_folder(tmp_path: Path) -> None:
    """The exec looks up relative PATH entries from the target's folder, so the check before the
    run does too, wherever evalgate was started (it was refused when started elsewhere)."""
    (tmp_path / "bin").mkdir()
    program = tmp_path / "bin" / "mybot"
    program.write_text(
        f"#!{sys.executable}\nimport json, sys\njson.load(sys.stdin)\nprint(json.dumps({{'output': 'hi'}}))\n"
    )
    program.chmod(0o755)
    target = build_target(load_suite(tmp_path, [], target={"command": ["mybot"], "env": {"PATH": "bin:/usr/bin:/bin"}}))
    assert call(target).output == "hi"
