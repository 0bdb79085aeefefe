"""The response cache (docs/spec.md#response-cache): what a re-run of an unchanged suite costs, cold and warm. A suite
of N cases (an ``openai`` target and a ``judge`` on the local OpenAI-compatible server of
``tests/fakes/openai_server.py``, answering after ``--latency`` seconds) is gated with ``evalgate gate`` against a local
store seeded first; each round empties the cache, gates (cold: every answer paid for), then gates again (warm: the same
suite, nothing changed). It prints, per round, the wall time of each gate, the requests the server answered and the
verdicts, which must agree.

    .venv/bin/python benchmarks/bench_cache.py [--cases 200] [--latency 0.02] [--rounds 3]

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--rounds", type=int, default=3)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
