"""CLI start time (SPEC §10: under 0.5 s): the median wall time of N fresh ``evalgate`` processes
for ``--version``, ``run --help`` and ``compare --help``, against the target.

    .venv/bin/python benchmarks/bench_cli_start.py [--runs 9]

It starts the ``evalgate`` console script next to this interpreter (``python -m evals`` if there is
none), as a user's shell would; the first, cold run is discarded."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.5
COMMANDS = (["--version"], ["run", "--help"], ["compare", "--help"])


def launcher() -> list[str]:
    script = Path(sys.executable).with_name("evalgate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "evals"]


def start_time(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    base = launcher()
    worst = 0.0
    for command in COMMANDS:
        argv = base + command
        start_time(argv)  # warm the OS file cache and the bytecode cache
        times = [start_time(argv) for _ in range(args.runs)]
        median = statistics.median(times)
        worst = max(worst, median)
        print(
            f"evalgate {' '.join(command):15s} median {median:.3f} s, min {min(times):.3f} s, "
            f"max {max(times):.3f} s over {args.runs} runs; ratio to the {TARGET_S:g} s target {median / TARGET_S:.2f}"
        )
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
