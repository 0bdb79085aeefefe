"""``evalgate merge PART... -o OUT``: join the shards of one run (docs/spec.md#sharding).

The parts must be the shards 1..N of one N (each file's ``run.shard`` says which), of one suite,
one config hash, one target, one commit, and hold disjoint case ids; anything else is exit 2
naming the files. The merged run is ``success`` only if every part is; otherwise it carries the
worst part's status, and ``merge`` exits 3 like an incomplete ``run``."""

from __future__ import annotations

import argparse
from pathlib import Path

from evals.common.errors import EXIT_INFRA, EXIT_PASS
from evals.results import console
from evals.results.files import load_results, save_results
from evals.results.masking import mask_results
from evals.run.shards import merge_results


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("parts", nargs="+", metavar="PART", help="shard results files (from run --shard I/N)")
    parser.add_argument("-o", "--output", required=True, help="merged results file (.json or .json.gz)")


def main(args: argparse.Namespace) -> int:
    parts = [mask_results(load_results(p)) for p in args.parts]  # shards another evalgate or harness wrote
    merged = merge_results(parts, list(args.parts))
    save_results(merged, Path(args.output))
    run = merged.run
    console.info(
        f"{len(parts)} shards -> {args.output}: {run.status}, {run.completed_cases}/{run.total_cases} cases complete",
        source="merge",
    )
    return EXIT_PASS if run.is_complete else EXIT_INFRA
