"""Batch pricing through the shipped workflow's steps and the gate (docs/spec.md#batch-pricing), on
Anthropic Message Batches (tests/fakes/batch_server.py; OpenAI Batch in
tests/unit/run/test_batch_lane.py): eval-gate-batch.yml's submit step (`evalgate run`, exit 3,
pending) passes; a gate of that file is incomplete (exit 3) and names the `evalgate run --resume`
that collects it; the scheduled collect step says the batch still runs; once it has ended, a gate
whose out dir holds the submitted run collects it, passes (seeding the baseline) and says what was
batched; a synchronous gate of the same suite is then served by the cache the
collection filled, and its report names the tier under "What changed"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakes.batch_server import BatchServer
from fakes.batch_server import batch_server as batch_server  # the fixture
from fakes.paths import ROOT
from fakes.suites import echo_cases, write_suite

pytestmark = pytest.mark.e2e

KEY = "sk-ant-api03-test-0123456789"
WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "eval-gate-batch.yml").read_text(encoding="utf-8"))


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["ANTHROPIC_API_KEY"] = KEY
    return env


def evalgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evals", *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=environment()
    )


def workflow_step(job: str, name: str, folder: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """The ``run:`` script of a step of eval-gate-batch.yml as GitHub runs it (bash -eo pipefail),
    with the runner's variables and its ``env:`` pointed at ``folder``'s suite; and what it wrote to
    GITHUB_OUTPUT."""
    step = next(s for s in WORKFLOW["jobs"][job]["steps"] if s.get("name") == name)
    output = folder / "github-output"
    output.unlink(missing_ok=True)
    (folder / "runner" / "evalgate-batch").mkdir(parents=True, exist_ok=True)
    env = environment() | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # evalgate, python
        "RUNNER_TEMP": str(folder / "runner"),
        "GITHUB_OUTPUT": str(output),
        "CONFIG": "evalgate.yml",  # vars.EVALGATE_BATCH_CONFIG
    }
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        capture_output=True, text=True, timeout=120, cwd=folder, env=env,
    )  # fmt: skip
    return done, output.read_text(encoding="utf-8") if output.exists() else ""


def test_the_batch_workflow_submits_and_a_gate_collects_and_gates(tmp_path: Path, batch_server: BatchServer):
    target = {"base_url": batch_server.url, "model": "anthropic:claude-sonnet-4-5", "price_in_per_mtok": 3.0}
    cases = echo_cases(90, lang=["en", "fr"])
    common = {"scorers": ["exact"], "slices": ["lang"], "retries": {"max": 1, "backoff_s": [0]}}
    write_suite(tmp_path, cases, target={"anthropic": {**target, "batch": True}}, **common)
    (tmp_path / "sync.yml").write_text(
        (tmp_path / "evalgate.yml").read_text(encoding="utf-8").replace("batch: true", "batch: false"),
        encoding="utf-8",
    )
    results = tmp_path / "runner" / "evalgate-batch" / "results.json"
    gate = ("gate", "--config", "evalgate.yml", "--results", str(results), "--out-dir", "out")

    # A push to main: the submit step's run exits 3, pending, and the step passes.
    submitted, _ = workflow_step("submit", "Submit", tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    assert "submitted 90 requests to the Anthropic Message Batches API" in submitted.stderr
    assert json.loads(results.read_text())["run"]["status"] == "pending"
    early = evalgate(*gate, cwd=tmp_path)  # what a gate of that file says: incomplete, and how to collect
    headline = (tmp_path / "out" / "comment.md").read_text().split("\n", 2)[1]
    assert early.returncode == 3 and "INCOMPLETE" in headline and "status pending" in headline
    assert "collect, score and gate them with `evalgate run" in early.stdout

    # The schedule's collect step while the batch runs: it says so, nothing for the gate.
    waiting, ready = workflow_step("collect", "Collect, or say the batch still runs", tmp_path)
    assert waiting.returncode == 0 and "is in_progress" in waiting.stderr and ready == "ready=false\n"
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
