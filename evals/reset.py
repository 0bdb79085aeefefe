"""``evalgate reset --reason ...``: run the full suite (or take ``--results``) and bless it as the
baseline, recording the reason and who did it (SPEC §7). The only way past ``incompatible`` (the
scorer or metric definitions changed) and the way to accept a deliberate behaviour change; the
blessed snapshot is also what the drift guard compares later candidates with.

The comparison with the previous baseline is still computed and reported — a reset should show
what it accepts — but it does not gate."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from evals.activity import Activity, detect, guard_pull_request_target, guard_reset_branch
from evals.errors import EXIT_PASS, EvalgateError, InfraError, UsageError


def actor_name(explicit: str | None = None) -> str | None:
    if explicit:
        return explicit
    if os.environ.get("GITHUB_ACTOR"):
        return os.environ["GITHUB_ACTOR"]
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None


def configure(parser: argparse.ArgumentParser) -> None:
    from evals.gate import add_candidate_options

    add_candidate_options(parser)
    parser.add_argument("--reason", required=True, help="why (recorded in the manifest with the actor)")
    parser.add_argument("--actor", help="who resets (default: GITHUB_ACTOR, else the OS user)")


def main(args: argparse.Namespace) -> int:
    from evals.gate import isolate_token

    isolate_token()
    activity = detect("reset", reason=args.reason)
    guard_pull_request_target(activity, [Path.cwd(), Path(args.config).resolve().parent])
    return run_reset(args, activity)


def run_reset(args: argparse.Namespace, activity: Activity) -> int:
    from evals.baseline import StoreCorrupt
    from evals.baseline_cmd import Baselines, load_baselines, open_store_for
    from evals.gate import (
        candidate_sha,
        github_client,
        load_config_or_defaults,
        obtain_candidate,
        publish,
        report_failure,
        set_outputs_safely,
        write_report_files,
    )

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        guard_reset_branch(activity)
        config, given = load_config_or_defaults(args)
        client = github_client(activity)
        store = open_store_for(config, args, client=client)
        # Read before the run, so a broken store costs no run; the reset is compared with it for the
        # record, without the drift guard (a reset is what re-blesses).
        try:
            previous = load_baselines(store, config, drift=False)
        except StoreCorrupt as exc:  # what a reset is for: store a fresh baseline
            print(f"evalgate reset: the previous baseline is unreadable, not compared: {exc}", file=sys.stderr)
            previous = Baselines(None, None)
        candidate, results_path = given or obtain_candidate(config, args, out_dir, smoke=False)
        run = candidate.run
        if run.subset or run.shard:
            raise UsageError(f"{results_path}: a reset blesses the whole suite; this is {run.subset or run.shard}")
        if not run.is_complete:
            raise InfraError(
                f"{results_path}: the run is not complete ({run.status}, {run.completed_cases}/{run.total_cases} "
                f"cases{': ' + run.message if run.message else ''}); nothing was blessed"
            )
        comparison = previous.compare(candidate, config)
        paths = write_report_files(comparison, config, out_dir)
        sha = candidate_sha(activity, candidate, explicit=args.sha)
        actor = actor_name(getattr(args, "actor", None) or activity.actor)
        result = store.promote(candidate, sha=sha, verdict="reset", reason=activity.reason, actor=actor, blessed=True)
        for line in result.warnings:
            print(f"evalgate: warning: {line}", file=sys.stderr)
        if not result.promoted:
            raise UsageError(f"not reset: {result.reason}")
        from evals.history import record_reset

        record_reset(
            candidate,
            result.snapshot,
            comparison,
            previous.baseline.results if previous.baseline else None,
            config=config,
        )
    except EvalgateError as exc:
        report_failure(exc, activity)
        raise
    from evals.escape import inline

    headline = (
        f"## evalgate reset: {sha[:12]} is the blessed baseline\n\n"
        f"Reason: {inline(activity.reason)} — by {inline(actor or 'unknown')}. "
        f"Compared with the previous baseline for the record (not gated): {comparison.verdict}.\n\n"
    )
    outputs = {
        "verdict": "reset",
        "report-path": str(paths["report"]),
        "comparison-path": str(paths["comparison"]),
        "results-path": str(results_path),
        "baseline-sha": sha,
        "comment-url": "",
        "promoted": "true",
    }
    if activity.in_actions:
        publish(comparison, config, activity, None, comment=False, out_dir=out_dir, headline=headline)
        set_outputs_safely(outputs)
    print(f"evalgate reset: blessed {sha[:12]} in {store.source} (reason: {activity.reason}; actor: {actor})")
    print(f"report: {paths['report']}")
    return EXIT_PASS


if __name__ == "__main__":
    from evals.cli import module_main

    raise SystemExit(module_main("reset"))
