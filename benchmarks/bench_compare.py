"""Benchmark ``compare`` as users run it (docs/spec.md#performance-targets: 10,000 cases × 50 slices
≤ 0.6 s; 100,000 ≤ 3 s and ≤ 300 MB peak RSS; 1,000,000 within 8 GB), plus where the time goes
and the bootstrap against ``scipy.stats.bootstrap``.

For each size the two results files are written first. Then:

- **whole process**: ``python -m evals.compare --baseline b.json --candidate c.json --report r.md``
  in a fresh subprocess (median of ``--repeat`` runs): wall time, the child's CPU time (user+sys)
  and its peak RSS (``wait4``), against the targets; with ``EVALGATE_HISTORY=off`` (as in GitHub
  Actions, where the history needs a URL) and, up to 100,000 cases, recording into a SQLite history
  (the default on a developer's machine): a fresh one, where ``compare`` records the decision and
  the runs' headers; then, after ``evalgate history add`` brought both runs' cases (timed once), one
  that holds both runs in full, as after ``evalgate run``.
- **stages** (up to 100,000 cases), in one more fresh subprocess: imports, loading both files
  (``evals.compare.analysis.load_runs``, as the CLI does), ``compare()`` (pass_rate, overall + every slice,
  bootstrap CIs with the default 2,000 resamples) and rendering the PR-comment markdown +
  ``comparison.json``; then, on the same paired per-case deltas, the CI of every unit from our
  bootstrap (10,000 resamples) vs ``scipy.stats.bootstrap`` (percentile method, 10,000 resamples, a
  loop over the units): time ratio and the largest difference of a CI endpoint.

The machine's load average is printed: figures taken while other work runs are slower.

    .venv/bin/python benchmarks/bench_compare.py                  # 10k, 100k and 1M cases
    .venv/bin/python benchmarks/bench_compare.py --cases 100000   # one size
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SIZES = (10_000, 100_000, 1_000_000)
# Whole-process targets (docs/spec.md#performance-targets): wall seconds and peak RSS MB by size.
TARGETS = {10_000: (0.6, None), 100_000: (3.0, 300), 1_000_000: (None, 8192)}
STAGES_UP_TO = 100_000
# Recording a million cases into the history takes minutes; up to here both ways are measured.
HISTORY_UP_TO = 100_000


def write_runs(n: int, slices: int, folder: Path) -> tuple[Path, Path]:
    """Two runs of the same suite: per-case difficulty shared, outcomes drawn independently.
    Written in chunks, so a million cases need no million-dict list."""
    import json

    rng = np.random.default_rng(0)
    p = rng.beta(1.4, 0.6, n)
    paths = []
    for name, sha in (("baseline", "a" * 40), ("candidate", "b" * 40)):
        passed = rng.random(n) < p
        latency = rng.gamma(2.0, 150.0, n)
        run = {"suite": "bench", "status": "success", "total_cases": n, "completed_cases": n, "git_sha": sha}
        path = folder / f"{name}.json"
        with path.open("w") as fh:
            fh.write(json.dumps({"schema_version": 1, "run": run})[:-1] + ', "cases": [')
            for start in range(0, n, 10_000):
                chunk = [
                    {
                        "id": f"case-{i:07d}",
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
                    for i in range(start, min(n, start + 10_000))
                ]
                fh.write(("," if start else "") + json.dumps(chunk)[1:-1])
            fh.write("]}")
        paths.append(path)
    return paths[0], paths[1]


def scipy_comparison(comparison, baseline, candidate) -> tuple[float, float, float]:
    """Our bootstrap vs scipy's on every unit's paired deltas, both 10,000 resamples."""
    from scipy import stats as sps

    from evals.compare.decide import decide
    from evals.compare.metrics import metric_def, scan
    from evals.compare.paired import MetricInput, UnitIndex
    from evals.compare.pairing import pair, unit_indices
    from evals.suite.gate import GateSpec
    from evals.suite.scoring import MetricSpec

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
    from evals.compare.analysis import compare, load_runs
    from evals.report.markdown import render_markdown
    from evals.results.files import atomic_write

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
        f"{'':>9} stages ({units} units): load {t1 - t0:.2f} s, compare {t2 - t1:.2f} s, "
        f"report+json {t3 - t2:.2f} s (comment {len(text):,} chars) → compare+report {t3 - t1:.2f} s, "
        f"with loading {t3 - t0:.2f} s; CPU time: load {c1 - c0:.2f} s, compare {c2 - c1:.2f} s, "
        f"report+json {c3 - c2:.2f} s; peak RSS {rss_mb:.0f} MB (import {imported:.2f} s); "
        f"verdict {comparison.verdict}"
    )
    print(
        f"{'':>9} bootstrap CIs of {units} units, 10,000 resamples: evalgate {ours_s:.3f} s, "
        f"scipy.stats.bootstrap {scipy_s:.2f} s → {scipy_s / ours_s:.0f}× faster; "
        f"largest CI endpoint difference {worst:.4f}"
    )


HISTORY_MODES = {
    "off": "EVALGATE_HISTORY=off (the default in GitHub Actions without a history URL)",
    "fresh": "history on, first sight of both runs (records the decision and the runs' headers)",
    "recorded": "history on, both runs already in it with their cases (recorded by `evalgate run`, `import` "
    "or `history add`)",
}


def whole_process(base: Path, cand: Path, folder: Path, history: str) -> tuple[float, float, float, str]:
    """One ``python -m evals.compare`` run: wall s, CPU s (user+sys), peak RSS MB, its last line.
    ``history`` (:data:`HISTORY_MODES`): ``fresh`` records into a new SQLite history in ``folder``
    (the default outside GitHub Actions), ``recorded`` into the one :func:`add` filled."""
    cmd = [sys.executable, "-m", "evals.compare", "--baseline", str(base), "--candidate", str(cand)]
    cmd += ["--report", str(folder / "r.md")]
    db = folder / "history.sqlite"
    if history != "recorded":
        for leftover in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            leftover.unlink(missing_ok=True)
    env = {**os.environ, "EVALGATE_HISTORY": "off" if history == "off" else "on", "EVALGATE_HISTORY_URL": str(db)}
    started = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    out = child.stdout.read().decode() if child.stdout else ""
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {child.returncode}:\n{out}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.strip().splitlines()[-1]


def add(base: Path, cand: Path, folder: Path) -> None:
    """``evalgate history add`` of both runs into the history ``fresh`` left (their header rows):
    what it costs to bring a run's cases in, printed once."""
    cmd = [sys.executable, "-m", "evals", "history", "add", "--url", str(folder / "history.sqlite"), str(base)]
    started = time.perf_counter()
    child = subprocess.Popen([*cmd, str(cand)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{child.stdout.read().decode() if child.stdout else ''}")
    print(
        f"{'':>9} `evalgate history add` of both files (their cases, slices and attempts into SQLite): "
        f"{wall:.2f} s wall, {usage.ru_utime + usage.ru_stime:.2f} s CPU, peak RSS {usage.ru_maxrss / 1024:.0f} MB"
    )


def verdict_vs_target(n: int, wall: float, rss: float) -> str:
    wall_target, rss_target = TARGETS.get(n, (None, None))
    parts = []
    if wall_target:
        parts.append(f"wall {wall / wall_target:.2f}× the {wall_target:g} s target")
    if rss_target:
        parts.append(f"RSS {rss / rss_target:.2f}× the {rss_target:,} MB target")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, help="one size instead of 10k, 100k and 1M")
    parser.add_argument("--slices", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="whole-process runs per size (1 at 1M)")
    parser.add_argument("--one", nargs=2, metavar=("BASELINE", "CANDIDATE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(Path(args.one[0]), Path(args.one[1]), args.cases, args.slices)
        return
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    for n in [args.cases] if args.cases else SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            started = time.perf_counter()
            base, cand = write_runs(n, args.slices, folder)
            size_mb = (base.stat().st_size + cand.stat().st_size) / 2**20
            written = time.perf_counter() - started
            print(f"{n:>9,} cases × {args.slices} slices: files written in {written:.1f} s ({size_mb:.0f} MB)")
            for history in HISTORY_MODES if n <= HISTORY_UP_TO else ("off",):
                if history == "recorded":  # fills the history: the runs below find both runs there, in full
                    add(base, cand, folder)
                runs = [whole_process(base, cand, folder, history) for _ in range(1 if n >= 1_000_000 else args.repeat)]
                wall = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                rss = max(r[2] for r in runs)
                print(
                    f"{'':>9} whole process `python -m evals.compare --baseline --candidate --report`, "
                    f"{HISTORY_MODES[history]}: "
                    f"{wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss:.0f} MB (median of {len(runs)}; "
                    f"{verdict_vs_target(n, wall, rss)}); {runs[0][3]}"
                )
            if n <= STAGES_UP_TO:
                cmd = [sys.executable, __file__, "--one", str(base), str(cand), "--cases", str(n)]
                subprocess.run([*cmd, "--slices", str(args.slices)], check=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
