"""What the command line changes in a suite config, in one place: :func:`with_overrides` returns a
copy of the config with the options applied (the file's config is never changed in place, so what
a command read and what it runs with can both be told)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.common.errors import UsageError
from evals.suite.config import BaselineSpec, SuiteConfig
from evals.suite.limits import tighter_limits
from evals.suite.loading import rate_tolerance_fix, target_from_file
from evals.suite.options import CandidateOptions, GateOptions, RunOptions, StoreOptions
from evals.suite.scoring import MetricSpec

# Metrics whose values are rates in [0, 1]: the ones `--tolerance` applies to (and every pass@k).
RATE_METRICS = ("pass_rate", "score", "error_rate")


def is_rate_metric(name: str) -> bool:
    """A metric whose values are rates in [0, 1]: ``pass_rate``, ``score``, ``error_rate``, ``pass@k``."""
    return name in RATE_METRICS or name.startswith("pass@")


def with_overrides(config: SuiteConfig, options: StoreOptions | CandidateOptions | RunOptions) -> SuiteConfig:
    """A copy of ``config`` as the command's options change it: the store (``--store``,
    ``--baseline-tag``, ``--baseline-dir``), the slices (``--slice-key``, added to ``slices:``), the
    first baseline (``--seed``: ``on_missing: seed``), the rate metrics' tolerance
    (``--tolerance``), and for ``evalgate run`` the concurrency, attempts, target and lowered
    limits. Raises ``UsageError`` for a value the config cannot take."""
    update: dict[str, Any] = {}
    if isinstance(options, RunOptions):
        update |= _run_overrides(config, options)
    else:
        store = options if isinstance(options, StoreOptions) else options.store
        baseline = _baseline(config.baseline, store)
        if isinstance(options, CandidateOptions):
            if options.slice_keys:
                update["slices"] = list(dict.fromkeys([*config.slices, *options.slice_keys]))
            if isinstance(options, GateOptions) and options.seed:
                baseline = baseline.model_copy(update={"on_missing": "seed"})
        if baseline is not config.baseline:
            update["baseline"] = baseline
    copy = config.model_copy(update=update)
    if isinstance(options, GateOptions) and options.tolerance and options.tolerance.strip():
        copy = apply_tolerance_override(copy, options.tolerance)
    return copy


def _baseline(spec: BaselineSpec, store: StoreOptions) -> BaselineSpec:
    update: dict[str, Any] = {}
    if store.store:
        update["store"] = store.store
    if store.baseline_tag:
        update["tag"] = store.baseline_tag
    if store.baseline_dir:
        # A folder given on the command line is relative to where the command runs, not to the config.
        update["path"] = str(Path(store.baseline_dir).resolve())
        update.setdefault("store", "local")
    return spec.model_copy(update=update) if update else spec


def _run_overrides(config: SuiteConfig, options: RunOptions) -> dict[str, Any]:
    update: dict[str, Any] = {}
    if options.concurrency is not None:
        if options.concurrency < 1:
            raise UsageError(f"--concurrency must be at least 1, got {options.concurrency}")
        update["concurrency"] = options.concurrency
    if options.attempts is not None:
        if options.attempts < 1:
            raise UsageError(f"--attempts must be at least 1, got {options.attempts}")
        update["attempts"] = options.attempts
    if options.target:
        update["target"] = target_from_file(config, Path(options.target))
    limits = tighter_limits(config.limits, options.max_cost_usd, options.max_tokens, options.max_duration_s)
    if limits is not config.limits:
        update["limits"] = limits
    return update


def apply_tolerance_override(config: SuiteConfig, tolerance: float | str) -> SuiteConfig:
    """The ``--tolerance`` rule of ``evalgate compare`` and ``evalgate gate``: a copy of ``config``
    whose rate metrics (:func:`is_rate_metric`) get this tolerance; latency, tokens, cost and named
    scores keep theirs, since an absolute band in rate units means nothing in milliseconds or
    dollars. ``tolerance`` is absolute (``0.02``, ``"0.02"``) or relative (``"5%"``). The input
    config is not changed, and neither is ``config_hash()`` (tolerances are not part of it).
    Raises ``UsageError`` for anything else (negative, NaN, ``"abc"``)."""
    checked = parse_tolerance(tolerance)
    metrics = {
        name: spec.model_copy(update={"tolerance": checked}) if is_rate_metric(name) else spec
        for name, spec in config.metrics.items()
    }
    return config.model_copy(update={"metrics": metrics})


def parse_tolerance(tolerance: float | str) -> float | str:
    """``--tolerance`` (or ``EVALGATE_TOLERANCE``) checked: it only ever applies to rates, so an
    absolute value of 1 or more (``2`` meant as 2 pp) is refused like the config's."""
    hint = 'use a number >= 0 (0.02) or a percentage ("5%")'
    try:
        if isinstance(tolerance, str):
            raw = tolerance.strip()
            value: float | str = raw if raw.endswith("%") else float(raw)
        else:
            value = float(tolerance)
        checked = MetricSpec(tolerance=value).tolerance
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        raise UsageError(f"--tolerance {tolerance!r}: {hint}") from None
    if not isinstance(checked, str) and checked >= 1:
        raise UsageError(
            f"--tolerance {tolerance!r} is a band of {100 * checked:g} percentage points on rates in [0, 1] "
            "(pass_rate, score, error_rate, pass@k), so no drop could ever fail the gate; "
            f"{rate_tolerance_fix(checked, '--tolerance ')}"
        )
    return checked
