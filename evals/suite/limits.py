"""``limits:`` of ``evalgate.yml`` (docs/spec.md#limits): hard limits on what one run may spend.

Kept apart from ``config`` (which reads it) so the suite config stays one screenful per part."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from evals.common.errors import InputFileError, UsageError
from evals.results import console
from evals.suite.strict import StrictModel
from evals.suite.targets import OpenAITarget, model_params


class LimitsSpec(StrictModel):
    """Hard limits of a run: when one is reached, no new case starts, the attempts in flight (and
    the other attempts of cases already started) finish, and the results file is written partial
    and resumable; the gate then says ``incomplete`` (exit 3), never pass. docs/running.md."""

    max_cost_usd: Annotated[float, Field(gt=0)] | None = Field(
        default=None,
        description="Stop once the attempts paid for cost this much (USD, as the target reports it: cost_usd from a "
        "python or command target, or tokens × target.openai.price_in_per_mtok / price_out_per_mtok; plus a judge "
        "scorer's calls at its own prices). Counts the cases a --resume keeps. An openai target or a judge without "
        "prices is an error; an attempt reporting no cost stops the run (a limit that cannot be measured cannot be "
        "enforced).",
    )
    max_tokens: Annotated[int, Field(gt=0)] | None = Field(
        default=None,
        description="Stop once the attempts paid for used this many tokens, in + out, a judge scorer's included. "
        "Counts the cases a --resume keeps; an attempt reporting no tokens stops the run.",
    )
    max_duration_s: Annotated[float, Field(gt=0)] | None = Field(
        default=None,
        description="Stop starting cases after this many seconds of wall clock of this invocation (a --resume gets "
        "its own); in-flight attempts still finish, each within timeout_s. The old key run_timeout_s is read as "
        "this one, with a warning.",
    )

    @property
    def enabled(self) -> bool:
        return any(v is not None for v in (self.max_cost_usd, self.max_tokens, self.max_duration_s))


def tighter_limits(
    limits: LimitsSpec, max_cost_usd: float | None, max_tokens: int | None, max_duration_s: float | None
) -> LimitsSpec:
    """``limits`` with each given cap applied where it is lower than the config's (``evalgate run
    --max-cost-usd`` ...): a cap never raises a limit the config set."""
    update: dict[str, Any] = {}
    for key, cap in (("max_cost_usd", max_cost_usd), ("max_tokens", max_tokens), ("max_duration_s", max_duration_s)):
        if cap is None:
            continue
        if cap <= 0:
            raise UsageError(f"--{key.replace('_', '-')} must be > 0, got {cap:g}")
        current = getattr(limits, key)
        update[key] = cap if current is None else min(current, cap)
    return limits.model_copy(update=update) if update else limits


def check_cost_limit(config: Any, src: Any) -> None:
    """``limits.max_cost_usd`` over an openai target or a ``judge`` scorer without prices could
    never be measured (the endpoint reports tokens, not dollars): refused before anything is spent,
    not found out after."""
    # ``config`` is a SuiteConfig, ``src`` its Located YAML (not imported: config imports this module).
    if config.limits.max_cost_usd is None:
        return
    for i, spec in enumerate(config.scorers):
        priced = spec.params.get("price_in_per_mtok") is not None or spec.params.get("price_out_per_mtok") is not None
        if spec.name == "judge" and spec.python is None and not priced:
            line = src.line_of(["scorers", i]) or src.line_of(["limits", "max_cost_usd"])
            raise InputFileError(
                f"{src.path}:{line}" if line else src.path,
                "limits.max_cost_usd cannot be enforced: the judge scorer has no prices, and its calls count "
                "toward the limit",
                "set the judge's price_in_per_mtok and price_out_per_mtok (USD per million tokens of its model), or "
                "limit tokens with limits.max_tokens instead",
            )
    model = model_params(config.target)
    if model is None:
        return
    if model.price_in_per_mtok is None and model.price_out_per_mtok is None:
        kind = "openai" if isinstance(config.target, OpenAITarget) else "anthropic"
        line = src.line_of(["limits", "max_cost_usd"])
        raise InputFileError(
            f"{src.path}:{line}" if line else src.path,
            f"limits.max_cost_usd cannot be enforced: the {kind} target has no prices, so no attempt would "
            "report a cost",
            f"set target.{kind}.price_in_per_mtok and price_out_per_mtok (USD per million tokens, from your "
            "provider's price list), or limit tokens with limits.max_tokens instead",
        )


def read_old_run_timeout(value: Any) -> Any:
    """The config's raw mapping with ``run_timeout_s`` read as ``limits.max_duration_s``: they would
    be two names for one thing, the run's wall clock (``load_config`` warns; both is an error)."""
    if not isinstance(value, dict) or "run_timeout_s" not in value:
        return value
    value = dict(value)
    seconds = value.pop("run_timeout_s")
    limits = value.get("limits")
    if limits is None:
        limits = {}
    if isinstance(limits, dict):  # anything else: the model says what is wrong with limits:
        if limits.get("max_duration_s") is not None:
            raise ValueError("run_timeout_s is the old name of limits.max_duration_s: keep only limits.max_duration_s")
        if seconds is not None:
            value["limits"] = {**limits, "max_duration_s": seconds}
    return value


def warn_old_run_timeout(where: str, limits: LimitsSpec) -> None:
    seconds = f"{limits.max_duration_s:g}" if limits.max_duration_s is not None else "..."
    console.warning(
        f"{where}: run_timeout_s is now limits.max_duration_s (the run stops starting cases "
        f"at it and lets the attempts in flight finish); write limits: {{max_duration_s: {seconds}}} instead"
    )
