"""The runner end to end (``execute``): a tmp suite, a real local OpenAI-compatible server with
scripted faults, a real results file."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fakes.openai_server import OpenAIServer, hang, malformed, reset, status
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import echo_cases, load_suite

from evals.results.files import dump_results, load_results
from evals.results.summary import summarize
from evals.run.execution import execute

FAST_RETRIES = {"max": 3, "backoff_s": [0.01], "max_retry_after_s": 0.2}


def openai_suite(tmp_path: Path, server: OpenAIServer, n: int = 6, **config):
    target = {"openai": {"base_url": server.url, "model": "local:echo", "api_key_env": None}}
    return load_suite(tmp_path, echo_cases(n), target=target, **{"retries": FAST_RETRIES, **config})


def run(config, tmp_path: Path, **kw):
    out = tmp_path / "results.json"
    written = execute(config, out, progress=False, **kw)
    on_disk = load_results(out)
    assert on_disk == written
    return on_disk


def test_infra_faults_are_retried_recorded_and_not_wrong_answers(tmp_path, openai_server) -> None:
    openai_server.script("q0", status(429, retry_after="0.05"))
    openai_server.script("q1", status(500))
    openai_server.script("q2", status(503), reset())
    openai_server.script("q3", reset())
    openai_server.script("q4", malformed())
    results = run(openai_suite(tmp_path, openai_server), tmp_path)
    assert results.run.status == "success" and results.run.completed_cases == results.run.total_cases == 6
    by_id = results.by_id()
    for case in by_id.values():
        (attempt,) = case.attempts
        assert attempt.passed is True and attempt.error is None
        assert attempt.retries == len(attempt.retry_history)
    history = {cid: [(r.kind, r.status) for r in by_id[cid].attempts[0].retry_history] for cid in by_id}
    assert history == {
        "c000": [("infra", 429)],
        "c001": [("infra", 500)],
        # The reset comes on the connection reused after the 503, before any byte of an answer:
        # the pool resends such a request at once on a new connection (a server's idle close
        # looks the same), and the resend is recorded too; q2 is served three times.
        "c002": [("infra", 503), ("infra", None)],
        "c003": [("infra", None)],
        "c004": [("infra", None)],
        "c005": [],
    }
    assert by_id["c000"].attempts[0].retry_history[0].wait_s == 0.05  # Retry-After, not the schedule
    assert by_id["c001"].attempts[0].retry_history[0].wait_s == 0.01
    assert "malformed" in by_id["c004"].attempts[0].retry_history[0].message
    resend = by_id["c002"].attempts[0].retry_history[1]
    assert resend.wait_s == 0 and "reused keep-alive connection; sent again" in resend.message
    assert openai_server.calls["q2"] == 3


def test_the_file_holds_what_dump_results_makes_of_the_run(tmp_path, openai_server) -> None:
    """The recorder joins cases serialised as they finished; the bytes must be the whole dump's."""
    openai_server.script("q1", status(400))
    config = openai_suite(tmp_path, openai_server, n=5, attempts=2)
    plain, packed = tmp_path / "results.json", tmp_path / "results.json.gz"
    written = execute(config, plain, progress=False)
    assert written.cases[1].attempts[0].error is not None  # not only passes
    assert plain.read_bytes() == dump_results(written)
    resumed = execute(config, plain, progress=False, resume=True)  # every case kept from the file
    assert plain.read_bytes() == dump_results(resumed)
    written = execute(config, packed, progress=False)
    assert gzip.decompress(packed.read_bytes()) == dump_results(written)


def test_a_lean_run_reads_its_cases_back_from_the_file_when_asked(tmp_path, openai_server) -> None:
    config = openai_suite(tmp_path, openai_server, n=3)
    written = execute(config, tmp_path / "results.json", progress=False, lean=True)
    assert written.run.status == "success" and written.run.completed_cases == 3
    assert list(written.cases) == load_results(tmp_path / "results.json").cases


