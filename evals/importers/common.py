"""What every importer shares: the options, reading files with errors that name the file,
turning a source's values into an ``Attempt``, choosing slices, and assembling ``Results``."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evals import __version__
from evals.common import jsonsafe
from evals.common.errors import InputFileError
from evals.results.files import json_problem, read_json_bytes
from evals.results.masking import clip_masked, mask_secrets
from evals.results.model import (
    Attempt,
    AttemptError,
    CaseResult,
    ErrorKind,
    Results,
    RunInfo,
    RunStatus,
    TargetInfo,
    case_hash,
)

# Slice values taken from free-form metadata must look like labels, not payloads.
SLICE_VALUE_MAX_CHARS = 64
# A metadata key used as a slice by default must group cases: a key with a distinct value per
# case (an id, a question text) would make one slice per case.
DEFAULT_SLICE_MAX_VALUES = 50


class ImportOptions(BaseModel):
    """Options of ``evalgate import`` (and keyword arguments of ``import_results``)."""

    model_config = ConfigDict(extra="forbid")

    slice_keys: list[str] | None = Field(
        default=None,
        description="Metadata/property/var keys to use as slices; None = the format's default.",
    )
    suite: str | None = Field(default=None, description="run.suite; default: derived from the source.")
    metric: str | None = Field(
        default=None,
        description=(
            "The value that decides passed/score: lm-eval metric, inspect scorer, Harbor reward key,"
            " DeepEval metric, Braintrust score."
        ),
    )
    filters: dict[str, str] = Field(
        default_factory=dict, description="lm-eval: filter per task; key '*' applies to every task."
    )


# ------------------------------------------------------------------------------------- reading


def canonical_json(value: Any) -> str:
    """``value`` as one canonical JSON text (sorted keys, no spaces): a key that names the same
    data the same way in every file."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def read_text(path: Path) -> str:
    raw = read_json_bytes(path)  # gunzips when gzip magic is present
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputFileError(path, "not UTF-8 text") from None


def load_json(path: Path, what: str) -> Any:
    text = read_text(path)
    try:
        return jsonsafe.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{path}:{exc.lineno}", f"not a valid {what}: invalid JSON: {json_problem(exc)}") from None


def iter_jsonl(path: Path, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an error.

    Lines end at "\\n" only: ``str.splitlines`` would also cut at U+2028/U+2029/U+0085, which JSON
    writers leave raw inside strings (lm-eval dumps with ``ensure_ascii=False``)."""
    for lineno, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = jsonsafe.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(f"{path}:{lineno}", f"not a valid {what}: invalid JSON: {json_problem(exc)}") from None
        if not isinstance(obj, dict):
            raise InputFileError(f"{path}:{lineno}", f"not a valid {what}: a line is not a JSON object")
        yield lineno, obj


def load_json_of(path: Path, fmt: str, what: str) -> Any:
    """``load_json``, except that a file holding another format's JSON lines says so (a Braintrust
    JSONL export given to a single-document importer is not a broken file but the wrong one)."""
    try:
        return load_json(path, what)
    except InputFileError:
        from evals.importers.detect import sniff

        guess = sniff(path)
        if guess and guess != fmt:
            raise not_format(path, fmt, "not a single JSON document") from None
        raise


def not_format(path: Path, fmt: str, problem: str) -> InputFileError:
    """The error for a file given to the wrong importer: says what it looks like instead."""
    from evals.importers.detect import sniff  # detect imports this module

    guess = sniff(path)
    hint = f"it looks like {guess} output: use --from {guess} or --from auto" if guess and guess != fmt else None
    article = "an" if fmt[0] in "aeiou" else "a"
    return InputFileError(path, f"not {article} {fmt} file: {problem}", hint)


# -------------------------------------------------------------------------------------- values


def as_number(value: Any) -> float | None:
    """A finite number from a number or bool (True = 1); anything else is None."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def as_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: a missing or malformed member of a
    producer's file reads as absent rather than failing the import."""
    return value if isinstance(value, dict) else {}


def unit_interval(value: float | None) -> float | None:
    return value if value is not None and 0.0 <= value <= 1.0 else None


