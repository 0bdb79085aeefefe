"""The results file (docs/spec.md#results-format): what ``run`` writes, what the baseline store keeps, what
importers produce. Field names are part of the interface; do not rename them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from evals.results.spend import JudgeUsage, LimitStop
from evals.results.trace import TraceEvent, check_events

SCHEMA_VERSION: Final = 1
OUTPUT_LIMIT_BYTES = 8 * 1024

RunStatus = Literal["pending", "running", "success", "error", "cancelled", "timeout"]
ErrorKind = Literal["infra", "target", "scorer", "timeout"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class AttemptError(_Model):
    kind: ErrorKind
    message: str


class RetryRecord(_Model):
    """One infra failure that was retried: kept so a run's record is honest about recovery."""

    kind: ErrorKind = "infra"
    message: str
    status: int | None = None
    wait_s: float | None = None
    latency_ms: float | None = None


class Attempt(_Model):
    # Strict: "passed": "yes" (or "no", 1, "false") is a file some tool got wrong, not a verdict
    # to guess; pydantic's lax mode would read "no" as False but "false" and "yes" as well.
    passed: StrictBool | None = None
    score: Annotated[float, Field(ge=0, le=1)] | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    latency_ms: Annotated[float, Field(ge=0)] | None = None
    tokens_in: Annotated[int, Field(ge=0)] | None = None
    tokens_out: Annotated[int, Field(ge=0)] | None = None
    cost_usd: Annotated[float, Field(ge=0)] | None = None
    output: Any = None
    output_sha256: str | None = Field(default=None, description="sha256 of the full output text.")
    output_truncated: StrictBool = False
    error: AttemptError | None = None
    retries: Annotated[int, Field(ge=0)] = 0
    retry_history: list[RetryRecord] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    trace: list[TraceEvent] | None = Field(default=None, description="Ordered events of the attempt.")
    cached: StrictBool = Field(default=False, description="The answer came from the response cache.")
    judge_usage: JudgeUsage | None = Field(
        default=None,
        description="What a judge scorer's calls cost while scoring this attempt; none when no judge was "
        "paid (no judge, or its verdict came from the cache). Counted in the run's spend and limits, not in the "
        "tokens and cost_usd above, which are the target's.",
    )
    batch: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="The more-evidence batch that added this attempt; none for the first look."
    )

    @field_validator("trace")
    @classmethod
    def _trace_rules(cls, trace: list[TraceEvent] | None) -> list[TraceEvent] | None:  # also lazyload's dicts
        if trace:
            check_events(trace)  # seq without gaps, every tool_call answered
        return trace

    @property
    def is_infra_error(self) -> bool:
        return self.error is not None and self.error.kind == "infra"


