"""Fuzzing the loaders (docs/spec.md#reliability): whatever bytes a results file or a config holds, loading
ends in a valid object or an InputFileError (exit 2) naming the file — never another exception."""

from __future__ import annotations

import copy
import gzip
import json
import math
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evals.common.errors import EXIT_USAGE, InputFileError
from evals.compare.lazyload import LazyResults, load_lazy
from evals.results.files import load_results, parse_results
from evals.results.model import Results
from evals.suite.config import SuiteConfig
from evals.suite.loading import load_config

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALID_RESULTS: dict[str, Any] = {
    "schema_version": 1,
    "run": {
        "suite": "support-bot",
        "status": "success",
        "total_cases": 2,
        "completed_cases": 2,
        "git_sha": "4f2c",
        "config_hash": "sha256:abc",
        "target": {"kind": "openai", "model": "openai:gpt-4o-mini", "params": {"temperature": 0}},
        "attempts_per_case": 1,
    },
    "cases": [
        {
            "id": "q-001",
            "slices": {"language": "ko"},
            "attempts": [{"passed": True, "score": 1.0, "output": "FINAL ANSWER: 5", "error": None, "retries": 0}],
        },
        {
            "id": "q-002",
            "slices": {"language": "en"},
            "attempts": [{"passed": False, "score": 0.0, "error": {"kind": "target", "message": "boom"}}],
        },
    ],
}
VALID_BYTES = json.dumps(VALID_RESULTS, indent=1).encode()
VALID_GZ = gzip.compress(VALID_BYTES)

VALID_CONFIG = {
    "suite": "support-bot",
    "cases": "evals/cases.jsonl",
    "target": {"python": "myapp.bot:answer"},
    "scorers": ["final_answer", {"regex": {"pattern": "^A"}}],
    "slices": ["language"],
    "metrics": {"pass_rate": {"tolerance": 0.02}, "latency_p95_ms": {"direction": "lower", "tolerance": "20%"}},
    "gate": {"alpha": 0.05, "inconclusive": "warn"},
    "baseline": {"store": "local", "on_missing": "warn"},
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


_SCRATCH: list[str] = []


def _scratch() -> str:
    """A folder for files the hypothesis examples write (function-scoped fixtures do not mix with @given)."""
    if not _SCRATCH:
        _SCRATCH.append(tempfile.mkdtemp(prefix="evalgate-fuzz-"))
    return _SCRATCH[0]


def outcome_of(load, *args) -> Any:
    """Run a loader; return its object or the InputFileError. Anything else fails the test."""
    try:
        return load(*args)
    except InputFileError as exc:
        assert exc.exit_code == EXIT_USAGE
        assert str(exc).strip()
        return exc


def paths_of(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths_of(v, (*prefix, i))
    return out


def replaced(doc: Any, path: tuple, new: Any) -> Any:
    doc = copy.deepcopy(doc)
    if not path:
        return new
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return doc


# ------------------------------------------------------------------------------------ results


def both_loaders(raw: bytes, name: str = "fuzz.json") -> Any:
    """``load_results`` and the lazy loader ``compare`` uses must agree: both accept the file with
    the same run and case ids, or both refuse it with the same message."""
    path = Path(_scratch()) / name
    path.write_bytes(raw)
    strict = outcome_of(load_results, path)
    lazy = outcome_of(load_lazy, path)
    if isinstance(strict, InputFileError):
        assert isinstance(lazy, InputFileError) and str(lazy) == str(strict)
        assert str(path) in str(strict)
    else:
        assert isinstance(lazy, Results | LazyResults)
        assert lazy.run == strict.run and [c.id for c in lazy.cases] == [c.id for c in strict.cases]
    return strict


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(raw: bytes) -> None:
    both_loaders(raw)


@FUZZ
@given(st.integers(min_value=0, max_value=len(VALID_BYTES) - 1))
def test_truncated_file(cut: int) -> None:
    assert isinstance(both_loaders(VALID_BYTES[:cut], "cut.json"), InputFileError)


@FUZZ
@given(st.integers(min_value=0, max_value=len(VALID_GZ) - 1))
def test_truncated_gzip_file(cut: int) -> None:
    assert isinstance(both_loaders(VALID_GZ[:cut], "baseline-abc.json.gz"), InputFileError)


@pytest.mark.e2e
@FUZZ
@given(st.data())
def test_one_value_replaced_by_garbage(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(paths_of(VALID_RESULTS)))
    doc = replaced(VALID_RESULTS, path, data.draw(json_values))
    raw = json.dumps(doc).encode()  # NaN and Infinity come out as bare NaN/Infinity, as other tools write them
    result = both_loaders(raw, "mutated.json")
    if isinstance(result, Results):
        # Accepted: then it must be a faithful, finite reading of the file.
        for case in result.cases:
            for attempt in case.attempts:
                assert attempt.score is None or math.isfinite(attempt.score)
    else:
        assert "mutated.json" in str(result)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.update(schema_version=2), "unsupported schema_version 2"),
        (lambda d: d.update(schema_version="1"), "unsupported schema_version '1'"),
        (lambda d: d.pop("schema_version"), "no schema_version"),
        (lambda d: d["cases"][1].update(id="q-001"), "duplicate case id 'q-001'"),
        (lambda d: d["cases"][0]["attempts"][0].update(score=float("nan")), "cases[0].attempts[0].score"),
        (lambda d: d["run"].update(completed_cases=3), "exceeds run.total_cases"),
        (lambda d: d.update(cases={"q-001": {}}), "cases"),
    ],
)
def test_wrong_schema_named(change, problem: str) -> None:
    doc = copy.deepcopy(VALID_RESULTS)
    change(doc)
    with pytest.raises(InputFileError) as err:
        parse_results(json.dumps(doc).encode(), "baseline.json")
    assert str(err.value).startswith("baseline.json")
    assert problem in str(err.value)


