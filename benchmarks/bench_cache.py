"""The response cache (docs/spec.md#response-cache): what a re-run of an unchanged suite costs, cold and warm. A suite
of N cases (an ``openai`` target and a ``judge`` on the local OpenAI-compatible server of
``tests/fakes/openai_server.py``, answering after ``--latency`` seconds) is gated with ``evalgate gate`` against a local
store seeded first; each round empties the cache, gates (cold: every answer paid for), then gates again (warm: the same
suite, nothing changed). It prints, per round, the wall time of each gate, the requests the server answered and the
verdicts, which must agree.

With ``--misses N``, then the cache's own CPU on a run that cannot hit, the case a first run and every
changed case pay: ``evalgate run`` of N cases (``bench_runner.py``'s suite: an ``openai`` target on its
chat fake, in its own process, concurrency 50; the history off) with the cache off and with a fresh
cache (every answer a miss that is written), alternating, ``--rounds`` times each; it prints the CPU
seconds (user+sys, from the kernel) of each run and the medians' difference.

    .venv/bin/python benchmarks/bench_cache.py [--cases 200] [--latency 0.02] [--rounds 3] [--misses 10000]

The server runs in this process (a thread); the gates are fresh ``evalgate`` processes, as in CI."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from evals.run.cache import DB_NAME

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_runner  # noqa: E402
from fakes.openai_server import OpenAIServer  # noqa: E402

NONCE = re.compile(r'\{"nonce": "(\w+)"')


def responder(body: dict[str, Any]) -> str:
    """The model echoes the question; asked as the judge (its prompt carries a nonce), it passes."""
    text = body["messages"][-1]["content"]
    asked = NONCE.search(text)
    if asked is None:
        return text
    return json.dumps({"nonce": asked.group(1), "verdict": "pass", "score": 1, "reasoning": "repeats it"})


def write_suite(folder: Path, url: str, cases: int) -> None:
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(cases):
            tags = {"lang": "ab"[i % 2]}
            fh.write(json.dumps({"id": f"c{i:04d}", "input": f"q{i}", "expected": f"q{i}", "tags": tags}) + "\n")
    judge = {"model": "local:judge", "base_url": url, "api_key_env": None, "rubric": "The answer repeats the question."}
    config = {
        "suite": "bench-cache",
        "cases": "cases.jsonl",
        "target": {"openai": {"base_url": url, "model": "local:m", "api_key_env": None}},
        "scorers": ["exact", {"judge": judge}],
        "slices": ["lang"],
        "cache": {},
    }
    (folder / "evalgate.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def gate(folder: Path, out: str, *extra: str) -> tuple[float, str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}, "EVALGATE_HISTORY": "off"}
    argv = [sys.executable, "-m", "evals", "gate", "--config", "evalgate.yml", "--store", "local"]
    started = time.perf_counter()
    done = subprocess.run(
        [*argv, "--baseline-dir", "store", "--out-dir", out, *extra],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"gate failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return elapsed, json.loads((folder / out / "comparison.json").read_text(encoding="utf-8"))["verdict"]


def misses(cases: int, latency: float, rounds: int) -> None:
    """The cache's CPU on a run whose every answer is a miss, against the same run without it."""
    fmt = bench_runner.FORMATS["chat"]
    server = subprocess.Popen(
        [sys.executable, bench_runner.__file__, "--serve", "chat", str(latency)], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    env = {k: v for k, v in os.environ.items() if k not in ("EVALGATE_CACHE", "EVALGATE_CACHE_DIR")}
    env["EVALGATE_HISTORY"] = "off"
    runs: dict[str, list[float]] = {"cache off": [], "cache on, every answer a miss": []}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-cache-misses-") as tmp:
            folder = Path(tmp)
            configs = (
                bench_runner.write_suite(folder, fmt, url, cases, 50),
                bench_runner.write_suite(folder, fmt, url, cases, 50, defaults=True),
            )
            argv = [*bench_runner.evalgate_argv(), "run", "--output", str(folder / "r.json"), "--progress", "lines"]
            for _ in range(rounds):
                for samples, config in zip(runs.values(), configs, strict=True):
                    shutil.rmtree(folder / ".evalgate", ignore_errors=True)
                    samples.append(bench_runner.measure([*argv, "--config", str(config)], env).cpu)
                    bench_runner.check_results(folder / "r.json", cases)
    finally:
        server.terminate()
        server.wait(timeout=10)
    for name, cpus in runs.items():
        print(f"{cases} cases, {name}: CPU s {' / '.join(f'{c:.2f}' for c in cpus)}")
    extra = statistics.median(runs["cache on, every answer a miss"]) - statistics.median(runs["cache off"])
    print(f"the cache's CPU on a run that misses (medians): {extra:.3f} s, {extra / cases * 1000:.3f} ms a case")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--misses", type=int, default=0, help="cases of the run that misses (default: not run)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-cache-"))
    cold_times, warm_times = [], []
    try:
        with OpenAIServer(latency=args.latency, responder=responder) as server:
            write_suite(folder, server.url, args.cases)
            gate(folder, "seed", "--seed", "--no-cache")  # the baseline, paid for once
            for round_ in range(1, args.rounds + 1):
                shutil.rmtree(folder / ".evalgate" / "cache", ignore_errors=True)
                before = len(server.requests)
                cold, cold_verdict = gate(folder, "cold")
                middle = len(server.requests)
                warm, warm_verdict = gate(folder, "warm")
                after = len(server.requests)
                cold_times.append(cold)
                warm_times.append(warm)
                print(
                    f"round {round_}: cold {cold:.2f} s, {middle - before} requests, {cold_verdict}; "
                    f"warm {warm:.2f} s, {after - middle} requests, {warm_verdict}"
                )
                if after != middle or cold_verdict != warm_verdict:
                    print("the warm gate asked the server or decided otherwise", file=sys.stderr)
                    return 1
        with contextlib.closing(sqlite3.connect(folder / ".evalgate" / "cache" / DB_NAME)) as db:
            entries, size = db.execute("SELECT count(*), total(size) FROM entries").fetchone()
        print(
            f"{args.cases} cases, target + judge, latency {args.latency:g} s: cold median "
            f"{statistics.median(cold_times):.2f} s, warm median {statistics.median(warm_times):.2f} s "
            f"(ratio {statistics.median(warm_times) / statistics.median(cold_times):.2f}); "
            f"cache {entries} entries, {size:,.0f} bytes"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.misses:
        misses(args.misses, args.latency, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
