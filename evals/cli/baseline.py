"""``evalgate baseline list|show|fetch``: look into the baseline store (docs/spec.md#baseline-store) — the same store,
chosen the same way (``evals.store.selection``), as ``gate``, ``promote`` and ``reset`` use."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from evals.cli.options import add_store_options, store_options
from evals.common.errors import UsageError
from evals.results.files import save_results
from evals.store.selection import open_store_for
from evals.suite.loading import load_config
from evals.suite.overrides import with_overrides

if TYPE_CHECKING:
    from evals.results.manifest import SnapshotInfo
    from evals.store.baseline import BaselineStore, LoadedBaseline


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
    config = with_overrides(load_config(args.config), store_options(args))
    store = open_store_for(config)
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
