"""Bridging a judge change (docs/spec.md#judge-bridging), as a user meets it: a suite gated with a
lenient judge switches to a strict one (two models of the local OpenAI-compatible server,
tests/fakes/judges.py). With the outputs unchanged the gate re-judges the baseline's stored
outputs and finds no regression, showing how far the two judges agree; a real regression behind the
switch still fails; ``evalgate rejudge`` does the same on demand; a baseline whose outputs were cut
stays ``incompatible``, and so does a change of anything besides the judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fakes.judges import lenient_or_strict
from fakes.openai_server import OpenAIServer
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import write_suite

from evals.cli.app import main
from evals.compare.compatibility import judge_change
from evals.pipeline.rejudge import bridge_judge
from evals.results.files import load_results
from evals.store.selection import load_baselines, open_store_for
from evals.suite.loading import load_config

CASES = [{"id": f"c{i:02d}", "input": f"q{i}", "expected": f"a{i}"} for i in range(40)]
# Reads its answers at each call, so a test changes what the target answers without re-importing it.
BOT = (
    "import json, pathlib\n\n\ndef answer(question):\n"
    "    return json.loads(pathlib.Path(__file__).with_name('answers.json').read_text())[question]\n\n\n"
    "def nonempty(output, expected):\n    return bool(output)\n"
)
FIRST_WRONG = range(8)  # answered wrong from the start: the lenient judge passed them, the strict one does not


def suite(
    folder: Path,
    server: OpenAIServer,
    judge: str,
    wrong: range = FIRST_WRONG,
    key: str | None = None,
    more_scorers: list[dict] | None = None,
    **extra: object,
) -> Path:
    """The suite with its judge ``judge`` (lenient or strict; its key in ``key``) and a target answering
    ``wrong`` cases wrongly."""
    module = "bot_" + re.sub(r"\W", "_", folder.name)  # one module per test: an imported target stays imported
    (folder / f"{module}.py").write_text(BOT, encoding="utf-8")
    answers = {c["input"]: f"no idea ({i})" if i in wrong else f"it is {c['expected']}" for i, c in enumerate(CASES)}
    (folder / "answers.json").write_text(json.dumps(answers), encoding="utf-8")
    params = {"model": f"local:{judge}", "base_url": server.url, "api_key_env": key, "rubric": "Right?", "retries": 0}
    config = {
        "target": {"python": f"{module}:answer", "path": ["."]},
        "scorers": [{"judge": params}, *(more_scorers or [])],
        "cache": {"dir": "cache"},
        "baseline": {"store": "local", "path": "baselines"},
        **extra,
    }
    return write_suite(folder, CASES, **config)


def comparison(folder: Path) -> dict:
    return json.loads((folder / ".evalgate" / "out" / "comparison.json").read_text(encoding="utf-8"))


@pytest.mark.e2e
def test_a_switch_to_a_strict_judge_is_bridged_and_a_real_regression_behind_it_still_fails(
    tmp_path, openai_server, monkeypatch, capsys
):
    openai_server.responder = lenient_or_strict
    monkeypatch.chdir(tmp_path)
    config = str(suite(tmp_path, openai_server, "lenient"))
    assert main(["reset", "--reason", "first", "--config", config, "--sha", "base"]) == 0

    # The outputs do not change, the judge does. (More evidence on: its baseline side would be judged by the old judge.)
    suite(tmp_path, openai_server, "strict", gate={"more_evidence": {"max_batches": 1}})
    asked = len(openai_server.requests)
    code = main(["gate", "--config", config, "--sha", "strict", "--html", "report.html"])
    c = comparison(tmp_path)
    assert (code, c["verdict"]) in ((0, "pass"), (0, "inconclusive")), c["reason"]
    assert not [u for u in c["units"] if u["verdict"] == "regressed"]
    overall = next(u for u in c["units"] if u["unit"] == "overall" and u["metric"] == "pass_rate")
    assert overall["delta"] == 0 and overall["baseline"] == pytest.approx(32 / 40)
    bridge = c["judge_bridge"]
    assert bridge["changes"] == ["model: local:lenient → local:strict"]
    # The same outputs, the same judge: the candidate's run had just judged them, the cache answers the bridge.
    assert bridge["rejudged"] == 40 and bridge["spend"]["cached"] == 40
    agreement = bridge["agreement"]
    assert (agreement["n"], agreement["agreed"], agreement["a_pass_rate"]) == (40, 32, 1.0)
    assert agreement["disagreements"] == [f"c{i:02d}" for i in FIRST_WRONG]
    assert len(openai_server.requests) - asked == 40  # judge calls only (the target is a python function)
    report = (tmp_path / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
    headline = next(line for line in report.splitlines() if "evalgate" in line and "**" in line)
    assert "re-judged with the candidate's judge: the two judges agreed on 32 of 40 (80%" in headline
    assert "Verdicts the new judge gives otherwise: c00, c01" in report
    assert "drift guard skipped" not in report  # the blessed snapshot is the baseline: re-judged with it
    assert "baseline was re-judged with the candidate's judge" in c["more_evidence"]["baseline_side"]
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="judge-agreement"' in html and "agreed on 32 of 40 (80%" in html

    suite(tmp_path, openai_server, "strict", wrong=range(30))  # a real regression behind the switch
    asked = len(openai_server.requests)
    capsys.readouterr()
    assert main(["gate", "--config", config, "--sha", "worse"]) == 1
    c = comparison(tmp_path)
    assert c["verdict"] == "fail" and c["judge_bridge"]["agreement"]["agreed"] == 32, c["reason"]
    # The baseline's verdicts came from the response cache: only the 22 changed outputs were judged.
    assert len(openai_server.requests) - asked == 22
    assert c["judge_bridge"]["spend"]["cached"] == 40


def test_rejudge_rescores_a_stored_run_with_todays_judge_within_the_limits(
    tmp_path, openai_server, monkeypatch, capsys
):
    openai_server.responder = lenient_or_strict
    monkeypatch.chdir(tmp_path)
    config = str(suite(tmp_path, openai_server, "lenient"))
    assert main(["run", "--config", config, "-o", "lenient.json"]) == 0
    suite(tmp_path, openai_server, "strict")
    capsys.readouterr()
    assert main(["rejudge", "--results", "lenient.json", "--config", config]) == 0
    said = capsys.readouterr().out
    assert "re-judged 40 outputs of lenient.json" in said and "agreed on 32 of 40 (80%" in said, said
    assert "lenient.rejudged.json" in said
    before, after = load_results(tmp_path / "lenient.json"), load_results(tmp_path / "lenient.rejudged.json")
    assert all(c.attempts[0].passed for c in before.cases)
    assert [c.id for c in after.cases if not c.attempts[0].passed] == [f"c{i:02d}" for i in FIRST_WRONG]
    assert [c.attempts[0].output for c in after.cases] == [c.attempts[0].output for c in before.cases]
    assert after.run.definitions is not None and "local:strict" in json.dumps(after.run.definitions)

    # A limit counts the judge's calls: re-judging that reaches it writes nothing (exit 3).
    suite(tmp_path, openai_server, "strict", limits={"max_tokens": 1})
    code = main(["rejudge", "--results", "lenient.json", "--config", config, "--output", "x.json", "--no-cache"])
    assert code == 3 and "stopped at limits.max_tokens" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    # A judge that reports no tokens cannot be held to max_tokens: it stops too.
    suite(tmp_path, openai_server, "strict", limits={"max_tokens": 1_000_000})
    openai_server.report_usage = False
    code = main(["rejudge", "--results", "lenient.json", "--config", config, "--output", "x.json", "--no-cache"])
    assert code == 3 and "the judge reported no tokens" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_a_baseline_whose_outputs_were_cut_stays_incompatible_with_that_reason(
    tmp_path, openai_server, monkeypatch, capsys
):
    openai_server.responder = lenient_or_strict
    monkeypatch.chdir(tmp_path)
    config = str(suite(tmp_path, openai_server, "lenient"))
    assert main(["run", "--config", config, "-o", "lenient.json"]) == 0
    stored = json.loads((tmp_path / "lenient.json").read_text(encoding="utf-8"))
    stored["cases"][3]["attempts"][0]["output_truncated"] = True
    (tmp_path / "cut.json").write_text(json.dumps(stored), encoding="utf-8")
    assert main(["reset", "--reason", "first", "--config", config, "--results", "cut.json", "--sha", "b"]) == 0
    suite(tmp_path, openai_server, "strict")
    asked = len(openai_server.requests)
    capsys.readouterr()
    assert main(["gate", "--config", config, "--sha", "strict"]) == 1
    said = capsys.readouterr().out
    assert "incompatible" in said and "model: local:lenient → local:strict" not in said
    assert "the judge alone changed, but the baseline cannot be re-judged" in said.lower()
    assert "1 whose output was cut when stored" in said
    assert len(openai_server.requests) == asked  # decided before running the suite: nothing was paid


@pytest.mark.e2e
def test_a_bridge_that_cannot_be_paid_or_set_up_here_is_never_a_pass(tmp_path, openai_server, monkeypatch, capsys):
    """Gating a results file: re-judging past a limit is ``incomplete``; a judge whose key this job
    lacks, or a candidate another config scored, leaves the gate ``incompatible``, saying why; python
    scorers are not run in an Actions job that may run no code of the repository."""
    openai_server.responder = lenient_or_strict
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BRIDGE_TEST_KEY", "k")
    config = str(suite(tmp_path, openai_server, "lenient", key="BRIDGE_TEST_KEY"))
    assert main(["reset", "--reason", "first", "--config", config, "--sha", "b"]) == 0
    suite(tmp_path, openai_server, "strict", key="BRIDGE_TEST_KEY")
    assert main(["run", "--config", config, "-o", "strict.json"]) == 0  # what the candidate's job ran
    gate = ["gate", "--config", config, "--results", "strict.json", "--sha", "c"]

    suite(tmp_path, openai_server, "strict", key="BRIDGE_TEST_KEY", limits={"max_tokens": 100})
    assert main(gate) == 3  # the candidate's judging already spent more than the limit
    c = comparison(tmp_path)
    assert c["verdict"] == "incomplete" and "stopped at limits.max_tokens" in c["reason"], c["reason"]

    suite(tmp_path, openai_server, "strict", key="BRIDGE_TEST_KEY")
    monkeypatch.delenv("BRIDGE_TEST_KEY")
    assert main(gate) == 1
    c = comparison(tmp_path)
    assert c["verdict"] == "incompatible" and "api_key_env names BRIDGE_TEST_KEY, which is not set" in c["reason"]
    monkeypatch.setenv("BRIDGE_TEST_KEY", "k")

    suite(tmp_path, openai_server, "stricter", key="BRIDGE_TEST_KEY")  # the judge changed again after the run
    assert main(gate) == 1
    c = comparison(tmp_path)
    assert c["verdict"] == "incompatible" and "the candidate was not scored by this config" in c["reason"], c["reason"]


@pytest.mark.e2e
def test_the_bridge_runs_no_code_where_none_may_run_and_pays_only_for_what_is_compared(
    tmp_path, openai_server, monkeypatch
):
    """``bridge_judge`` on the gate's own objects: python scorers are not run in an Actions job that
    gates a results file; an imported candidate (no config_hash) is not bridged; a smoke gate
    re-judges its cases only; a partial candidate pays for nothing."""
    openai_server.responder = lenient_or_strict
    monkeypatch.chdir(tmp_path)
    module = "bot_" + re.sub(r"\W", "_", tmp_path.name)
    checks = [{"python": f"{module}:nonempty"}]
    config = str(suite(tmp_path, openai_server, "lenient", more_scorers=checks))
    assert main(["reset", "--reason", "first", "--config", config, "--sha", "b"]) == 0
    suite(tmp_path, openai_server, "strict", more_scorers=checks)
    assert main(["run", "--config", config, "-o", "strict.json"]) == 0
    strict, candidate = load_config(config), load_results(tmp_path / "strict.json")
    baselines = load_baselines(open_store_for(strict), strict)
    refused = bridge_judge(strict, baselines, candidate, runs_code=False)
    assert refused.bridge is None and "python scorers would run the repository's code" in (refused.refused or "")
    imported = candidate.model_copy(update={"run": candidate.run.model_copy(update={"config_hash": None})})
    assert "the candidate was not scored by this config" in (
        bridge_judge(strict, baselines, imported, runs_code=True).refused or ""
    )
    # A smoke gate's candidate: only its cases are re-judged.
    smoke = candidate.model_copy(update={"run": candidate.run.model_copy(update={"subset": "smoke"})})
    smoke.cases = [c for c in candidate.cases if c.id in ("c00", "c01", "c20")]
    bridged = bridge_judge(strict, baselines, smoke, runs_code=True)
    assert bridged.bridge is not None and (bridged.bridge.rejudged, bridged.bridge.kept) == (3, 37)
    assert bridged.bridge.agreement.disagreements == ["c00", "c01"]
    # A partial candidate makes the gate incomplete whatever the baseline says: no judge is paid for it.
    asked = len(openai_server.requests)
    partial = candidate.model_copy(update={"run": candidate.run.model_copy(update={"status": "cancelled"})})
    assert bridge_judge(strict, baselines, partial, runs_code=True).bridge is None
    assert len(openai_server.requests) == asked


JUDGE = {"name": "judge", "python": None, "params": {"model": "local:lenient", "rubric": "Right?"}}
STRICT = {**JUDGE, "params": {**JUDGE["params"], "model": "local:strict", "pass_threshold": 0.7}}
EXACT = {"name": "exact", "python": None, "params": {}}


@pytest.mark.parametrize(
    ("after", "changes"),
    [
        ({"scorers": [STRICT, EXACT]}, ["model: local:lenient → local:strict", "pass_threshold: default → 0.7"]),
        ({"scorers": [{**JUDGE, "params": {**JUDGE["params"], "rubric": "Exactly right?"}}, EXACT]}, ["rubric edited"]),
        ({"scorers": [STRICT]}, None),  # a scorer removed besides
        ({"scorers": [STRICT, {**EXACT, "params": {"strip": True}}]}, None),  # another scorer changed too
        ({"scorers": [EXACT, STRICT]}, None),  # order changed
        ({"scorers": [STRICT, EXACT], "directions": {"judge": "lower"}}, None),
        ({"scorers": [{**STRICT, "python": "mine:judge"}, EXACT]}, None),  # a callable named judge is no judge
        ({"scorers": [JUDGE, EXACT]}, None),  # nothing changed
    ],
    ids=["model-threshold", "rubric", "removed", "other", "order", "direction", "callable", "same"],
)
def test_only_a_change_of_the_judge_alone_is_bridged(after, changes):
    before = {"scorers": [JUDGE, EXACT], "directions": {}}
    assert judge_change(before, {"directions": {}, **after}) == changes
