"""examples/agent end to end (docs/spec.md#agent-trajectories): the weather agent against the scripted local server, its
second version skipping a tool while giving the same answers. The gate fails naming the trajectory
unit while pass_rate is unchanged; the report shows the advisory ``trajectory_changed`` and the
aligned tool sequences; ``evalgate trace`` reads the case from the results file and from the
history, and ``history show --metric tool_calls`` has the target's tool calls. The same agent runs
on each wire format (evalgate.yml, evalgate.responses.yml, evalgate.anthropic.yml) against that
format's local server, with the same verdicts."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.anthropic_server import AnthropicServer
from fakes.openai_server import OpenAIServer
from fakes.paths import ROOT
from fakes.responses_server import ResponsesServer

from evals.compare.analysis import compare, load_runs
from evals.report.html import render_html
from evals.results.files import load_results
from evals.run.execution import execute
from evals.suite.loading import load_config

EXAMPLE = ROOT / "examples" / "agent"
KEY = "sk-ant-local-example"


def evalgate(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "evals", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example copied to a folder with the server's URL; baseline.json (version 1) and
    candidate.json (version 2) run in it."""
    folder = tmp_path_factory.mktemp("agent") / "agent"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", ".evalgate"))
    sys.path.insert(0, str(folder))
    try:
        from model import respond
    finally:
        sys.path.remove(str(folder))
    with OpenAIServer(responder=respond) as server:
        config = folder / "evalgate.yml"
        config.write_text(config.read_text().replace("http://127.0.0.1:8765/v1", server.url), encoding="utf-8")
        execute(load_config(config), folder / "baseline.json", progress=False)
        server.responder = functools.partial(respond, regress=True)
        execute(load_config(config), folder / "candidate.json", progress=False)
    return folder