def test_a_lean_run_summarises_what_it_kept_as_its_file_and_keeps_its_cases(tmp_path, openai_server) -> None:
    # `evalgate run` summarises what it kept of each case as it finished, not the cases read back
    # (docs/spec.md#performance-targets): the same summary as the file's, and its cases still there.
    openai_server.script("q1", status(400))
    config = openai_suite(tmp_path, openai_server, n=3)
    written = execute(config, tmp_path / "results.json", progress=False, lean=True)
    assert "cases" not in written.__dict__  # nothing read back for it
    assert summarize(written.summary) == summarize(load_results(tmp_path / "results.json"))
    assert list(written.cases) == load_results(tmp_path / "results.json").cases
    resumed = execute(config, tmp_path / "results.json", progress=False, lean=True, resume=True)
    assert summarize(resumed.summary) == summarize(load_results(tmp_path / "results.json"))


def test_retry_after_is_capped(tmp_path, openai_server) -> None:
    openai_server.script("q0", status(429, retry_after="3600"))
    results = run(openai_suite(tmp_path, openai_server, n=1), tmp_path)
    assert results.cases[0].attempts[0].retry_history[0].wait_s == FAST_RETRIES["max_retry_after_s"]


def test_infra_errors_left_after_retries_make_an_error_run(tmp_path, openai_server) -> None:
    openai_server.script("q1", *[status(502)] * 4)
    results = run(openai_suite(tmp_path, openai_server, n=3), tmp_path)
    bad = results.by_id()["c001"].attempts[0]
    assert bad.error.kind == "infra" and bad.passed is None and bad.retries == 3 and len(bad.retry_history) == 3
    assert openai_server.calls["q1"] == 4
    assert results.run.status == "error" and results.run.completed_cases == 2 and results.run.total_cases == 3
    assert "c001" in results.run.message and "--resume" in results.run.message


def test_one_retry_is_counted_in_the_singular(tmp_path, openai_server) -> None:
    openai_server.script("q1", *[status(502)] * 2)
    retries = {**FAST_RETRIES, "max": 1}
    results = run(openai_suite(tmp_path, openai_server, n=3, retries=retries), tmp_path)
    assert results.run.status == "error" and "still had infra errors after 1 retry (c001)" in results.run.message


def test_client_errors_and_timeouts_are_not_retried(tmp_path, openai_server) -> None:
    openai_server.script("q0", status(400, body='{"error": {"message": "context too long"}}'))
    openai_server.script("q1", hang(20))
    results = run(openai_suite(tmp_path, openai_server, n=3, timeout_s=1.5), tmp_path)
    by_id = results.by_id()
    (rejected,), (slow,) = by_id["c000"].attempts, by_id["c001"].attempts
    assert rejected.error.kind == "target" and "context too long" in rejected.error.message
    assert slow.error.kind == "timeout"
    for attempt in (rejected, slow):
        assert attempt.passed is False and attempt.retries == 0 and attempt.retry_history == []
    assert openai_server.calls["q0"] == openai_server.calls["q1"] == 1
    # a target failure is an answer (a wrong one): the run is complete
    assert results.run.status == "success" and results.run.completed_cases == 3


def test_attempts_per_case_and_concurrency_bound(tmp_path) -> None:
    with OpenAIServer(latency=0.1) as server:
        config = openai_suite(tmp_path, server, n=12, attempts=3, concurrency=4)
        results = run(config, tmp_path)
        assert server.max_in_flight <= 4
        assert server.max_in_flight >= 2  # the attempts really overlapped
        assert all(server.calls[f"q{i}"] == 3 for i in range(12))
    assert results.run.attempts_per_case == 3
    assert all(len(c.attempts) == 3 and all(a.passed for a in c.attempts) for c in results.cases)


