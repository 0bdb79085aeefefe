"""Scorers (docs/spec.md#scorers): built-ins and user callables, and how one attempt's scores combine.

A scorer that needs an expected value and gets a case without one returns ``passed=None``: it
has no verdict, and inventing one would bias the pass rate."""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
import string
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evals.common import jsonsafe
from evals.common.errors import UsageError
from evals.run.cache import ResponseCache
from evals.run.scorers.base import Score, Scorer, ScorerError, as_text, same_json, verdict
from evals.run.targets.loading import import_callable
from evals.suite.cases import Case
from evals.suite.scoring import ScorerSpec
from evals.suite.yamlsource import value_error_text

__all__ = ["Score", "Scorer", "ScorerError", "as_text", "build_scorers", "score_attempt", "score_attempt_async"]


# ---------------------------------------------------------------------------------------- text and numbers

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# A number as a reference answer may use thousands separators ("1,000"); any other comma makes
# the reference a list ("1,2" is two elements).
_REFERENCE_NUMBER = re.compile(
    r"\s*[+-]?\s*\$?\s*[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?\s*%?\s*|\s*[+-]?\.\d+\s*%?\s*"
)
_NUMBER_IN_TEXT = re.compile(r"[+-]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?%?|[+-]?\.\d+%?")
_STRIP_FOR_NUMBER = re.compile(r"[\s$,%]")
_WHITESPACE = re.compile(r"\s+")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_LIST_SEPARATORS = re.compile(r"[,;]")
_FENCE = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)


def parse_number(text: str) -> float | None:
    """GAIA normalisation: drop ``$``, ``,``, ``%`` and whitespace, then read a plain decimal number
    (no ``nan``/``inf``/``1_000``, which Python's float() would accept)."""
    cleaned = _STRIP_FOR_NUMBER.sub("", text)
    if not _NUMBER.fullmatch(cleaned):
        return None
    value = float(cleaned)
    return value if math.isfinite(value) else None


