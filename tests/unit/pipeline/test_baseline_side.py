"""Where more evidence re-runs the baseline's side (evals.pipeline.baseline_side): from the openai
target the baseline run recorded, when that record defines the target; otherwise why not. And
``evalgate run --target FILE``, which runs it; and the jobs in Actions where batches may run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fakes.suites import echo_cases, load_suite

from evals.common.errors import InputFileError
from evals.github.activity import Activity
from evals.pipeline.baseline_side import _recorded_target, remove_baseline_side
from evals.pipeline.first_look import batches_refused
from evals.results.model import Results, RunInfo, TargetInfo
from evals.suite.options import RunOptions
from evals.suite.overrides import with_overrides

PROMPT = "You are terse.\n"
SHA = "sha256:" + hashlib.sha256(PROMPT.encode()).hexdigest()


def _openai_suite(tmp_path: Path, **openai):
    params = {"base_url": "http://127.0.0.1:9/v1", "model": "local:v2", "api_key_env": "MY_KEY", **openai}
    params.setdefault("headers", {"X-Org": "o"})
    return load_suite(tmp_path, echo_cases(3), target={"openai": params})


def _baseline(target: TargetInfo | None) -> Results:
    return Results(run=RunInfo(suite="t", status="success", total_cases=0, completed_cases=0, target=target))


def _recorded(**params) -> TargetInfo:
    base = {"base_url": "http://127.0.0.1:9/v1", "temperature": 0.7, "system_prompt": {"path": "p.md", "sha256": SHA}}
    return TargetInfo(kind="openai", model="local:v1", params={**base, **params}, system_prompt=PROMPT)


def test_a_recorded_openai_target_with_its_prompt_is_rebuilt_and_run_with_the_suites_key_and_headers(tmp_path):
    config = _openai_suite(tmp_path, tools={}, temperature=0.1, seed=5)
    side = _recorded_target(config, tmp_path / "evalgate.yml", _baseline(_recorded()))
    assert not isinstance(side, str), side
    try:
        assert side.target is not None and side.key.startswith("recorded-target-")
        written = json.loads(Path(side.target).read_text(encoding="utf-8"))["openai"]
        assert written["model"] == "local:v1" and written["temperature"] == 0.7
        assert written["seed"] is None and written["tools"] == {}  # the candidate's seed does not leak in
        assert Path(written["system_prompt"]).read_text(encoding="utf-8") == PROMPT
        # What `evalgate run --target` makes of it: the record's definition, the suite's transport.
        ran = with_overrides(config, RunOptions(target=side.target))
        run = ran.target.openai
        assert (run.model, run.temperature, run.seed) == ("local:v1", 0.7, None)
        assert run.api_key_env == "MY_KEY" and run.headers == {"X-Org": "o"}
        assert "X-Org" not in Path(side.target).read_text(encoding="utf-8")  # headers are never written
        assert config.target.openai.model != "local:v1"  # the suite's own config is not changed
    finally:
        remove_baseline_side(side)
    assert not side.scratch.exists()


@pytest.mark.parametrize(
    ("target", "why"),
    [
        (TargetInfo(kind="python", model=None), "recorded target is python, which is code"),
        (None, "recorded target is no"),
        (_recorded(tools={"search": "tools:search"}, max_steps=8), "used max_steps, tools"),
        (_recorded().model_copy(update={"system_prompt": None}), "not in its results file with that sha256"),
        (_recorded().model_copy(update={"system_prompt": "You are ***.\n"}), "not in its results file"),
        (_recorded().model_copy(update={"model": None}), "names no endpoint or model"),
    ],
)
def test_a_record_that_does_not_define_the_target_says_why(tmp_path, target, why):
    config = _openai_suite(tmp_path)
    side = _recorded_target(config, tmp_path / "evalgate.yml", _baseline(target))
    assert isinstance(side, str) and why in side


def test_an_unrecorded_prompt_is_taken_from_its_file_here_when_the_sha256_matches(tmp_path):
    config = _openai_suite(tmp_path)
    target = _recorded().model_copy(update={"system_prompt": None})  # a run before the text was recorded
    (tmp_path / "p.md").write_text(PROMPT, encoding="utf-8")
    side = _recorded_target(config, tmp_path / "evalgate.yml", _baseline(target))
    assert not isinstance(side, str), side
    remove_baseline_side(side)
    (tmp_path / "p.md").write_text("You are verbose.\n", encoding="utf-8")
    assert "here differs" in _recorded_target(config, tmp_path / "evalgate.yml", _baseline(target))


def test_a_python_suite_cannot_rebuild_an_openai_baseline(tmp_path):
    config = load_suite(tmp_path, echo_cases(3), target={"python": "bot:answer"})
    why = _recorded_target(config, tmp_path / "evalgate.yml", _baseline(_recorded()))
    assert "suite's own target is not openai" in why


def test_run_target_file_must_hold_a_target(tmp_path):
    config = _openai_suite(tmp_path)
    bad = tmp_path / "t.json"
    bad.write_text('{"openai": {"model": "no-provider"}}', encoding="utf-8")
    with pytest.raises(InputFileError, match="not a target"):
        with_overrides(config, RunOptions(target=str(bad)))
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(InputFileError, match="cannot read a target"):
        with_overrides(config, RunOptions(target=str(bad)))


def test_in_actions_batches_run_only_in_a_job_that_ran_the_suite_and_never_beside_a_prs_code():
    job = Activity(kind="smoke", why="pull_request", in_actions=True, event_name="pull_request", pr_number=7)
    beside_pr_code = batches_refused(job, ran_suite=True)
    assert beside_pr_code and "the pull request's code ran in this job" in beside_pr_code
    refused = batches_refused(job, ran_suite=False)
    assert refused and "gates a results file and runs no code of the repository" in refused
    push = Activity(kind="smoke", why="push", in_actions=True, event_name="push")
    assert batches_refused(push, ran_suite=True) is None  # a push's code is the branch's own, both sides
    local = Activity(kind="full", why="local")
    assert batches_refused(local, ran_suite=False) is None  # `evalgate gate --results` resumes locally


def test_a_recorded_anthropic_target_is_rebuilt_with_its_platform_and_the_suites_key(tmp_path):
    params = {"base_url": "http://127.0.0.1:9", "model": "anthropic:claude-new", "api_key_env": "MY_KEY"}
    config = load_suite(tmp_path, echo_cases(3), target={"anthropic": {**params, "temperature": 0.1, "top_p": 0.5}})
    recorded = {
        "base_url": "http://127.0.0.1:9",
        "platform": "anthropic",
        "max_tokens": 512,
        "temperature": 0.7,
        "system_prompt": {"path": "p.md", "sha256": SHA},
    }
    target = TargetInfo(kind="anthropic", model="anthropic:claude-old", params=recorded, system_prompt=PROMPT)
    side = _recorded_target(config, tmp_path / "evalgate.yml", _baseline(target))
    assert not isinstance(side, str), side
    try:
        ran = with_overrides(config, RunOptions(target=side.target)).target.anthropic
        assert (ran.model, ran.max_tokens, ran.temperature, ran.top_p) == ("anthropic:claude-old", 512, 0.7, None)
        assert ran.api_key_env == "MY_KEY" and ran.cache_prompt is True and ran.platform == "anthropic"
        assert "recorded anthropic target" in side.description
    finally:
        remove_baseline_side(side)
    openai = _openai_suite(tmp_path / "o")
    assert "suite's own target is not anthropic" in _recorded_target(
        openai, tmp_path / "evalgate.yml", _baseline(target)
    )


def test_a_recorded_responses_target_is_rebuilt_on_the_responses_api(tmp_path):
    config = _openai_suite(tmp_path)
    target = _recorded(api="responses", max_output_tokens=64).model_copy(update={"system_prompt": PROMPT})
    side = _recorded_target(config, tmp_path / "evalgate.yml", _baseline(target))
    assert not isinstance(side, str), side
    try:
        ran = with_overrides(config, RunOptions(target=side.target)).target.openai
        assert (ran.api, ran.max_output_tokens, ran.max_tokens) == ("responses", 64, None)
    finally:
        remove_baseline_side(side)
    chat = _recorded_target(config, tmp_path / "evalgate.yml", _baseline(_recorded()))
    assert not isinstance(chat, str)
    try:  # a record from before api: existed is Chat Completions
        assert with_overrides(config, RunOptions(target=chat.target)).target.openai.api == "chat"
    finally:
        remove_baseline_side(chat)
