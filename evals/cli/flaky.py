"""``evalgate flaky [--slice UNIT] [--config FILE] [--results FILE]`` (docs/spec.md#flaky-cases; docs/history.md):
the cases whose outcome flips, per slice, with their rates — across the history's repeated runs
of the config (``evals.history.repeats``), or within one run's attempts (``--results``, k ≥ 2).
The work is in ``evals.history.flaky``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from evals.common.errors import EXIT_PASS, UsageError

if TYPE_CHECKING:
    from evals.history.engine import Engine
    from evals.run.smoke import CaseHistory


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="evalgate.yml", help="suite config: its history (default: ./evalgate.yml)")
    parser.add_argument("--slice", dest="unit", metavar="UNIT", help="only this unit: overall or key=value")
    parser.add_argument(
        "--results", metavar="FILE", help="a results file with k >= 2 attempts a case: flaky within that run instead"
    )
    parser.add_argument("--last", type=int, default=20, metavar="N", help="history runs read (default 20)")
    parser.add_argument("--top", type=int, default=20, metavar="N", help="cases listed per unit (default 20)")


def main(args: argparse.Namespace) -> int:
    from evals.history.flaky import (
        attempt_stats,
        case_history,
        flaky_cases,
        latest_slices,
        render_attempts,
        render_history,
    )
    from evals.suite.loading import load_config

    if args.last < 2 or args.top < 0:
        raise UsageError("--last needs at least 2 runs (a flip is between two) and --top must be >= 0")
    config = load_config(args.config)
    if args.results:
        from evals.results.files import load_results

        sys.stdout.write(render_attempts(attempt_stats(load_results(args.results)), config.slices, args.unit, args.top))
        return EXIT_PASS
    from evals.history import read_history

    def read(engine: Engine) -> tuple[CaseHistory, dict[str, dict[str, str]]]:
        history = case_history(engine, config.suite, config.config_hash(), last=args.last)
        return history, latest_slices(engine, config.suite, config.config_hash())

    found = read_history(config, read)
    if found is None or found[0].runs < 2:
        runs = 0 if found is None else found[0].runs
        raise UsageError(
            f"the history holds {runs} repeated run(s) of suite {config.suite!r} with this config hash (baselines "
            "and runs no gate or compare was asked about, of one commit with a clean tree, case set and target, "
            "since the newest reset); flips need two or more (commit, then re-run the unchanged suite: `evalgate "
            "run`; the gate on main records promoted runs, `evalgate history add results.json` adds older ones), "
            "or pass --results FILE of a run with attempts >= 2"
        )
    history, slices = found
    found_cases = flaky_cases(history, slices)
    sys.stdout.write(render_history(found_cases, history, slices, config.slices, args.unit, args.top))
    return EXIT_PASS
