"""Bounded parsers (docs/spec.md#reliability): YAML aliases, decompression and masking cannot be made to take
the machine's time or memory by a small crafted file; each limit is a clear exit 2 naming the file
and the limit. Each test runs the real command in a subprocess, bounded so that the unbounded
behaviour (minutes, gigabytes) fails the test instead of hanging it."""

from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import zstandard

from evals.common.errors import EXIT_USAGE, InputFileError
from evals.importers import import_results
from evals.results.inflate import INFLATE_LIMIT_ENV
from evals.suite.yamlsource import MAX_ALIAS_EXPANSION

# ~560 bytes; each level nine aliases of the one before: 9**8 values once expanded (a few levels
# fewer took 2.7 s and 200 MB to validate and hash before the limit; this one, gigabytes).
LAUGHS = "\n".join(
    ["suite: laughs", "cases: cases.jsonl", "target: {command: [echo]}", "scorers:", "  - python: 'm:f'", "    params:"]
    + ['      a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"      a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 8)]
)
RUN = {"suite": "s", "status": "success", "total_cases": 1, "completed_cases": 1}
GOOD = {"schema_version": 1, "run": RUN, "cases": [{"id": "a", "attempts": [{"passed": True}]}]}


def evalgate(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The CLI in a subprocess with 2 GB of address space and 60 s: what used to take gigabytes or
    minutes ends in MemoryError or a timeout, which the test reports as a failure."""
    limit = 4 << 30

    def bound() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "evals", *args],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=bound,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def test_yaml_alias_bomb_in_the_config_is_refused(tmp_path):
    path = tmp_path / "evalgate.yml"
    path.write_text(LAUGHS)
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "q", "expected": "q"}\n')
    (tmp_path / "m.py").write_text("def f(output, case, **params):\n    return 1.0\n")
    assert len(LAUGHS) < 600
    done = evalgate("run", "--config", str(path), cwd=tmp_path)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert str(path) in done.stderr and f"past {MAX_ALIAS_EXPANSION:,} values" in done.stderr
    assert "Traceback" not in done.stderr


def test_yaml_alias_bomb_in_a_cases_file_is_refused(tmp_path):
    (tmp_path / "evalgate.yml").write_text("suite: t\ncases: cases.yaml\ntarget: {command: [echo]}\n")
    bomb = "\n".join(
        f"- {{id: c{i}, input: {line.split(': ', 1)[1]}}}" for i, line in enumerate(LAUGHS.splitlines()[6:])
    )
    (tmp_path / "cases.yaml").write_text(bomb)
    done = evalgate("run", "--config", str(tmp_path / "evalgate.yml"), cwd=tmp_path)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "cases.yaml" in done.stderr and "aliases expand" in done.stderr


def test_modest_anchors_and_merge_keys_still_load(tmp_path):
    from evals.suite.loading import load_config

    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "q", "expected": "q"}\n')
    path = tmp_path / "evalgate.yml"
    path.write_text(
        "suite: t\ncases: cases.jsonl\ntarget: {command: [echo]}\n"
        "metrics:\n  pass_rate: &m {tolerance: 0.03}\n  score: {<<: *m, gate: false}\n"
    )
    config = load_config(path)
    assert config.metrics["score"].tolerance == 0.03 and not config.metrics["score"].gate


@pytest.mark.e2e
def test_gzip_bomb_results_file_is_refused_at_the_default_limit(tmp_path):
    bomb = tmp_path / "candidate.json.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as fh:  # ~1.1 GB of spaces in ~1 MB
        chunk = b" " * (1 << 24)
        for _ in range(66):
            fh.write(chunk)
    assert bomb.stat().st_size < 8 << 20
    done = evalgate("compare", "--candidate", str(bomb))
    assert done.returncode == EXIT_USAGE, done.stderr
    assert str(bomb) in done.stderr and "larger than 1,024 MB" in done.stderr and INFLATE_LIMIT_ENV in done.stderr


@pytest.mark.e2e
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from /proc")
def test_gzip_bomb_is_refused_while_counting_with_bounded_memory(tmp_path):
    """2 GiB of zeros in 32 gzip members (~2 MB, written member by member: the last member's
    trailer states 64 MiB, so only counting finds it). The refusal comes once the count passes
    the limit, having kept at most the first 64 MiB: the process's peak memory stays far below the
    1,024 MB limit it was allowed to inflate (holding the data up to the limit peaked at 1,086 MB)."""
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    member = b"".join(packer.compress(b"\0" * (1 << 20)) for _ in range(64)) + packer.flush()
    bomb = tmp_path / "candidate.json.gz"
    with bomb.open("wb") as fh:
        for _ in range(32):
            fh.write(member)
    assert bomb.stat().st_size < 4 << 20
    # The process's own high-water mark (VmHWM, reset by exec): getrusage's ru_maxrss survives
    # execve, so in a child of a big pytest process it reports the parent's peak.
    probe = (
        "import re, sys\n"
        "from evals.cli.app import main\n"
        "code = main(['compare', '--candidate', sys.argv[1]])\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
        "print('peak', int(hwm) >> 10, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(bomb)], capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    assert str(bomb) in done.stderr and "larger than 1,024 MB" in done.stderr
    peak_mb = int(done.stderr.rsplit("peak ", 1)[1])
    assert peak_mb < 200, f"peak memory {peak_mb} MB while refusing a gzip bomb"


def test_multi_member_and_zero_padded_gzip_still_load(tmp_path):
    from evals.results.files import load_results, parse_results

    text = json.dumps(GOOD).encode()
    path = tmp_path / "r.json.gz"
    path.write_bytes(gzip.compress(text[:10]) + gzip.compress(text[10:]) + b"\0" * 16)
    assert load_results(path) == parse_results(text, "plain")
    path.write_bytes(gzip.compress(text)[:-3])
    with pytest.raises(InputFileError, match="corrupt or truncated gzip data"):
        load_results(path)


def test_the_inflate_limit_can_be_raised_and_is_checked(tmp_path):
    path = tmp_path / "r.json.gz"
    path.write_bytes(gzip.compress(json.dumps(GOOD).encode() + b" " * (3 << 20)))
    small = evalgate("compare", "--candidate", str(path), env={INFLATE_LIMIT_ENV: "2"})
    assert small.returncode == EXIT_USAGE and "larger than 2 MB" in small.stderr
    assert evalgate("compare", "--candidate", str(path), env={INFLATE_LIMIT_ENV: "4"}).returncode == 0
    bad = evalgate("compare", "--candidate", str(path), env={INFLATE_LIMIT_ENV: "lots"})
    assert bad.returncode == EXIT_USAGE and "EVALGATE_MAX_INFLATED_MB='lots'" in bad.stderr


def _zstd_eval(path: Path, members: dict[str, bytes], claimed_size: int | None = None) -> None:
    """An inspect .eval zip whose members are zstd (method 93), optionally claiming another
    uncompressed size in the zip's directories."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, content in members.items():
            zf.writestr(name, zstandard.ZstdCompressor().compress(content))
    data = bytearray(path.read_bytes())
    for signature, method_at, size_at in ((b"PK\x03\x04", 8, 22), (b"PK\x01\x02", 10, 24)):
        at = data.find(signature)
        while at >= 0:
            struct.pack_into("<H", data, at + method_at, 93)
            if claimed_size is not None:
                struct.pack_into("<I", data, at + size_at, claimed_size)
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))


