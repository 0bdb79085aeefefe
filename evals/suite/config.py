"""The suite config (``evalgate.yml``, docs/spec.md#config) as pydantic models, and its loader.

Relative paths in the file are relative to the file's own folder (``SuiteConfig.root``)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from evals.common.confine import confined
from evals.common.errors import InputFileError
from evals.common.gitinfo import repository_root
from evals.results import console
from evals.suite.caching import CacheSpec, check_cache_key
from evals.suite.limits import LimitsSpec, check_cost_limit, read_old_run_timeout, warn_old_run_timeout
from evals.suite.strict import StrictModel
from evals.suite.targets import (
    MODEL_KINDS,
    TARGET_KINDS,
    CommandTarget,
    OpenAITarget,
    PythonTarget,
    Target,
    model_params,
)
from evals.suite.yamlsource import Located, load_yaml, validation_error

DEFAULT_CONFIG = "evalgate.yml"
BUILTIN_SCORERS = ("exact", "final_answer", "contains", "regex", "json_valid", "json_equal", "numeric", "judge")
# Scorers of what the agent did (its trace), not of its output (``evals.run.scorers.trajectory``).
TRAJECTORY_SCORERS = ("tool_used", "tool_sequence", "max_steps", "tool_args")
LOWER_IS_BETTER = ("error_rate", "latency_p50_ms", "latency_p95_ms", "tokens", "cost_usd")
BUILTIN_METRICS = ("pass_rate", "score", *LOWER_IS_BETTER)
# Metrics in their own units (milliseconds, tokens, dollars); every other metric — pass_rate,
# score, error_rate, pass@k, a named score — is a rate or score in [0, 1].
JUDGE_AGREEMENT = "judge_agreement"  # metrics.judge_agreement: a floor, not a metric of the cases
# Below this many labelled cases a 90% interval of an agreement near 0.8 is wider than ±0.15.
JUDGE_AGREEMENT_MIN_CASES = 20
UNBOUNDED_METRICS = ("latency_p50_ms", "latency_p95_ms", "tokens", "cost_usd")
# Named scores a built-in scorer records beside its own (``evals.run.scorers.builtin``).
SCORER_EXTRAS = {"final_answer": ("format_valid",)}
# Built-in scorers that judge against the case's ``expected`` unless this parameter replaces it.
EXPECTED_UNLESS = {
    "exact": None,
    "final_answer": None,
    "json_equal": None,
    "numeric": None,
    "contains": "value",
    "regex": "pattern",
}
_PASS_AT = re.compile(r"^pass@[1-9]\d*$")


def default_direction(metric: str) -> Literal["higher", "lower"]:
    """Which way is better for a metric when its config does not say."""
    return "lower" if metric in LOWER_IS_BETTER else "higher"


# ---------------------------------------------------------------------------------------- scorers


class ScorerSpec(StrictModel):
    """``exact`` | ``{regex: {pattern: ...}}`` | ``{python: pkg.mod:fn, name: ...}``."""

    name: str
    python: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if isinstance(value, dict) and "name" not in value and "python" not in value and len(value) == 1:
            ((name, params),) = value.items()
            return {"name": name, "params": params if params is not None else {}}
        if isinstance(value, dict) and "python" in value and "name" not in value:
            return {**value, "name": str(value["python"]).rsplit(":", 1)[-1]}
        return value

    @property
    def needs_expected(self) -> bool:
        """Whether this scorer compares with the case's ``expected`` (unknown for callables: no)."""
        if self.python is not None or self.name not in EXPECTED_UNLESS:
            return False
        param = EXPECTED_UNLESS[self.name]
        return param is None or self.params.get(param) is None

    @model_validator(mode="after")
    def _known(self) -> ScorerSpec:
        if self.python is None and self.name not in (*BUILTIN_SCORERS, *TRAJECTORY_SCORERS):
            raise ValueError(
                f"unknown scorer {self.name!r}: built-ins are {', '.join((*BUILTIN_SCORERS, *TRAJECTORY_SCORERS))}; "
                "a callable is written {python: 'pkg.module:function'}"
            )
        return self


# ---------------------------------------------------------------------------------------- metrics


