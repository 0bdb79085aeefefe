"""promptfoo's ratings given in its viewer (a ``componentResults`` entry of assertion type ``human``) become
the case's ``metadata.human_verdict``, and its model-graded assertions' verdicts the judge's
(``metadata.judge.passed``), so a gate with ``metrics.judge_agreement`` sets one against the other
(docs/spec.md#human-labels) on an imported run too."""

from __future__ import annotations

import copy
import json

from fakes.paths import FIXTURES
from fakes.suites import load_suite

from evals.compare.analysis import compare
from evals.importers import import_results

PROMPTFOO = FIXTURES / "importers" / "promptfoo" / "repeat2_results.json"


def rated(rubric: bool, human: bool | None) -> dict:
    """A promptfoo component list: an llm-rubric verdict, and a person's rating when given."""
    found = [{"pass": rubric, "score": float(rubric), "reason": "judge", "assertion": {"type": "llm-rubric"}}]
    if human is not None:
        found.append({"pass": human, "score": float(human), "reason": "Manual result", "assertion": {"type": "human"}})
    return found


def test_promptfoo_human_ratings_and_model_graded_verdicts_are_mapped(tmp_path):
    data = json.loads(PROMPTFOO.read_text())
    rows = data["results"]["results"]
    for row in rows:
        if not row.get("gradingResult"):  # the crashed case was never graded
            continue
        rating = False if row["testCase"].get("description") == "france" else None  # people fail France's answer
        row["gradingResult"]["componentResults"] = rated(True, rating)
    path = tmp_path / "rated.json"
    path.write_text(json.dumps(data))
    imported = import_results("promptfoo", [path])
    cases = {c.id: c for c in imported.cases}
    assert cases["france"].metadata["human_verdict"] is False
    assert "human_verdict" not in cases["planet"].metadata
    graded = [a for c in imported.cases if c.id != "crash" for a in c.attempts]
    assert graded and all(a.metadata["judge"]["passed"] is True for a in graded)
    # The unrated file maps neither.
    plain = import_results("promptfoo", [PROMPTFOO])
    assert not any("human_verdict" in c.metadata or "judge" in a.metadata for c in plain.cases for a in c.attempts)
    config = load_suite(tmp_path / "suite", [], metrics={"judge_agreement": {"min": 0.8, "min_cases": 1}})
    c = compare(copy.deepcopy(imported), imported, config)
    assert c.judge is not None and c.judge.humans is not None
    assert (c.judge.humans.labelled, c.judge.humans.agreement.disagreements) == (1, ["france"])
