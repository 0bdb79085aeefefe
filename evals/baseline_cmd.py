"""``evalgate baseline list|show|fetch``: look into the baseline store (SPEC §7) — the same store,
chosen the same way, as ``gate``, ``promote`` and ``reset`` use (their store options, and how they
read the baselines a candidate is compared with, live here)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evals.config import SuiteConfig, load_config
from evals.errors import UsageError
from evals.results import Results, save_results

if TYPE_CHECKING:
    from evals.baseline import BaselineStore, LoadedBaseline
    from evals.comparison import Comparison
    from evals.github import GitHubClient
    from evals.manifest import SnapshotInfo


def add_store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        choices=("local", "github-release"),
        help="baseline store (default: the config's baseline.store; github-release inside Actions, else local)",
    )
    parser.add_argument("--baseline-tag", metavar="TAG", help="release tag of the github-release store")
    parser.add_argument("--baseline-dir", metavar="DIR", help="folder of the local store (default: baseline.path)")


def open_store_for(
    config: SuiteConfig, args: argparse.Namespace, *, client: GitHubClient | None = None
) -> BaselineStore:
    """The store ``config.baseline`` names, after the command-line overrides."""
    from evals.baseline import open_store

    updates = {}
    if getattr(args, "store", None):
        updates["store"] = args.store
    if getattr(args, "baseline_tag", None):
        updates["tag"] = args.baseline_tag
    if getattr(args, "baseline_dir", None):
        # A folder given on the command line is relative to where the command runs, not to the config.
        updates["path"] = str(Path(args.baseline_dir).resolve())
        updates.setdefault("store", "local")
    if updates:
        config.baseline = config.baseline.model_copy(update=updates)
    return open_store(config, client=client)


@dataclass
class Baselines:
    """What a candidate is compared with: the baseline the store chose, and the last blessed one
    for the drift guard (None when the config turns the guard off, or for a reset)."""

    baseline: LoadedBaseline | None
    blessed: LoadedBaseline | None
    # Why the drift guard could not be checked (the blessed snapshot is unreadable): the gate still
    # compares with the latest baseline, but promotes nothing in that run.
    drift_unchecked: str | None = None

    def compare(self, candidate: Results, config: SuiteConfig) -> Comparison:
        from evals.compare import compare

        comparison = compare(
            self.baseline.results if self.baseline else None,
            candidate,
            config,
            blessed=self.blessed.results if self.blessed else None,
            baseline_ref=self.baseline.ref if self.baseline else None,
            blessed_ref=self.blessed.ref if self.blessed else None,
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
    from evals.baseline import StoreCorrupt

    baseline = store.select(base_sha=pr_base_sha) if is_pr else store.latest()
    if not (drift and config.baseline.drift_guard):
        return Baselines(baseline, None)
    try:
        return Baselines(baseline, store.blessed())
    except StoreCorrupt as exc:
        # The latest baseline is intact: gate on it rather than stop every gate until a reset.
        why = f"drift guard not checked, so nothing is promoted in this run: the blessed snapshot is unreadable ({exc})"
        print(f"evalgate: warning: {why}", file=sys.stderr)
        return Baselines(baseline, None, why)


def configure(parser: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default="evalgate.yml", help="suite config (default: ./evalgate.yml)")
    add_store_options(common)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", parents=[common], help="the snapshots in the manifest, oldest first")
    show = sub.add_parser("show", parents=[common], help="one snapshot's manifest entry and run summary")
    show.add_argument("sha", nargs="?", help="commit (a unique prefix is enough); default: the latest")
    fetch = sub.add_parser("fetch", parents=[common], help="download a snapshot (digest verified) as a results file")
    fetch.add_argument("sha", nargs="?", help="commit (a unique prefix is enough); default: the latest")
    fetch.add_argument("-o", "--output", default="baseline.json", help="where to write it (default baseline.json)")


def main(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    store = open_store_for(config, args)
    if args.action == "list":
        snapshots = store.list().snapshots
        if not snapshots:
            print(f"{store.source}: no snapshots")
            return 0
        print(f"{store.source}: {len(snapshots)} snapshot(s), oldest first")
        for info in snapshots:
            flags = " blessed" if info.blessed else ""
            print(f"{info.sha[:12]}  {info.created_at}  {info.verdict or '-':<12}{flags}  {info.reason or ''}".rstrip())
        return 0
    loaded = _load(store, args.sha)
    if args.action == "show":
        run = loaded.results.run
        print(
            json.dumps(
                {
                    "source": loaded.ref.source,
                    "snapshot": loaded.ref.snapshot.model_dump() if loaded.ref.snapshot else None,
                    "legacy": loaded.ref.legacy,
                    "run": run.model_dump(
                        include={
                            "suite",
                            "status",
                            "total_cases",
                            "completed_cases",
                            "git_sha",
                            "git_ref",
                            "config_hash",
                            "started_at",
                            "ended_at",
                            "subset",
                        }
                    ),
                    "warnings": loaded.warnings,
                },
                indent=2,
            )
        )
        return 0
    save_results(loaded.results, args.output)
    sha = loaded.ref.snapshot.sha if loaded.ref.snapshot else "legacy baseline.json"
    print(f"wrote {args.output} ({sha}, {len(loaded.results.cases)} cases)")
    return 0


def _load(store: BaselineStore, sha: str | None) -> LoadedBaseline:
    if not sha:
        latest = store.latest()
        if latest is None:
            raise UsageError(f"{store.source}: the store is empty")
        return latest
    matches: list[SnapshotInfo] = [s for s in store.list().snapshots if s.sha.startswith(sha.lower())]
    if not matches:
        raise UsageError(f"{store.source}: no snapshot of commit {sha} (see `evalgate baseline list`)")
    if len({m.sha for m in matches}) > 1:
        raise UsageError(f"{store.source}: {sha} matches several commits; give more of the sha")
    return store.load(matches[-1])


if __name__ == "__main__":
    from evals.cli import module_main

    raise SystemExit(module_main("baseline"))
