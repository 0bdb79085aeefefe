"""The suite config (``evalgate.yml``, docs/spec.md#config) as pydantic models: the whole file
(``SuiteConfig``) and its smaller sections; the loader is ``evals.suite.loading``.

Relative paths in the file are relative to the file's own folder (``SuiteConfig.root``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from evals.common.errors import InputFileError
from evals.suite.caching import CacheSpec
from evals.suite.gate import GateSpec
from evals.suite.limits import LimitsSpec, read_old_run_timeout
from evals.suite.scoring import (
    JUDGE_AGREEMENT,
    SCORER_EXTRAS,
    JudgeAgreementSpec,
    MetricSpec,
    ScorerSpec,
    default_direction,
)
from evals.suite.strict import StrictModel
from evals.suite.targets import Target
from evals.suite.yamlsource import load_yaml


class SmokeSpec(StrictModel):
    cases: Annotated[int, Field(ge=1)] = 100
    per_slice_min: Annotated[int, Field(ge=0)] = 5
    seed: int = 0
    tag: str | None = Field(default=None, description="Use the cases whose tags contain this key (or key=value).")
    select: Literal["stratified", "informative"] = Field(
        default="stratified",
        description="stratified: per_slice_min of every slice value, then a seeded draw; informative: from the "
        "history, more of the cases whose outcome has been uncertain, with inclusion probabilities.",
    )


class BaselineSpec(StrictModel):
    store: Literal["local", "github-release"] | None = Field(
        default=None, description="Default: github-release inside GitHub Actions, local elsewhere."
    )
    tag: str = "eval-baseline"
    path: str = ".evalgate/baselines"
    keep: Annotated[int, Field(ge=1)] = 20
    on_missing: Literal["warn", "fail", "seed"] = "warn"
    max_age_days: Annotated[int, Field(ge=0)] = 30
    drift_guard: bool = True


def _backoff_s() -> list[float]:  # a def, not a lambda: mypy types the lambda's list as list[int]
    return [1, 2, 4, 8, 16]


class RetrySpec(StrictModel):
    max: Annotated[int, Field(ge=0)] = 5
    backoff_s: list[Annotated[float, Field(ge=0)]] = Field(default_factory=_backoff_s)
    max_retry_after_s: Annotated[float, Field(ge=0)] = 60


class ReportSpec(StrictModel):
    template: str | None = Field(default=None, description="A user .md.j2 template for the PR comment.")
    max_cases: Annotated[int, Field(ge=0)] = 20
    excerpt_chars: Annotated[int, Field(ge=20)] = 300


class HistorySpec(StrictModel):
    """Where runs, gates and traces are recorded (docs/history.md)."""

    enabled: bool = Field(default=True, description="False: record nothing (env EVALGATE_HISTORY=off does the same).")
    url: str | None = Field(
        default=None,
        description="postgresql://... or sqlite:///path; EVALGATE_HISTORY_URL overrides it. Default: SQLite at "
        "`path` outside GitHub Actions, nothing inside.",
    )
    path: str = Field(default=".evalgate/history.sqlite", description="SQLite file, relative to the config.")


# ---------------------------------------------------------------------------------------- suite


class SuiteConfig(StrictModel):
    suite: Annotated[str, Field(min_length=1)]
    cases: str | list[str]
    target: Target | None = None
    scorers: list[ScorerSpec] = Field(default_factory=lambda: [ScorerSpec(name="exact")])
    attempts: Annotated[int, Field(ge=1)] = 1
    concurrency: Annotated[int, Field(ge=1)] = 8
    timeout_s: Annotated[float, Field(gt=0)] = 60
    retries: RetrySpec = Field(default_factory=RetrySpec)
    slices: list[str] = Field(default_factory=list)
    metrics: dict[str, MetricSpec] = Field(default_factory=lambda: {"pass_rate": MetricSpec()})
    gate: GateSpec = Field(default_factory=GateSpec)
    smoke: SmokeSpec = Field(default_factory=SmokeSpec)
    baseline: BaselineSpec = Field(default_factory=BaselineSpec)
    report: ReportSpec = Field(default_factory=ReportSpec)
    history: HistorySpec = Field(default_factory=HistorySpec)
    limits: LimitsSpec = Field(default_factory=LimitsSpec)
    cache: CacheSpec | None = Field(
        default_factory=CacheSpec,
        description="The response cache: on with its defaults (the openai target and the judge); "
        "`cache: false` turns it off.",
    )
    judge_agreement: JudgeAgreementSpec | None = Field(
        default=None, description="Written metrics.judge_agreement: {min: 0.8} (docs/spec.md#human-labels)."
    )

    @model_validator(mode="before")
    @classmethod
    def _judge_agreement_floor(cls, value: Any) -> Any:
        # Written among the metrics, where a reader looks for floors; every other metric is one
        # of the cases' values, which the paired tests compare, so it is kept apart.
        metrics = value.get("metrics") if isinstance(value, dict) else None
        if not isinstance(metrics, dict) or JUDGE_AGREEMENT not in metrics:
            return value
        rest = {k: v for k, v in metrics.items() if k != JUDGE_AGREEMENT}
        moved = {**value, JUDGE_AGREEMENT: metrics[JUDGE_AGREEMENT]}
        if rest:
            moved["metrics"] = rest
        else:
            del moved["metrics"]  # the floor alone: the default metric is still gated
        return moved

    @field_validator("cache", mode="before")
    @classmethod
    def _cache_switch(cls, value: object) -> object:
        # A switch reads as one: `cache: false` is off, `cache: true` the defaults.
        if isinstance(value, bool):
            return {} if value else None
        return value

    _root: Path = PrivateAttr(default_factory=Path.cwd)
    _path: Path | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _old_run_timeout(cls, value: Any) -> Any:
        return read_old_run_timeout(value)

    @property
    def root(self) -> Path:
        """Folder that relative paths in the config are relative to."""
        return self._root

    @property
    def path(self) -> Path | None:
        return self._path

    def where(self, *loc: str | int) -> str:
        """``file:line`` of a key of this config, for messages about what the file says (the file
        is parsed again: this runs only on the way to an error)."""
        if self._path is None:
            return ".".join(map(str, loc)) or "config"
        try:
            line = load_yaml(self._path).line_of(list(loc))
        except InputFileError:
            line = None
        return f"{self._path}:{line}" if line else str(self._path)

    def named_scores(self) -> set[str] | None:
        """Named scores the configured scorers record, or None when a callable may record any."""
        if any(s.python is not None for s in self.scorers):
            return None
        return {s.name for s in self.scorers} | {x for s in self.scorers for x in SCORER_EXTRAS.get(s.name, ())}

    def resolve(self, relative: str) -> Path:
        return (self._root / relative).resolve()

    @property
    def case_patterns(self) -> list[str]:
        return [self.cases] if isinstance(self.cases, str) else list(self.cases)

    @property
    def gate_id(self) -> str:
        return self.gate.id or self.suite

    def config_hash(self) -> str:
        """What makes two runs' scores mean the same thing (docs/spec.md#config-hash): the scorer definitions, and
        any metric whose better direction was turned around from its default. Left out on
        purpose: the target, cases, attempts and concurrency (changing them is what a gate is
        for; case edits are handled per case by its ``hash``), and everything else about metrics
        (which ones are reported, tolerances, ``gate`` flags): metrics are computed at compare
        time from the stored attempts, so adding one or tightening a band needs no reset."""
        return hash_json(self.definitions())

    def gate_settings(self) -> dict[str, Any]:
        """The rules a candidate is judged by (docs/spec.md#trust-boundaries): metrics (tolerances,
        gate flags, floors), ``gate:``, the slices and the smoke draw. Runs record them, so that a
        gate can say when a candidate's config judges it by other rules than its baseline's. Left
        out: ``gate.id`` and ``gate.more_evidence``, which name a gate and budget its re-runs — the
        shipped more-evidence workflow gates the suite with a config of its own that differs in just
        these, and every PR it gates would otherwise read as one that changed its own gate — and
        ``gate.fail_fast``, which only decides how much of the suite a PR pays for (it splits α, its
        false-fail rate stays the gate's, docs/spec.md#fail-fast)."""
        metrics = {name: spec.model_dump(mode="json") for name, spec in sorted(self.metrics.items())}
        if self.judge_agreement is not None:
            metrics[JUDGE_AGREEMENT] = self.judge_agreement.model_dump(mode="json")
        return {
            "metrics": metrics,
            "gate": self.gate.model_dump(mode="json", exclude={"id", "more_evidence", "fail_fast"}),
            "slices": list(self.slices),
            "smoke": self.smoke.model_dump(mode="json"),
        }

    def definitions(self) -> dict[str, Any]:
        """What ``config_hash`` covers; runs record it, so a mismatch can say what changed."""
        return {
            "scorers": [s.model_dump(mode="json") for s in self.scorers],
            "directions": {
                name: spec.direction
                for name, spec in sorted(self.metrics.items())
                if spec.direction not in (None, default_direction(name))
            },
        }


def hash_json(value: Any) -> str:
    """``sha256:`` of the canonical JSON of a value (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def config_json_schema() -> dict[str, Any]:
    return SuiteConfig.model_json_schema()
