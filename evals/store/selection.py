"""Which baseline store a command uses and what a candidate is compared with
(docs/spec.md#baseline-selection): the store that ``gate``, ``reset``, ``promote`` and ``baseline``
name (their config after the command-line overrides, ``evals.suite.overrides``), and the baselines
read before a candidate is run (the one the store chooses for the event, and the last blessed one
for the drift guard)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evals.results import console
from evals.results.model import Results
from evals.suite.config import SuiteConfig

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.github.client import GitHubClient
    from evals.store.baseline import BaselineStore, LoadedBaseline


def open_store_for(config: SuiteConfig, *, client: GitHubClient | None = None) -> BaselineStore:
    """The store ``config.baseline`` names (``with_overrides`` applied ``--store`` and the rest),
    with a warning for a local store inside Actions."""
    from evals.store.baseline import open_store

    store = open_store(config, client=client)
    if store.in_actions and config.baseline.store == "local":
        # A quickstart-style config copied into a workflow: every gate would be no-baseline.
        console.warning(
            f"the baseline store is the local folder {config.resolve(config.baseline.path)} on "
            "this runner: what a promotion writes there is lost with the runner unless the workflow commits it; "
            "on GitHub use baseline.store: github-release (or the action's baseline-store input)"
        )
    return store


@dataclass
class Baselines:
    """What a candidate is compared with: the baseline the store chose, and the last blessed one
    for the drift guard (None when the config turns the guard off, or for a reset)."""

    baseline: LoadedBaseline | None
    blessed: LoadedBaseline | None
    # Why the drift guard could not be checked (the blessed snapshot is unreadable): the gate still
    # compares with the latest baseline, but promotes nothing in that run.
    drift_unchecked: str | None = None

    def compare(
        self,
        candidate: Results,
        config: SuiteConfig,
        *,
        flaky: Mapping[str, float] | None = None,
        reset_command: str | None = None,
        resume_command: str | None = None,
        gate_command: str | None = None,
    ) -> Comparison:
        """``flaky``: the history's flip rates of known-flaky cases, for the case diff's marks;
        ``reset_command``: the command that blesses this candidate, for a no-baseline reason;
        ``resume_command``: the one that finishes it, and ``gate_command`` the gate after it, for a
        run a limit stopped."""
        from evals.compare.analysis import compare

        comparison = compare(
            self.baseline.results if self.baseline else None,
            candidate,
            config,
            blessed=self.blessed.results if self.blessed else None,
            baseline_ref=self.baseline.ref if self.baseline else None,
            blessed_ref=self.blessed.ref if self.blessed else None,
            reset_command=reset_command,
            flaky=flaky,
            resume_command=resume_command,
            gate_command=gate_command,
        )
        for loaded in (self.baseline, self.blessed):
            if loaded is not None:
                comparison.warnings.extend(w for w in loaded.warnings if w not in comparison.warnings)
        if self.drift_unchecked:
            comparison.warnings.append(self.drift_unchecked)
        return comparison


def load_baselines(
    store: BaselineStore,
    config: SuiteConfig,
    *,
    pr_base_sha: str | None = None,
    is_pr: bool = False,
    drift: bool = True,
) -> Baselines:
    """Read (and digest-verify) the baselines before any candidate is run, so a corrupt or
    unreachable store costs nothing but this read. A PR compares with its base commit's snapshot
    (or its nearest ancestor's); everything else with the latest."""
    from evals.store.baseline import StoreCorrupt

    baseline = store.select(base_sha=pr_base_sha) if is_pr else store.latest()
    if not (drift and config.baseline.drift_guard):
        return Baselines(baseline, None)
    try:
        return Baselines(baseline, store.blessed())
    except StoreCorrupt as exc:
        # The latest baseline is intact: gate on it rather than stop every gate until a reset.
        why = f"drift guard not checked, so nothing is promoted in this run: the blessed snapshot is unreadable ({exc})"
        console.warning(why)
        return Baselines(baseline, None, why)
