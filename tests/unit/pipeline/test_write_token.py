"""A job that runs the suite needs a token proven read-only, or the workflow's opt-in
(docs/spec.md#trust-boundaries): what GET /repos reports as ``permissions`` is not proof, since
GitHub leaves it out, or says ``push: false``, for installation tokens that can write. Only GitHub
refusing a harmless write (403) proves it; anything else refuses the suite (exit 2) unless
``allow-write-token-with-suite: true``, and then the step summary says why the opt-in was needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.github_server import GitHubServer, github_api_fixture  # noqa: F401  (registers the fixture)
from fakes.suites import echo_cases, load_suite

from evals.common.errors import UsageError
from evals.github.activity import Activity
from evals.pipeline.exposure import WRITE_OPT_IN_VAR, guard_exposed, refuse_write_token

PR = Activity(kind="smoke", why="a pull request", in_actions=True, event_name="pull_request", pr_number=7)


@pytest.mark.parametrize("answer", ["omitted", "push-false"])
def test_a_write_token_that_get_repos_calls_read_only_is_refused(github_api: GitHubServer, answer: str):
    """Before: ``push`` false or missing let the suite run with a token that could write."""
    gh = github_api
    gh.repo_permissions = answer
    with pytest.raises(UsageError) as refused:
        refuse_write_token(PR, gh.client(), env={})
    said = str(refused.value)
    assert said.startswith("this job's token can write to octo/evals (POST /repos/octo/evals/git/refs")
    assert "422 Reference name is invalid" in said and "(GitHub validated the body: the token may write)" in said
    assert 'github-token: "" (mode: run)' in said and "allow-write-token-with-suite: true" in said
    assert refused.value.exit_code == 2
    assert refuse_write_token(PR, gh.client(token=gh.read_token), env={}) is None  # 403: proven read-only
    assert refuse_write_token(PR, gh.client(token=""), env={}) is None  # no token: nothing to prove


@pytest.mark.parametrize("fault", ["404", "503"])
def test_a_probe_github_does_not_answer_is_no_proof(github_api: GitHubServer, tmp_path: Path, fault: str):
    """A 404 (a proxy, a host without the route) or a 5xx after retries proves nothing, even for
    the read-only token: refused without the opt-in, run with it, and the summary says why."""
    gh = github_api
    gh.repo_permissions = "omitted"
    gh.faults.add("POST", r"/git/refs$", fault, times=10)
    with pytest.raises(UsageError) as refused:
        refuse_write_token(PR, gh.client(token=gh.read_token), env={})
    said = str(refused.value)
    assert said.startswith("evalgate could not establish that this job's token cannot write to octo/evals")
    assert "GitHub answered: probe write access (contents) (POST /api/v3/repos/octo/evals/git/refs): " in said
    assert fault in said and "Only GitHub refusing that write (403) proves a token read-only" in said

    summary = tmp_path / "summary.md"
    env = {WRITE_OPT_IN_VAR: "true", "GITHUB_STEP_SUMMARY": str(summary)}
    config = load_suite(tmp_path / "suite", echo_cases(1), scorers=["exact"])
    warned = guard_exposed(PR, config, gh.client(token=gh.read_token), env=env)
    written = summary.read_text(encoding="utf-8")
    assert "the suite ran in a job whose token was not proven read-only (POST /repos/octo/evals/git/refs" in written
    assert "the suite's code could reach that token" in written and warned[-1] in written
