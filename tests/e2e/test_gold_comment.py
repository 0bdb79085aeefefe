"""Gold files of the quickstart's PR comment (``comment.md``), passing and failing, as coverage.py
keeps its reports: a change to the report shows up as a reviewable diff of
``tests/e2e/gold/*.md``. After a deliberate change, rewrite them with
``EVALGATE_UPDATE_GOLD=1 pytest tests/e2e/test_gold_comment.py`` and review ``git diff``.

Only what differs between two runs of the same code is normalised: the baseline's age (it grows
with the date) and the candidate's latencies (they are measured)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.paths import ROOT

GOLD = Path(__file__).parent / "gold"

# (what varies between runs of the same code, what it becomes)
VOLATILE = [
    (re.compile(r"\b\d+ (minutes?|hours?|days?) old\b"), r"N \1 old"),
    (re.compile(r"\b\d+(?:\.\d+)? (minutes?|hours?|days?) ago\b"), r"N \1 ago"),
    (re.compile(r"^\| candidate \| \d+ ms \| \d+ ms \|", re.M), "| candidate | N ms | N ms |"),
]


def normalised(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def comment_of(tmp_path: Path, **env: str) -> tuple[int, str]:
    suite = tmp_path / "quickstart"
    shutil.copytree(ROOT / "examples" / "quickstart", suite, ignore=shutil.ignore_patterns(".evalgate", "__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "evals", "gate", "--config", "evalgate.yml"],
        cwd=suite,
        env={k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "QUICKSTART_"))} | env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    comment = suite / ".evalgate" / "out" / "comment.md"
    assert comment.exists(), done.stderr
    return done.returncode, normalised(comment.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("name", "env", "exit_code"),
    [("quickstart-pass", {}, 0), ("quickstart-fail-ko", {"QUICKSTART_REGRESS": "ko"}, 1)],
)
def test_the_quickstart_comment_matches_its_gold_file(tmp_path: Path, name: str, env: dict[str, str], exit_code: int):
    code, comment = comment_of(tmp_path, **env)
    assert code == exit_code
    gold = GOLD / f"{name}.comment.md"
    if os.environ.get("EVALGATE_UPDATE_GOLD") == "1":
        gold.write_text(comment, encoding="utf-8")
    assert gold.exists(), f"no gold file {gold.name}: run with EVALGATE_UPDATE_GOLD=1 to write it"
    assert comment == gold.read_text(encoding="utf-8"), (
        f"{name}: comment.md differs from {gold.relative_to(ROOT)}; if the change is meant, rewrite it with "
        "EVALGATE_UPDATE_GOLD=1 and review the diff"
    )


def test_normalising_keeps_everything_but_ages_and_candidate_latencies():
    text = (
        "vs baseline 36f0588609 (5 days old) · made 2026-11-29T19:56:55Z, 4.9 days ago.\n"
        "| baseline | 1 ms | 1 ms | – | – |\n| candidate | 5 ms | 12 ms | – | – |\n"
    )
    assert normalised(text) == (
        "vs baseline 36f0588609 (N days old) · made 2026-11-29T19:56:55Z, N days ago.\n"
        "| baseline | 1 ms | 1 ms | – | – |\n| candidate | N ms | N ms | – | – |\n"
    )


@pytest.mark.parametrize("name", ["quickstart-pass", "quickstart-fail-ko"])
def test_every_interval_of_the_quickstart_comment_agrees_with_its_verdict(name: str):
    """docs/spec.md#confidence-intervals, on the comment the test above holds to its gold file: no
    inconclusive or unchanged unit beside an interval wholly beyond the tolerance (the failing
    comment once printed category=reverse −10.0 pp, CI [−16.4 pp, −3.0 pp], as inconclusive), no
    regressed unit beside one that reaches into the band."""
    tolerance = {"pass\\_rate": 2.0, "format\\_valid": 5.0}  # examples/quickstart/evalgate.yml, in pp
    table = (GOLD / f"{name}.comment.md").read_text(encoding="utf-8").split("<summary>All units", 1)[1]
    # An interval cell reads "−17.6…−10.2 pp" (word joiners around the ellipsis, a no-break space).
    text = table.split("</details>", 1)[0].replace("\u2060", "").replace("\u00a0", " ")
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| ") and "…" in line]
    assert len(rows) == 18
    for row in rows:
        cell = next(c for c in row if "…" in c).removesuffix(" pp")
        low, high = (float(x.replace("−", "-").replace("±", "").removesuffix(" pp")) for x in cell.split("…"))
        band = tolerance[row[1]]
        if "regressed" in row[-1]:
            assert high < -band, row
        else:
            assert high >= -band and low <= band, row
