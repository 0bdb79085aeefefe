"""History benchmarks (docs/spec.md#performance-targets):

1. Recording one run of 10,000 cases × 3 attempts × 20 trace events per attempt (600,000 events,
   5 tool calls with their results per attempt): SQLite ≤ 3 s, PostgreSQL ≤ 5 s.
2. ``history show`` (the trend query and the table) over 200 runs × 50 slices: ≤ 0.5 s.

Each figure is wall time with CPU time (user+sys of this process) beside it; PostgreSQL's own
CPU is in its server processes. PostgreSQL runs on a throwaway server (tests/fakes/pg_server.py);
without one its rows are skipped with the reason.

    .venv/bin/python benchmarks/bench_history.py [--cases 10000] [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes import pg_server  # noqa: E402

from evals import __version__  # noqa: E402
from evals.history import open_history  # noqa: E402
from evals.history.record import Writer  # noqa: E402
from evals.history.table import render  # noqa: E402
from evals.history.trends import load_trends  # noqa: E402
from evals.results.model import Attempt, CaseResult, Results, RunInfo  # noqa: E402
from evals.results.trace import TraceEvent  # noqa: E402


def traced_run(cases: int, attempts: int, events: int, *, sha: str = "f" * 40, slices: int = 50) -> Results:
    out = []
    for i in range(cases):
        tries = []
        for k in range(attempts):
            trace = []
            for seq in range(events):
                phase = seq % 4
                kind = ("message", "tool_call", "tool_result", "message")[phase]
                trace.append(
                    TraceEvent(
                        seq=seq,
                        kind=kind,
                        name="search" if kind != "message" else "assistant",
                        content=f"event {seq} of case {i}: some text the agent said or a tool returned",
                        sha256="sha256:" + "0" * 64,
                        ts="2026-12-01T10:00:00Z",
                    )
                )
            tries.append(
                Attempt(
                    passed=(i + k) % 5 != 0,
                    score=1.0,
                    scores={"format_valid": 1.0},
                    latency_ms=100.0 + (i * 7 + k) % 400,
                    tokens_in=120,
                    tokens_out=30,
                    cost_usd=0.0001,
                    output=f"FINAL ANSWER: {i}",
                    output_sha256="sha256:" + "1" * 64,
                    trace=trace,
                )
            )
        out.append(
            CaseResult(id=f"case-{i:06d}", slices={"topic": f"t{i % slices:02d}"}, attempts=tries, input=f"q {i}")
        )
    run = RunInfo(
        suite="bench",
        status="success",
        total_cases=cases,
        completed_cases=cases,
        git_sha=sha,
        started_at="2026-12-01T10:00:00Z",
        attempts_per_case=attempts,
        evalgate_version=__version__,  # as `evalgate run` writes it: masked already
    )
    return Results(run=run, cases=out)


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    cpu = os.times()
    start = time.perf_counter()
    value = fn()
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.user - cpu.user) + (after.system - cpu.system), value


def backend_cpu(db: Any) -> float:
    """CPU seconds of this connection's PostgreSQL backend process so far (0 for SQLite)."""
    if db.name != "postgresql":
        return 0.0
    pid = db.query("SELECT pg_backend_pid()")[0][0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_record(url: str, results: Results) -> tuple[float, float, float]:
    """(wall, CPU of this process, CPU of the database server's backend)."""
    with open_history(url) as db:
        before = backend_cpu(db)
        wall, cpu, _ = timed(lambda: Writer(db).run(results, recorded_by="bench"))
        server = backend_cpu(db) - before
        events = db.query("SELECT COUNT(*) FROM events")[0][0]
    assert events == sum(len(a.trace or []) for c in results.cases for a in c.attempts)
    return wall, cpu, server


def bench_show(url: str, runs: int, cases: int) -> tuple[float, float, float, float, float]:
    """(default window wall, CPU, all runs wall, CPU, fill seconds)."""
    with open_history(url) as db:
        writer = Writer(db)
        fill = time.perf_counter()
        for n in range(runs):
            results = traced_run(cases, 1, 0, sha=f"{n:040x}")
            results.run.started_at = f"2026-{1 + n // 28 % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:00:00Z"
            writer.run(results, recorded_by="bench")
        fill = time.perf_counter() - fill
        wall, cpu, text = timed(lambda: render(load_trends(db, suite="bench")))
        assert text.count("\n") > 50
        wall_all, cpu_all, text = timed(lambda: render(load_trends(db, suite="bench", last=runs)))
        assert text.count("\n") > 50
    return wall, cpu, wall_all, cpu_all, fill


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--cases-per-run", type=int, default=500, help="for the show benchmark (10 per slice)")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min), cpus: {os.cpu_count()}")
    build = time.perf_counter()
    results = traced_run(args.cases, 3, 20)
    print(f"built a {args.cases}-case run × 3 attempts × 20 events in {time.perf_counter() - build:.1f} s (not timed)")
    why_not_pg = pg_server.available()
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        engines = {"sqlite": lambda name: str(folder / f"{name}.sqlite")}
        if why_not_pg is None:
            admin = stack.enter_context(pg_server.server())
            engines["postgresql"] = lambda name: pg_server.fresh_database(admin, name)
        else:
            print(f"postgresql: skipped ({why_not_pg})")
        targets = {"sqlite": (3.0, 0.5), "postgresql": (5.0, 0.5)}
        for engine, url_for in engines.items():
            wall, cpu, server = bench_record(url_for("record"), results)
            limit = targets[engine][0]
            served = f" + {server:.2f} s in the server" if engine == "postgresql" else ""
            print(
                f"{engine:>10}: record {args.cases:,} cases × 3 attempts × 20 events: {wall:.2f} s wall, "
                f"{cpu:.2f} s CPU{served} (target ≤ {limit:g} s: {'ok' if wall <= limit else 'MISSED'})"
            )
            wall, cpu, wall_all, cpu_all, fill = bench_show(url_for("show"), args.runs, args.cases_per_run)
            limit = targets[engine][1]
            print(
                f"{engine:>10}: history show, {args.runs} runs × 50 slices recorded ({args.cases_per_run} cases/run, "
                f"filled in {fill:.1f} s): default window (last 20 runs) {wall:.3f} s wall, {cpu:.3f} s CPU "
                f"(target ≤ {limit:g} s: {'ok' if wall <= limit else 'MISSED'}); all {args.runs} runs "
                f"(--last {args.runs}) {wall_all:.3f} s wall, {cpu_all:.3f} s CPU"
            )


if __name__ == "__main__":
    main()
