"""``evalgate comment --report-dir DIR [--pr N]`` (the action's ``mode: comment``): post the report
a fork's gate stored, after validating it (the second phase of the fork flow; see
``evals.github.stored_report``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evals.github.activity import detect
from evals.github.stored_report import post_stored


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--report-dir", required=True, metavar="DIR", help="folder with comment.json + comparison.json")
    parser.add_argument("--pr", type=int, metavar="N", help="pull request number (must match comment.json)")
    parser.add_argument(
        "--gate-id", required=True, metavar="ID", help="the gate id this report must carry (must match comment.json)"
    )


def main(args: argparse.Namespace) -> int:
    activity = detect("comment", pr_number=args.pr)
    return post_stored(Path(args.report_dir), activity, pr_number=args.pr, gate_id=args.gate_id)
