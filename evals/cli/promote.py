"""``evalgate promote``: store a results file as the new baseline when its gate allows it (docs/spec.md#promotion;
the rule is ``evals.store.promotion``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evals.cli.options import add_store_options, store_options
from evals.common.errors import EXIT_FAIL, EXIT_PASS, UsageError
from evals.common.escape import log_value
from evals.github.activity import actor_name
from evals.results.files import load_results
from evals.results.masking import mask_results
from evals.store.promotion import promote_candidate
from evals.store.selection import load_baselines, open_store_for
from evals.suite.loading import load_config
from evals.suite.overrides import with_overrides


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="evalgate.yml", help="suite config (default: ./evalgate.yml)")
    parser.add_argument("--results", required=True, metavar="FILE", help="the candidate results to promote")
    parser.add_argument(
        "--comparison",
        metavar="FILE",
        help="its comparison.json from `evalgate gate`/`compare` (default: compare with the store's latest now)",
    )
    parser.add_argument("--sha", help="commit the results stand for (default: the results' run.git_sha)")
    parser.add_argument("--actor", help="who promotes (default: GITHUB_ACTOR, else the OS user)")
    add_store_options(parser)


def main(args: argparse.Namespace) -> int:
    config = with_overrides(load_config(args.config), store_options(args))
    store = open_store_for(config)
    candidate = mask_results(load_results(args.results))  # the baseline asset: masked if another harness wrote it
    if args.comparison:
        from evals.report.files import parse_comparison
        from evals.results.files import read_json_bytes

        comparison = parse_comparison(read_json_bytes(Path(args.comparison)), args.comparison)
    else:
        comparison = load_baselines(store, config).compare(candidate, config)
    sha = args.sha or candidate.run.git_sha
    if not sha:
        raise UsageError(f"{args.results}: run.git_sha is empty; pass --sha COMMIT")
    outcome = promote_candidate(
        store,
        candidate,
        comparison,
        config=config,
        sha=sha,
        actor=actor_name(args.actor),
        on_missing=config.baseline.on_missing,
    )
    from evals.history import record_promotion

    record_promotion(
        candidate, outcome.result.snapshot if outcome.result else None, config=config, comparison=outcome.comparison
    )
    print(f"evalgate promote: {log_value(outcome.message, limit=None)}")
    return EXIT_PASS if outcome.promoted else EXIT_FAIL
