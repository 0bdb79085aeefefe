"""Loading case files: the three formats, globs, and the error messages (file and line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evals.common.errors import InputFileError
from evals.results.model import case_hash
from evals.suite.cases import Case, load_cases
from evals.suite.loading import load_config


def suite(tmp_path: Path, cases: str | list[str], files: dict[str, str]) -> list[Case]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    config = tmp_path / "evalgate.yml"
    config.write_text(json.dumps({"suite": "t", "cases": cases}), encoding="utf-8")
    return load_cases(load_config(config))


def load_error(tmp_path: Path, cases: str | list[str], files: dict[str, str]) -> InputFileError:
    with pytest.raises(InputFileError) as info:
        suite(tmp_path, cases, files)
    return info.value


def jsonl(*rows: object) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# ---------------------------------------------------------------------------------------- formats


def test_jsonl_all_fields_lines_and_hash(tmp_path):
    text = (
        jsonl({"id": "a", "input": {"q": "2+2"}, "expected": "4", "tags": {"language": "ko"}, "metadata": {"n": 1}})
        + "\n"
        + jsonl({"id": 7, "input": "x"})
    )
    cases = suite(tmp_path, "c.jsonl", {"c.jsonl": text})
    assert [c.id for c in cases] == ["a", "7"]
    a, b = cases
    assert a.input == {"q": "2+2"} and a.expected == "4" and a.tags == {"language": "ko"} and a.metadata == {"n": 1}
    assert a.source.endswith("c.jsonl:1") and b.source.endswith("c.jsonl:3")  # blank line 2 skipped
    assert b.expected is None and b.tags == {} and b.metadata == {}
    assert a.hash == case_hash({"q": "2+2"}, "4")
    assert a.hash != Case(id="a", input={"q": "2+2"}, expected="5").hash


def test_yaml_list_of_mappings_with_lines(tmp_path):
    text = "# cases\n- id: y1\n  input: hello\n  tags: {language: en, category: greet}\n\n- id: y2\n  input: [1, 2]\n"
    cases = suite(tmp_path, "c.yaml", {"c.yaml": text})
    assert [(c.id, c.input, c.tags) for c in cases] == [
        ("y1", "hello", {"language": "en", "category": "greet"}),
        ("y2", [1, 2], {}),
    ]
    assert cases[0].source.endswith("c.yaml:2") and cases[1].source.endswith("c.yaml:6")


def test_csv_columns_are_text_unless_marked_json(tmp_path):
    text = (
        "id,input,expected,tags.language,tags.category,metadata.note,metadata.n:json\n"
        'c1,"two\nlines",,ko,math,,3\n'
        'c2,{"a": 1},"[1, 2]",en,,hi,"{""k"": true}"\n'
    )
    c1, c2 = suite(tmp_path, "c.csv", {"c.csv": text})
    assert (c1.input, c1.expected, c1.tags, c1.metadata) == (
        "two\nlines",
        None,
        {"language": "ko", "category": "math"},
        {"n": 3},
    )
    # Without :json a cell stays text even when it looks like JSON.
    assert (c2.input, c2.expected, c2.tags, c2.metadata) == (
        '{"a": 1}',
        "[1, 2]",
        {"language": "en"},
        {"note": "hi", "n": {"k": True}},
    )
    assert c1.source.endswith("c.csv:2") and c2.source.endswith("c.csv:4")  # c1 spans lines 2-3


def test_csv_json_columns_decode(tmp_path):
    text = 'id,input:json,expected:json\nj1,"{""q"": [1, 2]}",3.5\n'
    (case,) = suite(tmp_path, "c.csv", {"c.csv": text})
    assert case.input == {"q": [1, 2]} and case.expected == 3.5


def test_csv_with_bom(tmp_path):
    (tmp_path / "c.csv").write_bytes("\ufeffid,input\nb1,안녕\n".encode())
    config = tmp_path / "evalgate.yml"
    config.write_text("suite: t\ncases: c.csv\n", encoding="utf-8")
    (case,) = load_cases(load_config(config))
    assert (case.id, case.input) == ("b1", "안녕")


def test_unicode_line_separators_inside_values_do_not_end_a_row(tmp_path):
    """U+2028, U+2029 and U+0085 are text, not line ends, in JSON lines and CSV (str.splitlines
    would cut there); "\r\n" line ends still count one line each."""
    text = "a\u2028b\u2029c\x85d"
    rows = jsonl({"id": "u", "input": text}, {"id": "v", "input": 1}).replace("\n", "\r\n")
    u, v = suite(tmp_path, "c.jsonl", {"c.jsonl": rows})
    assert u.input == text and v.source.endswith("c.jsonl:2")
    c1, c2 = suite(tmp_path, "c.csv", {"c.csv": f"id,input\nc1,{text}\nc2,x\n"})
    assert (c1.input, c2.input) == (text, "x") and c2.source.endswith("c.csv:3")


# ---------------------------------------------------------------------------------------- patterns


def test_globs_and_lists_in_order_each_file_once(tmp_path):
    files = {
        "data/b.jsonl": jsonl({"id": "b", "input": 1}),
        "data/a.jsonl": jsonl({"id": "a", "input": 1}),
        "extra.yaml": "- {id: e, input: 1}\n",
    }
    cases = suite(tmp_path, ["extra.yaml", "data/*.jsonl", "data/a.jsonl"], files)
    assert [c.id for c in cases] == ["e", "a", "b"]


def test_glob_matching_nothing_names_config_line(tmp_path):
    err = load_error(tmp_path, ["c.jsonl", "nothing/*.jsonl"], {"c.jsonl": jsonl({"id": "a", "input": 1})})
    # The config was written as one JSON line: both entries are on line 1.
    assert err.where.endswith("evalgate.yml:1") and "'nothing/*.jsonl' matches no file" in err.problem


def test_missing_file_names_config_line(tmp_path):
    (tmp_path / "evalgate.yml").write_text("suite: t\ncases:\n  - a.jsonl\n  - missing.jsonl\n", encoding="utf-8")
    (tmp_path / "a.jsonl").write_text(jsonl({"id": "a", "input": 1}), encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        load_cases(load_config(tmp_path / "evalgate.yml"))
    assert info.value.where.endswith("evalgate.yml:4") and "'missing.jsonl' not found" in info.value.problem


def test_unknown_extension(tmp_path):
    err = load_error(tmp_path, "c.txt", {"c.txt": "id,input\n"})
    assert "unknown case file type '.txt'" in str(err)


# ---------------------------------------------------------------------------------------- errors


def test_duplicate_id_across_files_names_both_places(tmp_path):
    files = {
        "a.jsonl": jsonl({"id": "x", "input": 1}, {"id": "q", "input": 2}),
        "b.yaml": "- id: z\n  input: 1\n- id: q\n  input: 3\n",
    }
    err = load_error(tmp_path, ["a.jsonl", "b.yaml"], files)
    assert err.where.endswith("b.yaml:3")
    assert "duplicate case id 'q'" in err.problem and "a.jsonl:2" in err.problem


def test_integer_and_string_ids_collide(tmp_path):
    err = load_error(tmp_path, "c.jsonl", {"c.jsonl": jsonl({"id": 5, "input": 1}, {"id": "5", "input": 1})})
    assert err.where.endswith("c.jsonl:2") and "duplicate case id '5'" in err.problem


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"input": "x"}, "case has no id"),
        ({"id": "", "input": "x"}, "non-empty string"),
        ({"id": True, "input": "x"}, "non-empty string"),
        ({"id": "a"}, "has no input"),
        ({"id": "a", "input": 1, "tags": {"level": 2}}, "tag 'level' must have a non-empty string value"),
        ({"id": "a", "input": 1, "tags": ["smoke"]}, "tags must be a mapping"),
        ({"id": "a", "input": 1, "tags": {"a=b": "c"}}, "without '='"),
        ({"id": "a", "input": 1, "metadata": [1]}, "metadata must be a mapping"),
        ({"id": "a", "input": 1, "expect": 2}, "unknown case key 'expect'"),
        (["a", 1], "a case must be an object"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path, row, problem):
    text = jsonl({"id": "ok", "input": 0}) + jsonl(row)
    err = load_error(tmp_path, "c.jsonl", {"c.jsonl": text})
    assert err.where.endswith("c.jsonl:2")
    assert problem in err.problem


@pytest.mark.parametrize(
    ("key", "hint"),
    [("expect", "did you mean 'expected'?"), ("inputs", "did you mean 'input'?"), ("source", "under metadata")],
)
def test_a_misspelt_case_key_gets_the_key_it_resembles(tmp_path, key, hint):
    """As a misspelt config key does; a key like no case key is an extra field for metadata."""
    err = load_error(tmp_path, "c.jsonl", {"c.jsonl": jsonl({"id": "a", "input": 1, key: 2})})
    assert err.problem.startswith(f"unknown case key {key!r}")
    assert err.hint is not None and hint in err.hint


@pytest.mark.parametrize(
    ("tag", "hint"),
    [
        (2, 'write the value as a JSON string: "level": "2"'),
        (True, 'write the value as a JSON string: "level": "true"'),
        ("", "leave the tag out of a case that has no such value"),
        (None, "leave the tag out of a case that has no such value"),
        (["a"], "a tag holds one value"),
    ],
)
def test_a_tag_that_is_no_string_gets_a_hint_in_the_file_s_own_syntax(tmp_path, tag, hint):
    """JSON lines are not YAML: the hint shows what to write in the file at hand."""
    err = load_error(tmp_path, "c.jsonl", {"c.jsonl": jsonl({"id": "a", "input": 1, "tags": {"level": tag}})})
    assert err.hint is not None and hint in err.hint and "YAML" not in str(err)
    assert f"got {json.dumps(tag)}" in err.problem  # as the file spells it: true, not True


def test_invalid_json_line(tmp_path):
    err = load_error(tmp_path, "c.jsonl", {"c.jsonl": jsonl({"id": "a", "input": 1}) + '{"id": "b", "input": \n'})
    assert err.where.endswith("c.jsonl:2") and "invalid JSON" in err.problem


def test_yaml_errors(tmp_path):
    err = load_error(tmp_path, "c.yaml", {"c.yaml": "- id: a\n  input: 1\n- id: b\n  input: [1\n"})
    assert "invalid YAML" in err.problem and err.where.rsplit(":", 1)[1].isdigit()
    err = load_error(tmp_path, "d.yaml", {"d.yaml": "id: a\ninput: 1\n"})
    assert "must be a list of mappings" in err.problem
    err = load_error(tmp_path, "e.yaml", {"e.yaml": "- id: a\n  input: 1\n- id: b\n  input: 2\n  tags: {level: 3}\n"})
    assert err.where.endswith("e.yaml:3") and "YAML reads 3 as a number: quote it, level: '3'" in str(err)


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("id,question\n", 1, "unknown CSV column 'question'"),
        ("id,expected\n", 1, "no 'input' column"),
        ("id,input,tags.lang:json\n", 1, "unknown CSV column"),
        ("id,input,input\n", 1, "appears twice"),
        ("id,input\na,1\nb,2,3\n", 3, "row has 3 cells, the header has 2"),
        ("id,input:json\na,1\nb,{nope\n", 3, "invalid JSON"),
        ("id,input\n,1\n", 2, "case id must be a non-empty string"),
        ('id,input\na,"unterminated\n', 2, "invalid CSV"),
    ],
)
def test_csv_errors(tmp_path, text, line, problem):
    err = load_error(tmp_path, "c.csv", {"c.csv": text})
    assert err.where.endswith(f"c.csv:{line}"), err.where
    assert problem in err.problem


def test_empty_files_hold_no_cases(tmp_path):
    assert suite(tmp_path, ["a.jsonl", "b.yaml", "c.csv"], {"a.jsonl": "\n", "b.yaml": "", "c.csv": ""}) == []


# ---------------------------------------------------------------------------------------- scale


@pytest.mark.e2e
def test_hundred_thousand_cases(tmp_path):
    rows = [
        {"id": f"c{i}", "input": f"question {i}", "expected": str(i), "tags": {"language": "ko" if i % 3 else "en"}}
        for i in range(100_000)
    ]
    cases = suite(tmp_path, "big.jsonl", {"big.jsonl": jsonl(*rows)})
    assert len(cases) == 100_000 and cases[-1].id == "c99999" and cases[-1].source.endswith("big.jsonl:100000")


def test_duplicate_on_one_yaml_line(tmp_path):
    err = load_error(tmp_path, "c.yaml", {"c.yaml": "[{id: a, input: 1}, {id: a, input: 2}]\n"})
    assert "duplicate case id 'a'" in err.problem and err.where.endswith("c.yaml:1")


def test_deep_nesting_is_an_input_error(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    err = load_error(tmp_path, "c.jsonl", {"c.jsonl": '{"id": "a", "input": ' + deep + "}\n"})
    assert err.where.endswith("c.jsonl:1") and "nested too deeply" in err.problem


_FRAGMENTS = st.sampled_from(
    [
        '{"id": "a", "input": 1}',
        '{"id": 1',
        "- id: x\n  input: y",
        "id,input",
        "a,b",
        '"',
        ",",
        ":",
        "\n",
        "[",
        "{",
        "tags",
        "tags.k",
        "\ufeff",
        "\x00",
        "- ",
        "  ",
        "&a",
        "*a",
        "!!python/object:os.system",
        "ü",
        "\r\n",
        "null",
    ]
)


@pytest.mark.e2e
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.lists(_FRAGMENTS | st.text(max_size=8), max_size=12).map("".join),
    ext=st.sampled_from(["jsonl", "yaml", "csv"]),
)
def test_fuzzed_case_files_load_or_fail_cleanly(tmp_path, text, ext):
    path = tmp_path / f"fuzz.{ext}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    config = tmp_path / "evalgate.yml"
    config.write_text(f"suite: t\ncases: fuzz.{ext}\n", encoding="utf-8")
    try:
        cases = load_cases(load_config(config))
    except InputFileError as exc:
        assert "fuzz." in exc.where
    else:
        assert all(isinstance(c.id, str) and c.id for c in cases)


# ---------------------------------------------------------------------------------------- masked names


def test_ids_and_tags_holding_a_secret_are_masked_as_they_are_read_and_the_target_gets_them_as_written(tmp_path):
    """docs/spec.md#masked-names: a command target's ``env:`` value and a key in an id or a tag;
    every run records the masked form, the target reads what the file wrote."""
    from evals.results.masking import mask_name
    from evals.run.targets.base import case_payload

    tenant, key = "tenant-7f3a9c1e5b", "sk-live-9Qx7Lm2Np4Rt6Vw8Yz0Ab"
    rows = [
        {"id": f"{tenant}/q1", "input": "a", "tags": {"tenant": tenant}},
        {"id": f"test_api[{key}]", "input": "b", "tags": {"kind": "api"}},
        {"id": "q3", "input": "c", "tags": {"kind": "plain"}},
    ]
    (tmp_path / "cases.jsonl").write_text(jsonl(*rows), encoding="utf-8")
    target = {"command": ["true"], "env": {"TENANT": tenant}}
    (tmp_path / "evalgate.yml").write_text(json.dumps({"suite": "t", "cases": "cases.jsonl", "target": target}))
    cases = load_cases(load_config(tmp_path / "evalgate.yml"))
    assert [c.id for c in cases] == [mask_name(f"{tenant}/q1", [tenant]), mask_name(f"test_api[{key}]"), "q3"]
    assert cases[0].id.startswith("***/q1 (masked ") and cases[1].id.startswith("test_api[sk-***] (masked ")
    assert cases[0].tags == {"tenant": mask_name(tenant, [tenant])} and cases[2].tags == {"kind": "plain"}
    assert all(tenant not in c.id and key not in c.id for c in cases)
    # What the target reads (and the response cache keys by) is the case as written.
    written = [case_payload(c) for c in cases]
    assert [(w["id"], w["tags"]) for w in written] == [(r["id"], r["tags"]) for r in rows]
    assert cases[2].as_written() is cases[2]
