"""Scorers: GAIA final_answer normalisation, the other built-ins, their params, user callables and
how the scores of one attempt combine."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from evals.common.errors import UsageError
from evals.run.scorers.builtin import Score, ScorerError, build_scorers, score_attempt
from evals.suite.cases import Case
from evals.suite.scoring import ScorerSpec


def scorer(spec: Any, root: Path = Path(".")):
    (built,) = build_scorers([ScorerSpec.model_validate(spec)], root)
    return built


def case(expected: Any = None, input_value: Any = "q", id: str = "c1") -> Case:
    return Case(id=id, input=input_value, expected=expected)


def check(spec: Any, output: Any, expected: Any) -> bool | None:
    return scorer(spec)(output, case(expected)).passed


# ---------------------------------------------------------------------------------------- final_answer (GAIA)


@pytest.mark.parametrize(
    ("output", "expected", "passed"),
    [
        ("FINAL ANSWER: $1,000", "1000", True),
        ("FINAL ANSWER: 1000", "$1,000", True),
        ("FINAL ANSWER: 1,000.00", 1000, True),
        ("FINAL ANSWER: 5%", "5", True),
        ("FINAL ANSWER: 5", "5%", True),
        ("FINAL ANSWER: 1000.0000001", "1000", True),  # within the default 1e-6 tolerance
        ("FINAL ANSWER: 1000.01", "1000", False),
        ("FINAL ANSWER: one thousand", "1000", False),
        ("FINAL ANSWER: a, b", "a, b", True),
        ("FINAL ANSWER: b, a", "a, b", False),  # lists keep their order
        ("FINAL ANSWER: a;b", "a; b", True),
        ("FINAL ANSWER: a, b, c", "a, b", False),
        ("FINAL ANSWER: 1, $2,3", "1, 2, 3", True),  # elements: number-or-string rule each
        ("FINAL ANSWER: 3, 2, 1", ["1", "2", "3"], False),
        ("FINAL ANSWER: 1, 2, 3", [1, 2, 3], True),
        ("FINAL ANSWER: 1,2", "1,2", True),  # not a thousands grouping: a two-element list
        ("FINAL ANSWER: 12", "1,2", False),
        ("FINAL ANSWER:   The  CAT.  ", "the cat", True),  # case, whitespace and punctuation
        ("FINAL ANSWER: Saint Petersburg", "saintpetersburg", True),
        ("FINAL ANSWER: dog", "cat", False),
        ("FINAL ANSWER: 41 ... no wait. FINAL ANSWER: 42", "42", True),  # the last marker wins
        ("FINAL ANSWER: 42 ... no wait. FINAL ANSWER: 41", "42", False),
        ("The answer is 42", "42", False),  # no marker
        ("FINAL ANSWER: nan", "nan", True),  # text, not a float: compared as a string
        ("FINAL ANSWER: inf", "1e400", False),
        ("FINAL ANSWER: 1e400", "1e400", True),  # beyond float range: compared as text
    ],
)
def test_final_answer_gaia_rules(output, expected, passed):
    assert check("final_answer", output, expected) is passed


def test_final_answer_format_valid_is_a_separate_score():
    fa = scorer("final_answer")
    assert fa("The answer is 42", case("42")) == Score(passed=False, score=0.0, scores={"format_valid": 0.0})
    assert fa("FINAL ANSWER: 41", case("42")) == Score(passed=False, score=0.0, scores={"format_valid": 1.0})
    assert fa("FINAL ANSWER: 42", case("42")) == Score(passed=True, score=1.0, scores={"format_valid": 1.0})


def test_final_answer_without_expected_has_no_verdict_but_format():
    fa = scorer("final_answer")
    assert fa("FINAL ANSWER: x", case(None)) == Score(passed=None, score=None, scores={"format_valid": 1.0})
    assert fa("x", case(None)) == Score(passed=None, score=None, scores={"format_valid": 0.0})


def test_final_answer_params():
    assert check({"final_answer": {"abs_tol": 0.5}}, "FINAL ANSWER: 10.4", "10") is True
    assert check({"final_answer": {"rel_tol": 0.01}}, "FINAL ANSWER: 1009", "1000") is True
    assert check({"final_answer": {"rel_tol": 0.01}}, "FINAL ANSWER: 1011", "1000") is False
    assert check({"final_answer": {"marker": "Answer:"}}, "Answer: Paris", "paris") is True


# ---------------------------------------------------------------------------------------- other built-ins


def test_exact():
    assert check("exact", " Paris\n", "Paris") is True
    assert check("exact", "paris", "Paris") is False
    assert check({"exact": {"case_sensitive": False}}, "paris", "Paris") is True
    assert check({"exact": {"strip": False}}, "Paris ", "Paris") is False
    assert check("exact", 42, "42") is True
    assert check("exact", {"a": [1, 2]}, {"a": [1, 2]}) is True
    assert check("exact", True, 1) is False
    assert check("exact", "x", None) is None


def test_contains():
    assert check("contains", "The capital is Paris.", "Paris") is True
    assert check("contains", "the capital is paris.", "Paris") is False
    assert check({"contains": {"case_sensitive": False}}, "THE CAPITAL IS PARIS", "Paris") is True
    assert check({"contains": {"value": ["a", "b"]}}, "a and b", None) is True
    assert check({"contains": {"value": ["a", "z"]}}, "a and b", None) is False
    assert check("contains", "x", None) is None


def test_regex():
    assert check({"regex": {"pattern": r"\d{4}-\d{2}"}}, "on 2026-11", None) is True
    assert check({"regex": {"pattern": r"\d{4}", "full_match": True}}, "on 2026", None) is False
    assert check({"regex": {"pattern": "yes", "case_sensitive": False}}, "YES", None) is True
    assert check("regex", "abc123", r"c\d+$") is True  # the expected value as the pattern
    assert check("regex", "abc", None) is None
    with pytest.raises(ScorerError, match="not a valid regex"):
        scorer("regex")("abc", case("("))


def test_json_valid_and_equal():
    assert check("json_valid", '{"a": 1}', None) is True
    assert check("json_valid", "{a: 1}", None) is False
    assert check("json_valid", {"a": 1}, None) is True
    assert check("json_valid", '```json\n{"a": 1}\n```', None) is False
    assert check({"json_valid": {"strip_fences": True}}, '```json\n{"a": 1}\n```', None) is True
    assert check("json_equal", '{"b": [1, 2], "a": 1}', {"a": 1, "b": [1, 2]}) is True
    assert check("json_equal", '{"a": true}', {"a": 1}) is False
    assert check("json_equal", '{"a": 1.0}', '{"a": 1}') is True  # a string expected is JSON text
    assert check("json_equal", "not json", {"a": 1}) is False
    assert check("json_equal", "{}", None) is None
    with pytest.raises(ScorerError, match="reads a string expected value as JSON text"):
        scorer("json_equal")("{}", case("plain text"))


def test_numeric():
    assert check("numeric", "3.14159", 3.14159) is True
    assert check("numeric", "$1,234.50", "1234.5") is True
    assert check("numeric", 7, "7") is True
    assert check("numeric", "about 7", 7) is False
    assert check({"numeric": {"extract": "last"}}, "between 3 and 7.5", 7.5) is True
    assert check({"numeric": {"extract": "first"}}, "between 3 and 7.5", 3) is True
    assert check({"numeric": {"abs_tol": 0.1}}, "2.05", 2) is True
    assert check({"numeric": {"rel_tol": 0.1}}, "105", 100) is True
    assert check({"numeric": {"rel_tol": 0.1}}, "111", 100) is False
    assert check("numeric", "1", None) is None
    with pytest.raises(ScorerError, match="needs a number"):
        scorer("numeric")("1", case("one"))


# ---------------------------------------------------------------------------------------- params


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"regex": {"patern": "x"}}, "scorer 'regex': patern: unknown parameter"),
        ({"regex": {"pattern": "("}}, "scorer 'regex': pattern is not a valid regex"),
        ({"numeric": {"abs_tol": -1}}, "scorer 'numeric': abs_tol"),
        ({"numeric": {"extract": "middle"}}, "scorer 'numeric': extract"),
        ({"exact": {"case_sensitive": "maybe"}}, "scorer 'exact': case_sensitive"),
        ({"json_valid": {"x": 1}}, "(parameters: strip_fences)"),
        # a judge model without its provider: a sentence with the fix, not a regex nor "Value error, "
        (
            {"judge": {"model": "gpt-4o-mini", "rubric": "r"}},
            "scorer 'judge': model: 'gpt-4o-mini' names no provider: a model is written provider:model_name, "
            "e.g. openai:gpt-4o-mini",
        ),
    ],
)
def test_bad_params_are_usage_errors_naming_the_scorer(spec, problem):
    with pytest.raises(UsageError) as info:
        scorer(spec)
    assert problem in str(info.value)


def test_duplicate_score_names_rejected():
    with pytest.raises(UsageError, match=r"^scorers\[1\]: .*already used"):
        build_scorers([ScorerSpec.model_validate("exact"), ScorerSpec.model_validate("exact")], Path("."))


# ---------------------------------------------------------------------------------------- user callables


@pytest.fixture
def user_module(tmp_path):
    """A scorer module in a fresh folder under a unique name (imports are cached per process)."""
    name = f"userscore_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        "import asyncio\n"
        "def by_case(output, case):\n"
        "    return output == case.expected\n"
        "def by_expected(output, expected):\n"
        "    return 0.25 if output != expected else 1.0\n"
        "def as_dict(output, case, bonus=0):\n"
        "    return {'passed': None, 'score': 0.5, 'scores': {'bonus': bonus}}\n"
        "def verdict_only(output, case):\n"
        "    return {'passed': output == 'ok'}\n"
        "def too_big(output, case):\n"
        "    return 1.5\n"
        "def nothing(output, case):\n"
        "    return None\n"
        "def boom(output, case):\n"
        "    raise KeyError('missing')\n"
        "def one_arg(output):\n"
        "    return True\n"
        "async def later(output, case):\n"
        "    return True\n"
        "class Holder:\n"
        "    @staticmethod\n"
        "    def nested(output, case):\n"
        "        return True\n",
        encoding="utf-8",
    )
    return tmp_path, name


def user(user_module, fn: str, **extra):
    root, name = user_module
    return scorer({"python": f"{name}:{fn}", **extra}, root)


def test_user_callables_by_case_and_by_expected(user_module):
    by_case = user(user_module, "by_case")
    assert by_case.name == "by_case"
    assert by_case("a", case("a")) == Score(passed=True, score=1.0)
    by_expected = user(user_module, "by_expected")
    assert by_expected("a", case("b")) == Score(passed=None, score=0.25)
    assert user(user_module, "Holder.nested")("x", case()).passed is True


def test_user_callable_dict_params_and_name(user_module):
    s = user(user_module, "as_dict", name="judge", params={"bonus": 0.75})
    assert s.name == "judge"
    assert s("x", case()) == Score(passed=None, score=0.5, scores={"bonus": 0.75})
    assert user(user_module, "verdict_only")("ok", case()) == Score(passed=True, score=1.0)


@pytest.mark.parametrize(
    ("fn", "problem"),
    [("too_big", "a score must be a number in [0, 1]"), ("nothing", "returned NoneType"), ("boom", "KeyError")],
)
def test_user_callable_failures_are_scorer_errors(user_module, fn, problem):
    with pytest.raises(ScorerError, match=re.escape(problem)) as info:
        user(user_module, fn)("x", case(id="case-9"))
    if fn == "boom":
        assert "case-9" in str(info.value)


@pytest.mark.parametrize(
    ("fn", "extra", "problem"),
    [
        ("missing_fn", {}, "has no attribute"),
        ("one_arg", {}, "must take (output, case) or (output, expected)"),
        ("by_case", {"params": {"bonus": 1}}, "and the params ['bonus']"),
        ("later", {}, "is async"),
    ],
)
def test_user_callable_usage_errors(user_module, fn, extra, problem):
    with pytest.raises(UsageError) as info:
        user(user_module, fn, **extra)
    assert problem in str(info.value)


def test_user_callable_bad_module_or_spelling(tmp_path):
    with pytest.raises(UsageError, match="cannot import module 'no_such_module_x1'"):
        scorer({"python": "no_such_module_x1:fn"}, tmp_path)
    with pytest.raises(UsageError, match=re.escape("'package.module:function'")):
        scorer({"python": "no_colon"}, tmp_path)


# ---------------------------------------------------------------------------------------- combining


def test_score_attempt_combines():
    scorers = build_scorers(
        [ScorerSpec.model_validate(s) for s in ["final_answer", {"contains": {"value": "because"}}, "json_valid"]],
        Path("."),
    )
    both = score_attempt(scorers, "because FINAL ANSWER: 4", case("4"))
    assert both.passed is False  # json_valid failed
    assert both.score == pytest.approx(2 / 3)
    assert both.scores == {"final_answer": 1.0, "format_valid": 1.0, "contains": 1.0, "json_valid": 0.0}


def test_score_attempt_ignores_scorers_without_verdict():
    scorers = build_scorers([ScorerSpec.model_validate(s) for s in ["final_answer", "exact"]], Path("."))
    result = score_attempt(scorers, "FINAL ANSWER: 4", case(None))
    assert result == Score(passed=None, score=None, scores={"format_valid": 1.0})
    scorers = build_scorers([ScorerSpec.model_validate(s) for s in ["json_valid", "exact"]], Path("."))
    assert score_attempt(scorers, "[1]", case(None)) == Score(passed=True, score=1.0, scores={"json_valid": 1.0})


def test_user_extra_score_names_do_not_overwrite(user_module):
    root, name = user_module
    specs = [ScorerSpec.model_validate(s) for s in [{"python": f"{name}:as_dict", "name": "bonus"}]]
    result = score_attempt(build_scorers(specs, root), "x", case())
    assert result.scores == {"bonus": 0.5, "bonus.bonus": 0.0}