class MetricSpec(StrictModel):
    direction: Literal["higher", "lower"] | None = Field(
        default=None, description="Which way is better; defaults per metric (latency, cost, errors: lower)."
    )
    tolerance: float | str = Field(
        default=0.02, description='Absolute (0.02) or relative to the baseline value ("10%").'
    )
    gate: bool = True
    min: float | None = Field(
        default=None,
        description="Absolute floor: the gate fails when the candidate's interval lies entirely below it (needs no "
        "baseline).",
    )
    max: float | None = Field(
        default=None,
        description="Absolute ceiling: the gate fails when the candidate's interval lies entirely above it.",
    )
    per_slice: bool = Field(default=False, description="min/max hold for every slice value too, not only overall.")

    @model_validator(mode="after")
    def _floor_below_ceiling(self) -> MetricSpec:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}: no value could clear both")
        if self.per_slice and self.min is None and self.max is None:
            raise ValueError("per_slice applies min/max to every slice: set min or max too")
        return self

    @field_validator("tolerance")
    @classmethod
    def _tolerance(cls, value: float | str) -> float | str:
        if isinstance(value, str):
            if not re.fullmatch(r"\s*\d+(\.\d+)?\s*%\s*", value):
                raise ValueError('a relative tolerance is written like "10%"')
        elif value < 0:
            raise ValueError("tolerance must be >= 0")
        return value

    def band(self, baseline_value: float) -> float:
        """The tolerance δ as an absolute amount for this baseline value."""
        if isinstance(self.tolerance, str):
            return abs(baseline_value) * float(self.tolerance.strip().rstrip("%")) / 100.0
        return float(self.tolerance)


class MoreEvidenceSpec(StrictModel):
    """More evidence: when the gate ends inconclusive, re-run the cases of the slices
    that look worse (both sides) in batches and test again, on per-case means, at a share of α fixed in advance."""

    max_batches: Annotated[int, Field(ge=0)] = Field(
        default=0, description="Most batches to run after the first look; 0 turns more evidence off."
    )
    max_cost_usd: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Stop starting batches once both sides' batches cost this much."
    )
    rho: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.2,
        description="Share of α the looks after the first share (by a spending function); the first look's "
        "fixed-sample rule keeps (1 − rho)·α.",
    )
    select: Literal["looks_worse", "all"] = Field(
        default="looks_worse",
        description="looks_worse: the cases of slices not regressed whose delta is below the tolerance (can only "
        "turn inconclusive into fail); all: every case (the only way overall can reach pass).",
    )

    @property
    def enabled(self) -> bool:
        return self.max_batches > 0


class GateRule(StrictModel):
    """The decision rule's parameters: what ``gate:`` says and what a comparison records as in
    force (``evals.compare.model.GateConfig``), declared once with their defaults."""

    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05
    power: Annotated[float, Field(gt=0, lt=1)] = 0.8
    slice_alpha_share: Annotated[float, Field(ge=0, lt=1)] = Field(
        default=0.7, description="Share of α the slices get (0: only overall can block); overall gets the rest."
    )
    slice_weights: Literal["cases", "sqrt_cases", "equal"] = Field(
        default="cases", description="How a slice key's share of α is split among its values."
    )
    target_mde: Annotated[float, Field(gt=0)] = Field(
        default=0.10,
        description="Report only: units whose minimum detectable drop is above it are marked underpowered. "
        "The old key max_detectable_drop is read as this one, with a warning.",
    )
    inconclusive: Literal["warn", "fail"] = "warn"
    max_error_rate: Annotated[float, Field(ge=0, le=1)] = Field(
        default=0.10, description="Largest share of attempts with an infra error before 'incomplete'."
    )


class GateSpec(GateRule):
    """gate: the decision rule and how the config tunes the rest of the gate."""

    mcnemar: Literal["mid-p", "exact"] = Field(
        default="mid-p",
        description="The McNemar test of binary units under 300 cases: mid-p (its size stays at its level) "
        "or exact (spends 27-75% of its level on small units).",
    )
    id: str | None = Field(default=None, description="Gate id for the sticky PR comment; defaults to the suite.")
    max_removed_share: Annotated[float, Field(ge=0, le=1)] = Field(
        default=0.2, description="A full gate whose candidate lacks more of the baseline's cases is incompatible."
    )
    bootstrap_resamples: Annotated[int, Field(ge=200)] = 2000
    seed: int = 0
    more_evidence: MoreEvidenceSpec = Field(default_factory=MoreEvidenceSpec)
    fail_fast: bool = Field(
        default=False,
        description="Pull-request gates: run the cases in a seeded order stratified by slice and stop scheduling "
        "once a blocking unit's regression is certain (an anytime-valid test at its own share of alpha); never "
        "stops with a pass. A push, reset or default-branch gate runs every case.",
    )

    @model_validator(mode="before")
    @classmethod
    def _old_key(cls, value: Any) -> Any:
        if isinstance(value, dict) and "max_detectable_drop" in value:
            if "target_mde" in value:
                raise ValueError("max_detectable_drop is the old name of target_mde: keep only target_mde")
            value = {**value, "target_mde": value["max_detectable_drop"]}
            del value["max_detectable_drop"]
        return value


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


