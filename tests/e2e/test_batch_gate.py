"""Batch pricing through the CLI, the gate and the shipped workflow (docs/spec.md#batch-pricing), on
Anthropic Message Batches (tests/fakes/batch_server.py; OpenAI Batch in
tests/unit/run/test_batch_lane.py): a submitted run (`evalgate run`, exit 3, pending) gates as
incomplete (exit 3), naming the `evalgate run --resume` that collects it; once the batch has ended,
a gate whose out dir holds the submitted run collects it, passes (seeding the baseline) and says
what was batched; a synchronous gate of the same suite is then served by the cache the collection
filled, and its report names the tier under "What changed". And eval-gate-batch.yml whole, in the
Actions simulator (tests/fakes/actions.py) against the batch fake and the fake GitHub server: a push
submits, a scheduled run while the batch runs says so, the next one after it ended collects, gates
against the baseline and promotes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from fakes.actions import WORKFLOWS, Job, Runner
from fakes.batch_server import BatchServer
from fakes.batch_server import batch_server as batch_server  # the fixture
from fakes.github_server import GitHubServer
from fakes.suites import echo_cases, git, write_suite

from evals.results.files import load_results
from evals.results.model import Results
from evals.run.execution import execute
from evals.store.baseline import GitHubReleaseStore
from evals.store.promotion import SEED_REASON
from evals.suite.loading import load_config

pytestmark = pytest.mark.e2e

KEY = "sk-ant-api03-test-0123456789"


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["ANTHROPIC_API_KEY"] = KEY
    return env


def evalgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evals", *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=environment()
    )


def test_a_submitted_run_is_incomplete_until_a_gate_collects_and_gates_it(tmp_path: Path, batch_server: BatchServer):
    target = {"base_url": batch_server.url, "model": "anthropic:claude-sonnet-4-5", "price_in_per_mtok": 3.0}
    cases = echo_cases(90, lang=["en", "fr"])
    common = {"scorers": ["exact"], "slices": ["lang"], "retries": {"max": 1, "backoff_s": [0]}}
    write_suite(tmp_path, cases, target={"anthropic": {**target, "batch": True}}, **common)
    (tmp_path / "sync.yml").write_text(
        (tmp_path / "evalgate.yml").read_text(encoding="utf-8").replace("batch: true", "batch: false"),
        encoding="utf-8",
    )
    results = tmp_path / "batch" / "results.json"
    gate = ("gate", "--config", "evalgate.yml", "--results", str(results), "--out-dir", "out")

    submitted = evalgate("run", "--config", "evalgate.yml", "--output", str(results), cwd=tmp_path)
    assert submitted.returncode == 3, submitted.stderr
    assert "submitted 90 requests to the Anthropic Message Batches API" in submitted.stderr
    assert json.loads(results.read_text())["run"]["status"] == "pending"
    early = evalgate(*gate, cwd=tmp_path)  # what a gate of that file says: incomplete, and how to collect
    headline = (tmp_path / "out" / "comment.md").read_text().split("\n", 2)[1]
    assert early.returncode == 3 and "INCOMPLETE" in headline and "status pending" in headline
    assert "collect, score and gate them with `evalgate run" in early.stdout

    # Once it has ended, a gate whose out dir holds the submitted run collects it (rather than
    # submitting again), gates it and seeds the baseline; its Spend says what was batched.
    batch_server.finish()
    out_dir = str(results.parent)
    collected = evalgate("gate", "--config", "evalgate.yml", "--out-dir", out_dir, "--seed", cwd=tmp_path)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert json.loads(results.read_text())["run"]["provider_batch"]["state"] == "collected"
    assert len(batch_server.batches) == 1
    assert "90 batched (at the batch price)" in (results.parent / "comment.md").read_text()

    sync = evalgate("gate", "--config", "sync.yml", "--out-dir", "o3", cwd=tmp_path)
    comment = (tmp_path / "o3" / "comment.md").read_text()
    assert sync.returncode == 0, comment
    assert "params.tier" in comment.split("What changed", 1)[1].split("</summary>", 1)[0]
    assert not [p for p in batch_server.paths if p.endswith("/v1/messages")]  # all from the cache


def test_the_batch_workflow_whole_submits_on_push_and_a_schedule_collects_gates_and_promotes(
    tmp_path: Path, batch_server: BatchServer, monkeypatch: pytest.MonkeyPatch
):
    repo = tmp_path / "repo"
    target = {"base_url": batch_server.url, "model": "anthropic:claude-sonnet-4-5", "batch": True}
    common = {"scorers": ["exact"], "slices": ["lang"], "baseline": {"tag": "eval-baseline"}}
    write_suite(repo / "suite", echo_cases(90, lang=["en", "fr"]), target={"anthropic": target}, **common)
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a batch-priced suite")
    sha = git(repo, "rev-parse", "HEAD")
    # The baseline: the same suite's batched run, collected here and promoted as a seeding gate would.
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("GITHUB_EVENT_NAME", raising=False)  # CI's own event: not this run's
    config, seed = load_config(repo / "suite" / "evalgate.yml"), tmp_path / "seed.json"
    execute(config, seed, progress=False, cache=False)  # submitted
    batch_server.finish()
    seeded = execute(config, seed, progress=False, cache=False, resume=True)
    assert isinstance(seeded, Results) and seeded.run.status == "success"
    batch_server.finished = False
    (repo / "CHANGES.txt").write_text("a change on main\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the push")
    head = git(repo, "rev-parse", "HEAD")

    with GitHubServer() as gh:
        store = GitHubReleaseStore(gh.client(), tag="eval-baseline", repo=repo)
        store.promote(seeded, sha=sha, verdict="seed", reason=SEED_REASON, blessed=True)
        runner = Runner(gh, tmp_path / "actions")

        def event(name: str, payload: dict[str, object]) -> Job:
            """The event on main; the key is a secret of the environment evalgate-batch only."""
            payload["repository"] = {"full_name": gh.repo, "default_branch": "main"}
            return Job(
                name, payload, repo, head, "refs/heads/main", gh.write_token,
                workflow=WORKFLOWS / "eval-gate-batch.yml",
                variables={"EVALGATE_BATCH_CONFIG": "suite/evalgate.yml"},
                environments={"evalgate-batch": {"ANTHROPIC_API_KEY": KEY}},
            )  # fmt: skip

        push = event("push", {"ref": "refs/heads/main", "after": head})
        assert runner.jobs(replace(push, variables={})) == []  # inert until the variable is set
        assert list(runner.run_jobs(push)) == ["submit"]  # its run's exit 3 is the step's success
        assert "submitted 90 requests to the Anthropic Message Batches API" in runner.logs["submit"]
        ((_, key, kept),) = runner.caches
        assert key == "evalgate-batch-1-1" and load_results(kept / "results.json").run.status == "pending"

        schedule = event("schedule", {"schedule": "23 * * * *"})
        waiting = runner.run_jobs(schedule)
        assert list(waiting) == ["collect"] and waiting["collect"]["outputs"] == {"ready": "false"}
        assert "is in_progress" in runner.logs["collect"]

        batch_server.finish()
        done = runner.run_jobs(schedule)
        assert list(done) == ["collect", "gate"] and done["collect"]["outputs"] == {"ready": "true"}
        assert len(batch_server.batches) == 2  # the baseline's and the push's: the schedule submitted none
        promoted = GitHubReleaseStore(gh.client(), tag="eval-baseline", repo=repo).list().snapshots
        assert [(s.sha, s.verdict) for s in promoted] == [(sha, "seed"), (head, "pass")], runner.logs
        # The next schedule restores the newest entry, the collected file: nothing to do, no second gate.
        assert runner.run_jobs(schedule) == {"collect": {"outputs": {"ready": "false"}, "result": "success"}}
        assert "collected and gated already: nothing to do" in runner.logs["collect"]