class CaseResult(_Model):
    id: Annotated[str, Field(min_length=1)]
    slices: dict[str, str] = Field(default_factory=dict)
    attempts: list[Attempt] = Field(default_factory=list)
    hash: str | None = Field(default=None, description="sha256 of the case's input and expected value.")
    input: Any = None
    expected: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every attempt ran without an infra error (wrong answers and target errors count as done)."""
        return bool(self.attempts) and not any(a.is_infra_error for a in self.attempts)


class TargetInfo(_Model):
    kind: str
    model: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str | None = Field(
        default=None,
        description="The system prompt's text (masked), beside its path and sha256 in params: with it an openai "
        "target is defined by this file alone, so more evidence can re-run this run's side without its commit.",
    )


class Stratum(_Model):
    population: Annotated[int, Field(ge=1)] = Field(description="N_h: the full suite's cases in this stratum.")
    drawn: Annotated[int, Field(ge=1)] = Field(description="n_h: how many of them the smoke run drew.")
    variance: Annotated[float, Field(ge=0)] = Field(
        description="S_h²: the run-to-run variance of a case's outcome the history predicted (the allocation's "
        "weight; the variance of a stratum with one drawn case)."
    )


class Inclusion(_Model):
    stratum: str
    probability: Annotated[float, Field(gt=0, le=1)] = Field(description="π_i = n_h / N_h.")


class SampleDesign(_Model):
    """How a smoke run drawn with ``smoke.select: informative`` chose its cases: the
    strata and each drawn case's inclusion probability, which make its comparison a stratified
    Horvitz–Thompson estimate of the full suite (``evals.compare.sampling``)."""

    method: Literal["stratified"] = "stratified"
    history_runs: Annotated[int, Field(ge=0)] = Field(description="Runs of the history the strata were read from.")
    strata: dict[str, Stratum]
    cases: dict[str, Inclusion]

    @model_validator(mode="after")
    def _known_strata(self) -> SampleDesign:
        for case_id, inclusion in self.cases.items():
            if inclusion.stratum not in self.strata:
                raise ValueError(f"sample.cases[{case_id!r}]: stratum {inclusion.stratum!r} is not in sample.strata")
        return self


class BatchInfo(_Model):
    """One more-evidence batch whose attempts this file holds."""

    batch: Annotated[int, Field(ge=1)]
    units: list[str] = Field(default_factory=list, description="The units whose cases it re-ran.")
    case_ids: list[str] = Field(default_factory=list)


class ProviderBatch(_Model):
    """Requests of this run sent to a provider's batch API (docs/spec.md#batch-pricing): the batches'
    ids, so that a later ``evalgate run --resume`` collects them."""

    api: Literal["openai", "anthropic"] = Field(description="OpenAI Batch or Anthropic Message Batches.")
    state: Literal["submitted", "collected"] = Field(
        description="submitted: the answers are at the provider (collect with --resume); collected: read into "
        "this file's attempts (those the batch did not answer are infra errors, which --resume submits again)."
    )
    ids: list[str] = Field(description="The batches' ids, as the provider named them.")
    requests: Annotated[int, Field(ge=0)] = Field(description="Requests sent in them (one per attempt).")
    requests_digest: str | None = Field(
        None,
        description="A digest of the requests the run had to make when it submitted them (custom_id and body "
        "of each, the cached ones too): a resume whose requests differ refuses to collect them.",
    )
    submitted_at: str | None = None
    collected_at: str | None = None


class FailFastStop(_Model):
    """Why ``gate.fail_fast`` stopped scheduling cases (docs/spec.md#fail-fast): a blocking unit's
    regression was certain at a look under the anytime-valid rule. The run is partial (status
    ``cancelled``) and ``--resume`` completes it."""

    unit: str = Field(description="The blocking unit whose regression stopped the run (e.g. language=ko).")
    metric: str
    look: Annotated[int, Field(ge=1)] = Field(
        description="The look (one per block of completed cases) that stopped it."
    )
    looks: Annotated[int, Field(ge=1)] = Field(description="The looks planned before the run.")
    cases_at_look: Annotated[int, Field(ge=0)] = Field(description="Cases completed when that look was taken.")
    unit_cases: Annotated[int, Field(ge=0)] = Field(description="The unit's paired cases completed at that look.")
    observed_drop: float = Field(description="The unit's mean per-case drop at that look (positive: worse).")
    tolerance: float
    p_value: Annotated[float, Field(ge=0, le=1)]
    level: Annotated[float, Field(ge=0, le=1)] = Field(description="The unit's level at that look: α·share·w·spent.")
    alpha_share: Annotated[float, Field(gt=0, lt=1)] = Field(
        description="The share of the gate's α fail fast spends over its looks; the fixed-sample rule keeps the rest."
    )
    also: list[str] = Field(default_factory=list, description="Other units rejected at the same look.")


class RunInfo(_Model):
    suite: str
    status: RunStatus
    total_cases: Annotated[int, Field(ge=0)]
    completed_cases: Annotated[int, Field(ge=0)]
    started_at: str | None = None
    ended_at: str | None = None
    git_sha: str | None = None
    git_ref: str | None = None
    git_dirty: bool | None = Field(
        default=None,
        description="Tracked files differed from git_sha when the run started (uncommitted changes): the run is of "
        "that commit plus them. Null when not recorded (no git, an importer).",
    )
    config_hash: str | None = None
    definitions: dict[str, Any] | None = Field(
        default=None, description="What config_hash covers (scorers, directions), so a mismatch can say what changed."
    )
    gate_settings: dict[str, Any] | None = Field(
        default=None,
        description="The config's metrics, gate:, slices and smoke: when the run was made; a gate lists what a "
        "candidate's config changes of them against its baseline's.",
    )
    target: TargetInfo | None = None
    attempts_per_case: Annotated[int, Field(ge=1)] = 1
    shard: str | None = Field(default=None, description='"i/N" when this file holds one shard.')
    subset: str | None = Field(default=None, description='"smoke" or "tag:..." when only part of the suite ran.')
    sample: SampleDesign | None = Field(
        default=None, description="Strata and inclusion probabilities of an informative smoke draw."
    )
    message: str | None = Field(default=None, description="Why the run is not a success, if it is not.")
    limit: LimitStop | None = Field(
        default=None,
        description="The limits: key that stopped this run and what was spent; the run is then partial "
        "(cancelled for cost or tokens, timeout for the duration) and --resume completes it.",
    )
    fail_fast: FailFastStop | None = Field(
        default=None,
        description="gate.fail_fast stopped scheduling cases: which unit regressed and at which look; the run is "
        "then partial (cancelled) and --resume completes it.",
    )
    evalgate_version: str | None = None
    source: dict[str, Any] = Field(default_factory=dict, description="Importer provenance (format, files, versions).")
    provider_batch: ProviderBatch | None = Field(
        default=None, description="The provider batch API's batches this run's answers came from (batch: true)."
    )
    batches: list[BatchInfo] = Field(
        default_factory=list, description="More-evidence batches: which cases got one more attempt (attempt.batch)."
    )

    @property
    def is_complete(self) -> bool:
        return self.status == "success" and self.completed_cases == self.total_cases


class Results(_Model):
    schema_version: Literal[1] = SCHEMA_VERSION
    run: RunInfo
    cases: list[CaseResult] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> Results:
        seen: set[str] = set()
        for index, case in enumerate(self.cases):
            if case.id in seen:
                raise ValueError(f"duplicate case id {case.id!r} at cases[{index}]")
            seen.add(case.id)
        if self.run.completed_cases > self.run.total_cases:
            raise ValueError(
                f"run.completed_cases ({self.run.completed_cases}) exceeds run.total_cases ({self.run.total_cases})"
            )
        return self

    def by_id(self) -> dict[str, CaseResult]:
        return {c.id: c for c in self.cases}


class ResultsView(Protocol):
    """A run as its readers (the summary, the history) see it: ``Results``, or a run whose cases
    are made as they are read (``evals.compare.lazyload.LazyResults`` from a file,
    ``evals.run.recorder.WrittenRun`` from what a run just wrote)."""

    @property
    def run(self) -> RunInfo: ...

    @property
    def cases(self) -> Sequence[CaseResult]: ...


# ---------------------------------------------------------------------------------------- helpers


# json.dumps with options builds an encoder per call (~3.5 µs of the ~10 a small case's hash took);
# one made once encodes the same bytes.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def case_hash(input_value: Any, expected: Any) -> str:
    """The per-case pairing hash: sha256 of the canonical JSON of input and expected."""
    text = _CANONICAL_JSON.encode({"input": input_value, "expected": expected})
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def clip_output(output: Any, limit: int = OUTPUT_LIMIT_BYTES) -> tuple[Any, str, bool]:
    """Store at most ``limit`` bytes of an output. Returns (stored, sha256 of the full text,
    truncated?). Non-string outputs that fit are kept as they are (JSON values)."""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    raw = text.encode("utf-8")
    full_hash = "sha256:" + hashlib.sha256(raw).hexdigest()
    if len(raw) <= limit:
        return output, full_hash, False
    return raw[:limit].decode("utf-8", errors="ignore"), full_hash, True


def results_json_schema() -> dict[str, Any]:
    return Results.model_json_schema()
