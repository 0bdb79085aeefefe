"""Imported network failures are infra errors, never wrong answers (docs/spec.md#attempt-errors,
docs/spec.md#special-verdicts, docs/spec.md#importers): classified from the messages the tools really write
(tests/fixtures/README.md, "Error messages", says where each comes from), so a run whose requests all failed gates
``incomplete`` (exit 3). Also the config's ``slices:`` and ``gate --slice-key`` on imported results, and the import
CLI's wording."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from fakes.paths import FIXTURES

from evals.importers import import_results
from evals.results.files import load_results
from evals.results.infra import error_kind, infra_cause

FIX = FIXTURES / "importers"
PROMPTFOO_NET = FIX / "promptfoo" / "netfail_results.json"
INSPECT_NET = FIX / "inspect_ai" / "netfail.eval"
OPENAI_EVALS = FIX / "openai_evals" / "autogpt_test_match_record.jsonl"
HARBOR = FIX / "harbor" / "toy-job"

# (message as the tool writes it, expected cause); sources in tests/fixtures/README.md.
REAL_MESSAGES = [
    # promptfoo 0.121.9, written into netfail_results.json by the tool itself
    (
        "API call error: Error: Request failed after 4 retries: TypeError: fetch failed "
        "(Cause: Error: getaddrinfo ENOTFOUND api.openai.com)",
        "dns",
    ),
    (
        "API call error: Error: Request failed after 4 retries: TypeError: fetch failed "
        "(Cause: Error: connect ECONNREFUSED 127.0.0.1:8766)",
        "connection",
    ),
    ("API call error: Error: Request failed after 4 retries: Rate limited: 429 Too Many Requests", "rate-limit"),
    (
        "RateLimitExhaustedError: Rate limit exceeded for openai:chat:gpt-4o-mini[cbb989789fac] after 4 attempts",
        "rate-limit",
    ),
    ('API error: 503 Service Unavailable\n{"error":{"message":"The server is overloaded"}}', "server-error"),
    # promptfoo src/util/fetch/index.ts: fetchWithTimeout and PROMPTFOO_RETRY_5XX
    ("API call error: Error: Request failed after 4 retries: Error: Request timed out after 300000 ms", "timeout"),
    ("Request failed after 4 retries: Error: Internal Server Error: 502 Bad Gateway", "server-error"),
    # inspect_ai 0.3.285 sample errors (netfail.eval): exception_message() = .message or repr()
    (
        "ConnectionError(MaxRetryError('HTTPConnectionPool(host=\\'api.nonexistent-host.invalid\\', port=80): Max "
        "retries exceeded with url: /v1/models (Caused by NameResolutionError(\"HTTPConnection(host=\\'api."
        "nonexistent-host.invalid\\', port=80): Failed to resolve \\'api.nonexistent-host.invalid\\' ([Errno -2] "
        "Name or service not known)\"))'))",
        "dns",
    ),
    ("Connection error.", "connection"),
    ("Request timed out.", "timeout"),
    ("ReadTimeout('timed out')", "timeout"),
    ("Error code: 429 - Rate limit reached for requests", "rate-limit"),
    ("Error code: 503 - The server is overloaded or not ready yet.", "server-error"),
    # the traceback's last line, which the importer reads with the message
    ("openai.APITimeoutError: Request timed out.", "timeout"),
    # OpenAI evals record_error: {"type": type(e).__name__, "message": str(e)}
    ("APIConnectionError: Connection error.", "connection"),
    # Harbor exception types outside its error policy, with the message they carry
    ("ConnectionResetError: [Errno 104] Connection reset by peer", "connection"),
]
NOT_INFRA = [
    'API error: 400 Bad Request\n{"error":{"message":"max_tokens is too large: 5000"}}',
    "AssertionError: expected 500 ms, got 612",
    "provider crashed: simulated upstream failure",
    "Error code: 401 - Incorrect API key provided",
    "ValueError: could not parse the answer",
]


@pytest.mark.parametrize(("message", "cause"), REAL_MESSAGES)
def test_real_network_messages_are_infra(message, cause):
    assert infra_cause(message) == cause
    assert error_kind(message) == "infra"


@pytest.mark.parametrize("message", NOT_INFRA)
def test_other_errors_stay_failures(message):
    assert error_kind(message) == "target"


def test_promptfoo_run_whose_requests_all_failed_is_partial():
    results = import_results("promptfoo", [PROMPTFOO_NET])
    attempts = [a for c in results.cases for a in c.attempts]
    assert len(attempts) == 12
    assert all(a.error is not None and a.error.kind == "infra" and a.passed is None for a in attempts)
    assert results.run.completed_cases == 0 and not results.run.is_complete


def test_inspect_network_failures_are_infra_and_answers_still_count():
    results = import_results("inspect_ai", [INSPECT_NET])
    by_id = {c.id: c.attempts[0] for c in results.cases}
    causes = {case_id: infra_cause(a.error.message) for case_id, a in by_id.items() if a.error}
    assert causes == {
        "dns": "dns",
        "refused": "connection",
        "timeout": "timeout",
        "ratelimit": "rate-limit",
        "unavailable": "server-error",
        "readtimeout": "timeout",
    }
    assert all(a.error.kind == "infra" for a in by_id.values() if a.error)
    assert by_id["right"].passed is True and by_id["wrong"].passed is False
    assert results.run.completed_cases == 2 and not results.run.is_complete


def test_openai_evals_error_events_become_errored_attempts(tmp_path):
    """A copy of the real record where two samples' match events are replaced by the ``error``
    events ``RecorderBase.record_error`` writes for a failed request and for a crash."""
    lines = [json.loads(line) for line in OPENAI_EVALS.read_text().splitlines() if line.strip()]
    samples = sorted({e["sample_id"] for e in lines if "sample_id" in e})
    failed = {samples[0]: ("APIConnectionError", "Connection error."), samples[1]: ("KeyError", "'answer'")}
    out = []
    for event in lines:
        if event.get("sample_id") in failed and event.get("type") == "match":
            name, message = failed[event["sample_id"]]
            event = {**event, "type": "error", "data": {"type": name, "message": message}}
        out.append(event)
    path = tmp_path / "record.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in out))
    results = import_results("openai_evals", [path])
    errors = {c.id: c.attempts[0].error for c in results.cases if c.attempts[0].error}
    assert errors[samples[0]].kind == "infra" and "Connection error." in errors[samples[0]].message
    assert errors[samples[1]].kind == "target"
    assert not results.run.is_complete


def test_harbor_unknown_exception_type_with_a_network_message_is_infra(tmp_path):
    import shutil

    job = tmp_path / "job"
    shutil.copytree(HARBOR, job)
    trial = next(p for p in sorted(job.glob("*/result.json")))
    data = json.loads(trial.read_text())
    data["exception_info"] = {
        "exception_type": "ConnectionResetError",
        "exception_message": "[Errno 104] Connection reset by peer",
        "exception_traceback": "",
        "occurred_at": data.get("finished_at"),
    }
    data["verifier_result"] = None
    trial.write_text(json.dumps(data))
    results = import_results("harbor", [job])
    errors = [a.error for c in results.cases for a in c.attempts if a.error and "ConnectionReset" in a.error.message]
    assert errors and errors[0].kind == "infra"


# ------------------------------------------------------------------------------------- the gate


def evalgate(*args: str, cwd: Path, python_exe: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python_exe, "-m", "evals", *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )


def answered(tmp_path: Path) -> Path:
    """The same promptfoo eval as if every request had been answered (a copy of the real file
    with the failed rows turned into passes): the baseline a failed run is gated against."""
    data = json.loads(PROMPTFOO_NET.read_text())
    for row in data["results"]["results"]:
        row.update(success=True, score=1, failureReason=0, error=None)
        row["response"] = {"output": "Paris" if "capital" in json.dumps(row["vars"]) else "4"}
    path = tmp_path / "answered.json"
    path.write_text(json.dumps(data))
    return path


def test_gate_on_an_import_whose_requests_all_failed_is_incomplete_exit_3(tmp_path, python_exe):
    """The issue's run: every request failed with getaddrinfo ENOTFOUND (and friends). Before, the
    failures were wrong answers and the gate said `fail: regression ... -0.87`, exit 1."""
    seed = evalgate(
        "gate", "--results", str(answered(tmp_path)), "--results-format", "promptfoo", "--sha", "a" * 40, "--seed",
        cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert seed.returncode == 0, seed.stderr
    failed = evalgate(
        "gate", "--results", str(PROMPTFOO_NET), "--results-format", "promptfoo", cwd=tmp_path, python_exe=python_exe
    )
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "incomplete" in failed.stdout and "regression" not in failed.stdout


def test_config_slices_apply_to_imported_results(tmp_path, python_exe):
    """`slices: [language]` in evalgate.yml makes promptfoo's `vars.language` a slice on the
    `gate --results` path (it was dropped: vars are not slices unless asked for)."""
    (tmp_path / "evalgate.yml").write_text("suite: pf\ncases: []\nslices: [language]\nbaseline: {store: local}\n")
    done = evalgate(
        "gate", "--results", str(answered(tmp_path)), "--results-format", "promptfoo", "--sha", "b" * 40,
        cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    comparison = json.loads((tmp_path / ".evalgate" / "out" / "comparison.json").read_text())
    assert comparison["gate"]["slice_keys"] == ["language"]
    imported = load_results(tmp_path / ".evalgate" / "out" / "results.json")
    assert {c.slices["language"] for c in imported.cases} == {"en", "fr"}


def test_gate_slice_key_flag_and_a_key_no_case_carries(tmp_path, python_exe):
    ok = evalgate(
        "gate", "--results", str(answered(tmp_path)), "--results-format", "promptfoo", "--slice-key", "language",
        "--sha", "c" * 40, cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stdout + ok.stderr
    imported = load_results(tmp_path / ".evalgate" / "out" / "results.json")
    assert {c.slices.get("language") for c in imported.cases} == {"en", "fr"}

    typo = evalgate(
        "gate", "--results", str(answered(tmp_path)), "--results-format", "promptfoo", "--slice-key", "lang",
        cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert typo.returncode == 2, typo.stdout + typo.stderr
    assert "'lang'" in typo.stderr and "language" in typo.stderr and "question" in typo.stderr
    assert "Traceback" not in typo.stderr


def test_import_summary_line_says_complete_once(tmp_path, python_exe):
    done = subprocess.run(
        [python_exe, "-m", "evals", "import", "--from", "auto", str(INSPECT_NET), "-o", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "2/8 complete: PARTIAL" in done.stderr
    command = [python_exe, "-m", "evals", "import", "--from", "promptfoo", str(answered(tmp_path))]
    good = subprocess.run(
        [*command, "-o", str(tmp_path / "g.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "12/12 complete\n" in good.stderr or good.stderr.rstrip().endswith("12/12 complete"), good.stderr
    assert "complete, complete" not in good.stderr


def test_show_from_a_format_slices_exactly_as_import_does(tmp_path, python_exe):
    """`show --from promptfoo --slice-key language` exited 2 (the flag only picked among
    the slices the import had already made, and promptfoo vars are no slices by default)."""
    source = answered(tmp_path)
    imported = evalgate(
        "import", "--from", "promptfoo", str(source), "-o", "r.json", "--slice-key", "language",
        cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    shown = evalgate(
        "show", "--from", "promptfoo", str(source), "--slice-key", "language", "--json",
        cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    of_import = evalgate("show", "r.json", "--slice-key", "language", "--json", cwd=tmp_path, python_exe=python_exe)
    units = json.loads(shown.stdout)["units"]
    assert [u["unit"] for u in units] == ["overall", "language=en", "language=fr"]
    assert units == json.loads(of_import.stdout)["units"]


@pytest.mark.parametrize("command", ["import", "show"])
def test_a_slice_key_the_source_lacks_is_exit_2_for_import_and_show(tmp_path, python_exe, command):
    """`import --slice-key lang` used to write a file without that slice, exit 0."""
    out = ["-o", "r.json"] if command == "import" else []
    typo = evalgate(
        command, "--from", "promptfoo", str(answered(tmp_path)), *out, "--slice-key", "lang",
        cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert typo.returncode == 2, typo.stdout + typo.stderr
    assert "'lang'" in typo.stderr and "language" in typo.stderr and "--slice-key" in typo.stderr
    assert not (tmp_path / "r.json").exists()


def stored(tmp_path: Path) -> list[str]:
    """The commits of the local store's snapshots."""
    from evals.store.baseline import LocalStore

    return [s.sha for s in LocalStore(tmp_path / ".evalgate" / "baselines").list().snapshots]


