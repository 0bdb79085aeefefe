"""Case ids and slice values are masked where they enter evalgate (docs/spec.md#masked-names): an
import of a test tool's run whose parametrised names hold a key and a database URL, and a suite
whose ids and a tag hold an environment variable's value, leave no secret in results.json,
comment.md, the HTML page, the local baseline store or the SQLite history; and the masked ids
still pair with a baseline, resume a run and select a more-evidence batch."""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.paths import FIXTURES
from fakes.suites import write_suite

FIX = FIXTURES / "importers"
KEY = "sk-live-9Qx7Lm2Np4Rt6Vw8Yz0Ab"
DB_URL = "postgres://app:pa55-Word-7Kq@db.internal/app"
# What must not be written anywhere: the key and the URL's password (its user name alone says little).
SECRETS = (KEY, "pa55-Word-7Kq")
SECRET_IDS = (f"test_api[{KEY}]", f"test_db[{DB_URL}]")


def _pytest_json(tmp: Path, flip: bool) -> Path:
    """The tool's run with two tests renamed; ``flip``: the key's test fails (the report lists it)."""
    data = json.loads((FIX / "pytest_json" / "report.json").read_text())
    tests = [t for t in data["tests"] if not t["nodeid"].endswith("test_needs_model")]  # infra: a partial run
    for test, name in zip(tests, SECRET_IDS, strict=False):
        test["nodeid"] = f"checks/api_checks.py::{name}"
        test["keywords"] = [name, *test["keywords"]]
    if flip:
        tests[0]["outcome"] = "failed"
        tests[0]["call"].update(outcome="failed", longrepr=f"AssertionError: {KEY} was refused")
    data["tests"] = tests
    data["summary"]["total"] = data["summary"]["collected"] = len(tests)
    out = tmp / f"report-{flip}.json"
    out.write_text(json.dumps(data))
    return out


def _junit(tmp: Path, flip: bool) -> Path:
    text = (FIX / "junit" / "pytest_junit.xml").read_text()
    names = iter(SECRET_IDS)
    # The first two parametrised cases get the names (nothing in them needs escaping in XML).
    text = re.sub(r'name="test_add\[[^"]*\]"', lambda m: f'name="{next(names)}"', text, count=2)
    if flip:
        at = text.index("</testcase>", text.index(SECRET_IDS[0]))
        text = f'{text[:at]}<failure message="{KEY} was refused">AssertionError</failure>{text[at:]}'
    out = tmp / f"junit-{flip}.xml"
    out.write_text(text)
    return out


def _deepeval(tmp: Path, flip: bool) -> Path:
    data = json.loads((FIX / "deepeval" / "latest_test_run_cli.json").read_text())
    cases = data["testRunData"]["testCases"]
    for case in cases:
        case["metricsData"] = [m for m in case["metricsData"] if "GEval" not in m["name"]]  # an unreachable judge
    extra = copy.deepcopy(cases[0])
    cases[0]["name"], extra["name"] = SECRET_IDS
    extra["input"] = f"{extra['input']} (again)"
    cases.append(extra)
    if flip:
        cases[0]["success"] = False
        for metric in cases[0]["metricsData"]:
            metric.update(success=False, score=0.0, reason=f"{KEY} was refused")
    out = tmp / f"deepeval-{flip}.json"
    out.write_text(json.dumps(data))
    return out


IMPORTS: list[tuple[str, Callable[[Path, bool], Path]]] = [
    ("pytest_json", _pytest_json),
    ("junit", _junit),
    ("deepeval", _deepeval),
]


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALGATE_"))}
    return {**env, "GITHUB_SHA": "1" * 40, "EVALGATE_HISTORY_URL": str(tmp / "history.sqlite"), **extra}


