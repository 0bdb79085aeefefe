"""The model-graded scorer ``judge`` against the local OpenAI-compatible server
(tests/openai_server.py): the judge's verdict and reasoning are kept in the attempt, and a judge
that cannot give a verdict (5xx after retries, a refused connection, a 401, a reply without a
verdict) makes the attempt an infra error — no verdict, never a wrong answer — so the run is
partial (exit 3) instead of a lower pass rate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from openai_server import OpenAIServer, status
from openai_server import openai_server as openai_server  # the fixture
from suites import write_suite

from evals.results.model import load_results

CASES = [
    {"id": "fr", "input": "Capital of France?", "expected": "Paris", "tags": {"lang": "en"}},
    {"id": "de", "input": "Capital of Germany?", "expected": "Berlin", "tags": {"lang": "en"}},
    {"id": "it", "input": "Capital of Italy?", "expected": "Milan", "tags": {"lang": "it"}},
]
RUBRIC = "The answer names the same city as the reference answer."


def grader(body: dict) -> str:
    """A judge model: compares the 'Answer to grade' with the 'Reference answer' in the prompt."""
    prompt = body["messages"][-1]["content"]
    reference = re.search(r"## Reference answer\n(.*?)\n", prompt).group(1)
    answer = re.search(r"## Answer to grade\n(.*?)\n", prompt).group(1)
    ok = reference.lower() in answer.lower()
    return json.dumps({"verdict": "pass" if ok else "fail", "score": 1 if ok else 0, "reasoning": f"answer {answer!r}"})


def suite(tmp_path: Path, server: OpenAIServer, **judge) -> Path:
    (tmp_path / "bot.py").write_text(
        "ANSWERS = {'France': 'Paris', 'Germany': 'Bonn', 'Italy': 'Rome'}\n"
        "def answer(text):\n"
        "    return next(v for k, v in ANSWERS.items() if k in text)\n"
    )
    params = {"model": "local:judge-1", "base_url": server.url, "api_key_env": None, "rubric": RUBRIC, **judge}
    return write_suite(
        tmp_path,
        CASES,
        target={"python": "bot:answer"},
        scorers=[{"judge": params}],
        slices=["lang"],
        retries={"max": 0, "backoff_s": [0]},
        concurrency=1,  # the scripted faults then hit one case's judge calls in a row
    )


def run(config: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evals", "run", "--config", str(config), "-o", str(out), "--progress", "lines"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_judge_verdict_and_reasoning_are_kept(tmp_path, openai_server):
    openai_server.responder = grader
    done = run(suite(tmp_path, openai_server), tmp_path / "r.json")
    assert done.returncode == 0, done.stderr
    results = load_results(tmp_path / "r.json")
    by_id = {c.id: c.attempts[0] for c in results.cases}
    assert {k: a.passed for k, a in by_id.items()} == {"fr": True, "de": False, "it": False}
    judge = by_id["de"].metadata["judge"]
    assert judge == {"verdict": "fail", "score": 0.0, "reasoning": "answer 'Bonn'", "model": "local:judge-1"}
    assert by_id["fr"].scores == {"judge": 1.0}
    prompt = openai_server.requests[0]["messages"][-1]["content"]
    assert RUBRIC in prompt and openai_server.requests[0]["model"] == "judge-1"
    assert "pass rate" in done.stderr  # the summary table


@pytest.mark.parametrize(
    ("faults", "extra", "said"),
    [
        ([status(500)] * 3, {"retries": 2, "backoff_s": 0}, "HTTP 500"),
        ([status(401, body='{"error": {"message": "Incorrect API key"}}')], {"retries": 2}, "HTTP 401"),
    ],
    ids=["5xx-after-retries", "401"],
)
def test_a_failed_judge_call_is_infra_never_a_wrong_answer(tmp_path, openai_server, faults, extra, said):
    openai_server.responder = grader
    config = suite(tmp_path, openai_server, **extra)
    openai_server.script(None, *faults)  # the first requests, whichever case they grade
    done = run(config, tmp_path / "r.json")
    assert done.returncode == 3, done.stderr  # a partial run: one case has no verdict
    results = load_results(tmp_path / "r.json")
    errored = [a for c in results.cases for a in c.attempts if a.error]
    assert len(errored) == 1 and errored[0].error.kind == "infra" and errored[0].passed is None
    assert said in errored[0].error.message and "gave no verdict" in errored[0].error.message
    assert results.run.status == "error" and results.run.completed_cases == 2
    calls = len(openai_server.requests)
    assert calls == (3 + 2 if said == "HTTP 500" else 1 + 2)  # 401 is not retried


def test_unreachable_judge_and_a_reply_without_verdict_are_infra(tmp_path, openai_server):
    config = suite(tmp_path, openai_server, base_url="http://127.0.0.1:9/v1", retries=0)
    done = run(config, tmp_path / "down.json")
    assert done.returncode == 3, done.stderr
    down = load_results(tmp_path / "down.json")
    assert all(
        a.error.kind == "infra" and "connection error" in a.error.message for c in down.cases for a in c.attempts
    )

    openai_server.responder = lambda body: "I think it is fine."
    done = run(suite(tmp_path, openai_server, retries=0), tmp_path / "chatty.json")
    assert done.returncode == 3, done.stderr
    chatty = load_results(tmp_path / "chatty.json")
    assert all("no JSON verdict" in a.error.message for c in chatty.cases for a in c.attempts)


def test_judge_config_errors_are_exit_2(tmp_path, openai_server):
    config = suite(tmp_path, openai_server, rubric=None)
    done = run(config, tmp_path / "r.json")
    assert done.returncode == 2 and "exactly one of rubric" in done.stderr, done.stderr
    config = suite(tmp_path, openai_server, api_key_env="EVALGATE_TEST_NO_SUCH_KEY")
    done = run(config, tmp_path / "r.json")
    assert done.returncode == 2 and "EVALGATE_TEST_NO_SUCH_KEY" in done.stderr, done.stderr


def test_run_start_up_does_not_load_the_judges_template_engine(python_exe):
    """`evalgate run` start-up is measured (benchmarks/bench_cli_start.py): the judge's jinja2 is
    loaded only when a judge is configured."""
    done = subprocess.run(
        [python_exe, "-c", "import sys, evals.cli.run; print(sorted({'jinja2', 'numpy', 'scipy'} & set(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]"
