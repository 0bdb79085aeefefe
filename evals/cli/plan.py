"""``evalgate plan [--config FILE] [--discordance PSI]``: before any paid run, what this suite can
certify (docs/spec.md#certifiable-band): per unit its cases and α share, the drop it detects, the tolerance at which an
unchanged candidate passes 4 runs in 5, and the cases the configured tolerance and target MDE
need. The discordance between two runs comes from the history when it holds two repeated runs of
this config (``evals.history.repeats``: never a gated proposal), else it is an assumption the
output states."""

from __future__ import annotations

import argparse

from evals.common.errors import EXIT_PASS, UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="evalgate.yml", help="suite config (default: ./evalgate.yml)")
    parser.add_argument(
        "--discordance",
        type=float,
        metavar="PSI",
        help="share of cases whose outcome differs between two runs of this config (0-1); "
        "default: measured in the history, else 0.10",
    )


def main(args: argparse.Namespace) -> int:
    from evals.compare.plan import ASSUMED_DISCORDANCE, plan_suite, render_text, units_of_cases
    from evals.history.discordance import discordance_for
    from evals.suite.cases import check_case_set, load_cases
    from evals.suite.loading import load_config

    if args.discordance is not None and not 0.0 <= args.discordance <= 1.0:
        raise UsageError(f"--discordance is a share of cases, from 0 to 1; got {args.discordance:g}")
    config = load_config(args.config)
    cases = load_cases(config)
    check_case_set(config, cases)
    if args.discordance is not None:
        discordance, source = args.discordance, "given with --discordance"
    elif (observed := discordance_for(config)) is not None:
        discordance, source = observed.discordance, observed.describe()
    else:
        discordance = ASSUMED_DISCORDANCE
        source = (
            f"assumed ({ASSUMED_DISCORDANCE:.0%}): the history holds no two repeated runs of this config "
            "(baselines, or runs no gate was asked about, of one commit with a clean tree); commit, run the unchanged "
            "suite twice (`evalgate run`) and plan again, or give --discordance"
        )
    plan = plan_suite(
        config.suite, units_of_cases(cases, config.slices), config.metrics, config.gate, discordance, source
    )
    print(render_text(plan), end="")
    return EXIT_PASS