def reference_number(value: Any) -> float | None:
    """The expected value as a number, if it is one: an int/float, or text like ``1000``, ``$1,000``, ``5%``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str) and _REFERENCE_NUMBER.fullmatch(value):
        return parse_number(value)
    return None


def normalize_text(text: str, remove_punctuation: bool = True) -> str:
    """GAIA string normalisation: no whitespace at all, lower case, optionally no ASCII punctuation."""
    text = _WHITESPACE.sub("", text).lower()
    return text.translate(_PUNCTUATION) if remove_punctuation else text


def _strip_fences(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text


# ---------------------------------------------------------------------------------------- parameters


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _Tolerance(_Params):
    abs_tol: Annotated[float, Field(ge=0)] = 1e-6
    rel_tol: Annotated[float, Field(ge=0)] = 0.0

    def close(self, got: float, expected: float) -> bool:
        """Within ``abs_tol``, or within ``rel_tol`` of the expected value (not of the larger
        one, as math.isclose would: the reference defines the scale)."""
        return abs(got - expected) <= max(self.abs_tol, self.rel_tol * abs(expected))


class ExactParams(_Params):
    case_sensitive: bool = True
    strip: bool = Field(default=True, description="Ignore leading/trailing whitespace.")


class FinalAnswerParams(_Tolerance):
    marker: Annotated[str, Field(min_length=1)] = "FINAL ANSWER:"


class ContainsParams(_Params):
    value: str | list[str] | None = Field(default=None, description="Text(s) that must all occur; default: expected.")
    case_sensitive: bool = True


class RegexParams(_Params):
    pattern: str | None = Field(default=None, description="Default: the case's expected value is the pattern.")
    case_sensitive: bool = True
    full_match: bool = False


class JsonParams(_Params):
    strip_fences: bool = Field(default=False, description="Accept output wrapped in a ```json fence.")


class NumericParams(_Tolerance):
    extract: Literal["whole", "first", "last"] = Field(
        default="whole", description="Read the whole output as a number, or its first/last number."
    )


# ---------------------------------------------------------------------------------------- built-ins


def _exact(p: ExactParams) -> Callable[[Any, Case], Score]:
    def norm(text: str) -> str:
        text = text.strip() if p.strip else text
        return text if p.case_sensitive else text.casefold()

    def score(output: Any, case: Case) -> Score:
        if case.expected is None:
            return Score()
        if isinstance(output, str) or isinstance(case.expected, str):
            return verdict(norm(as_text(output)) == norm(as_text(case.expected)))
        return verdict(same_json(output, case.expected))

    return score


def final_answer_matches(answer: str, expected: Any, p: _Tolerance) -> bool:
    """GAIA rules: a numeric reference compares as a number (``$ , %`` stripped, within tolerance);
    a reference list (a JSON list, or text with ``,``/``;``) compares element by element in order;
    anything else compares as text without whitespace, case and punctuation."""
    number = reference_number(expected)
    if number is not None:
        got = parse_number(answer)
        return got is not None and p.close(got, number)
    if isinstance(expected, list | tuple):
        elements = [as_text(e) for e in expected]
    elif isinstance(expected, str) and _LIST_SEPARATORS.search(expected):
        elements = _LIST_SEPARATORS.split(expected)
    else:
        return normalize_text(answer) == normalize_text(as_text(expected))
    answers = _LIST_SEPARATORS.split(answer)
    return len(answers) == len(elements) and all(
        _element_matches(a, e, p) for a, e in zip(answers, elements, strict=True)
    )


def _element_matches(answer: str, expected: str, p: _Tolerance) -> bool:
    number = parse_number(expected)
    if number is not None:
        got = parse_number(answer)
        return got is not None and p.close(got, number)
    return normalize_text(answer, remove_punctuation=False) == normalize_text(expected, remove_punctuation=False)


def extract_final_answer(text: str, marker: str = "FINAL ANSWER:") -> str | None:
    """The text after the last marker (a model may correct itself), or None without a marker."""
    at = text.rfind(marker)
    return None if at < 0 else text[at + len(marker) :].strip()


def _final_answer(p: FinalAnswerParams) -> Callable[[Any, Case], Score]:
    def score(output: Any, case: Case) -> Score:
        answer = extract_final_answer(as_text(output), p.marker)
        format_valid = 0.0 if answer is None else 1.0
        if case.expected is None:
            return Score(scores={"format_valid": format_valid})
        return verdict(answer is not None and final_answer_matches(answer, case.expected, p), format_valid=format_valid)

    return score


def _contains(p: ContainsParams) -> Callable[[Any, Case], Score]:
    def score(output: Any, case: Case) -> Score:
        wanted = p.value if p.value is not None else case.expected
        if wanted is None:
            return Score()
        needles = [as_text(w) for w in wanted] if isinstance(wanted, list) else [as_text(wanted)]
        text = as_text(output)
        if not p.case_sensitive:
            text, needles = text.casefold(), [n.casefold() for n in needles]
        return verdict(all(n in text for n in needles))

    return score


def _regex(p: RegexParams) -> Callable[[Any, Case], Score]:
    flags = 0 if p.case_sensitive else re.IGNORECASE

    @functools.lru_cache(maxsize=4096)
    def compiled(pattern: str) -> re.Pattern[str]:
        return re.compile(pattern, flags)

    fixed = _compile_param(p.pattern, flags) if p.pattern is not None else None

    def score(output: Any, case: Case) -> Score:
        if fixed is not None:
            regex = fixed
        elif case.expected is None:
            return Score()
        elif not isinstance(case.expected, str):
            raise ScorerError(f"case {case.id!r}: regex uses expected as the pattern, but it is not a string")
        else:
            try:
                regex = compiled(case.expected)
            except re.error as exc:
                raise ScorerError(f"case {case.id!r}: expected is not a valid regex: {exc}") from None
        text = as_text(output)
        found = regex.fullmatch(text) if p.full_match else regex.search(text)
        return verdict(found is not None)

    return score


def _compile_param(pattern: str, flags: int) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ValueError(f"pattern is not a valid regex: {exc}") from None


def _parse_json_output(output: Any, p: JsonParams) -> tuple[bool, Any]:
    if not isinstance(output, str):
        try:
            json.dumps(output, allow_nan=False)
        except (TypeError, ValueError):
            return False, None
        return True, output
    text = _strip_fences(output) if p.strip_fences else output
    try:
        return True, jsonsafe.loads(text)
    except json.JSONDecodeError:
        return False, None


def _json_valid(p: JsonParams) -> Callable[[Any, Case], Score]:
    def score(output: Any, case: Case) -> Score:
        return verdict(_parse_json_output(output, p)[0])

    return score


def _json_equal(p: JsonParams) -> Callable[[Any, Case], Score]:
    def score(output: Any, case: Case) -> Score:
        expected = case.expected
        if expected is None:
            return Score()
        if isinstance(expected, str):
            try:
                expected = jsonsafe.loads(expected)
            except json.JSONDecodeError as exc:
                raise ScorerError(
                    f"case {case.id!r}: json_equal reads a string expected value as JSON text, "
                    f"but it is not JSON ({exc.msg}); write the value itself, or '\"text\"' for a JSON string"
                ) from None
        ok, value = _parse_json_output(output, p)
        return verdict(ok and same_json(value, expected))

    return score


def _numeric(p: NumericParams) -> Callable[[Any, Case], Score]:
    def read(output: Any) -> float | None:
        if isinstance(output, int | float) and not isinstance(output, bool):
            return float(output) if math.isfinite(output) else None
        text = as_text(output)
        if p.extract == "whole":
            return parse_number(text)
        found = _NUMBER_IN_TEXT.findall(text)
        return parse_number(found[0 if p.extract == "first" else -1]) if found else None

    def score(output: Any, case: Case) -> Score:
        if case.expected is None:
            return Score()
        expected = reference_number(case.expected)
        if expected is None:
            raise ScorerError(f"case {case.id!r}: numeric needs a number as expected value, got {case.expected!r}")
        got = read(output)
        return verdict(got is not None and p.close(got, expected))

    return score


BUILTINS: dict[str, tuple[type[_Params], Callable[[Any], Callable[[Any, Case], Score]], tuple[str, ...]]] = {
    "exact": (ExactParams, _exact, ()),
    "final_answer": (FinalAnswerParams, _final_answer, ("format_valid",)),
    "contains": (ContainsParams, _contains, ()),
    "regex": (RegexParams, _regex, ()),
    "json_valid": (JsonParams, _json_valid, ()),
    "json_equal": (JsonParams, _json_equal, ()),
    "numeric": (NumericParams, _numeric, ()),
}


# ---------------------------------------------------------------------------------------- user callables


def _coerce(value: Any, name: str) -> Score:
    """What a user callable returned, as a Score. A bare verdict also counts as score 0/1."""
    if hasattr(value, "item") and not isinstance(value, Score | dict):
        value = value.item()  # numpy scalars
    if isinstance(value, bool):
        return verdict(value)
    if isinstance(value, int | float):
        if not (math.isfinite(value) and 0 <= value <= 1):
            raise ScorerError(f"scorer {name!r} returned {value!r}; a score must be a number in [0, 1]")
        return Score(score=float(value))
    if isinstance(value, Score):
        result = value
    elif isinstance(value, dict):
        try:
            result = Score.model_validate(value)
        except ValidationError as exc:
            problem = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors())
            raise ScorerError(f"scorer {name!r} returned an invalid dict: {problem}") from None
    else:
        raise ScorerError(
            f"scorer {name!r} returned {type(value).__name__}; return a bool, a float in [0, 1], "
            "a dict {passed, score, scores} or a Score"
        )
    if result.score is None and result.passed is not None:
        result = result.model_copy(update={"score": 1.0 if result.passed else 0.0})
    return result


def _import_callable(spec: ScorerSpec, root: Path) -> Callable[..., Any]:
    target = spec.python or ""
    module_name, colon, attr = target.partition(":")
    if not colon or not module_name or not attr:
        raise UsageError(f"scorer {spec.name!r}: python: {target!r} must be written 'package.module:function'")
    fn = import_callable(target, root, [], "scorer")
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):  # noqa: B004
        raise UsageError(f"scorer {target!r} is async; scorers must be plain (sync) functions")
    return fn


def _user_scorer(spec: ScorerSpec, root: Path) -> Callable[[Any, Case], Score]:
    fn = _import_callable(spec, root)
    try:
        signature = inspect.signature(fn)
        signature.bind(None, None, **spec.params)
    except ValueError:
        signature = None  # builtins without a signature: call them and let errors speak
    except TypeError as exc:
        raise UsageError(
            f"scorer {spec.name!r}: {spec.python} must take (output, case) or (output, expected)"
            + (f" and the params {sorted(spec.params)}" if spec.params else "")
            + f": {exc}"
        ) from None
    positional = [
        p
        for p in (signature.parameters.values() if signature else ())
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    wants_expected = len(positional) >= 2 and positional[1].name == "expected"
    params = dict(spec.params)

    def score(output: Any, case: Case) -> Score:
        return _coerce(fn(output, case.expected if wants_expected else case.as_written(), **params), spec.name)

    return score


# ---------------------------------------------------------------------------------------- public


def build_scorers(
    specs: Sequence[ScorerSpec],
    root: Path,
    where: Callable[..., str] | None = None,
    cache: ResponseCache | None = None,
) -> list[Scorer]:
    """Scorers for the config's specs. Callables are imported with ``root`` on sys.path; a judge
    answers from ``cache`` (the response cache) when it is given.
    UsageError for unknown/invalid params, callables that cannot be imported, duplicate names;
    the message starts with the entry's place in the config: ``where("scorers", i)`` (the
    config's ``file:line``), then ``scorers[i]``."""
    scorers: list[Scorer] = []
    taken: dict[str, str] = {}
    for index, spec in enumerate(specs):
        try:
            scorer = _build(spec, root, cache)
            for key in (scorer.name, *scorer.extras):
                if key in taken:
                    raise UsageError(
                        f"scorer {spec.name!r}: the score name {key!r} is already used by scorer {taken[key]!r}; "
                        "give a python scorer another name: ..., or combine the two"
                    )
                taken[key] = scorer.name
        except UsageError as exc:
            place = f"{where('scorers', index)}: " if where is not None else ""
            raise UsageError(f"{place}scorers[{index}]: {exc}") from None
        scorers.append(scorer)
    return scorers