def test_a_gate_without_a_config_seeds_nothing_and_names_the_reset(tmp_path, python_exe):
    """`gate --results FILE` with no evalgate.yml blessed the first file it was given
    (a broken promptfoo run became the baseline). Now it warns (no-baseline, exit 0, nothing
    stored) and prints the exact reset, which then stores that very run."""
    first = evalgate(
        "gate", "--results", str(answered(tmp_path)), "--results-format", "promptfoo", "--sha", "d" * 40,
        cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    assert "no-baseline" in first.stdout and stored(tmp_path) == []
    command = f"evalgate reset --sha {'d' * 40} --results .evalgate/out/results.json --reason 'first baseline'"
    assert command in first.stdout
    assert command in (tmp_path / ".evalgate" / "out" / "report.md").read_text()
    reset = evalgate(*shlex.split(command)[1:], cwd=tmp_path, python_exe=python_exe)
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert stored(tmp_path) == ["d" * 40]


def test_gate_seed_flag_stores_the_first_run(tmp_path, python_exe):
    seeded = evalgate(
        "gate", "--results", str(answered(tmp_path)), "--results-format", "promptfoo", "--sha", "e" * 40, "--seed",
        cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    assert stored(tmp_path) == ["e" * 40]


def test_compare_without_a_config_names_the_reset_of_its_candidate(tmp_path, python_exe):
    imported = evalgate(
        "import", "--from", "promptfoo", str(answered(tmp_path)), "-o", "cand.json", cwd=tmp_path, python_exe=python_exe
    )
    assert imported.returncode == 0, imported.stderr
    compared = evalgate("compare", "--candidate", "cand.json", cwd=tmp_path, python_exe=python_exe)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "evalgate reset --results cand.json --reason 'first baseline'" in compared.stdout
