"""More evidence pays once (docs/spec.md#more-evidence): the baseline side's batches run
in a throwaway git worktree of the baseline's commit, whose own response cache folder went with it,
so the same unchanged gate re-run asked the model again for every baseline answer. The worktree's
runs use the checkout's folder: a re-run makes no request on either side, against the local
OpenAI-compatible server (tests/fakes/openai_server.py), which counts what it answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.openai_server import OpenAIServer, last_user_text
from fakes.suites import git

# The baseline's model breaks 20 en and 2 ko cases, the candidate's 20 other en and 9 ko: the ko
# slice looks 7 of 25 worse, inconclusive on the first look, so a batch re-runs it on both sides.
WRONG = {"v1": {*range(20), 475, 476}, "v2": {*range(20, 40), *range(477, 486)}}


def answer(body: dict[str, Any]) -> str:
    text = last_user_text(body)
    return "wrong" if int(text[1:]) in WRONG[str(body["model"])] else text


def _config(repo: Path, server: OpenAIServer, version: str, **gate: Any) -> None:
    config = {
        "suite": "t",
        "cases": "cases.jsonl",
        "target": {"openai": {"base_url": server.url, "model": f"local:{version}", "api_key_env": None}},
        "scorers": ["exact"],
        "slices": ["language"],
        "retries": {"max": 0, "backoff_s": [0]},
        **({"gate": gate} if gate else {}),
    }
    (repo / "evalgate.yml").write_text(yaml.safe_dump(config), encoding="utf-8")


def _gate(repo: Path, store: Path, *extra: str) -> tuple[dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALGATE_CACHE", "EVALGATE_CACHE_DIR")}
    done = subprocess.run(
        [sys.executable, "-m", "evals", "gate", "--config", "evalgate.yml", "--store", "local",
         "--baseline-dir", str(store), *extra],
        cwd=repo, capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    out = Path(extra[extra.index("--out-dir") + 1]) if "--out-dir" in extra else Path(".evalgate/out")
    path = repo / out / "comparison.json"
    return (json.loads(path.read_text()) if path.exists() else {}), done.stderr


@pytest.mark.e2e
def test_an_unchanged_gate_with_more_evidence_re_run_asks_nothing_on_either_side(tmp_path):
    repo, store = tmp_path / "repo", tmp_path / "store"
    repo.mkdir()
    cases = [
        {"id": f"c{i:03d}", "input": f"q{i}", "expected": f"q{i}", "tags": {"language": "ko" if i >= 475 else "en"}}
        for i in range(500)
    ]
    (repo / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    with OpenAIServer(responder=answer) as server:
        _config(repo, server, "v1")
        git(repo, "init", "-q")
        (repo / ".gitignore").write_text(".evalgate/\n", encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "baseline")
        seeded, err = _gate(repo, store, "--seed")
        assert seeded["verdict"] == "no-baseline", err
        _config(repo, server, "v2", more_evidence={"max_batches": 3})
        git(repo, "commit", "-qam", "candidate")

        first, err = _gate(repo, store)
        me = first["more_evidence"]
        assert me["baseline_side"].startswith("re-run at the baseline's commit"), err
        assert len(me["looks"]) == 2 and me["attempts"] == 50, err  # one batch: 25 ko cases a side
        asked = {m: sum(1 for r in server.requests if r["model"] == m) for m in ("v1", "v2")}
        assert asked == {"v1": 500 + 25, "v2": 500 + 25}  # the seed, the first look, one batch a side

        again, err = _gate(repo, store, "--out-dir", ".evalgate/out2")  # no batch file of the first to reuse
        assert again["verdict"] == first["verdict"] and len(again["more_evidence"]["looks"]) == 2, err
        assert len(server.requests) == 1050  # not one request more, on either side
    batches = repo / ".evalgate" / "out2" / "more-evidence"
    for side in ("candidate", "baseline"):
        results = json.loads((batches / f"{side}-1.json").read_text())
        assert all(a["cached"] for c in results["cases"] for a in c["attempts"]), side
