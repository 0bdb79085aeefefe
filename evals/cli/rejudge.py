"""``evalgate rejudge --results FILE --config evalgate.yml [--output FILE]`` (docs/spec.md#judge-bridging):
re-score a stored run's outputs with the config's judge, today's — judge calls only, through the
response cache, within the config's limits — and say how far the run's own judge and today's
agree. The work is in ``evals.pipeline.rejudge``; the gate does the same on its own when only the
judge changed since the baseline."""

from __future__ import annotations

import argparse
from pathlib import Path

from evals.common.errors import EXIT_PASS, InfraError
from evals.results import console


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", required=True, metavar="FILE", help="the stored run to re-judge")
    parser.add_argument("--config", default="evalgate.yml", help="the suite config whose judge scores it")
    parser.add_argument(
        "--output", metavar="FILE", help="where the re-judged run goes (default: FILE with .rejudged before .json)"
    )
    parser.add_argument("--no-cache", action="store_true", help="ask the judge again instead of the response cache")


def default_output(results: str) -> Path:
    path = Path(results)
    name = path.name
    stem, dot, ext = name.partition(".json")
    return path.with_name(f"{stem}.rejudged{dot}{ext}" if dot else f"{name}.rejudged.json")


def main(args: argparse.Namespace) -> int:
    from evals.compare.bridge import agreement_text
    from evals.pipeline.rejudge import rejudge
    from evals.results.files import load_results, save_results
    from evals.results.masking import mask_results
    from evals.results.spend import cost_text
    from evals.suite.loading import load_config

    config = load_config(args.config)
    results = mask_results(load_results(args.results))  # a file another evalgate or a person wrote
    done = rejudge(results, config, cache=not args.no_cache)
    if done.stopped:
        raise InfraError(
            f"re-judging {args.results} stopped at {done.stopped}: nothing written (a run judged partly by each judge "
            "is no reference); raise the limit and run again: the verdicts so far are in the response cache"
        )
    output = Path(args.output) if args.output else default_output(args.results)
    save_results(done.results, output)
    b, a = done.bridge, done.bridge.agreement
    flips = f"; otherwise now: {', '.join(a.disagreements[:20])}" if a.disagreements else ""
    more = f" and {len(a.disagreements) - 20:,} more" if len(a.disagreements) > 20 else ""
    agreed = agreement_text(a, who="the run's judge and today's")
    console.result(
        f"re-judged {b.rejudged:,} outputs of {args.results} with today's judge ({cost_text(b.spend)}, "
        f"{b.spend.cached:,} from the cache): {agreed}"
        f"{flips}{more} -> {output}"
    )
    return EXIT_PASS
