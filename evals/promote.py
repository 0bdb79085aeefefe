"""``evalgate promote``: store a results file as the new baseline when its gate allows it (SPEC §7).

The rule has two halves: the gate's (``evals.baseline.promotion_allowed``: ``pass`` or
``inconclusive`` with the drift guard holding) and the store's (never replace a newer commit's
baseline with an older one, enforced inside ``BaselineStore.promote``). Only complete, full runs
are promoted: a smoke subset or a single shard would make later gates pair against a fraction of
the suite. ``on_missing: seed`` lets the first complete run in as the baseline, blessed: it is the
first reference point, so the drift guard holds from the first gate on (not only after a reset)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evals.config import load_config
from evals.errors import EXIT_FAIL, EXIT_PASS
from evals.results import Results, load_results

if TYPE_CHECKING:
    from evals.baseline import BaselineStore, PromotionResult
    from evals.comparison import Comparison

SEED_REASON = "seeded: first baseline"


@dataclass
class PromotionOutcome:
    promoted: bool
    message: str
    result: PromotionResult | None = None


def promote_candidate(
    store: BaselineStore,
    candidate: Results,
    comparison: Comparison,
    *,
    sha: str,
    actor: str | None,
    on_missing: str,
) -> PromotionOutcome:
    """Promote ``candidate`` (commit ``sha``) if the gate and the store allow it. Refusals are
    outcomes, not errors; a store that cannot be written raises ``InfraError`` (exit 3) with the
    previous baseline intact."""
    from evals.baseline import promotion_allowed

    run = candidate.run
    if run.subset or run.shard:
        part = f"subset {run.subset}" if run.subset else f"shard {run.shard}"
        return PromotionOutcome(False, f"not promoted: the candidate is a partial suite ({part})")
    if not run.is_complete:
        return PromotionOutcome(False, f"not promoted: the candidate run is not complete ({run.status})")
    if comparison.verdict == "no-baseline":
        if on_missing != "seed":
            return PromotionOutcome(
                False,
                "not promoted: there is no baseline yet; set baseline.on_missing: seed to let the first full run "
                "in, or run a reset",
            )
        verdict, reason, blessed = "seed", SEED_REASON, True
    else:
        allowed, why = promotion_allowed(comparison.verdict, comparison.drift_ok)
        if not allowed:
            return PromotionOutcome(False, f"not promoted: {why}")
        verdict, reason, blessed = comparison.verdict, None, False
    result = store.promote(candidate, sha=sha, verdict=verdict, reason=reason, actor=actor, blessed=blessed)
    for line in result.warnings:
        print(f"evalgate: warning: {line}", file=sys.stderr)
    if not result.promoted:
        return PromotionOutcome(False, f"not promoted: {result.reason}", result)
    what = "seeded and blessed" if blessed else "promoted"
    return PromotionOutcome(True, f"{what} {sha[:12]} as the baseline in {store.source} ({verdict})", result)


def configure(parser: argparse.ArgumentParser) -> None:
    from evals.baseline_cmd import add_store_options

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
    from evals.baseline_cmd import open_store_for
    from evals.reset import actor_name

    config = load_config(args.config)
    store = open_store_for(config, args)
    candidate = load_results(args.results)
    if args.comparison:
        from evals.results import read_json_bytes

        comparison = parse_comparison(read_json_bytes(Path(args.comparison)), args.comparison)
    else:
        from evals.baseline_cmd import load_baselines

        comparison = load_baselines(store, config).compare(candidate, config)
    sha = args.sha or candidate.run.git_sha
    if not sha:
        from evals.errors import UsageError

        raise UsageError(f"{args.results}: run.git_sha is empty; pass --sha COMMIT")
    outcome = promote_candidate(
        store, candidate, comparison, sha=sha, actor=actor_name(args.actor), on_missing=config.baseline.on_missing
    )
    from evals.history import record_promotion

    record_promotion(
        candidate, outcome.result.snapshot if outcome.result else None, config=config, comparison=comparison
    )
    print(f"evalgate promote: {outcome.message}")
    return EXIT_PASS if outcome.promoted else EXIT_FAIL


def parse_comparison(raw: bytes, where: str | Path) -> Comparison:
    """A comparison.json, validated against the model (exit 2 naming the file and field otherwise)."""
    from pydantic import ValidationError

    from evals.comparison import Comparison
    from evals.errors import InputFileError

    try:
        return Comparison.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise InputFileError(where, f"not a comparison.json: {loc}: {first['msg']}") from None


if __name__ == "__main__":
    from evals.cli import module_main

    raise SystemExit(module_main("promote"))