def numeric_scores(values: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """The finite numeric entries of ``values`` (nested dicts flattened with '/')."""
    out: dict[str, float] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            out.update(numeric_scores(value, f"{prefix}{key}/"))
        elif (number := as_number(value)) is not None:
            out[f"{prefix}{key}"] = number
    return out


def make_error(kind: ErrorKind, message: str) -> AttemptError:
    return AttemptError(kind=kind, message=str(mask_secrets(message))[:2000])


def attempt(
    *,
    passed: bool | None = None,
    score: float | None = None,
    scores: Mapping[str, float] | None = None,
    latency_ms: float | None = None,
    tokens_in: int | None = None,
    tokens_out: int | None = None,
    cost_usd: float | None = None,
    output: Any = None,
    error: AttemptError | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Attempt:
    """An Attempt from a source's raw values: outputs clipped and masked, impossible numbers dropped."""
    stored, sha, truncated = (None, None, False) if output is None else clip_masked(output)
    if error is not None:
        # An infra failure says nothing about the model; any other error is a failed attempt.
        passed = None if error.kind == "infra" else False
    return Attempt(
        passed=passed,
        score=unit_interval(score),
        scores=dict(scores or {}),
        latency_ms=latency_ms if latency_ms is not None and latency_ms >= 0 else None,
        tokens_in=tokens_in if isinstance(tokens_in, int) and tokens_in >= 0 else None,
        tokens_out=tokens_out if isinstance(tokens_out, int) and tokens_out >= 0 else None,
        cost_usd=cost_usd if cost_usd is not None and cost_usd >= 0 else None,
        output=stored,
        output_sha256=sha,
        output_truncated=truncated,
        error=error,
        metadata=dict(mask_secrets(dict(metadata or {}))),
    )


# -------------------------------------------------------------------------------------- slices


def _label(value: Any) -> str | None:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float) and len(str(value)) <= SLICE_VALUE_MAX_CHARS and str(value).strip():
        return str(value)
    return None


def choose_slices(tags: Mapping[str, Mapping[str, Any]], keys: list[str] | None) -> dict[str, dict[str, str]]:
    """Slices per case id from each case's candidate tags (metadata, properties, vars).

    With ``keys`` given, exactly those keys (a case without one has no value for it). Without,
    every key whose values are short scalar labels that group cases: at most
    ``DEFAULT_SLICE_MAX_VALUES`` distinct values and fewer distinct values than cases."""
    if keys is None:
        values: dict[str, set[str]] = {}
        unusable: set[str] = set()
        for case_tags in tags.values():
            for key, value in case_tags.items():
                label = _label(value)
                if label is None:
                    unusable.add(key)
                else:
                    values.setdefault(key, set()).add(label)
        n_cases = len(tags)
        keys = [
            k
            for k, seen in values.items()
            if k not in unusable and len(seen) <= DEFAULT_SLICE_MAX_VALUES and len(seen) < n_cases
        ]
    chosen: dict[str, dict[str, str]] = {}
    for case_id, case_tags in tags.items():
        chosen[case_id] = {k: label for k in keys if k in case_tags and (label := _label(case_tags[k])) is not None}
    return chosen


# -------------------------------------------------------------------------------------- results


def new_case(case_id: str, *, input_value: Any = None, expected: Any = None, hashed: bool = False) -> CaseResult:
    """A case; ``hashed`` when the source really knows its input and expected value."""
    input_value = mask_secrets(input_value)
    expected = mask_secrets(expected)
    return CaseResult(
        id=case_id,
        input=input_value,
        expected=expected,
        hash=case_hash(input_value, expected) if hashed else None,
    )


def build_results(
    cases: Iterable[CaseResult],
    *,
    fmt: str,
    inputs: list[Path],
    suite: str,
    options: ImportOptions,
    status: RunStatus = "success",
    total_cases: int | None = None,
    message: str | None = None,
    target: TargetInfo | None = None,
    started_at: str | None = None,
    ended_at: str | None = None,
    source: Mapping[str, Any] | None = None,
    expected_attempts: int = 1,
    tags: Mapping[str, Mapping[str, Any]] | None = None,
) -> Results:
    """Assemble the run. ``completed_cases`` counts cases with at least ``expected_attempts``
    attempts, none of them an infra error; ``total_cases`` is what the source says should have
    run, never less than what was found. ``tags``: each case's candidate slice tags, whose keys
    are listed in ``run.source.tag_keys`` (what ``--slice-key`` could have named)."""
    cases = list(cases)
    if not cases and total_cases is None:
        raise InputFileError(inputs[0] if len(inputs) == 1 else ", ".join(map(str, inputs)), f"no {fmt} results found")
    total = max(total_cases or 0, len(cases))
    completed = sum(1 for c in cases if c.complete and len(c.attempts) >= expected_attempts)
    attempts_per_case = max((len(c.attempts) for c in cases), default=1) or 1
    tag_keys = {k for case_tags in (tags or {}).values() for k in case_tags} | {k for c in cases for k in c.slices}
    if status == "success" and completed < total and message is None:
        message = f"{total - completed} of {total} cases did not complete (infra errors or missing)"
    return Results(
        run=RunInfo(
            suite=options.suite or suite,
            status=status,
            total_cases=total,
            completed_cases=completed,
            started_at=started_at,
            ended_at=ended_at,
            target=target,
            attempts_per_case=attempts_per_case,
            message=message,
            evalgate_version=__version__,
            source=dict(
                mask_secrets(
                    {"format": fmt, "files": [str(p) for p in inputs], **(source or {}), "tag_keys": sorted(tag_keys)}
                ),
            ),
        ),
        cases=cases,
    )