HEADER = json.dumps({"eval": {"task": "t"}, "status": "success"}).encode()


@pytest.mark.parametrize("claimed", [None, 100])  # the zip's own size, or a lie about it
def test_zstd_zip_bomb_member_is_refused(tmp_path, monkeypatch, claimed):
    path = tmp_path / "bomb.eval"
    _zstd_eval(path, {"header.json": HEADER, "samples/1.json": b" " * (3 << 20)}, claimed)
    monkeypatch.setenv(INFLATE_LIMIT_ENV, "2")
    with pytest.raises(InputFileError) as caught:
        import_results("inspect_ai", [path])
    assert str(path) in str(caught.value) and "samples/1.json" in str(caught.value)
    assert "larger than 2 MB" in str(caught.value) and INFLATE_LIMIT_ENV in str(caught.value)


def test_deflate_zip_members_share_one_budget(tmp_path, monkeypatch):
    path = tmp_path / "many.eval"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", HEADER)
        for i in range(3):
            zf.writestr(f"samples/{i}.json", b"{}" + b" " * (1 << 20))  # 1 MB each, 3 MB in all
    monkeypatch.setenv(INFLATE_LIMIT_ENV, "2")
    with pytest.raises(InputFileError, match="with the members before it"):
        import_results("inspect_ai", [path])
