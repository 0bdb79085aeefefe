"""Trajectory scorers (docs/spec.md#trajectory-scorers): what the agent did, read from the attempt's trace, each a 0/1
score, so each makes a paired binary unit with the exact/mid-p McNemar test.

- ``tool_used``: every named tool was called at least once.
- ``tool_sequence``: the calls match the expected sequence — ``exact`` (the same calls in the same
  order, nothing else), ``in_order`` (the expected calls in that order, others allowed between
  them) or ``any_order`` (each expected call, as often as listed, in any order; others allowed).
- ``max_steps``: the attempt took at most ``max`` model calls (the trace's ``step`` events).
- ``tool_args``: each expected call ``{"name", "arguments"}`` is matched, in order, by a call of
  that tool whose arguments contain the expected ones (a JSON subset: objects may have more keys,
  everything named must be equal).

What was expected comes from the scorer's parameters or from the case: ``metadata[key]`` (the
default), or ``expected[key]`` / ``expected`` itself with ``source: expected``. A case that says
nothing is not judged (no verdict, like a text scorer without an expected value), and neither is an
attempt without a trace: what it did is unknown.

A trajectory scorer records its score under its name and stays out of the attempt's ``passed`` and
``score``, so ``pass_rate`` keeps meaning "the answer was right" and the trajectory gets units of its
own; ``in_verdict: true`` makes it part of the verdict too."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.results.trace import step_count, tool_calls
from evals.run.scorers.base import Score, ScorerError, same_json
from evals.suite.cases import Case

Trajectory = Callable[[Sequence[Any] | None, Case], Score]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    in_verdict: bool = Field(default=False, description="Also count in the attempt's passed and score.")


class _FromCase(_Params):
    source: Literal["metadata", "expected"] = Field(
        default="metadata", description="Where a case says what is expected: metadata[key], or expected."
    )
    key: Annotated[str, Field(min_length=1)] = "tools"


class ToolUsedParams(_FromCase):
    tool: str | list[str] | None = Field(default=None, description="Tool name(s); default: the case's list.")


class ToolSequenceParams(_FromCase):
    mode: Literal["exact", "in_order", "any_order"] = "exact"


class MaxStepsParams(_Params):
    max: Annotated[int, Field(ge=1, description="Model calls an attempt may take.")]


class ToolArgsParams(_FromCase):
    key: Annotated[str, Field(min_length=1)] = "tool_args"


def _result(ok: bool, name: str, p: _Params) -> Score:
    value = 1.0 if ok else 0.0
    return Score(passed=ok, score=value) if p.in_verdict else Score(scores={name: value})


def _expected(case: Case, p: _FromCase, what: str) -> Any:
    """What the case expects (None: it says nothing)."""
    if p.source == "metadata":
        return case.metadata.get(p.key)
    if isinstance(case.expected, dict):
        return case.expected.get(p.key)
    if isinstance(case.expected, list) or case.expected is None:
        return case.expected
    raise ScorerError(
        f"case {case.id!r}: with source: expected, expected must be {what} or an object with {p.key!r}, "
        f"got {type(case.expected).__name__}"
    )


def _names(value: Any, case: Case, p: _FromCase) -> list[str]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        place = f"metadata.{p.key}" if p.source == "metadata" else "expected"
        raise ScorerError(
            f'case {case.id!r}: {place} must be a list of tool names (["search", "fetch"]), got {value!r}'
        )
    return names


def _tool_used(p: ToolUsedParams) -> Trajectory:
    def score(events: Sequence[Any] | None, case: Case) -> Score:
        wanted = p.tool if p.tool is not None else _expected(case, p, "a list of tool names")
        calls = tool_calls(events)
        if wanted is None or calls is None:
            return Score()
        called = {name for name, _ in calls}
        return _result(all(n in called for n in _names(wanted, case, p)), "tool_used", p)

    return score


def _is_subsequence(wanted: list[str], called: list[str]) -> bool:
    remaining = iter(called)
    return all(any(name == c for c in remaining) for name in wanted)


def _tool_sequence(p: ToolSequenceParams) -> Trajectory:
    def score(events: Sequence[Any] | None, case: Case) -> Score:
        wanted = _expected(case, p, "a list of tool names")
        calls = tool_calls(events)
        if wanted is None or calls is None:
            return Score()
        wanted = _names(wanted, case, p)
        called = [name for name, _ in calls]
        if p.mode == "exact":
            ok = called == wanted
        elif p.mode == "in_order":
            ok = _is_subsequence(wanted, called)
        else:
            ok = not (Counter(wanted) - Counter(called))
        return _result(ok, "tool_sequence", p)

    return score


def _max_steps(p: MaxStepsParams) -> Trajectory:
    def score(events: Sequence[Any] | None, case: Case) -> Score:
        steps = step_count(events)
        return Score() if steps is None else _result(steps <= p.max, "max_steps", p)

    return score


def json_subset(expected: Any, got: Any) -> bool:
    """``expected`` is contained in ``got``: objects by key (``got`` may have more), everything
    else equal as JSON (``true`` is not ``1``)."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(k in got and json_subset(v, got[k]) for k, v in expected.items())
    return same_json(expected, got)


def _expected_calls(value: Any, case: Case, p: ToolArgsParams) -> list[tuple[str, Any]]:
    place = f"metadata.{p.key}" if p.source == "metadata" else "expected"
    if not isinstance(value, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) and set(c) <= {"name", "arguments"} for c in value
    ):
        raise ScorerError(
            f'case {case.id!r}: {place} must be a list of calls [{{"name": "search", "arguments": {{"q": "..."}}}}], '
            f"got {value!r:.200}"
        )
    return [(c["name"], c.get("arguments", {})) for c in value]


def _tool_args(p: ToolArgsParams) -> Trajectory:
    def score(events: Sequence[Any] | None, case: Case) -> Score:
        wanted = _expected(case, p, "a list of calls")
        calls = tool_calls(events)
        if wanted is None or calls is None:
            return Score()
        remaining = iter(calls)
        ok = all(
            any(name == got_name and json_subset(args, got_args) for got_name, got_args in remaining)
            for name, args in _expected_calls(wanted, case, p)
        )
        return _result(ok, "tool_args", p)

    return score


TRAJECTORY: dict[str, tuple[type[_Params], Callable[[Any], Trajectory]]] = {
    "tool_used": (ToolUsedParams, _tool_used),
    "tool_sequence": (ToolSequenceParams, _tool_sequence),
    "max_steps": (MaxStepsParams, _max_steps),
    "tool_args": (ToolArgsParams, _tool_args),
}
