"""CLI start time (docs/spec.md#performance-targets: under 0.5 s; ``run --help`` under 0.3 s): the median wall
time of N fresh ``evalgate`` processes for ``--version``, ``run --help`` and ``compare --help``,
against its target; and which heavy modules a fresh ``import evals.cli.run`` (the run command) loads (none of numpy,
scipy, jinja2, httpx may be among them).

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

COMMANDS = ((["--version"], 0.5), (["run", "--help"], 0.3), (["compare", "--help"], 0.5))
HEAVY = ("numpy", "scipy", "jinja2", "httpx", "httpcore")


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
    met = True
    for command, target in COMMANDS:
        argv = base + command
        start_time(argv)  # warm the OS file cache and the bytecode cache
        times = [start_time(argv) for _ in range(args.runs)]
        median = statistics.median(times)
        met = met and median <= target
        print(
            f"evalgate {' '.join(command):15s} median {median:.3f} s, min {min(times):.3f} s, "
            f"max {max(times):.3f} s over {args.runs} runs; ratio to the {target:g} s target {median / target:.2f}"
        )
    probe = f"import sys, evals.cli.run; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.split()
    print("import evals.cli.run loads: " + (", ".join(loaded) if loaded else "none of " + ", ".join(HEAVY)))
    return 0 if met and not loaded else 1


if __name__ == "__main__":
    raise SystemExit(main())