def test_results_carry_usage_hash_input_and_provenance(tmp_path, openai_server, monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_SHA", "abc123")
    monkeypatch.setenv("GITHUB_REF", "refs/pull/7/merge")
    config = openai_suite(tmp_path, openai_server, n=2)
    results = run(config, tmp_path)
    run_info, case = results.run, results.cases[0]
    assert (run_info.git_sha, run_info.git_ref) == ("abc123", "refs/pull/7/merge")
    assert run_info.config_hash == config.config_hash()
    assert run_info.target.kind == "openai" and run_info.target.params["system_fingerprint"] == ["fp_local"]
    assert run_info.started_at and run_info.ended_at and run_info.evalgate_version
    assert case.hash.startswith("sha256:") and case.input == "q0" and case.expected == "q0"
    attempt = case.attempts[0]
    assert attempt.tokens_in == 1 and attempt.tokens_out == 1 and attempt.latency_ms > 0
    assert attempt.output_sha256.startswith("sha256:") and attempt.metadata["system_fingerprint"] == "fp_local"


def test_secrets_are_masked_and_long_outputs_clipped(tmp_path, openai_server, monkeypatch) -> None:
    key = "sk-live-abcdefghijklmnop0123"
    monkeypatch.setenv("EVALGATE_TEST_KEY", key)
    openai_server.responder = lambda body: f"the key is {key} " + "x" * 10_000
    target = {"openai": {"base_url": openai_server.url, "model": "local:echo", "api_key_env": "EVALGATE_TEST_KEY"}}
    config = load_suite(tmp_path, [{"id": "leak", "input": f"say {key}", "expected": "no"}], target=target)
    results = run(config, tmp_path)
    assert openai_server.headers[0]["Authorization"] == f"Bearer {key}"
    assert key not in (tmp_path / "results.json").read_text()
    attempt = results.cases[0].attempts[0]
    assert attempt.output_truncated and len(attempt.output.encode()) <= 8 * 1024


def test_scorer_crash_is_a_scorer_error(tmp_path, openai_server) -> None:
    (tmp_path / "myscoring.py").write_text("def boom(output, case):\n    raise RuntimeError('scorer bug')\n")
    config = openai_suite(tmp_path, openai_server, n=2, scorers=[{"python": "myscoring:boom"}])
    results = run(config, tmp_path)
    attempt = results.cases[0].attempts[0]
    assert attempt.error.kind == "scorer" and "scorer bug" in attempt.error.message
    assert attempt.passed is None and attempt.output == "q0"


def test_run_timeout_writes_a_partial_timeout_run(tmp_path) -> None:
    """The old key run_timeout_s is read as limits.max_duration_s (one wall clock, not two)."""
    with OpenAIServer(latency=0.2) as server:
        config = openai_suite(tmp_path, server, n=30, concurrency=1, run_timeout_s=1.0)
        results = run(config, tmp_path)
    assert results.run.status == "timeout" and "limits.max_duration_s (1 s) reached" in results.run.message
    assert results.run.limit is not None and results.run.limit.limit == "max_duration_s"
    assert results.run.total_cases == 30
    assert 0 < results.run.completed_cases < 30
    assert results.run.completed_cases == len(results.cases) == sum(c.complete for c in results.cases)


@pytest.mark.e2e
def test_command_target_timeout_in_a_run(tmp_path) -> None:
    (tmp_path / "slow.py").write_text(
        textwrap.dedent(
            """
            import json, sys, time
            case = json.load(sys.stdin)
            if case["id"] == "c001":
                time.sleep(60)
            print(json.dumps({"output": case["input"]}))
            """
        )
    )
    config = load_suite(tmp_path, echo_cases(3), target={"command": [sys.executable, "slow.py"]}, timeout_s=3)
    results = run(config, tmp_path)
    errors = {c.id: c.attempts[0].error.kind if c.attempts[0].error else None for c in results.cases}
    assert errors == {"c000": None, "c001": "timeout", "c002": None}


def test_smoke_and_shard_are_recorded(tmp_path, openai_server) -> None:
    config = openai_suite(tmp_path, openai_server, n=40, smoke={"cases": 10, "per_slice_min": 0, "seed": 3})
    results = run(config, tmp_path, smoke=True, shard=(2, 3))
    assert results.run.subset == "smoke" and results.run.shard == "2/3"
    assert results.run.total_cases == len(results.cases) < 10
    text = json.loads((tmp_path / "results.json").read_text())
    assert next(iter(text)) == "schema_version"


@pytest.mark.e2e
def test_python_m_evals_run_with_the_default_config(tmp_path: Path, python_exe: str) -> None:
    (tmp_path / "echo.py").write_text("def answer(text):\n    return text\n")
    load_suite(tmp_path, echo_cases(3), target={"python": "echo:answer"})
    done = subprocess.run(
        [python_exe, "-m", "evals.run", "--output", "candidate.json"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert load_results(tmp_path / "candidate.json").run.completed_cases == 3
    bad = subprocess.run(
        [python_exe, "-m", "evals.run", "--shard", "4/3"], cwd=tmp_path, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "--shard" in bad.stderr and "Traceback" not in bad.stderr