class JudgeAgreementSpec(StrictModel):
    """``metrics.judge_agreement``: a floor on the share of labelled cases where the judge agrees with
    the case's human verdict (docs/spec.md#human-labels). Read out of ``metrics:`` (it is no per-case
    metric: the paired tests never see it)."""

    min: Annotated[float, Field(ge=0, le=1)] = Field(
        description="The floor: the gate fails when the agreement's interval lies entirely below it."
    )
    min_cases: Annotated[int, Field(ge=1)] = Field(
        default=JUDGE_AGREEMENT_MIN_CASES,
        description="Fewer labelled cases than this: the floor cannot be judged, and the gate cannot pass.",
    )


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


def load_config(path: str | Path | None = None) -> SuiteConfig:
    """Read and validate a suite config. Every problem is an InputFileError (exit 2) naming
    the file, the line and the key."""
    path = Path(path or DEFAULT_CONFIG)
    if not path.exists():
        hint = (
            "pass --config PATH, or write one: a minimal evalgate.yml is three keys (suite, cases, target); "
            "`evalgate schema config` prints every key, and the repository's examples/quickstart is a "
            "complete suite"
            if path.name == DEFAULT_CONFIG
            else None
        )
        raise InputFileError(path, "config file not found", hint)
    try:
        src = load_yaml(path)
    except RecursionError:  # the YAML parser recurses per nesting level
        raise InputFileError(path, "YAML nested too deeply to be a config") from None
    if not isinstance(src.data, dict):
        raise InputFileError(path, "the config must be a YAML mapping (suite:, cases:, target:, ...)")
    try:
        config = SuiteConfig.model_validate(src.data)
    except ValidationError as exc:
        raise validation_error(src, exc, "config", union_tags=TARGET_KINDS, model=SuiteConfig) from None
    config._root = path.resolve().parent
    config._path = path
    _check_metric_names(config, src)
    _check_floor_ranges(config, src)
    _check_rate_tolerances(config, src)
    _check_pass_at_k(config, src)
    _check_paths(config, src)
    check_cache_key(config.cache, config.target, src)
    gate = src.data.get("gate")
    if isinstance(gate, dict) and "max_detectable_drop" in gate:
        console.warning(
            f"{config.where('gate', 'max_detectable_drop')}: gate.max_detectable_drop is now "
            "gate.target_mde and only marks underpowered units in the report; which units can block is fixed "
            "before the run (gate.slice_alpha_share, gate.slice_weights)"
        )
    if "run_timeout_s" in src.data:
        warn_old_run_timeout(config.where("run_timeout_s"), config.limits)
    check_cost_limit(config, src)
    return config


def _check_pass_at_k(config: SuiteConfig, src: Located) -> None:
    """``pass@k`` with fewer than k attempts per case could never be estimated (docs/spec.md#config-errors). Checked
    where the config runs its own suite (it has a target); results brought from elsewhere carry
    their own attempts, which ``compare`` checks."""
    if config.target is None:
        return
    for name in config.metrics:
        if _PASS_AT.match(name) and int(name.removeprefix("pass@")) > config.attempts:
            line = src.line_of(["metrics", name])
            raise InputFileError(
                f"{src.path}:{line}" if line else src.path,
                f"metric {name!r} needs at least {name.removeprefix('pass@')} attempts per case, and attempts is "
                f"{config.attempts}",
                f"set attempts: {name.removeprefix('pass@')} (or more), or use pass@1",
            )


def _check_floor_ranges(config: SuiteConfig, src: Located) -> None:
    """A floor or ceiling of a rate outside [0, 1] could never be met or never be missed: a
    percentage written as 80 instead of 0.8, most likely."""
    for name, spec in config.metrics.items():
        if name in UNBOUNDED_METRICS:
            continue
        for key in ("min", "max"):
            value = getattr(spec, key)
            if value is not None and not 0.0 <= value <= 1.0:
                line = src.line_of(["metrics", name, key])
                raise InputFileError(
                    f"{src.path}:{line}" if line else src.path,
                    f"metrics.{name}.{key} is {value:g}, but {name} is a rate in [0, 1]",
                    f"write a share: {key}: {value / 100:g} for {value:g}%" if 1 < value <= 100 else None,
                )


