"""Command-line options that several commands share: the suite and candidate of ``gate`` and
``reset``, and the baseline store of ``gate``, ``reset``, ``promote``, ``baseline`` and
``history sync``. What the options mean is read by the library (``evals.pipeline.candidate``,
``evals.store.selection``); only their spelling is here."""

from __future__ import annotations

import argparse

from evals.pipeline.candidate import DEFAULT_OUT_DIR


def add_candidate_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by gate and reset: which suite, which candidate, where the files go."""
    parser.add_argument("--config", default="evalgate.yml", help="suite config (default: ./evalgate.yml)")
    parser.add_argument("--results", metavar="FILE", help="gate this results file instead of running the suite")
    parser.add_argument(
        "--results-format",
        metavar="FORMAT",
        help="--results is another harness's output: import it first (a format of `evalgate import`, or auto)",
    )
    parser.add_argument(
        "--slice-key",
        dest="slice_keys",
        action="append",
        default=[],
        metavar="KEY",
        help="also slice by this case tag (an imported file's metadata/var key); repeatable, added to the config's "
        "slices:",
    )
    parser.add_argument(
        "--sha",
        metavar="COMMIT",
        help="the commit (or any stable label) the candidate stands for when promoted or reset, and its name in "
        "the history outside git; default: "
        "GITHUB_SHA, the results' run.git_sha, the checkout's HEAD, else (outside git) a digest of the results",
    )
    parser.add_argument(
        "--out-dir", default=DEFAULT_OUT_DIR, help=f"where reports and results are written (default {DEFAULT_OUT_DIR})"
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="pay for every answer again: the suite runs this command starts do not use the response cache "
        "(config cache:; the same as EVALGATE_CACHE=off)",
    )
    add_store_options(parser)


def add_store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        choices=("local", "github-release"),
        help="baseline store (default: the config's baseline.store; github-release inside Actions, else local)",
    )
    parser.add_argument("--baseline-tag", metavar="TAG", help="release tag of the github-release store")
    parser.add_argument("--baseline-dir", metavar="DIR", help="folder of the local store (default: baseline.path)")
