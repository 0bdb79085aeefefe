"""The smoke subset: deterministic, seeded, stratified by slice."""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from fakes.suites import commit_all, echo_cases, load_suite

from evals.results.files import load_results
from evals.run.execution import execute
from evals.run.smoke import CaseHistory, draw_smoke, neyman_allocation, smoke_subset
from evals.suite.cases import Case, load_cases
from evals.suite.config import SmokeSpec
from evals.suite.loading import load_config


def suite(n: int = 300) -> list[Case]:
    cases = []
    for i in range(n):
        language = "ko" if i % 50 == 0 else ("en" if i % 2 else "de")  # ko is rare: 6 of 300
        cases.append(Case(id=f"q{i:04d}", input=i, tags={"language": language, "category": f"cat{i % 7}"}))
    return cases


def ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


def test_subset_is_deterministic_and_independent_of_file_order() -> None:
    cases, spec = suite(), SmokeSpec(cases=40, per_slice_min=5, seed=1)
    first = smoke_subset(cases, spec, ["language", "category"])
    shuffled = cases[:]
    random.Random(9).shuffle(shuffled)
    assert sorted(ids(smoke_subset(shuffled, spec, ["language", "category"]))) == sorted(ids(first))
    assert ids(first) == [c.id for c in cases if c.id in set(ids(first))], "suite order is kept"
    other_seed = smoke_subset(cases, SmokeSpec(cases=40, per_slice_min=5, seed=2), ["language", "category"])
    assert set(ids(other_seed)) != set(ids(first))


def test_per_slice_min_is_honoured_and_the_size_respected() -> None:
    chosen = smoke_subset(suite(), SmokeSpec(cases=40, per_slice_min=5, seed=0), ["language", "category"])
    assert len(chosen) == 40
    languages = Counter(c.tags["language"] for c in chosen)
    categories = Counter(c.tags["category"] for c in chosen)
    assert languages["ko"] == 5 and min(languages.values()) >= 5
    assert len(categories) == 7 and min(categories.values()) >= 5


def test_per_slice_min_wins_over_the_size_and_small_slices_are_taken_whole() -> None:
    chosen = smoke_subset(suite(), SmokeSpec(cases=3, per_slice_min=10, seed=0), ["language"])
    languages = Counter(c.tags["language"] for c in chosen)
    assert languages == {"ko": 6, "en": 10, "de": 10}


def test_adding_a_case_moves_few_others() -> None:
    spec = SmokeSpec(cases=30, per_slice_min=0, seed=0)
    before = set(ids(smoke_subset(suite(300), spec, [])))
    after = set(ids(smoke_subset(suite(301), spec, [])))
    assert len(before ^ after) <= 2


def test_tag_mode() -> None:
    cases = [Case(id="a", tags={"smoke": "yes"}), Case(id="b", tags={"smoke": "no"}), Case(id="c")]
    assert ids(smoke_subset(cases, SmokeSpec(tag="smoke"), [])) == ["a", "b"]
    assert ids(smoke_subset(cases, SmokeSpec(tag="smoke=yes"), [])) == ["a"]


def test_quickstart_smoke_run_covers_every_slice(repo_root: Path, tmp_path: Path) -> None:
    config = load_config(repo_root / "examples" / "quickstart" / "evalgate.yml")
    results = execute(config, tmp_path / "smoke.json", smoke=True, progress=False)
    assert results.run.status == "success" and results.run.subset == "smoke"
    assert results.run.total_cases == len(smoke_subset(load_cases(config), config.smoke, config.slices))
    for key in config.slices:
        values = {c.tags[key] for c in load_cases(config) if key in c.tags}
        counts = Counter(c.slices[key] for c in results.cases if key in c.slices)
        assert set(counts) == values
        assert min(counts.values()) >= config.smoke.per_slice_min


# ------------------------------------------------------------------ smoke.select: informative


def history_of(cases: list[Case], runs: int = 20) -> CaseHistory:
    """Every third case always passed, every third never did, the rest passed about half the runs."""
    outcomes = {}
    for i, case in enumerate(cases):
        kind = i % 3
        outcomes[case.id] = (
            [1.0] * runs if kind == 0 else [0.0] * runs if kind == 1 else [float((i + r) % 2) for r in range(runs)]
        )
    return CaseHistory(runs, outcomes)


def test_informative_draw_is_deterministic_for_a_history_and_seed() -> None:
    cases, spec = suite(), SmokeSpec(cases=40, seed=3, select="informative")
    first = draw_smoke(cases, spec, ["language"], history_of(cases))
    again = draw_smoke(list(reversed(cases)), spec, ["language"], history_of(cases))
    assert first.note is None and first.sample is not None
    assert sorted(ids(again.cases)) == sorted(ids(first.cases)) and again.sample == first.sample
    assert len(first.cases) == 40
    other = draw_smoke(cases, SmokeSpec(cases=40, seed=4, select="informative"), ["language"], history_of(cases))
    assert set(ids(other.cases)) != set(ids(first.cases))


