"""inspect_ai logs and promptfoo results that real users and the tools' own test suites wrote
(tests/fixtures/README.md, "Real files", names each source): logs that were never scored or hold
no samples must stop the import (exit 2) instead of seeding a baseline nothing can be gated
against; a provider that never answered and a crashed assertion are the candidate's failures."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
from fakes.paths import FIXTURES

from evals.common.errors import InputFileError
from evals.importers import import_results
from evals.results.summary import summarize

FIX = FIXTURES / "importers"
INSPECT = FIX / "inspect_ai" / "real"
UNSCORED_EVAL = INSPECT / "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"
SAMPLES_WITHOUT_SCORES = INSPECT / "log_tool_call_error.json"
NO_SAMPLES = INSPECT / "2024-08-29T15-11-17+00-00_popularity_5EAmX6wjMFqea6WY7XHzZp.json"
NO_SAMPLES_V2 = INSPECT / "log_version_2.txt"
NO_SAMPLES_CANCELLED = INSPECT / "2025-05-12T20-28-13-04-00_no-samples.json"
CANCELLED = INSPECT / "2025-05-12T20-28-13-04-00_popularity.json"
OLD_USAGE = INSPECT / "log_formats.json"
PROMPTFOO = FIX / "promptfoo"
NEVER_ANSWERED = PROMPTFOO / "real" / "naksu_promptfoo-results.json"
ASSERTION_CRASH = PROMPTFOO / "real" / "nicheiq_results_5rows.json"
CRASHING_PROVIDER = PROMPTFOO / "repeat2_results.json"

# Real error records from inspect's own logs (tests/fixtures/importers/inspect_ai/netfail.eval).
CONNECTION_ERROR = {"message": "Connection error.", "traceback": "openai.APIConnectionError: Connection error."}
FORMAT_AUTO = ("--results-format", "auto")
TOOL_ERROR = {"message": "ValueError('bad tool arguments')", "traceback": "ValueError: bad tool arguments"}


def _gate(folder: Path, results: Path, python_exe: str, *extra: str) -> subprocess.CompletedProcess:
    """`evalgate gate --results FILE --results-format auto` with a local store that seeds."""
    config = folder / "evalgate.yml"
    if not config.exists():
        config.write_text("suite: imported\ncases: cases.jsonl\nbaseline: {store: local, on_missing: seed}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [python_exe, "-m", "evals", "gate", "--mode", "compare", "--results", str(results), *FORMAT_AUTO, *extra],
        cwd=folder,
        env={**env, "GITHUB_SHA": "1" * 40},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


# ---------------------------------------------------------------------------- inspect: unscored


def test_a_log_no_sample_of_which_has_a_score_is_refused(tmp_path, python_exe):
    with pytest.raises(
        InputFileError, match=r"the log was not scored: no sample has a score \(10 samples; scorers: match\)"
    ):
        import_results("auto", [UNSCORED_EVAL])
    with pytest.raises(InputFileError, match=r"inspect score 2025-02-11T15-17-00-05-00_popularity_\w+\.eval"):
        import_results("inspect_ai", [UNSCORED_EVAL])
    # Its samples were stripped of scores, although its results summarise a scorer.
    with pytest.raises(InputFileError, match=r"no sample has a score \(1 sample\), although .* scorer includes"):
        import_results("auto", [SAMPLES_WITHOUT_SCORES])

    # On the gate's path it must not become the baseline every later run is "inconclusive" against.
    proc = _gate(tmp_path, UNSCORED_EVAL, python_exe, "--promote")
    assert proc.returncode == 2, proc.stderr
    assert "the log was not scored" in proc.stderr
    assert not any(p.name.startswith("baseline-") for p in tmp_path.rglob("*"))

    # Only a log where no sample has a score is unscored. Among scored samples, an errored one is
    # an error of its kind (a connection failure is infra, anything else the target's: a failed
    # attempt, never a pass) and one the scorer gave no value has no verdict.
    data = json.loads(CANCELLED.read_text())
    mixed = copy.deepcopy(data)
    first, second, third = mixed["samples"]
    mixed["samples"].append({**copy.deepcopy(third), "id": 4})  # still scored: I
    first.update(scores=None, error=CONNECTION_ERROR)
    second.update(scores=None, error=TOOL_ERROR)
    third.update(scores={})
    cases = {c.id: c.attempts[0] for c in import_results("inspect_ai", [_write_json(tmp_path / "m.json", mixed)]).cases}
    assert cases["1"].error.kind == "infra" and cases["1"].passed is None
    assert cases["2"].error.kind == "target" and cases["2"].passed is False
    assert cases["3"].error is None and cases["3"].passed is None and cases["3"].score is None
    assert cases["4"].passed is False and cases["4"].score == 0.0

    # Every sample errored: a run of errors (here infra, so incomplete), not an unscored log.
    failed = copy.deepcopy(data)
    for sample in failed["samples"]:
        sample.update(scores=None, error=CONNECTION_ERROR)
    run = import_results("inspect_ai", [_write_json(tmp_path / "f.json", failed)]).run
    assert (run.completed_cases, run.total_cases) == (0, 3)


# ------------------------------------------------------------------------- inspect: no samples


@pytest.mark.parametrize(
    ("log", "why"),
    [
        (NO_SAMPLES, "its summary counts 1 completed"),  # an eval-set log, status success
        (NO_SAMPLES_V2, "the run ended with status success"),  # no dataset size either
        (NO_SAMPLES_CANCELLED, "its summary counts 3 completed"),  # cancelled, `samples: []`
    ],
    ids=["eval-set", "version-2", "cancelled"],
)
def test_a_log_without_samples_is_refused(log, why):
    with pytest.raises(InputFileError, match=rf"the log holds no samples although {why}: it was written without them"):
        import_results("auto", [log])


def test_a_log_without_samples_says_why_or_is_a_partial_run(tmp_path):
    data = json.loads(NO_SAMPLES_CANCELLED.read_text())
    data["eval"]["config"]["log_samples"] = False
    with pytest.raises(InputFileError, match=r"written with --no-log-samples; nothing to import \(re-run without"):
        import_results("inspect_ai", [_write_json(tmp_path / "nolog.json", data)])
    # Cancelled before any sample finished: nothing was lost, the run is partial (0 of 3).
    data = json.loads(NO_SAMPLES_CANCELLED.read_text())
    data["results"] = None
    run = import_results("inspect_ai", [_write_json(tmp_path / "early.json", data)]).run
    assert (run.status, run.completed_cases, run.total_cases) == ("cancelled", 0, 3)
    del data["eval"]["dataset"]["samples"], data["eval"]["dataset"]["sample_ids"]
    with pytest.raises(
        InputFileError, match=r"holds no samples: the run stopped before any sample finished \(status: cancelled\)"
    ):
        import_results("inspect_ai", [_write_json(tmp_path / "unsized.json", data)])


# ---------------------------------------------------------------------------- inspect: details


def test_old_inspect_logs_keep_their_token_counts_and_a_plain_partial_note():
    """inspect 0.3.41 kept usage only in output.usage (no model_usage)."""
    attempt = import_results("inspect_ai", [OLD_USAGE]).cases[0].attempts[0]
    assert (attempt.tokens_in, attempt.tokens_out) == (66, 2)
    assert import_results("inspect_ai", [CANCELLED]).run.message == f"{CANCELLED.name}: cancelled"


# ------------------------------------------------------------------------------------- promptfoo


def test_a_provider_that_never_answered_fails_its_cases_as_the_target(tmp_path, python_exe):
    """naksu (promptfoo 0.122.0): the Python provider's worker never started. The provider is often
    the app under test, so this is the candidate failing, never infra that drops its cases out of the
    pass rate (one silent provider among many would then let the gate pass); a run of nothing but
    such errors is never blessed."""
    r = import_results("auto", [NEVER_ANSWERED])
    attempts = [a for c in r.cases for a in c.attempts]
    assert len(attempts) == 3 and all(a.error.kind == "target" and a.passed is False for a in attempts)
    assert "Worker failed to become ready" in attempts[0].error.message
    proc = _gate(tmp_path, NEVER_ANSWERED, python_exe, "--promote")
    assert "not promoting: every one of its 3 attempts ended in an error" in proc.stderr, proc.stderr


def test_a_crashed_assertion_is_a_failed_assertion():
    """nicheiq (promptfoo 0.121.2): `Custom function threw error: ...` comes from an assertion
    that does not compile and from one that cannot parse the model's prose as JSON alike; the file
    cannot tell the two apart, so both are wrong answers (the pass rate is the same either way)."""
    r = import_results("promptfoo", [ASSERTION_CRASH])
    assert all(a.passed is False and a.error is None for c in r.cases for a in c.attempts)
    assert summarize(r).errors_by_kind == {}
