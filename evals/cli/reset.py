"""``evalgate reset --reason ...``: run the full suite (or take ``--results``) and bless it as the
baseline, recording the reason and who did it (docs/spec.md#reset). The only way past ``incompatible`` (the
scorer or metric definitions changed) and the way to accept a deliberate behaviour change; the
blessed snapshot is also what the drift guard compares later candidates with.

The comparison with the previous baseline is still computed and reported — a reset should show
what it accepts — but it does not gate. The work is ``evals.pipeline.reset.run_reset``."""

from __future__ import annotations

import argparse

from evals.cli.options import add_options, options_of
from evals.github.activity import detect
from evals.github.token_guard import isolate_token
from evals.pipeline.candidate import no_cache_for_suite_runs
from evals.pipeline.exposure import guard_secret_events
from evals.pipeline.reset import run_reset
from evals.suite.options import ResetOptions


def configure(parser: argparse.ArgumentParser) -> None:
    add_options(parser, ResetOptions)


def main(args: argparse.Namespace) -> int:
    options = options_of(ResetOptions, args)
    isolate_token()
    no_cache_for_suite_runs(options)
    activity = detect("reset", reason=options.reason)
    guard_secret_events(activity, runs_suite=not options.results)
    return run_reset(options, activity, actor=options.actor)
