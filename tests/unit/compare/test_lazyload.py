"""The lean loader compare uses: one validation of the whole file, the same acceptance and the same
messages as load_results, cases read back exactly."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic_core import SchemaValidator

from evals.common.errors import InputFileError
from evals.compare.lazyload import LazyResults, _lean_schema, _validator, load_lazy
from evals.results.files import load_results

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


def test_results_are_checked_without_building_models():
    """The lean schema really is lean for Results as it stands: typed dicts, cases dropped after
    their check. (A model made shared, e.g. used in two fields, would silently make the loader
    build every model again, ~400 MB per 100,000 cases: this test says so first.)"""
    checked = _validator().validate_python({"schema_version": 1, "run": RUN, "cases": CASES})
    assert isinstance(checked, dict) and checked["cases"] == [None, None] and isinstance(checked["run"], dict)


def test_validators_that_see_validated_values_keep_their_models():
    """A field or model validator written against model instances must get them from the lean
    schema too (a ``trace`` check on its events, say); plain fields become typed dicts."""

    class Event(BaseModel):
        seq: int

    class Note(BaseModel):
        model_config = ConfigDict(extra="forbid")
        seq: int

    class Attempt(BaseModel):
        events: list[Event] = []
        note: Note | None = None

        @field_validator("events")
        @classmethod
        def _in_order(cls, events: list[Event]) -> list[Event]:
            if [e.seq for e in events] != list(range(len(events))):
                raise ValueError("events out of order")
            return events

    lean = SchemaValidator(_lean_schema(Attempt.__pydantic_core_schema__))
    out = lean.validate_python({"events": [{"seq": 0}, {"seq": 1}], "note": {"seq": 5}})
    assert isinstance(out["events"][0], Event) and out["note"] == {"seq": 5}
    with pytest.raises(ValidationError, match="events out of order"):
        lean.validate_python({"events": [{"seq": 1}]})
    with pytest.raises(ValidationError, match="Extra inputs"):
        lean.validate_python({"note": {"seq": 1, "x": 2}})

    class Shared(BaseModel):  # a model used twice: pydantic makes it a definition, kept whole
        first: Note
        second: Note | None = None

    out = SchemaValidator(_lean_schema(Shared.__pydantic_core_schema__)).validate_python({"first": {"seq": 1}})
    assert isinstance(out, Shared) and out.first == Note(seq=1)


def test_values_the_models_coerce_are_read_as_load_results_reads_them(tmp_path):
    """Numbers written as strings are numbers for the models (lax mode) but not for the attempt
    columns: before, compare crashed with an internal error (exit 3)."""
    from evals.compare.analysis import compare
    from evals.compare.metrics import scan

    cases = [{"id": f"c{i}", "attempts": [{"passed": i % 2 == 0, "score": "0.5", "tokens_in": "12"}]} for i in range(5)]
    path = tmp_path / "lax.json"
    path.write_text(
        json.dumps({"schema_version": 1, "run": {**RUN, "total_cases": 5, "completed_cases": 5}, "cases": cases})
    )
    lean, full = load_lazy(path), load_results(path)
    assert [a.score for c in lean.cases for a in c.attempts] == [0.5] * 5
    assert (
        scan(lean.cases, 5, []).columns["pass_rate"].tolist() == scan(full.cases, 5, []).columns["pass_rate"].tolist()
    )
    assert compare(lean, lean).verdict in ("pass", "inconclusive")


@pytest.mark.parametrize("verdict", ["yes", "false", "true", "on", "0", 1])
def test_booleans_are_strict_in_both_loaders(tmp_path, verdict):
    """A "passed" of "yes" was read as true (pydantic's lax booleans), and so were "on" and
    1. A results file says true or false; anything else is exit 2 naming the file and the case."""
    cases = [{"id": "ok", "attempts": [{"passed": True}]}, {"id": "q-7", "attempts": [{"passed": verdict}]}]
    path = tmp_path / "lax.json"
    path.write_text(
        json.dumps({"schema_version": 1, "run": {**RUN, "total_cases": 2, "completed_cases": 2}, "cases": cases})
    )
    for load in (load_lazy, load_results):
        with pytest.raises(InputFileError) as info:
            load(path)
        assert info.value.where == str(path) and "case id 'q-7'" in str(info.value) and "passed" in str(info.value)
