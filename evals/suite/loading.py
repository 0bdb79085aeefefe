"""Reading ``evalgate.yml`` (docs/spec.md#config): the loader and the checks a field alone cannot
make (docs/spec.md#config-errors), each an InputFileError naming the file, the line and the key."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import ValidationError

from evals.common.confine import confined
from evals.common.errors import InputFileError
from evals.common.gitinfo import repository_root
from evals.results import console
from evals.suite.caching import check_cache_key
from evals.suite.config import SuiteConfig
from evals.suite.limits import check_cost_limit, warn_old_run_timeout
from evals.suite.scoring import BUILTIN_METRICS, UNBOUNDED_METRICS
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
_PASS_AT = re.compile(r"^pass@[1-9]\d*$")


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
