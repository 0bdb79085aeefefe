"""Runner overhead (SPEC §10): 2,000 cases against a local OpenAI-compatible endpoint answering
after 20 ms, at concurrency 50. Prints the wall time, the ideal ``cases × latency / concurrency``,
their ratio (target ≤ 1.2), the CPU time this process used, and its peak RSS.

For scale it then makes the same requests two more ways: with the OpenAI target alone (its
httpcore keep-alive connections, 50 at a time; no runner, scoring or results file), and with a bare
asyncio HTTP/1.1 loop over 50 keep-alive connections (what the endpoint and this machine allow at
all). Runner minus target is the runner's own overhead; target minus bare loop is the HTTP client's.

The endpoint is ``tests/openai_server.py`` (the tests' fault-injecting server) started in its own
process, so its request handling does not compete with the runner for this interpreter.

    .venv/bin/python benchmarks/bench_runner.py [--cases 2000] [--latency 0.02] [--concurrency 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evals.cases import load_cases
from evals.config import SuiteConfig, load_config
from evals.run import execute
from evals.targets import build_target

SERVER = Path(__file__).resolve().parent.parent / "tests" / "openai_server.py"


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def target_alone(config: SuiteConfig) -> None:
    target = build_target(config)
    todo = load_cases(config)

    async def worker() -> None:
        while todo:
            await target.call(todo.pop())

    try:
        await asyncio.gather(*(worker() for _ in range(config.concurrency)))
    finally:
        await target.aclose()


async def bare_http(url: str, cases: int, concurrency: int) -> None:
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    todo = list(range(cases))

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        while todo:
            i = todo.pop()
            body = json.dumps({"model": "echo", "messages": [{"role": "user", "content": f"q{i}"}]}).encode()
            head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n\r\n"
            writer.write(head.encode() + body)
            lines = (await reader.readuntil(b"\r\n\r\n")).decode().lower().split("\r\n")
            length = next(int(line.split(":")[1]) for line in lines if line.startswith("content-length:"))
            json.loads(await reader.readexactly(length))
        writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args()

    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(args.latency)], stdout=subprocess.PIPE, text=True
    )
    try:
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory(prefix="evalgate-bench-") as tmp:
            folder = Path(tmp)
            with (folder / "cases.jsonl").open("w") as fh:
                for i in range(args.cases):
                    fh.write(json.dumps({"id": f"c{i:05d}", "input": f"q{i}", "expected": f"q{i}"}) + "\n")
            (folder / "evalgate.yml").write_text(
                json.dumps(
                    {
                        "suite": "bench",
                        "cases": "cases.jsonl",
                        "target": {"openai": {"base_url": url, "model": "local:echo", "api_key_env": None}},
                        "scorers": ["exact"],
                        "concurrency": args.concurrency,
                    }
                )
            )
            config = load_config(folder / "evalgate.yml")
            started, cpu = time.perf_counter(), cpu_s()
            results = execute(config, folder / "results.json", progress=False)
            wall, cpu = time.perf_counter() - started, cpu_s() - cpu
            peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            started, floor_cpu = time.perf_counter(), cpu_s()
            asyncio.run(target_alone(config))
            floor, floor_cpu = time.perf_counter() - started, cpu_s() - floor_cpu
            started, bare_cpu = time.perf_counter(), cpu_s()
            asyncio.run(bare_http(url, args.cases, args.concurrency))
            bare, bare_cpu = time.perf_counter() - started, cpu_s() - bare_cpu
    finally:
        server.terminate()
        server.wait(timeout=10)

    ideal = args.cases * args.latency / args.concurrency
    passed = sum(bool(a.passed) for c in results.cases for a in c.attempts)
    print(f"cases {args.cases}, latency {args.latency * 1000:g} ms, concurrency {args.concurrency}")
    print(f"status {results.run.status}, {results.run.completed_cases} complete, {passed} passed")
    print(f"wall {wall:.3f} s, ideal {ideal:.3f} s, ratio {wall / ideal:.2f} (target <= 1.2)")
    print(f"runner CPU {cpu:.3f} s ({cpu / args.cases * 1000:.2f} ms per case), peak RSS {peak_mib:.0f} MiB")
    print(f"OpenAI target alone (no runner): wall {floor:.3f} s, ratio {floor / ideal:.2f}, CPU {floor_cpu:.3f} s")
    print(f"bare asyncio HTTP loop:          wall {bare:.3f} s, ratio {bare / ideal:.2f}, CPU {bare_cpu:.3f} s")
    return 0 if results.run.status == "success" else 1


if __name__ == "__main__":
    raise SystemExit(main())
