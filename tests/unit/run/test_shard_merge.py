"""Shards 1/3 + 2/3 + 3/3 merged equal the unsharded run; parts that do not fit are exit 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fakes.suites import echo_cases, load_suite

from evals.common.errors import UsageError
from evals.results.files import load_results, save_results
from evals.run.execution import execute
from evals.run.shards import merge_results, parse_shard, shard_of

N_CASES = 30


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, list[Path]]:
    (tmp_path / "echo.py").write_text("def answer(text):\n    return text\n")
    config = load_suite(tmp_path, echo_cases(N_CASES, language=["ko", "en"]), target={"python": "echo:answer"})
    whole = tmp_path / "whole.json"
    execute(config, whole, progress=False)
    parts = []
    for i in (1, 2, 3):
        part = tmp_path / f"shard{i}.json.gz"
        execute(config, part, shard=(i, 3), progress=False)
        parts.append(part)
    return whole, parts


def merge_cli(python_exe: str, out: Path, *parts: Path) -> subprocess.CompletedProcess[str]:
    cmd = [python_exe, "-m", "evals", "merge", *map(str, parts), "-o", str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def comparable(results):
    return {c.id: (c.hash, c.slices, [(a.passed, a.output) for a in c.attempts]) for c in results.cases}


def test_merged_shards_equal_the_unsharded_run(runs, tmp_path: Path, python_exe: str) -> None:
    whole, parts = runs
    done = merge_cli(python_exe, tmp_path / "merged.json", *parts)
    assert done.returncode == 0, done.stderr
    merged, unsharded = load_results(tmp_path / "merged.json"), load_results(whole)
    shards = [load_results(p) for p in parts]
    assert all(s.cases for s in shards), "every shard got some cases"
    assert [s.run.shard for s in shards] == ["1/3", "2/3", "3/3"]
    assert comparable(merged) == comparable(unsharded)
    assert merged.run.config_hash == unsharded.run.config_hash
    assert merged.run.status == "success" and merged.run.shard is None
    assert merged.run.total_cases == merged.run.completed_cases == N_CASES


@pytest.mark.e2e
def test_merge_rejects_missing_duplicate_overlapping_and_mismatched_parts(runs, tmp_path: Path, python_exe) -> None:
    _, (one, two, three) = runs
    out = tmp_path / "bad.json"
    done = merge_cli(python_exe, out, one, two)
    assert done.returncode == 2 and "3/3 missing" in done.stderr
    done = merge_cli(python_exe, out, one, one, three)
    assert done.returncode == 2 and "both shard 1/3" in done.stderr

    overlap = load_results(two)
    overlap.cases.append(load_results(one).cases[0])
    save_results(overlap, tmp_path / "overlap.json")
    done = merge_cli(python_exe, out, one, tmp_path / "overlap.json", three)
    assert done.returncode == 2 and "is in both" in done.stderr and "overlap.json" in done.stderr

    other = load_results(two)
    other.run.config_hash = "sha256:other"
    save_results(other, tmp_path / "other.json")
    done = merge_cli(python_exe, out, one, tmp_path / "other.json", three)
    assert done.returncode == 2 and "config hashes" in done.stderr and "other.json" in done.stderr
    assert not out.exists()


def test_merge_masks_the_names_a_part_holds_as_written(runs, tmp_path: Path, python_exe: str) -> None:
    """A shard an older evalgate (or another writer) made, whose id holds a key: the merged run
    holds it masked (docs/spec.md#masked-names)."""
    from evals.results.masking import mask_name

    _, (one, two, three) = runs
    key_id = "test_api[sk-live-9Qx7Lm2Np4Rt6Vw8Yz0Ab]"
    part = load_results(one)
    part.cases[0] = part.cases[0].model_copy(update={"id": key_id})
    save_results(part, tmp_path / "old.json")
    done = merge_cli(python_exe, tmp_path / "merged.json", tmp_path / "old.json", two, three)
    assert done.returncode == 0, done.stderr
    assert "9Qx7Lm2N" not in (tmp_path / "merged.json").read_text()
    assert mask_name(key_id) in {c.id for c in load_results(tmp_path / "merged.json").cases}


def test_merged_status_is_success_only_if_every_part_is(runs) -> None:
    _, paths = runs
    parts = [load_results(p) for p in paths]
    parts[1].run.status = "cancelled"
    parts[1].run.completed_cases -= 1
    parts[1].cases.pop()
    merged = merge_results(parts, [str(p) for p in paths])
    assert merged.run.status == "cancelled" and not merged.run.is_complete
    assert merged.run.completed_cases == N_CASES - 1 and str(paths[1]) in merged.run.message


def test_shard_assignment_is_a_stable_partition() -> None:
    ids = [f"case-{i}" for i in range(500)]
    buckets = {i: {x for x in ids if shard_of(x, 4) == i} for i in (1, 2, 3, 4)}
    assert set().union(*buckets.values()) == set(ids) and sum(map(len, buckets.values())) == len(ids)
    assert all(60 < len(b) < 190 for b in buckets.values())
    # the assignment depends on the id alone: adding cases moves none of the others
    assert {x: shard_of(x, 4) for x in ids} == {x: shard_of(x, 4) for x in [*reversed(ids), "new"] if x != "new"}
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(UsageError):
            parse_shard(bad)


def test_merge_rejects_parts_of_different_shard_counts(runs) -> None:
    _, (one, two, three) = runs
    other = load_results(two)
    other.run.shard = "2/4"
    with pytest.raises(UsageError, match=r"shard counts .*4 in b\.json"):
        merge_results([load_results(one), other, load_results(three)], ["a.json", "b.json", "c.json"])
