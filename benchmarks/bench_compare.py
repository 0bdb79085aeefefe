"""Benchmark compare + report (SPEC §10 targets: 10,000 cases × 50 slices under 1 s; 100,000
cases under 5 s and 500 MB peak RSS), and the bootstrap against ``scipy.stats.bootstrap``.

The data files are written first; each configuration then runs in a fresh subprocess so its
peak RSS is its own. Stages timed: load both results files (JSON + pydantic validation, through
``evals.compare.load_runs`` as the CLI does), ``compare()`` (pass_rate, overall + every
slice, bootstrap CIs with the default 2,000 resamples) and rendering the PR-comment markdown +
``comparison.json``. Then, on the same paired per-case deltas, the CI of every unit from our
bootstrap (10,000 resamples) vs ``scipy.stats.bootstrap`` (percentile method, 10,000 resamples,
a loop over the units): time ratio and the largest difference of a CI endpoint.

    .venv/bin/python benchmarks/bench_compare.py               # both configurations
    .venv/bin/python benchmarks/bench_compare.py --cases 10000 --slices 50
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CONFIGS = [(10_000, 50), (100_000, 50)]


def write_runs(n: int, slices: int, folder: Path) -> tuple[Path, Path]:
    """Two runs of the same suite: per-case difficulty shared, outcomes drawn independently."""
    import json

    rng = np.random.default_rng(0)
    p = rng.beta(1.4, 0.6, n)
    paths = []
    for name, sha in (("baseline", "a" * 40), ("candidate", "b" * 40)):
        passed = rng.random(n) < p
        latency = rng.gamma(2.0, 150.0, n)
        cases = [
            {
                "id": f"case-{i:06d}",
                "slices": {"topic": f"t{i % slices:02d}"},
                "input": f"question {i}",
                "expected": "42",
                "attempts": [
                    {
                        "passed": bool(passed[i]),
                        "score": float(passed[i]),
                        "latency_ms": round(float(latency[i]), 1),
                        "tokens_in": 120,
                        "tokens_out": 14,
                        "output": "FINAL ANSWER: 42" if passed[i] else "FINAL ANSWER: 41",
                    }
                ],
            }
            for i in range(n)
        ]
        run = {"suite": "bench", "status": "success", "total_cases": n, "completed_cases": n, "git_sha": sha}
        path = folder / f"{name}.json"
        path.write_text(json.dumps({"schema_version": 1, "run": run, "cases": cases}))
        paths.append(path)
    return paths[0], paths[1]


def scipy_comparison(comparison, baseline, candidate) -> tuple[float, float, float]:
    """Our bootstrap vs scipy's on every unit's paired deltas, both 10,000 resamples."""
    from scipy import stats as sps

    from evals.config import GateSpec, MetricSpec
    from evals.decide import decide
    from evals.metrics import metric_def, scan
    from evals.paired import MetricInput, UnitIndex
    from evals.pairing import pair, unit_indices

    spec = MetricSpec(tolerance=0.02)
    definition = metric_def("pass_rate", spec)
    bt = scan(baseline.cases, len(baseline.cases))
    ct = scan(candidate.cases, len(candidate.cases))
    pairing = pair(bt, ct, False)
    base = bt.values(definition)[pairing.base_rows]
    cand = ct.values(definition)[pairing.cand_rows]
    units: list[UnitIndex] = unit_indices(ct, pairing.cand_rows, ["topic"])
    gate = GateSpec(bootstrap_resamples=10_000)
    started = time.perf_counter()
    ours = decide([MetricInput(definition, spec, base, cand)], units, gate)
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    worst = 0.0
    for unit, result in zip(units, ours, strict=True):
        d = cand - base if unit.rows is None else cand[unit.rows] - base[unit.rows]
        ci = sps.bootstrap(
            (d,),
            np.mean,
            n_resamples=10_000,
            method="percentile",
            confidence_level=1 - 2 * gate.alpha,
            batch=max(1, 20_000_000 // d.size),
            random_state=0,
        ).confidence_interval
        worst = max(worst, abs(ci.low - result.ci_low), abs(ci.high - result.ci_high))
    scipy_s = time.perf_counter() - started
    return ours_s, scipy_s, worst


def one(base_path: Path, cand_path: Path, n: int, slices: int) -> None:
    started = time.perf_counter()
    from evals.compare import compare, load_runs
    from evals.report import render_markdown
    from evals.results import atomic_write

    imported = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0, c0 = time.perf_counter(), time.process_time()
        baseline, candidate = load_runs(base_path, cand_path)
        t1, c1 = time.perf_counter(), time.process_time()
        comparison = compare(baseline, candidate, tolerance=0.02)
        t2, c2 = time.perf_counter(), time.process_time()
        text = render_markdown(comparison, kind="comment")
        atomic_write(folder / "comparison.json", comparison.model_dump_json().encode())
        t3, c3 = time.perf_counter(), time.process_time()
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ours_s, scipy_s, worst = scipy_comparison(comparison, baseline, candidate)
    units = len(comparison.units)
    print(
        f"{n:>7} cases × {slices} slices ({units} units): load {t1 - t0:.2f} s, compare {t2 - t1:.2f} s, "
        f"report+json {t3 - t2:.2f} s (comment {len(text):,} chars) → compare+report {t3 - t1:.2f} s, "
        f"with loading {t3 - t0:.2f} s; CPU time: load {c1 - c0:.2f} s, compare {c2 - c1:.2f} s, "
        f"report+json {c3 - c2:.2f} s; peak RSS {rss_mb:.0f} MB (import {imported:.2f} s); "
        f"verdict {comparison.verdict}"
    )
    print(
        f"{'':>7} bootstrap CIs of {units} units, 10,000 resamples: evalgate {ours_s:.3f} s, "
        f"scipy.stats.bootstrap {scipy_s:.2f} s → {scipy_s / ours_s:.0f}× faster; "
        f"largest CI endpoint difference {worst:.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int)
    parser.add_argument("--slices", type=int, default=50)
    parser.add_argument("--one", nargs=2, metavar=("BASELINE", "CANDIDATE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(Path(args.one[0]), Path(args.one[1]), args.cases, args.slices)
        return
    for n, slices in [(args.cases, args.slices)] if args.cases else CONFIGS:
        with tempfile.TemporaryDirectory() as tmp:
            base, cand = write_runs(n, slices, Path(tmp))
            cmd = [sys.executable, __file__, "--one", str(base), str(cand), "--cases", str(n), "--slices", str(slices)]
            subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