@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic"])
def test_the_agent_runs_on_every_format_and_its_gate_fails_on_the_skipped_tool(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Each format's config against its server (serve.py --format): tool calls traced, tokens
    counted, and version 2, which skips to_fahrenheit, fails on the trajectory, not the answers."""
    folder = tmp_path / "agent"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", ".evalgate"))
    sys.path.insert(0, str(folder))
    try:
        from model import RESPONDERS
    finally:
        sys.path.remove(str(folder))
    name = {"chat": "evalgate.yml", "responses": "evalgate.responses.yml", "anthropic": "evalgate.anthropic.yml"}[kind]
    respond = RESPONDERS[kind]
    servers = {"chat": OpenAIServer, "responses": ResponsesServer, "anthropic": AnthropicServer}
    server = servers[kind](api_key=KEY) if kind == "anthropic" else servers[kind]()
    server.responder = respond
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # the key evalgate.anthropic.yml's server takes (serve.py)
    config = folder / name
    text = config.read_text(encoding="utf-8")
    config.write_text(re.sub(r"http://127\.0\.0\.1:8765(/v1)?", server.url, text), encoding="utf-8")
    with server:
        execute(load_config(config), folder / "baseline.json", progress=False)
        server.responder = functools.partial(respond, regress=True)
        execute(load_config(config), folder / "candidate.json", progress=False)
    paris = next(c for c in load_results(folder / "baseline.json").cases if c.id == "paris-f").attempts[0]
    assert paris.passed and paris.output == "FINAL ANSWER: 68" and paris.tokens_in and paris.tokens_out
    assert [e.name for e in paris.trace if e.kind == "tool_call"] == ["get_weather", "to_fahrenheit"]
    done = evalgate(
        "compare", "--baseline", "baseline.json", "--candidate", "candidate.json", "--config", name, cwd=folder
    )
    assert done.returncode == 1, done.stderr
    assert "fail: regression: tool_sequence on unit=F -1" in done.stdout


def test_the_gate_fails_on_the_trajectory_while_pass_rate_is_unchanged(runs: Path):
    done = evalgate(
        "compare",
        "--baseline",
        "baseline.json",
        "--candidate",
        "candidate.json",
        "--config",
        "evalgate.yml",
        "--json",
        "comparison.json",
        "--report",
        "report.md",
        cwd=runs,
    )
    assert done.returncode == 1, done.stderr
    assert "fail: regression: tool_sequence on unit=F -1" in done.stdout
    c = json.loads((runs / "comparison.json").read_text())
    units = {(u["metric"], u["unit"]): u for u in c["units"]}
    assert units["pass_rate", "overall"]["delta"] == 0.0 and units["pass_rate", "overall"]["verdict"] != "regressed"
    assert {(u["metric"], u["unit"]) for u in c["units"] if u["blocking"] and u["verdict"] == "regressed"} == {
        ("tool_sequence", "overall"),
        ("tool_sequence", "unit=F"),
    }
    changed = units["trajectory_changed", "overall"]
    assert changed["gated"] is False and changed["blocking"] is False and changed["candidate"] == 0.5
    assert units["trajectory_changed", "unit=C"]["candidate"] == 0.0
    diff = c["case_diff"]
    assert diff["n_pass_to_fail"] == 0 and diff["n_trajectory_changes"] == 12
    paris = next(e for e in diff["trajectory_changes"] if e["id"] == "paris-f")
    assert paris["baseline_tools"] == ["get_weather", "to_fahrenheit"] and paris["candidate_tools"] == ["get_weather"]
    assert paris["tools_diverge_at"] == 1
    report = (runs / "report.md").read_text()
    assert "| overall | trajectory\\_changed | 0.0%\u00a0→\u00a050.0% |" in report
    assert "tool calls (first divergence at call 2, marked ≠):" in report
    assert "| 2 **≠** | to\\_fahrenheit | – |" in report


def test_the_html_shows_the_aligned_sequences_and_the_trace_as_calls(runs: Path):
    baseline, candidate = load_runs(runs / "baseline.json", runs / "candidate.json")
    comparison = compare(baseline, candidate, load_config(runs / "evalgate.yml"))
    page = render_html(results=load_results(runs / "candidate.json"), comparison=comparison)
    assert (
        '<tr class="diverge" title="first divergence"><td class="num">2 ≠</td><td>to_fahrenheit</td><td>–</td></tr>'
        in page
    )
    assert "→ get_weather({&#34;city&#34;: &#34;Paris&#34;})" in page
    assert "tools: get_weather → to_fahrenheit" not in page  # the candidate's fold shows the candidate's calls
    assert "trace (6 events; tools: get_weather)" in page
    assert "evalgate trace paris-f --results FILE" in page


def test_trace_prints_a_case_timeline_from_the_results_file(runs: Path):
    done = evalgate("trace", "paris-f", "--results", "baseline.json", cwd=runs)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "case paris-f (unit=F) — baseline.json, 1 attempt(s)"
    assert lines[2].startswith("attempt 1: pass · score 1.00 · final_answer 1.00")
    assert lines[4:12] == [
        "  #1   step 1: calls get_weather (finish_reason tool_calls)",
        '  #2   → get_weather({"city": "Paris"})',
        '  #3   ← get_weather: {"city": "Paris", "temp_c": 20}',
        "  #4   step 2: calls to_fahrenheit (finish_reason tool_calls)",
        '  #5   → to_fahrenheit({"celsius": 20})',
        "  #6   ← to_fahrenheit: 68.0",
        "  #7   step 3: answers (finish_reason stop)",
        "  #8   assistant: FINAL ANSWER: 68",
    ]
    assert "  tools: get_weather → to_fahrenheit" in lines and "  output: FINAL ANSWER: 68" in lines
    missing = evalgate("trace", "paris-x", "--results", "baseline.json", cwd=runs)
    assert (
        missing.returncode == 2
        and "baseline.json has no case 'paris-x'; did you mean paris-f, paris-c" in missing.stderr
    )
    wrong = evalgate("trace", "paris-f", "--results", "baseline.json", "--attempt", "2", cwd=runs)
    assert wrong.returncode == 2 and "has 1 attempt(s): --attempt 1 to 1" in wrong.stderr


def test_trace_and_tool_calls_from_the_history(runs: Path, tmp_path: Path):
    env = {"EVALGATE_HISTORY": "on"}
    url = str(tmp_path / "h.sqlite")
    added = evalgate("history", "add", "--url", url, "baseline.json", "candidate.json", cwd=runs, env=env)
    assert added.returncode == 0, added.stderr
    done = evalgate("trace", "paris-f", "--history", "--url", url, cwd=runs, env=env)
    assert done.returncode == 0, done.stderr
    assert "— history run 2 of suite agent" in done.stdout.splitlines()[0]  # the newest run: the candidate
    assert "  tools: get_weather" in done.stdout and "to_fahrenheit(" not in done.stdout
    assert "  output: FINAL ANSWER: 68" in done.stdout
    shown = evalgate("history", "show", "--url", url, "--metric", "tool_calls", cwd=runs, env=env)
    assert shown.returncode == 0, shown.stderr
    overall = next(line for line in shown.stdout.splitlines() if line.startswith("overall"))
    assert overall.split()[1:] == ["36.0", "24.0"]  # 12 × 1 + 12 × 2 calls, then 12 + 12 × 1


def test_trace_says_what_to_do_with_flags_that_do_not_fit(runs: Path, tmp_path: Path):
    url_alone = evalgate("trace", "paris-f", "--url", "h.sqlite", cwd=runs)
    assert url_alone.returncode == 2 and "--url and --suite read the history: add --history" in url_alone.stderr
    nowhere = evalgate("trace", "paris-f", "--history", "--url", str(tmp_path / "none.sqlite"), cwd=runs)
    assert nowhere.returncode == 2 and f"no history at {tmp_path / 'none.sqlite'}" in nowhere.stderr
    assert not (tmp_path / "none.sqlite").exists()  # reading never creates one