def test_informative_draw_favours_uncertain_cases_and_keeps_every_stratum() -> None:
    cases = suite()
    draw = draw_smoke(cases, SmokeSpec(cases=60, seed=0, select="informative"), ["language"], history_of(cases))
    sample = draw.sample
    assert sample is not None and sample.history_runs == 20
    kinds = Counter(sample.cases[c.id].stratum.split(" · ")[1] for c in draw.cases)
    assert kinds["mixed"] > kinds["pass"] + kinds["fail"], kinds
    assert all(s.drawn >= min(s.population, 2) for s in sample.strata.values())
    assert {c.tags["language"] for c in draw.cases} == {"ko", "en", "de"}
    for case in draw.cases:  # π_i = n_h / N_h, recorded per case
        inclusion = sample.cases[case.id]
        stratum = sample.strata[inclusion.stratum]
        assert inclusion.probability == stratum.drawn / stratum.population


def test_neyman_allocation_with_floors_and_caps() -> None:
    # 38 after the floor of 2 for the stratum with S_h = 0, split ∝ N_h·S_h = 60 : 20 (28.5 : 9.5,
    # the tie of remainders to the earlier stratum); with S_h = 5 the second one's optimum (17.3)
    # is capped at its 10 cases and the rest goes to the first.
    assert neyman_allocation([60, 10, 30], [1.0, 2.0, 0.0], 40, 2) == [29, 9, 2]
    assert neyman_allocation([60, 10, 30], [1.0, 5.0, 0.0], 40, 2) == [28, 10, 2]
    assert neyman_allocation([5, 5], [1.0, 1.0], 3, 2) == [2, 2], "the floors win over the total"
    assert sum(neyman_allocation([7, 11, 13], [0.3, 0.5, 0.2], 17, 1)) == 17


def test_informative_without_history_falls_back_and_says_so(tmp_path: Path, capsys) -> None:
    cases, spec = suite(), SmokeSpec(cases=40, seed=1, select="informative")
    for history in (None, CaseHistory(1, {c.id: [1.0] for c in cases})):
        draw = draw_smoke(cases, spec, ["language"], history)
        assert draw.sample is None and ids(draw.cases) == ids(smoke_subset(cases, spec, ["language"]))
        assert "smoke.select: informative needs at least 2 repeated runs" in (draw.note or "")
    config = load_suite(
        tmp_path,
        echo_cases(30, language=["en", "ko"]),
        target={"python": "echo:answer"},
        scorers=["exact"],
        slices=["language"],
        smoke={"cases": 10, "select": "informative"},
    )
    (tmp_path / "echo.py").write_text("def answer(x):\n    return x\n", encoding="utf-8")
    results = execute(config, tmp_path / "smoke.json", smoke=True, progress=False)
    assert results.run.subset == "smoke" and results.run.sample is None and results.run.total_cases == 10
    assert "drew the stratified subset instead" in capsys.readouterr().err


@pytest.mark.e2e
def test_an_informative_smoke_run_records_its_design_and_compares_weighted(tmp_path: Path, python_exe: str) -> None:
    """End to end: two full runs recorded in the history, then `run --smoke` draws by them and
    `compare` weights the smoke run to the full suite."""
    (tmp_path / "echo.py").write_text("def answer(x):\n    return x\n", encoding="utf-8")
    config = load_suite(
        tmp_path,
        echo_cases(40, language=["en", "ko"]),
        target={"python": "echo:answer"},
        scorers=["exact"],
        slices=["language"],
        smoke={"cases": 12, "select": "informative"},
    )
    env = {**os.environ, "EVALGATE_HISTORY_URL": str(tmp_path / "h.sqlite")}
    env.pop("EVALGATE_HISTORY", None)
    commit_all(tmp_path)  # the two full runs repeat one clean commit

    def evalgate(*argv: str) -> subprocess.CompletedProcess[str]:
        cmd = [python_exe, "-m", "evals", *argv]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)

    for name in ("full1.json", "full2.json"):
        assert evalgate("run", "--config", str(config.path), "-o", name, "--no-summary").returncode == 0
    smoke = evalgate("run", "--config", str(config.path), "-o", "smoke.json", "--smoke", "--no-summary")
    assert smoke.returncode == 0, smoke.stderr
    assert "drew the stratified subset" not in smoke.stderr
    run = load_results(tmp_path / "smoke.json").run
    assert run.subset == "smoke" and run.sample is not None and run.sample.history_runs == 2
    assert run.total_cases == 12 == len(run.sample.cases)
    compared = evalgate(
        "compare",
        "--config",
        str(config.path),
        "--baseline",
        "full1.json",
        "--candidate",
        "smoke.json",
        "--json",
        "cmp.json",
    )
    assert compared.returncode == 0, compared.stderr
    units = json.loads((tmp_path / "cmp.json").read_text(encoding="utf-8"))["units"]
    assert {u["method"] for u in units} == {"stratified-ht"}