def _check_rate_tolerances(config: SuiteConfig, src: Located) -> None:
    """An absolute tolerance of 1 or more on a rate is a band of 100 pp or more: no delta of a
    rate in [0, 1] can leave it, so the metric could never fail. ``tolerance: 2`` meant as 2 pp
    is the usual cause (docs/spec.md#config-errors)."""
    for name, spec in config.metrics.items():
        if name in UNBOUNDED_METRICS or isinstance(spec.tolerance, str) or spec.tolerance < 1:
            continue
        line = src.line_of(["metrics", name, "tolerance"]) or src.line_of(["metrics", name])
        raise InputFileError(
            f"{src.path}:{line}" if line else src.path,
            rate_tolerance_problem(name, spec.tolerance),
            rate_tolerance_fix(spec.tolerance),
        )


def rate_tolerance_problem(metric: str, tolerance: float) -> str:
    """Why an absolute tolerance of 1 or more on the rate ``metric`` is refused."""
    return (
        f"tolerance {tolerance:g} on {metric} is a band of {100 * tolerance:g} percentage points: {metric} is a rate "
        "in [0, 1], so no drop could ever fail the gate"
    )


def rate_tolerance_fix(tolerance: float, spelling: str = "tolerance: ") -> str:
    """The two ways to write what a tolerance of 1 or more on a rate most likely meant, in the
    config's spelling or (``spelling="--tolerance "``) the flag's."""
    return (
        f"write a share: {spelling}{tolerance / 100:g} for {tolerance:g} pp, "
        f'or {spelling}"{tolerance:g}%" for {tolerance:g}% of the baseline value'
    )


def _check_metric_names(config: SuiteConfig, src: Located) -> None:
    """A metric name that is neither a built-in metric nor a named score the scorers record would
    compare nothing (docs/spec.md#config-errors): ``passrate`` must be an error, not an empty gate that passes."""
    named = config.named_scores()
    for name in config.metrics:
        if name in BUILTIN_METRICS or _PASS_AT.match(name):
            continue
        score = name.removeprefix("score:")
        if named is None or score in named:
            continue
        line = src.line_of(["metrics", name])
        choices = ", ".join([*BUILTIN_METRICS, "pass@k", *sorted(named)])
        raise InputFileError(
            f"{src.path}:{line}" if line else src.path,
            f"unknown metric {name!r} under metrics:",
            f"valid names: {choices}",
        )


def config_json_schema() -> dict[str, Any]:
    return SuiteConfig.model_json_schema()


def target_from_file(config: SuiteConfig, path: Path) -> Target | None:
    """``evalgate run --target FILE``: the target FILE defines (JSON, the config's ``target:``
    mapping) instead of the config's — how more evidence re-runs a baseline from its recorded
    target. When both are the same model kind (``openai``, ``anthropic``), what FILE leaves out (the
    key's variable, headers, prices: transport and credentials, which a results file never records)
    comes from the config's own."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(path, f"cannot read a target from it ({exc})", "--target") from None
    own = config.target
    kind = next((k for k in MODEL_KINDS if isinstance(data, dict) and isinstance(data.get(k), dict)), None)
    ours = model_params(own) if kind is not None and getattr(own, kind, None) is not None else None
    if ours is not None and kind is not None:
        data = {kind: {**ours.model_dump(exclude_unset=True), **data[kind]}}
    try:
        return SuiteConfig.model_validate({"suite": "t", "cases": [], "target": data}).target
    except ValidationError as exc:
        raise InputFileError(path, f"not a target: {exc.errors(include_url=False)[0]['msg']}", "--target") from None


def _check_paths(config: SuiteConfig, src: Located) -> None:
    """Every path the file names stays inside its repository (``evals.common.confine``): the report
    template and the case files it reads into what is posted, and the folders and files it writes."""
    named: list[tuple[list[str | int], str]] = []
    patterns = config.case_patterns
    for i, pattern in enumerate(patterns):
        named.append((["cases"] if isinstance(config.cases, str) else ["cases", i], pattern))
    if config.report.template:
        named.append((["report", "template"], config.report.template))
    if "baseline" in src.data:
        named.append((["baseline", "path"], config.baseline.path))
    if config.cache is not None:
        named.append((["cache", "dir"], config.cache.dir))
    named.append((["history", "path"], config.history.path))
    target = config.target
    if isinstance(target, PythonTarget):
        named += [(["target", "path", i], entry) for i, entry in enumerate(target.path)]
    elif isinstance(target, CommandTarget) and target.cwd:
        named.append((["target", "cwd"], target.cwd))
    elif (model := model_params(target)) is not None and model.system_prompt:
        kind = "openai" if isinstance(target, OpenAITarget) else "anthropic"
        named.append((["target", kind, "system_prompt"], model.system_prompt))
    top = repository_root(config.root)
    for loc, raw in named:
        line = src.line_of(loc)
        where = f"{src.path}:{line}" if line else str(src.path)
        confined(config.root, raw, ".".join(str(part) for part in loc if not isinstance(part, int)), where, top)