@pytest.mark.e2e
@FUZZ
@given(st.integers(min_value=1, max_value=100_000), st.sampled_from(["[", '{"a":', '{"cases":[']))
def test_deeply_nested_garbage(depth: int, opener: str) -> None:
    both_loaders((opener * depth).encode(), "deep.json")


# ------------------------------------------------------------------------------------ config


def load_config_text(data: bytes) -> Any:
    path = Path(_scratch()) / "evalgate.yml"
    path.write_bytes(data)
    result = outcome_of(load_config, path)
    if isinstance(result, InputFileError):
        assert str(path) in str(result)
    else:
        assert isinstance(result, SuiteConfig)
    return result


@FUZZ
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_config_random_bytes(raw: bytes) -> None:
    load_config_text(raw)


@pytest.mark.e2e
@FUZZ
@given(st.data())
def test_config_one_value_replaced_by_garbage(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(paths_of(VALID_CONFIG)))
    doc = replaced(VALID_CONFIG, path, data.draw(json_values))
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except (yaml.YAMLError, ValueError):
        assume(False)
    load_config_text(text.encode())


@pytest.mark.e2e
@FUZZ
@given(st.integers(min_value=0, max_value=400))
def test_config_truncated(cut: int) -> None:
    text = yaml.safe_dump(VALID_CONFIG, sort_keys=False).encode()
    load_config_text(text[: cut % (len(text) + 1)])


@pytest.mark.parametrize(
    "text",
    [
        "suite: x\ncases: a.jsonl\n!!python/object:os.system {}: 1\n",
        "suite: x\ncases: a.jsonl\n? [a, b]\n: c\n",
        "suite: x\ncases: a.jsonl\nmetrics: {pass_rate: {tolerance: .nan}}\n",
        "suite: x\ncases: a.jsonl\nmetrics: {pass_rate: {tolerance: '1e999%'}}\n",
        "suite: x\ncases: a.jsonl\ngate: {alpha: .inf}\n",
        "suite: x\ncases: a.jsonl\nsuite: y\n",
        "- just\n- a list\n",
        "\ufeffsuite: x\ncases: a.jsonl\n",
        "",
    ],
)
def test_config_odd_yaml(text: str) -> None:
    load_config_text(text.encode())


# ------------------------------------------------------------------------------------ through the CLI


def test_cli_truncated_baseline_exits_2_naming_the_file(tmp_path: Path, python_exe: str) -> None:
    (tmp_path / "candidate.json").write_bytes(VALID_BYTES)
    (tmp_path / "baseline.json").write_bytes(VALID_BYTES[: len(VALID_BYTES) // 2])
    proc = subprocess.run(
        [python_exe, "-m", "evals.compare", "--baseline", "baseline.json", "--candidate", "candidate.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "baseline.json" in proc.stderr and "invalid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.e2e
@pytest.mark.parametrize("depth", [5, 500, 1_500])
@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_config_deeply_nested(depth: int, opener: str) -> None:
    load_config_text(("suite: x\ncases: " + opener * depth).encode())