def _evalgate(python_exe: str, tmp: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python_exe, "-m", "evals", *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def _written_secrets(tmp: Path, secrets: tuple[str, ...] = SECRETS, skip: tuple[Path, ...] = ()) -> list[str]:
    """Every file under ``tmp`` but ``skip`` (what evalgate wrote, the history's database too) that holds a secret."""
    found = []
    for path in sorted(p for p in tmp.rglob("*") if p.is_file() and p not in skip):
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":  # the store keeps snapshots gzipped
            raw = gzip.decompress(raw)
        found += [f"{path.relative_to(tmp)}: {s}" for s in secrets if s.encode() in raw]
    return found


@pytest.mark.parametrize(("fmt", "make"), IMPORTS, ids=[fmt for fmt, _ in IMPORTS])
def test_an_import_writes_no_secret_of_its_names(fmt, make, tmp_path, python_exe):
    sources = (make(tmp_path, False), make(tmp_path, True))
    assert all(KEY in source.read_text() for source in sources)
    (tmp_path / "evalgate.yml").write_text(
        "suite: s\ncases: cases.jsonl\ngate: {max_error_rate: 0.9}\nbaseline: {store: local, on_missing: seed}\n"
    )
    env = _env(tmp_path)

    def gate(source: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        args = ["gate", "--mode", "compare", "--results", str(source), "--results-format", fmt]
        return _evalgate(python_exe, tmp_path, env, *args, "--html", "report.html", *extra)

    seeded = gate(sources[0], "--promote")
    assert seeded.returncode == 0, seeded.stderr
    flipped = gate(sources[1])  # the key's test passed in the baseline and fails now: the report lists it
    assert flipped.returncode in (0, 1), flipped.stderr
    imported = _evalgate(python_exe, tmp_path, env, "import", "--from", fmt, str(sources[1]), "-o", "results.json")
    assert imported.returncode in (0, 3), imported.stderr

    out = tmp_path / ".evalgate" / "out"
    written = [out / "comment.md", tmp_path / "report.html", tmp_path / "history.sqlite", tmp_path / "results.json"]
    assert all(p.is_file() for p in written) and any((tmp_path / ".evalgate" / "baselines").glob("*.json.gz"))
    assert _written_secrets(tmp_path, skip=sources) == []
    assert KEY not in seeded.stderr + flipped.stderr

    ids = [c["id"] for c in json.loads((tmp_path / "results.json").read_text())["cases"]]
    key_id = next(i for i in ids if re.fullmatch(r".*test_api\[sk-\*\*\*\] \(masked [0-9a-f]{8}\)", i))
    assert any(re.fullmatch(r".*test_db\[postgres://\*\*\*@db\.internal/app\] \(masked [0-9a-f]{8}\)", i) for i in ids)
    assert len(set(ids)) == len(ids)
    # The stored baseline's masked ids pair with the candidate's, and the flipped one is listed by them.
    comparison = json.loads((out / "comparison.json").read_text())
    diff = comparison["case_diff"]
    assert diff["n_paired"] + diff["n_errored"] == len(ids) and diff["n_added"] == diff["n_removed"] == 0, diff
    assert [e["id"] for e in diff["pass_to_fail"]] == [key_id]
    assert key_id[-18:] in (out / "comment.md").read_text() and key_id[-18:] in (tmp_path / "report.html").read_text()


BOT = """
from pathlib import Path

def answer(text, case):
    with open(Path(__file__).with_name("calls.log"), "a") as fh:
        fh.write(case.id + "\\n")
    return text
"""
TENANT = "tenant-7f3a9c1e5b"  # an environment variable's value: no pattern knows it


def test_a_suite_run_masks_an_env_value_in_its_names_and_still_pairs_resumes_and_selects(tmp_path, python_exe):
    cases = [
        {"id": f"{TENANT}/q{i}", "input": f"q{i}", "expected": f"q{i}", "tags": {"tenant": TENANT if i % 2 else "demo"}}
        for i in range(8)
    ]
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    write_suite(
        tmp_path,
        cases,
        target={"python": "bot:answer", "path": ["."]},
        scorers=["exact"],
        slices=["tenant"],
        baseline={"store": "local", "on_missing": "seed"},
    )
    env = _env(tmp_path, ACME_TENANT=TENANT)
    seeded = _evalgate(python_exe, tmp_path, env, "gate", "--promote", "--html", "report.html")
    assert seeded.returncode == 0, seeded.stderr
    gated = _evalgate(python_exe, tmp_path, env, "gate", "--html", "report.html")
    assert gated.returncode == 0, gated.stderr
    comparison = json.loads((tmp_path / ".evalgate" / "out" / "comparison.json").read_text())
    diff = comparison["case_diff"]
    assert diff["n_paired"] == 8 and diff["n_changed"] == diff["n_added"] == diff["n_removed"] == 0, diff

    # The target was given the cases as written; nothing evalgate wrote holds the value.
    calls = tmp_path / "calls.log"
    assert set(calls.read_text().split()) == {c["id"] for c in cases}
    written = [".evalgate/out/comment.md", ".evalgate/out/results.json", "report.html", "history.sqlite"]
    assert all((tmp_path / p).is_file() for p in written) and any((tmp_path / ".evalgate").rglob("*.json.gz"))
    assert _written_secrets(tmp_path, (TENANT,), skip=(tmp_path / "cases.jsonl", calls)) == []

    # Resume: every case of the finished file is matched to its result, none runs again.
    ran = _evalgate(python_exe, tmp_path, env, "run", "-o", "r.json")
    assert ran.returncode == 0, ran.stderr
    before = calls.read_text()
    resumed = _evalgate(python_exe, tmp_path, env, "run", "-o", "r.json", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert calls.read_text() == before
    results = json.loads((tmp_path / "r.json").read_text())
    ids = [c["id"] for c in results["cases"]]
    assert all(re.fullmatch(r"\*\*\*/q\d \(masked [0-9a-f]{8}\)", i) for i in ids) and len(set(ids)) == 8, ids
    tenants = {c["slices"]["tenant"] for c in results["cases"]}
    assert len(tenants) == 2 and "demo" in tenants and all(TENANT not in t for t in tenants), tenants

    # More evidence: a batch names the masked ids evalgate wrote.
    (tmp_path / "ids.txt").write_text("\n".join(ids[:3]) + "\n")
    batch = _evalgate(python_exe, tmp_path, env, "run", "-o", "batch.json", "--ids", "ids.txt")
    assert batch.returncode == 0, batch.stderr
    assert [c["id"] for c in json.loads((tmp_path / "batch.json").read_text())["cases"]] == ids[:3]
