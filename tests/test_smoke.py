"""The smoke subset: deterministic, seeded, stratified by slice."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from evals.run.execution import execute
from evals.run.smoke import smoke_subset
from evals.suite.cases import Case, load_cases
from evals.suite.config import SmokeSpec, load_config


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
