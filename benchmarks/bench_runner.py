"""Runner throughput (docs/spec.md#performance-targets) on every wire format, as whole processes:
``evalgate run`` (``exact`` scorer, results file written) against a bare asyncio HTTP/1.1 keep-alive
client making the same requests to the same server — for each format (``--format chat|responses|
anthropic|all``, default all) that format's local fake (``tests/fakes/openai_server.py``,
``responses_server.py``, ``anthropic_server.py``: asyncio servers, the format checked and answered
as the public API does) answering after 20 ms, at concurrency 50; the bare client speaks the same
format (its route, body, headers, and the answer read where that format puts it).

The server runs in its own process (``bench_runner.py --serve FORMAT LATENCY``), so its work is not
in either client's CPU figures; its own CPU per request is printed, to show it keeps up. Each client
is a fresh process (``python benchmarks/bench_runner.py --bare FORMAT URL N C`` for the bare one,
the ``evalgate`` console script for the runner), timed from start to exit; CPU (user+sys) and peak
RSS come from the kernel's accounting of that child (``wait4``). The clients alternate, ``--repeat``
times each, at every ``--cases`` size; the ratio printed is evalgate's median wall over the bare
client's median wall, from the same run of this script. Targets, on every format: wall ratio ≤ 1.15
at 10,000 cases, CPU ≤ 0.35 ms per case, peak RSS ≤ 120 MB, and on the path a user runs by default
(the response cache and the history on, in a fresh folder each time, so every answer is a miss that
is written and every run is recorded) ≤ 1.15 at 10,000 cases and ≤ 1.25 at 2,000, within the same
CPU and RSS targets. Then the runner in this process (``evals.run.execution.execute``, start-up
excluded) against the ideal ``cases × latency / concurrency``: ≤ 1.2 at 2,000 cases. Last, one
table: format × (bare wall, evalgate wall, ratio, CPU per request, peak RSS).

    .venv/bin/python benchmarks/bench_runner.py [--format chat|responses|anthropic|all] [--cases 2000 10000]
        [--repeat 3] [--latency 0.02] [--concurrency 50]
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WALL_RATIO_TARGET = 1.15
# The default path at 2,000 cases: its fixed costs (opening the cache and the history,
# the history's transaction) weigh more on a run of 2 s than of 5 s.
SMALL_RATIO_TARGET = 1.25
SMALL_CASES = 2000
CPU_PER_CASE_TARGET_MS = 0.35
PEAK_RSS_TARGET_MB = 120.0
IDEAL_RATIO_TARGET = 1.2


# ------------------------------------------------------------------------------ the formats

# The Anthropic fake checks x-api-key, as the API does: the key both clients send.
ANTHROPIC_KEY = "sk-ant-bench-0123456789"
KEY_ENV = "EVALGATE_BENCH_ANTHROPIC_KEY"


@dataclass(frozen=True)
class Format:
    route: str  # appended to the server's URL, as the target appends it to base_url
    headers: str  # the format's own request headers, as the target sends them
    body: Callable[[str], dict[str, Any]]  # what the target sends for one case's input
    answer: Callable[[Any], str]  # where the format puts the answer's text
    target: Callable[[str], dict[str, Any]]  # the suite's target: section for the server's URL


FORMATS = {
    "chat": Format(
        "/chat/completions",
        "",
        lambda text: {"model": "echo", "messages": [{"role": "user", "content": text}]},
        lambda a: a["choices"][0]["message"]["content"],
        lambda url: {"openai": {"base_url": url, "model": "local:echo", "api_key_env": None}},
    ),
    "responses": Format(
        "/responses",
        "",
        lambda text: {"model": "echo", "store": False, "input": [{"role": "user", "content": text}]},
        lambda a: a["output"][-1]["content"][0]["text"],
        lambda url: {"openai": {"api": "responses", "base_url": url, "model": "local:echo", "api_key_env": None}},
    ),
    "anthropic": Format(
        "/v1/messages",
        f"x-api-key: {ANTHROPIC_KEY}\r\nanthropic-version: 2023-06-01\r\n",
        lambda text: {"model": "echo", "max_tokens": 1024, "messages": [{"role": "user", "content": text}]},
        lambda a: a["content"][0]["text"],
        lambda url: {"anthropic": {"base_url": url, "model": "anthropic:echo", "api_key_env": KEY_ENV}},
    ),
}


def serve(name: str, latency: float) -> None:
    """The format's test fake, in this process until killed; its URL on stdout's first line."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakes.anthropic_server import AnthropicServer
    from fakes.openai_server import OpenAIServer
    from fakes.responses_server import ResponsesServer

    server: OpenAIServer
    if name == "anthropic":
        server = AnthropicServer(api_key=ANTHROPIC_KEY, latency=latency)
    else:
        server = (ResponsesServer if name == "responses" else OpenAIServer)(latency=latency)
    # The fake keeps every request, its headers and path for a test to read: a benchmark's ~100,000
    # grew it past 1 GB, and its collector's pauses with it (stalls of seconds in both clients' runs).
    server.requests, server.headers, server.paths = deque(maxlen=1), deque(maxlen=1), deque(maxlen=1)
    print(server.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._loop.run_forever()


# ------------------------------------------------------------------------------ the bare client


async def bare_client(fmt: Format, url: str, cases: int, concurrency: int) -> None:
    """``concurrency`` keep-alive connections, each sending its next request once the previous
    answer is read; the response is parsed as JSON, as any client would."""
    netloc, _, path = url.split("//", 1)[1].partition("/")
    host, _, port = netloc.partition(":")
    target = f"/{path}{fmt.route}" if path else fmt.route
    todo = list(range(cases))

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        while todo:
            body = json.dumps(fmt.body(f"q{todo.pop()}"), separators=(",", ":")).encode()
            head = (
                f"POST {target} HTTP/1.1\r\nHost: {netloc}\r\nContent-Type: application/json\r\n{fmt.headers}"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            writer.write(head.encode() + body)
            lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower().split("\r\n")
            if not lines[0].startswith("http/1.1 200"):
                raise SystemExit(f"bare client: POST {target} answered {lines[0]}")
            length = next(int(line.split(":")[1]) for line in lines if line.startswith("content-length:"))
            fmt.answer(json.loads(await reader.readexactly(length)))  # read the answer, as a client would
        writer.close()

    await asyncio.gather(*(connection() for _ in range(min(concurrency, cases))))


# ---------------------------------------------------------------------------------- measuring


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float


def measure(argv: list[str], env: dict[str, str] | None = None) -> Sample:
    """Wall time from start to exit of one process; CPU and peak RSS from the kernel."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{stderr[-2000:]}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def evalgate_argv() -> list[str]:
    script = Path(sys.executable).with_name("evalgate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "evals"]


def write_suite(folder: Path, fmt: Format, url: str, cases: int, concurrency: int, *, defaults: bool = False) -> Path:
    """The suite's config: with the cache off (``evalgate.yml``), or with every default
    (``defaults.yml``: the cache and the history on, in ``.evalgate/`` beside it)."""
    with (folder / "cases.jsonl").open("w") as fh:
        for i in range(cases):
            fh.write(json.dumps({"id": f"c{i:05d}", "input": f"q{i}", "expected": f"q{i}"}) + "\n")
    settings: dict[str, object] = {
        "suite": "bench",
        "cases": "cases.jsonl",
        "target": fmt.target(url),
        "scorers": ["exact"],
        "concurrency": concurrency,
    }
    if not defaults:
        settings["cache"] = False  # every repeat measures requests, not the response cache answering them
    config = folder / ("defaults.yml" if defaults else "evalgate.yml")
    config.write_text(json.dumps(settings))
    return config


def check_results(path: Path, cases: int) -> None:
    results = json.loads(path.read_text())
    passed = sum(1 for c in results["cases"] for a in c["attempts"] if a["passed"])
    if results["run"]["status"] != "success" or passed != cases:
        raise SystemExit(f"{path}: status {results['run']['status']}, {passed} of {cases} passed: not a clean run")


@dataclass
class Row:
    """One format at one size, for the closing table: medians, evalgate on the default path."""

    format: str
    cases: int
    bare_wall: float
    wall: float
    lean_wall: float
    cpu_ms: float
    rss_mb: float
    server_cpu_ms: float


def server_cpu(pid: int) -> float:
    """The server process's CPU seconds so far (user+sys), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compare(name: str, server: int, url: str, cases: int, args: argparse.Namespace) -> tuple[bool, Row]:
    fmt = FORMATS[name]
    served = server_cpu(server)
    with tempfile.TemporaryDirectory(prefix="evalgate-bench-") as tmp:
        folder = Path(tmp)
        config = write_suite(folder, fmt, url, cases, args.concurrency)
        defaults = write_suite(folder, fmt, url, cases, args.concurrency, defaults=True)
        output = folder / "results.json"
        env = {k: v for k, v in os.environ.items() if k not in ("EVALGATE_HISTORY", "EVALGATE_CACHE")}
        env[KEY_ENV] = ANTHROPIC_KEY
        lean_env = {**env, "EVALGATE_HISTORY": "off"}
        run_argv = [*evalgate_argv(), "run", "--output", str(output), "--progress", "lines"]
        bare_argv = [sys.executable, __file__, "--bare", name, url, str(cases), str(args.concurrency)]
        bare: list[Sample] = []
        runs: list[Sample] = []
        default_runs: list[Sample] = []
        for _ in range(args.repeat):
            bare.append(measure(bare_argv))
            runs.append(measure([*run_argv, "--config", str(config)], lean_env))
            check_results(output, cases)
            # A fresh cache and history each time: every answer a miss that is written, as on a
            # run that can never hit, and the run recorded into a history of its own.
            shutil.rmtree(folder / ".evalgate", ignore_errors=True)
            default_runs.append(measure([*run_argv, "--config", str(defaults)], env))
            check_results(output, cases)
    served = server_cpu(server) - served

    def med(samples: list[Sample], attr: str) -> float:
        return statistics.median(getattr(s, attr) for s in samples)

    ideal = cases * args.latency / args.concurrency
    clients = (
        ("bare asyncio keep-alive client", bare),
        ("evalgate run (cache and history off)", runs),
        ("evalgate run (defaults: cache and history on)", default_runs),
    )
    print(
        f"\n{name}: {cases} cases, latency {args.latency * 1000:g} ms, concurrency {args.concurrency}, "
        f"ideal {ideal:.2f} s"
    )
    print("| client | wall s (each run) | CPU s (each run) | CPU per case | peak RSS |")
    print("|---|---|---|---|---|")
    for client, samples in clients:
        walls = " / ".join(f"{s.wall:.2f}" for s in samples)
        cpus = " / ".join(f"{s.cpu:.2f}" for s in samples)
        per_case = med(samples, "cpu") / cases * 1000
        print(f"| {client} | {walls} | {cpus} | {per_case:.3f} ms | {max(s.rss_mb for s in samples):.0f} MB |")
    met = True
    for client, samples in clients[1:]:
        ratio = med(samples, "wall") / med(bare, "wall")
        cpu_ms = med(samples, "cpu") / cases * 1000
        rss = max(s.rss_mb for s in samples)
        target = WALL_RATIO_TARGET if cases >= 10_000 or samples is runs else SMALL_RATIO_TARGET
        ok = cpu_ms <= CPU_PER_CASE_TARGET_MS and rss <= PEAK_RSS_TARGET_MB
        if cases >= 10_000 or (samples is default_runs and cases <= SMALL_CASES):
            ok = ok and ratio <= target
        print(
            f"{client} / bare (median wall): {ratio:.3f} (target <= {target}); "
            f"/ ideal {med(samples, 'wall') / ideal:.2f}; "
            f"CPU per case {cpu_ms:.3f} ms (target <= {CPU_PER_CASE_TARGET_MS}), peak RSS {rss:.0f} MB "
            f"(target <= {PEAK_RSS_TARGET_MB:g}): {'met' if ok else 'NOT met'}"
        )
        met = met and ok
    requests = cases * 3 * args.repeat
    print(
        f"bare / ideal: {med(bare, 'wall') / ideal:.2f}; the server's CPU per request {served / requests * 1000:.3f} ms"
    )
    row = Row(
        name,
        cases,
        med(bare, "wall"),
        med(default_runs, "wall"),
        med(runs, "wall"),
        med(default_runs, "cpu") / cases * 1000,
        max(s.rss_mb for s in default_runs),
        served / requests * 1000,
    )
    return met, row


def in_process(name: str, url: str, cases: int, args: argparse.Namespace) -> bool:
    """The runner alone, in this process: what the run adds to the ideal, start-up excluded."""
    from evals.run.execution import execute
    from evals.suite.loading import load_config

    walls = []
    with tempfile.TemporaryDirectory(prefix="evalgate-bench-") as tmp:
        os.environ[KEY_ENV] = ANTHROPIC_KEY
        config = load_config(write_suite(Path(tmp), FORMATS[name], url, cases, args.concurrency))
        for _ in range(args.repeat):
            started = time.perf_counter()
            with contextlib.redirect_stderr(io.StringIO()):  # its progress lines
                execute(config, Path(tmp) / "results.json", progress=False)
            walls.append(time.perf_counter() - started)
            check_results(Path(tmp) / "results.json", cases)
    ideal = cases * args.latency / args.concurrency
    ratio = statistics.median(walls) / ideal
    print(
        f"{name}: in-process runner, {cases} cases: wall {' / '.join(f'{w:.2f}' for w in walls)} s, "
        f"median / ideal {ratio:.2f} (target <= {IDEAL_RATIO_TARGET} at 2,000 cases)"
    )
    return ratio <= IDEAL_RATIO_TARGET or cases != 2000


def table(rows: list[Row]) -> None:
    print(
        "\n| format | cases | bare wall s | evalgate wall s (defaults) | ratio | ratio, cache and history off "
        "| evalgate CPU per request | peak RSS | server CPU per request |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r.format} | {r.cases:,} | {r.bare_wall:.2f} | {r.wall:.2f} | {r.wall / r.bare_wall:.2f} × "
            f"| {r.lean_wall / r.bare_wall:.2f} × | {r.cpu_ms:.3f} ms | {r.rss_mb:.0f} MB | {r.server_cpu_ms:.3f} ms |"
        )


def main() -> int:
    if sys.argv[1:2] == ["--bare"]:
        name, url, cases, concurrency = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        asyncio.run(bare_client(FORMATS[name], url, cases, concurrency))
        return 0
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], float(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=[*FORMATS, "all"], default="all", help="the wire format (default: all)")
    parser.add_argument("--cases", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each client per size (medians are compared)")
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args()
    # Bytecode as an installed package has it (pip compiles at install): with PYTHONDONTWRITEBYTECODE
    # set, a module changed since its last compile would be compiled again at every run.
    compileall.compile_dir(ROOT / "evals", quiet=1)
    compileall.compile_file(ROOT / "_evalgate_launch.py", quiet=1)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    met: list[bool] = []
    rows: list[Row] = []
    names = list(FORMATS) if args.format == "all" else [args.format]
    servers: dict[str, tuple[subprocess.Popen[str], str]] = {}
    try:
        for name in names:
            server = subprocess.Popen(
                [sys.executable, __file__, "--serve", name, str(args.latency)], stdout=subprocess.PIPE, text=True
            )
            assert server.stdout is not None
            servers[name] = server, server.stdout.readline().strip()
        for name, (server, url) in servers.items():
            print(f"\n{name}: server {url} (own process)")
            for cases in args.cases:
                ok, row = compare(name, server.pid, url, cases, args)
                met.append(ok)
                rows.append(row)
        # The in-process runs last: a child's peak RSS counts its parent's at the spawn (Linux carries
        # the high-water mark through fork and exec), so this process must not have grown before.
        print()
        for name, (_, url) in servers.items():
            met += [in_process(name, url, cases, args) for cases in args.cases if cases <= 2000]
    finally:
        for server, _ in servers.values():
            server.terminate()
            server.wait(timeout=10)
    table(rows)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0 if all(met) else 1


if __name__ == "__main__":
    raise SystemExit(main())
