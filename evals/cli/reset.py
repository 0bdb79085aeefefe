"""``evalgate reset --reason ...``: run the full suite (or take ``--results``) and bless it as the
baseline, recording the reason and who did it (docs/spec.md#reset). The only way past ``incompatible`` (the
scorer or metric definitions changed) and the way to accept a deliberate behaviour change; the
blessed snapshot is also what the drift guard compares later candidates with.

The comparison with the previous baseline is still computed and reported — a reset should show
what it accepts — but it does not gate. The work is ``evals.pipeline.flows.run_reset``."""

from __future__ import annotations

import argparse

from evals.cli.options import add_candidate_options
from evals.github.activity import detect
from evals.github.token_guard import isolate_token
from evals.pipeline.candidate import no_cache_for_suite_runs
from evals.pipeline.exposure import guard_pull_request_target
from evals.pipeline.flows import run_reset


def configure(parser: argparse.ArgumentParser) -> None:
    add_candidate_options(parser)
    parser.add_argument("--reason", required=True, help="why (recorded in the manifest with the actor)")
    parser.add_argument("--actor", help="who resets (default: GITHUB_ACTOR, else the OS user)")


def main(args: argparse.Namespace) -> int:
    isolate_token()
    no_cache_for_suite_runs(args)
    activity = detect("reset", reason=args.reason)
    guard_pull_request_target(activity, runs_suite=not args.results)
    return run_reset(args, activity)
