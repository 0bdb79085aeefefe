"""The lean loader compare uses: one validation of the whole file, the same acceptance and the same
messages as load_results, cases read back exactly."""

from __future__ import annotations

import json

import pytest

from evals.errors import InputFileError
from evals.lazyload import LazyResults, load_lazy
from evals.results import load_results

RUN = {"suite": "s", "status": "success", "total_cases": 2, "completed_cases": 2}
CASES = [
    {"id": "a", "slices": {"l": "x"}, "attempts": [{"passed": True, "output": {"deep": [1, 2.5, None]}}]},
    {
        "id": "b",
        "input": "q",
        "expected": 4,
        "attempts": [{"passed": False, "error": {"kind": "target", "message": "m"}}],
    },
]


def outcome(loader, path):
    try:
        return loader(path)
    except InputFileError as exc:
        return str(exc)


@pytest.mark.parametrize(
    "doc",
    [
        {"schema_version": 1, "run": RUN, "cases": [CASES[0], CASES[0]]},  # duplicate id
        {"schema_version": 1, "run": {**RUN, "completed_cases": 3}, "cases": CASES},  # completed > total
        {"run": RUN, "cases": CASES},  # no schema_version
        {"schema_version": 2, "run": RUN, "cases": CASES},
        {"schema_version": 1, "run": RUN, "cases": [{**CASES[0], "extra": 1}]},
        {"schema_version": 1, "run": RUN, "cases": [{"id": "a", "attempts": [{"score": 1.5}]}]},
        {
            "schema_version": 1,
            "run": RUN,
            "cases": [{"id": "a", "attempts": [{"error": {"kind": "oops", "message": ""}}]}],
        },
        {"schema_version": 1, "run": {**RUN, "status": "done"}, "cases": CASES},
        {"schema_version": 1, "run": RUN, "cases": {"a": 1}},
    ],
)
def test_bad_files_get_the_messages_load_results_gives(tmp_path, doc):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    expected = outcome(load_results, path)
    assert isinstance(expected, str)
    assert outcome(load_lazy, path) == expected


def test_values_json_cannot_hold_exactly_still_load_as_load_results_reads_them(tmp_path):
    """NaN in a free-form field is valid for load_results; the lean path must not turn it into null."""
    path = tmp_path / "r.json"
    path.write_text(
        '{"schema_version": 1, "run": {"suite": "s", "status": "success", "total_cases": 1, "completed_cases": 1},'
        ' "cases": [{"id": "a", "attempts": [{"passed": true, "output": NaN,'
        ' "metadata": {"big": 123456789012345678901234567890}}]}]}'
    )
    lean, full = load_lazy(path), load_results(path)
    attempt = lean.cases[0].attempts[0]
    assert attempt.output != attempt.output  # still NaN
    assert attempt.metadata == full.cases[0].attempts[0].metadata


def test_good_file_reads_back_every_field(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema_version": 1, "run": RUN, "cases": CASES}))
    lean, full = load_lazy(path), load_results(path)
    assert isinstance(lean, LazyResults)
    assert lean.run == full.run and list(lean.cases) == full.cases
    assert lean.cases[1] == full.cases[1] and lean.cases[0:2] == full.cases
