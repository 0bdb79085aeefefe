"""Which gate settings judge a pull request (docs/spec.md#trust-boundaries).

On a pull request the config is the PR author's: a PR that sets ``tolerance: 0.5`` and ``gate:
false`` on the metric it breaks would otherwise pass by its own rules. So on PRs the base commit's
settings decide — its ``evalgate.yml`` as ``git show <base>:<path>`` reads it, or, where git cannot
give it (a shallow checkout, a config new in the PR), the settings the baseline run recorded — and
what the PR changes of them is listed in the headline, to take effect once merged. Only the rules
are the base's (metrics, ``gate:``, slices); the suite, its target and scorers stay the PR's, and so
do the gate's id and more evidence's budget (they name a gate and cap its re-runs, nothing it
decides). The smoke draw was made by the run with the PR's config; a change of it is listed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evals.common.errors import EvalgateError
from evals.common.gitinfo import git, repository_root
from evals.compare.gate_changes import gate_changes
from evals.results import console
from evals.suite.config import SuiteConfig
from evals.suite.gate import GateSpec
from evals.suite.overrides import with_overrides
from evals.suite.scoring import MetricSpec
from evals.suite.yamlsource import load_yaml

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.github.activity import Activity
    from evals.store.baseline import LoadedBaseline
    from evals.suite.options import GateOptions


@dataclass
class Rules:
    """``config`` judges the candidate; ``source`` names whose settings those are when they are
    not the candidate config's own; ``changes`` is what the candidate's config changes of them."""

    config: SuiteConfig
    source: str | None = None
    changes: list[str] = field(default_factory=list)

    def annotate(self, comparison: Comparison) -> None:
        if self.source is None:
            return
        comparison.gate_changes = self.changes
        comparison.gate_decided_by = self.source if self.changes else None


def rules_for(config: SuiteConfig, activity: Activity, baseline: LoadedBaseline | None, options: GateOptions) -> Rules:
    """The rules of a gate: the config's own (``options`` applied), except on a pull request, where the
    base commit's settings (else the baseline run's) decide, with the same ``options`` applied: the
    workflow's ``--tolerance`` or ``--slice-key`` are no change of the PR's."""
    if not activity.is_pr:
        return Rules(config)
    source, settings = None, None
    if activity.base_sha:
        settings = base_settings(config, activity.base_sha)
        name = config.path.name if config.path else "config"
        source = f"the base commit {activity.base_sha[:7]}'s {name}"
    if settings is None and baseline is not None and baseline.results.run.gate_settings:
        settings = baseline.results.run.gate_settings
        sha = baseline.ref.snapshot.sha if baseline.ref.snapshot else None
        source = f"the baseline run's record ({sha[:7]})" if sha else "the baseline run's record"
    if settings is None:
        console.warning(
            "this pull request is judged by its own config's gate settings: neither its base commit's config "
            "(git show; use fetch-depth: 0) nor a baseline run that recorded its settings was found"
        )
        return Rules(config)
    try:
        judged = with_overrides(with_settings(config, settings), options)
    except (ValidationError, KeyError, TypeError) as exc:
        console.warning(f"{source} could not be used ({exc.__class__.__name__}); the PR's own settings decide")
        return Rules(config)
    changes = gate_changes(judged.gate_settings(), config.gate_settings())
    if not changes:
        return Rules(config, source, [])
    console.info(f"this pull request changes its own gate settings ({len(changes)}): {source} decides", source="gate")
    return Rules(judged, source, changes)


def base_settings(config: SuiteConfig, base_sha: str) -> dict[str, Any] | None:
    """The gate settings of ``config``'s file as the base commit holds it, or None when git cannot
    give it (not a repository, a shallow checkout without that commit, a file new in the PR) or it is
    no valid config."""
    if config.path is None:
        return None
    path = Path(config.path).resolve()
    try:
        root = repository_root(path.parent)
        relative = path.relative_to(root).as_posix()
    except (ValueError, OSError):
        return None
    done = git(root, "show", f"{base_sha}:{relative}")
    if done is None or done.returncode != 0:
        return None
    try:
        src = load_yaml(path, done.stdout)
        base = SuiteConfig.model_validate(src.data)
    except (ValidationError, EvalgateError) as exc:
        console.warning(f"{relative} at the base commit {base_sha[:7]} is no valid config ({exc.__class__.__name__})")
        return None
    return base.gate_settings()


def with_settings(config: SuiteConfig, settings: dict[str, Any]) -> SuiteConfig:
    """``config`` judged by ``settings`` (a ``gate_settings()`` record): its metrics, ``gate:`` and
    slices replaced, its gate id, more evidence and fail fast kept."""
    kept = {
        "id": config.gate.id,
        "more_evidence": config.gate.more_evidence.model_dump(mode="json"),
        "fail_fast": config.gate.fail_fast,
    }
    gate = GateSpec.model_validate({**settings["gate"], **kept})
    metrics = {name: MetricSpec.model_validate(spec) for name, spec in settings["metrics"].items()}
    return config.model_copy(update={"metrics": metrics, "gate": gate, "slices": list(settings["slices"])})
