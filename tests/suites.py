"""Test helpers: small suites written into a test's tmp folder (a config plus a JSONL case file),
and a liveness check for processes a target started."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from evals.config import SuiteConfig, load_config


def write_suite(folder: Path, cases: list[dict[str, Any]], **config: Any) -> Path:
    """Write ``cases.jsonl`` and ``evalgate.yml`` (``suite: t``, ``cases: cases.jsonl`` plus
    ``config``) into ``folder``; returns the config path."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case, ensure_ascii=False) + "\n")
    path = folder / "evalgate.yml"
    path.write_text(yaml.safe_dump({"suite": "t", "cases": "cases.jsonl", **config}, sort_keys=False), encoding="utf-8")
    return path


def load_suite(folder: Path, cases: list[dict[str, Any]], **config: Any) -> SuiteConfig:
    return load_config(write_suite(folder, cases, **config))


def echo_cases(n: int, **tags: list[str]) -> list[dict[str, Any]]:
    """``c000``..: input ``q<i>``, expected the same (an echo target passes them all); each tag
    key cycles through its values."""
    out = []
    for i in range(n):
        case: dict[str, Any] = {"id": f"c{i:03d}", "input": f"q{i}", "expected": f"q{i}"}
        if tags:
            case["tags"] = {k: values[i % len(values)] for k, values in tags.items()}
        out.append(case)
    return out


def process_alive(pid: int) -> bool:
    """Running or sleeping; a zombie waiting for its reaper is dead for our purposes."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")