def _build(spec: ScorerSpec, root: Path, cache: ResponseCache | None = None) -> Scorer:
    if spec.python is not None:
        return Scorer(spec.name, _user_scorer(spec, root))
    # The judge (an HTTP client) and the trajectory scorers are imported only by a suite that uses
    # them: ~35 ms of every run's start-up otherwise.
    if spec.name == "judge":
        from evals.run.scorers.judge import JudgeParams, make_judge

        try:
            return Scorer(spec.name, None, afn=make_judge(JudgeParams.model_validate(spec.params), root, cache))
        except ValidationError as exc:
            raise UsageError(f"scorer 'judge': {_params_problem(exc, JudgeParams)}") from None
    if spec.name not in BUILTINS:  # no trajectory scorer has a built-in's name
        from evals.run.scorers.trajectory import TRAJECTORY

        if spec.name not in TRAJECTORY:
            raise UsageError(f"unknown scorer {spec.name!r}: built-ins are {', '.join([*BUILTINS, *TRAJECTORY])}")
        trajectory_params, make_trajectory = TRAJECTORY[spec.name]
        try:
            return Scorer(spec.name, None, trajectory=make_trajectory(trajectory_params.model_validate(spec.params)))
        except ValidationError as exc:
            raise UsageError(f"scorer {spec.name!r}: {_params_problem(exc, trajectory_params)}") from None
    params_model, make, extras = BUILTINS[spec.name]
    try:
        return Scorer(spec.name, make(params_model.model_validate(spec.params)), extras)
    except ValidationError as exc:
        raise UsageError(f"scorer {spec.name!r}: {_params_problem(exc, params_model)}") from None
    except ValueError as exc:
        raise UsageError(f"scorer {spec.name!r}: {exc}") from None


