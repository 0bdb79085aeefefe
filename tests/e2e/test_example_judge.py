"""examples/judge end to end (docs/spec.md#judge-noise, docs/spec.md#human-labels): the capitals suite graded by
the scripted lenient, noisy judge three times an answer. The report shows the judge's
self-agreement and its agreement with the cases' human verdicts (the four hedged answers it
passes and people fail); ``metrics.judge_agreement`` holds at its floor of 0.8 and fails the gate
at 0.95, where the agreement's whole interval lies below it."""

from __future__ import annotations

import shutil
import subprocess
import sys

from fakes.openai_server import OpenAIServer
from fakes.paths import ROOT

EXAMPLE = ROOT / "examples" / "judge"


def evalgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evals", *args], capture_output=True, text=True, timeout=120)


def test_the_judge_example_reports_its_noise_and_its_agreement_with_people(tmp_path):
    folder = tmp_path / "judge"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", ".evalgate"))
    sys.path.insert(0, str(folder))
    try:
        from judge_model import respond
    finally:
        sys.path.remove(str(folder))
    config = folder / "evalgate.yml"
    with OpenAIServer(responder=respond) as server:
        config.write_text(config.read_text().replace("http://127.0.0.1:8766/v1", server.url))
        done = evalgate("run", "--config", str(config), "-o", str(tmp_path / "run.json"))
        assert done.returncode == 0, done.stderr
    assert len(server.requests) == 24 * 3
    report = tmp_path / "report.md"
    done = evalgate(
        "compare", "--candidate", str(tmp_path / "run.json"), "--config", str(config), "--report", str(report)
    )
    assert done.returncode == 0 and "no-baseline" in done.stdout, done.stderr
    text = report.read_text()
    assert "agreed with people on 83% of 24 labelled cases" in text and "| Candidate | 24 × 3 |" in text
    assert "It disagrees with people on: australia, canada, brazil, turkey." in text
    assert "(16.7 pp more lenient)" in text
    config.write_text(config.read_text().replace("judge_agreement: {min: 0.8}", "judge_agreement: {min: 0.95}"))
    done = evalgate("compare", "--candidate", str(tmp_path / "run.json"), "--config", str(config))
    assert done.returncode == 1, done.stderr
    assert "judge_agreement on overall below its floor min 0.95: 0.8333 (90% CI 0.6762 to 0.9229" in done.stdout
