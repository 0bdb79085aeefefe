"""Batch pricing through the gate (docs/spec.md#batch-pricing), on Anthropic Message Batches
(tests/fakes/batch_server.py; OpenAI Batch in tests/unit/run/test_batch_lane.py): `evalgate run`
submits and exits 3, pending; a gate of that file is incomplete (exit 3) and names the `evalgate
run --resume` that collects it; once the batch ended that collects, and the gate of the collected
file passes (seeding the baseline) and says what was batched; a synchronous gate of the same
suite is then served by the cache the collection filled, and its report names the tier under "What changed"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.batch_server import BatchServer
from fakes.batch_server import batch_server as batch_server  # the fixture
from fakes.suites import echo_cases, write_suite

pytestmark = pytest.mark.e2e

KEY = "sk-ant-api03-test-0123456789"


def evalgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["ANTHROPIC_API_KEY"] = KEY
    return subprocess.run(
        [sys.executable, "-m", "evals", *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


def test_a_batch_run_is_submitted_collected_by_a_second_invocation_and_gated(tmp_path: Path, batch_server: BatchServer):
    target = {"base_url": batch_server.url, "model": "anthropic:claude-sonnet-4-5", "price_in_per_mtok": 3.0}
    cases = echo_cases(90, lang=["en", "fr"])
    common = {"scorers": ["exact"], "slices": ["lang"], "retries": {"max": 1, "backoff_s": [0]}}
    write_suite(tmp_path, cases, target={"anthropic": {**target, "batch": True}}, **common)
    (tmp_path / "sync.yml").write_text(
        (tmp_path / "evalgate.yml").read_text(encoding="utf-8").replace("batch: true", "batch: false"),
        encoding="utf-8",
    )
    resume = ("run", "--config", "evalgate.yml", "--output", "results.json", "--resume")
    gate = ("gate", "--config", "evalgate.yml", "--results", "results.json", "--out-dir", "out")

    submitted = evalgate(*resume[:-1], cwd=tmp_path)
    assert (
        submitted.returncode == 3 and "submitted 90 requests to the Anthropic Message Batches API" in submitted.stderr
    )
    assert json.loads((tmp_path / "results.json").read_text())["run"]["status"] == "pending"
    early = evalgate(*gate, cwd=tmp_path)
    headline = (tmp_path / "out" / "comment.md").read_text().split("\n", 2)[1]
    assert early.returncode == 3 and "INCOMPLETE" in headline and "status pending" in headline
    assert "collect, score and gate them with `evalgate run --resume`" in early.stdout

    batch_server.finish()
    collected = evalgate(*resume, cwd=tmp_path)
    assert collected.returncode == 0, collected.stderr
    gated = evalgate(*gate, "--seed", cwd=tmp_path)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "90 batched (at the batch price)" in (tmp_path / "out" / "comment.md").read_text()

    sync = evalgate("gate", "--config", "sync.yml", "--out-dir", "o3", cwd=tmp_path)
    comment = (tmp_path / "o3" / "comment.md").read_text()
    assert sync.returncode == 0, comment
    assert "params.tier" in comment.split("What changed", 1)[1].split("</summary>", 1)[0]
    assert not [p for p in batch_server.paths if p.endswith("/v1/messages")]  # all from the cache