def _params_problem(exc: ValidationError, model: type[BaseModel]) -> str:
    known = ", ".join(model.model_fields) or "none"
    problems = []
    for err in exc.errors(include_url=False):
        key = ".".join(map(str, err["loc"])) or "params"
        msg = "unknown parameter" if err["type"] == "extra_forbidden" else value_error_text(err)
        problems.append(f"{key}: {msg}")
    return "; ".join(problems) + f" (parameters: {known})"


def score_attempt(scorers: Sequence[Scorer], output: Any, case: Case, events: Sequence[Any] | None = None) -> Score:
    """All scorers on one output (and trace ``events``, for the trajectory scorers): passed = every
    scorer that gave a verdict passed (None if none did); score = mean of the scorers' scores;
    scores = each scorer's score by name plus extras."""
    return _combine([(scorer, scorer(output, case, events)) for scorer in scorers])


async def score_attempt_async(
    scorers: Sequence[Scorer], output: Any, case: Case, events: Sequence[Any] | None = None
) -> Score:
    """``score_attempt`` where some scorers are async (the judge): those are awaited."""
    results: list[tuple[Scorer, Score]] = []
    for scorer in scorers:
        try:
            results.append((scorer, await scorer.ascore(output, case, events)))
        except ScorerError as exc:
            # The judges that did answer before this one failed were paid all the same.
            for _, done in results:
                if done.usage is not None:
                    exc.usage = done.usage if exc.usage is None else done.usage.plus(exc.usage)
            raise
    return _combine(results)


def _combine(results: list[tuple[Scorer, Score]]) -> Score:
    verdicts: list[bool] = []
    values: list[float] = []
    named: dict[str, float] = {}
    details: dict[str, Any] = {}
    resends = []
    usage = None
    for scorer, result in results:
        details.update(result.details)
        resends += result.resends
        if result.usage is not None:  # two judges: both were paid
            usage = result.usage if usage is None else usage.plus(result.usage)
        if result.passed is not None:
            verdicts.append(result.passed)
        if result.score is not None:
            values.append(result.score)
            named[scorer.name] = result.score
        for key, value in result.scores.items():
            named[key if key not in named else f"{scorer.name}.{key}"] = value
    return Score(
        passed=all(verdicts) if verdicts else None,
        score=sum(values) / len(values) if values else None,
        scores=named,
        details=details,
        resends=resends,
        usage=usage,
    )
