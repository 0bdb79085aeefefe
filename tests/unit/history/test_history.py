"""The history store (docs/spec.md#history) on real databases: every test runs on SQLite and on a throwaway
PostgreSQL server (``history_db``), and the views must give both engines the same numbers."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.history_db import history_url as history_url  # the fixture
from fakes.history_db import new_url
from fakes.history_db import pg_admin_url as pg_admin_url  # the fixture
from fakes.paths import ROOT

from evals.history import open_history, record_comparison, record_run
from evals.history.engine import migrations, open_engine
from evals.history.record import Writer
from evals.history.rows import run_digest
from evals.history.settings import history_url as resolve_url
from evals.history.sync import sync_store
from evals.history.table import render
from evals.history.trends import load_trends
from evals.history.url import redact_url
from evals.results.model import Attempt, AttemptError, CaseResult, Results, RunInfo
from evals.results.trace import build_trace

VIEWS = ("v_pass", "v_errors", "v_latency", "v_cost", "v_tools", "v_tool_names", "v_unit_metrics", "v_markers")


def traced(passed: bool, error: bool = False) -> list[Any]:
    events = [
        {"kind": "message", "name": "user", "content": "q"},
        {"kind": "tool_call", "name": "calc", "content": "1"},
    ]
    events.append({"kind": "tool_error" if error else "tool_result", "name": "calc", "content": "2"})
    events.append({"kind": "message", "name": "assistant", "content": "yes" if passed else "no"})
    return build_trace(events)


def sample_results(sha: str = "a" * 40, started: str = "2026-11-01T10:00:00Z", ko_pass: float = 0.5) -> Results:
    """Eight cases over two languages, two attempts each, with latencies, tokens, costs,
    format_valid scores, errors and traces."""
    cases = []
    for i in range(8):
        lang = "ko" if i % 2 else "en"
        attempts = []
        for k in range(2):
            passed = (i + k) % 3 != 0 if lang == "en" else (i / 8 < ko_pass)
            if i == 7 and k == 1:
                attempts.append(Attempt(error=AttemptError(kind="infra", message="HTTP 503"), latency_ms=5.0))
                continue
            attempts.append(
                Attempt(
                    passed=passed,
                    score=float(passed),
                    scores={"format_valid": 0.0 if i == 3 else 1.0},
                    latency_ms=10.0 * (i + 1) + k,
                    tokens_in=10 + i,
                    tokens_out=5,
                    cost_usd=0.001 * (i + 1),
                    output=f"FINAL ANSWER: {i}",
                    output_sha256=f"sha256:{i}{k}",
                    trace=traced(passed, error=(i == 2 and k == 0)),
                )
            )
        cases.append(CaseResult(id=f"c{i}", slices={"language": lang}, attempts=attempts, input=f"question {i}"))
    run = RunInfo(
        suite="demo",
        status="success",
        total_cases=8,
        completed_cases=8,
        git_sha=sha,
        started_at=started,
        attempts_per_case=2,
        config_hash="sha256:cfg",
    )
    return Results(run=run, cases=cases)


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    with open_history(url, migrate=False) as db:
        return db.query(sql)


# ------------------------------------------------------------------------------------- schema


@pytest.mark.e2e
def test_init_applies_migrations_once(history_url: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def init() -> str:
        done = subprocess.run(
            [sys.executable, "-m", "evals", "history", "init", "--url", history_url],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    applied = (
        "applied 0001_runs, 0002_results, 0003_views, 0004_looks, 0005_attempt_cached, 0006_run_identity, "
        "0007_look_p_value (schema version 7)"
    )
    assert applied in init()
    assert "up to date (schema version 7)" in init()
    assert rows(history_url, "SELECT version, name FROM schema_migrations ORDER BY version") == [
        (1, "runs"),
        (2, "results"),
        (3, "views"),
        (4, "looks"),
        (5, "attempt_cached"),
        (6, "run_identity"),
        (7, "look_p_value"),
    ]


@pytest.mark.e2e
def test_attempts_recorded_before_the_cached_column_keep_it_unknown_and_new_ones_record_it(
    history_url: str, tmp_path: Path
) -> None:
    """A database at schema 4 (attempts without ``cached``) with a run in it: ``history init``
    adds the column, the old attempts read NULL (not known, not "not cached"), a new run records
    each attempt's flag, and ``evalgate trace --history`` says which answer came from the cache."""
    engine = open_engine(history_url)
    try:
        for migration in migrations(engine.name):
            if migration.version <= 4:
                engine._apply(migration)
        with engine.transaction():
            old = engine.execute(
                "INSERT INTO runs (digest, suite, status, total_cases, completed_cases, attempts_per_case, "
                "recorded_at, recorded_by) VALUES ('sha256:old', 'demo', 'success', 1, 1, 1, "
                "'2026-11-01T00:00:00Z', 'run') RETURNING id"
            )
            engine.execute("INSERT INTO cases (run_id, case_no, case_id) VALUES (?, 0, 'c0')", (old,))
            engine.execute("INSERT INTO attempts (run_id, case_no, attempt_no, passed) VALUES (?, 0, 0, 1)", (old,))
    finally:
        engine.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def evalgate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "evals", *args], capture_output=True, text=True, cwd=tmp_path, env=env, check=False
        )

    # Reading does not migrate: before anything newer writes to it, the old database is still read.
    before = evalgate("trace", "c0", "--history", "--url", history_url)
    assert before.returncode == 0 and "attempt 1" in before.stdout, before.stderr
    assert "from the response cache" not in before.stdout

    init = evalgate("history", "init", "--url", history_url)
    applied = "applied 0005_attempt_cached, 0006_run_identity, 0007_look_p_value (schema version 7)"
    assert init.returncode == 0 and applied in init.stdout, init.stderr
    assert rows(history_url, "SELECT cached FROM attempts") == [(None,)]

    run = sample_results(started="2026-11-02T10:00:00Z")
    run.cases[0].attempts[1].cached = True
    run.cases[1].attempts[0].cached = True
    with open_history(history_url) as db:
        new = Writer(db).run(run, recorded_by="run")
        flags = db.query("SELECT case_no, attempt_no, cached FROM attempts WHERE run_id = ? ORDER BY 1, 2", (new,))
    assert [f for f in flags if f[2]] == [(0, 1, 1), (1, 0, 1)] and {f[2] for f in flags} == {0, 1}

    shown = evalgate("trace", "c0", "--history", "--url", history_url)
    assert shown.returncode == 0, shown.stderr
    attempts = [line for line in shown.stdout.splitlines() if line.startswith("attempt ")]
    assert len(attempts) == 2 and "from the response cache" not in attempts[0], shown.stdout
    assert attempts[1].endswith("· from the response cache"), shown.stdout


def test_no_ddl_outside_the_migration_files() -> None:
    pattern = ("CREATE TABLE", "CREATE VIEW", "ALTER TABLE", "DROP TABLE", "CREATE INDEX")
    # The response cache's one table is no part of the history: a file of its own, which a new
    # format replaces rather than migrates (its keys carry the format's version). The live record's
    # staging tables are in an in-memory database of its child's, copies of the history's columns.
    not_history = {ROOT / "evals" / "run" / "cache.py", ROOT / "evals" / "history" / "live.py"}
    for path in set((ROOT / "evals").rglob("*.py")) - not_history:
        text = path.read_text(encoding="utf-8").upper()
        assert not any(p in text for p in pattern), f"{path}: DDL belongs in evals/history/migrations/"


# ------------------------------------------------------------------------------------- recording


def test_record_run_and_the_views(history_url: str) -> None:
    results = sample_results()
    done = record_run(results)
    assert done.failures == 0 and done.url == history_url
    assert record_run(results).run_ids == done.run_ids  # the same content is one run
    assert rows(history_url, "SELECT COUNT(*) FROM runs") == [(1,)]
    assert rows(
        history_url, "SELECT COUNT(*), SUM(CASE WHEN result_seq IS NOT NULL THEN 1 ELSE 0 END) FROM events"
    ) == [(15 * 4, 15)]
    metrics = {
        unit: dict(
            zip(
                ("cases", "pass_at_1", "pass_at_k", "error_rate", "p50", "p95", "fmt", "tps", "calls", "ter"),
                r,
                strict=True,
            )
        )
        for unit, *r in rows(
            history_url,
            "SELECT unit, cases, pass_at_1, pass_at_k, error_rate, latency_p50_ms, latency_p95_ms, "
            "format_invalid_rate, tokens_per_success, tool_calls, tool_error_rate FROM v_unit_metrics",
        )
    }
    # Expected values computed here from the same data, by hand.
    per_case = []
    for case in results.cases:
        judged = [a.passed for a in case.attempts if a.passed is not None]
        per_case.append((case.slices["language"], sum(judged) / len(judged), any(judged)))
    for unit, lang in (("overall", None), ("language=ko", "ko"), ("language=en", "en")):
        picked = [(p, k) for language, p, k in per_case if lang in (None, language)]
        assert metrics[unit]["cases"] == len(picked)
        assert metrics[unit]["pass_at_1"] == pytest.approx(sum(p for p, _ in picked) / len(picked))
        assert metrics[unit]["pass_at_k"] == pytest.approx(sum(k for _, k in picked) / len(picked))
    attempts = [a for c in results.cases for a in c.attempts]
    assert metrics["overall"]["error_rate"] == pytest.approx(1 / 16)
    timed = sorted(a.latency_ms for a in attempts if a.error is None)
    assert metrics["overall"]["p50"] == timed[math.ceil(0.5 * len(timed)) - 1]
    assert metrics["overall"]["p95"] == timed[math.ceil(0.95 * len(timed)) - 1]
    assert metrics["overall"]["fmt"] == pytest.approx(2 / 15)
    tokens = sum((a.tokens_in or 0) + (a.tokens_out or 0) for a in attempts)
    assert metrics["overall"]["tps"] == pytest.approx(tokens / sum(1 for a in attempts if a.passed))
    assert metrics["overall"]["calls"] == 15 and metrics["overall"]["ter"] == pytest.approx(1 / 15)
    assert rows(history_url, "SELECT tool, tool_calls, tool_errors FROM v_tool_names") == [("calc", 15, 1)]


def test_both_engines_give_the_same_results(tmp_path: Path, request: pytest.FixtureRequest, monkeypatch) -> None:
    urls = [new_url(engine, tmp_path, request) for engine in ("sqlite", "postgresql")]
    monkeypatch.delenv("EVALGATE_HISTORY", raising=False)
    for url in urls:
        monkeypatch.setenv("EVALGATE_HISTORY_URL", url)
        for n, ko in enumerate((0.9, 0.5, 0.2)):
            assert record_run(sample_results("abc" + str(n), f"2026-11-0{n + 1}T00:00:00Z", ko)).failures == 0
    for view in VIEWS:
        got = []
        for url in urls:
            with open_history(url, migrate=False) as db:
                got.append(sorted(db.query(f"SELECT * FROM {view}"), key=repr))
        sqlite_rows, pg_rows = got
        assert len(sqlite_rows) == len(pg_rows) > 0 or view == "v_markers", view
        for a, b in zip(sqlite_rows, pg_rows, strict=True):
            assert [pytest.approx(x) if isinstance(x, float) else x for x in a] == list(b), view


def test_database_refuses_a_tool_call_without_its_result(history_url: str) -> None:
    record_run(sample_results())
    with open_history(history_url) as db:
        insert = (
            "INSERT INTO events (run_id, case_no, attempt_no, seq, kind, name, result_seq, result_kind) "
            "VALUES (1, 0, 0, ?, ?, 'calc', ?, ?)"
        )
        with pytest.raises(Exception, match=r"(?i)foreign key"), db.transaction():
            db.execute(insert, (4, "tool_call", 5, "tool_result"))  # seq 5 does not exist
        with pytest.raises(Exception, match=r"(?i)check"), db.transaction():
            db.execute(insert, (4, "tool_call", None, None))  # a call that names no result
        plain = "INSERT INTO events (run_id, case_no, attempt_no, seq, kind, name) VALUES (1, 0, 0, ?, ?, 'calc')"
        with pytest.raises(Exception, match=r"(?i)foreign key"), db.transaction():
            db.execute(plain, (5, "message"))  # the event it names is not a tool_result
            db.execute(insert, (4, "tool_call", 5, "tool_result"))
        with db.transaction():  # a call and its answer, committed together
            db.execute(insert, (4, "tool_call", 5, "tool_result"))
            db.execute(plain, (5, "tool_result"))
        assert db.query("SELECT COUNT(*) FROM events WHERE run_id = 1 AND case_no = 0 AND attempt_no = 0") == [(6,)]


def test_nothing_secret_goes_in(history_url: str) -> None:
    results = sample_results()
    results.cases[0].input = "login with password=hunter2"
    results.cases[0].attempts[0].output = "Authorization: Bearer abcdefghijklmnop0123"
    results.run.target = None
    from evals.results.model import TargetInfo

    results.run.target = TargetInfo(kind="openai", model="x:y", params={"api_key": "sk-live", "temperature": 0})
    record_run(results)
    dump = json.dumps(rows(history_url, "SELECT * FROM runs") + rows(history_url, "SELECT * FROM cases"))
    dump += json.dumps(rows(history_url, "SELECT * FROM attempts"))
    assert "hunter2" not in dump and "abcdefghijklmnop0123" not in dump and "sk-live" not in dump


def test_a_history_that_cannot_be_written_is_a_warning(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("EVALGATE_HISTORY", raising=False)
    monkeypatch.setenv("EVALGATE_HISTORY_URL", "postgresql://evalgate:pw-secret@127.0.0.1:1/nowhere")
    done = record_run(sample_results())
    assert done.failures == 1 and "cannot connect" in done.warning
    err = capsys.readouterr().err
    # The URL as redacted (user kept), then masked by the output funnel (user-info whole), as the
    # command's masked stderr always showed it.
    assert "warning: history postgresql://***@127.0.0.1:1/nowhere" in err and "pw-secret" not in err


@pytest.mark.e2e
def test_gate_verdict_and_exit_code_do_not_depend_on_the_history(tmp_path: Path) -> None:
    """The same regressed gate with the history working, off, and broken: same verdict and exit
    code; the broken one says so in the report."""
    from fakes.suites import echo_cases, write_suite

    cases = echo_cases(60, language=["en", "ko"])
    config = write_suite(tmp_path / "s", cases, target={"python": "bot:answer"}, scorers=["exact"], slices=["language"])
    (tmp_path / "s" / "bot.py").write_text(
        "import os\ndef answer(q):\n    return 'no' if os.environ.get('BREAK') and int(q[1:]) % 2 else q\n",
        encoding="utf-8",
    )
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALGATE_"))}
    base_env["PYTHONPATH"] = str(ROOT)

    def gate(extra: dict[str, str], *flags: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "evals", "gate", "--config", str(config), *flags],
            cwd=tmp_path / "s",
            env={**base_env, **extra},
            capture_output=True,
            text=True,
        )
        report = (tmp_path / "s" / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
        return done.returncode, report

    subprocess.run(
        [sys.executable, "-m", "evals", "reset", "--config", str(config), "--reason", "start", "--sha", "1" * 40],
        cwd=tmp_path / "s",
        env={**base_env, "EVALGATE_HISTORY": "off"},
        check=True,
        capture_output=True,
    )
    off = gate({"EVALGATE_HISTORY": "off", "BREAK": "1"})
    working = gate({"EVALGATE_HISTORY_URL": str(tmp_path / "h.sqlite"), "BREAK": "1"})
    broken = gate({"EVALGATE_HISTORY_URL": "postgresql://x@127.0.0.1:1/none", "BREAK": "1"})
    assert off[0] == working[0] == broken[0] == 1
    assert "history: " not in off[1] and "history: " not in working[1]
    assert "history: 1 write(s) failed" in broken[1] and "do not depend on the history" in broken[1]


# ------------------------------------------------------------------------------------- settings


def test_where_the_history_is(tmp_path: Path) -> None:
    from fakes.suites import load_suite

    config = load_suite(tmp_path, [{"id": "a", "input": "x"}])
    assert resolve_url(config, {}) == str(tmp_path / ".evalgate" / "history.sqlite")
    assert resolve_url(config, {"GITHUB_ACTIONS": "true"}) is None  # in Actions only with a URL
    assert resolve_url(config, {"GITHUB_ACTIONS": "true", "EVALGATE_HISTORY_URL": "postgresql://h/db"}) == (
        "postgresql://h/db"
    )
    assert resolve_url(config, {"EVALGATE_HISTORY": "off", "EVALGATE_HISTORY_URL": "postgresql://h/db"}) is None
    config.history.enabled = False
    assert resolve_url(config, {}) is None
    config.history.enabled, config.history.url = True, "sqlite:///elsewhere.db"
    # A SQLite file the config names is relative to the config, like its other paths.
    assert resolve_url(config, {"GITHUB_ACTIONS": "true"}) == str(tmp_path / "elsewhere.db")
    assert redact_url("postgresql://u:p@h:5/d") == "postgresql://u:***@h:5/d"
    open_engine(f"sqlite:///{tmp_path / 'x.db'}").close()  # sqlite:////absolute/path
    assert (tmp_path / "x.db").exists()


# ------------------------------------------------------------------------------------- reading


def test_show_and_markers_from_recorded_gates(history_url: str) -> None:
    with open_history(history_url) as db:
        writer = Writer(db)
        ids = [
            writer.run(sample_results(f"{n}" * 40, f"2026-11-0{n}T00:00:00Z", ko), recorded_by="run")
            for n, ko in ((1, 0.9), (2, 0.2))
        ]
        writer.gate("gate", suite="demo", candidate_run=ids[1], baseline_run=ids[0], verdict="fail", reason="ko")
        trends = load_trends(db, units=["language"])
    text = render(trends)
    assert "language=ko" in text and "language=en" in text and "✗" in text
    assert trends.units["language=ko"][1].value < trends.units["language=ko"][0].value
    one = render(load_trends_one(history_url))
    assert "✗ failed gate" in one and "[" in one  # a CI column


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("unit", "said"),
    [
        ("languag=ko", "--slice 'languag=ko': no slice key 'languag' in the 2 runs shown; their slice keys: language"),
        ("languag", "--slice 'languag': no slice key 'languag' in the 2 runs shown; their slice keys: language"),
        (
            "language=fr",
            "--slice 'language=fr': no such unit in the 2 runs shown; language has: language=en, language=ko",
        ),
    ],
)
def test_show_a_slice_that_names_no_unit_says_which_exist(history_url: str, tmp_path: Path, unit, said) -> None:
    """As a --metric typo does: exit 2 listing what there is, never an empty table that reads as
    "no data"."""
    with open_history(history_url) as db:
        for n in (1, 2):
            Writer(db).run(sample_results(f"{n}" * 40, f"2026-11-0{n}T00:00:00Z"), recorded_by="run")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    show = [sys.executable, "-m", "evals", "history", "show", "--url", history_url]
    done = subprocess.run([*show, "--slice", unit], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    for good, rows in (("language=ko", ["language=ko"]), ("language", ["language=en", "language=ko"])):
        shown = subprocess.run([*show, "--slice", good], capture_output=True, text=True, cwd=tmp_path, env=env)
        assert shown.returncode == 0 and all(row in shown.stdout for row in rows), shown.stdout + shown.stderr


def load_trends_one(url: str):
    with open_history(url) as db:
        return load_trends(db, units=["overall"])


def test_sync_from_a_local_store_is_idempotent(history_url: str, tmp_path: Path) -> None:
    from evals.store.baseline import LocalStore

    store = LocalStore(tmp_path / "store")
    for n, verdict, reason in ((1, "reset", "start over"), (2, "reset", "new scorer")):
        store.promote(sample_results(f"{n}" * 40, f"2026-11-0{n}T00:00:00Z"), sha=f"{n}" * 40, verdict=verdict,
                      reason=reason, actor="bob", blessed=verdict == "reset")  # fmt: skip
    with open_history(history_url) as db:
        first = sync_store(Writer(db), store)
        second = sync_store(Writer(db), store)
        actions = db.query("SELECT action, actor, reset_reason FROM gates ORDER BY id")
    assert (first.added_runs, first.added_actions, second.added_runs, second.added_actions) == (2, 2, 0, 0)
    assert actions == [("reset", "bob", "start over"), ("reset", "bob", "new scorer")]


def test_run_digest_ignores_how_a_run_was_loaded(tmp_path: Path) -> None:
    from evals.compare.lazyload import load_lazy
    from evals.results.files import load_results, save_results

    results = sample_results()
    save_results(results, tmp_path / "r.json.gz")
    assert run_digest(load_results(tmp_path / "r.json.gz")) == run_digest(results)
    assert run_digest(load_lazy(tmp_path / "r.json.gz")) == run_digest(results)


def test_compare_records_the_decision_and_a_trend(history_url: str) -> None:
    from evals.compare.analysis import compare

    base, cand = sample_results("1" * 40, ko_pass=0.9), sample_results("2" * 40, ko_pass=0.0)
    comparison = compare(base, cand, None)
    done = record_comparison(comparison, cand, base, action="compare")
    assert done.failures == 0
    assert rows(history_url, "SELECT action, verdict FROM gates") == [("compare", comparison.verdict)]
    assert rows(history_url, "SELECT COUNT(*) FROM unit_results") == [(len(comparison.units),)]


@pytest.mark.e2e
def test_compare_records_runs_it_has_not_seen_by_their_header_and_add_brings_their_cases(
    history_url: str, tmp_path: Path
) -> None:
    """`compare` of two files the history has never seen records the decision and each run's
    header, not their cases (at 100,000 cases those rows cost more than compare
    itself), and says how to add them; `history add` then adds the cases to the same run rows,
    once, and the trend shows the runs. A run the history holds in full stays as it was. Both
    runs started in the same second (a fast suite): the baseline is recorded first, so the trend
    (oldest first, ties by row) does not put the candidate before it."""
    from evals.results.files import save_results

    base = sample_results("1" * 40, "2026-11-01T10:00:00Z", ko_pass=1.0)
    cand = sample_results("2" * 40, "2026-11-01T10:00:00Z", ko_pass=0.0)
    save_results(base, tmp_path / "base.json")
    save_results(cand, tmp_path / "cand.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    evalgate = [sys.executable, "-m", "evals"]

    def call(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*evalgate, *argv], capture_output=True, text=True, cwd=tmp_path, env=env)

    compared = call("compare", "--baseline", "base.json", "--candidate", "cand.json")
    assert compared.returncode == 0, compared.stderr  # ko 1.0 → 0.0 on 4 of 8 cases: too few to fail a gate
    assert "the cases of base.json and cand.json are not in the history" in compared.stderr
    assert "`evalgate history add base.json cand.json` adds them" in compared.stderr
    assert rows(history_url, "SELECT recorded_by, total_cases FROM runs ORDER BY id") == [("compare", 8)] * 2
    assert rows(history_url, "SELECT COUNT(*) FROM cases") == [(0,)]
    assert rows(history_url, "SELECT action FROM gates") == [("compare",)]
    shown = call("history", "show", "--url", history_url)
    assert shown.returncode == 0 and "its 2 run(s) are known by their header alone" in shown.stdout
    if importlib.util.find_spec("matplotlib") is not None:  # plot says the same, as an error
        plotted = call("history", "plot", "--url", history_url, "--out", "t.png")
        assert plotted.returncode == 2 and "its 2 run(s) are known by their header alone" in plotted.stderr

    added = call("history", "add", "--url", history_url, "cand.json", "base.json")
    assert added.returncode == 0, added.stderr
    assert "cand.json: added its 8 cases to run 2 (recorded before by its header)" in added.stdout
    again = call("history", "add", "--url", history_url, "base.json")
    assert "base.json: already there (run 1); nothing to add" in again.stdout
    assert rows(history_url, "SELECT COUNT(*) FROM runs") == [(2,)]
    assert rows(history_url, "SELECT COUNT(*) FROM cases") == [(16,)]
    assert rows(history_url, "SELECT COUNT(*) FROM attempts") == [(32,)]
    with open_history(history_url) as db:
        trends = load_trends(db, units=["language=ko"])
    assert [v.value if v else None for v in trends.units["language=ko"]] == [1.0, 0.0]  # oldest first

    # Both runs are known now: compare says nothing more, and a new gate row points at them.
    second = call("compare", "--baseline", "base.json", "--candidate", "cand.json")
    assert "not in the history" not in second.stderr
    assert rows(history_url, "SELECT candidate_run_id, baseline_run_id FROM gates ORDER BY id") == [(2, 1), (2, 1)]

    save_results(sample_results("3" * 40), tmp_path / "same.json")
    itself = call("compare", "--baseline", "same.json", "--candidate", "same.json")
    assert "the cases of same.json are not in the history" in itself.stderr, itself.stderr
    assert "`evalgate history add same.json` adds them" in itself.stderr

    missing = call("history", "add", "--url", history_url, "nope.json")
    assert missing.returncode == 2 and "nope.json: file not found" in missing.stderr


def test_a_compared_candidate_known_by_its_header_still_ends_the_trend_chart(history_url: str) -> None:
    """The PR comment's chart of a regressed slice: the last baselines from the history, then the
    candidate. A candidate `compare` records by its header alone has no value in the views; its
    point is the value the comparison measured."""
    from evals.compare.analysis import compare

    def results(n: int, ko_passed: bool) -> Results:
        cases = [
            CaseResult(
                id=f"c{i}",
                slices={"language": "ko" if i % 2 else "en"},
                attempts=[Attempt(passed=ko_passed or not i % 2, score=1.0, output_sha256=f"sha256:{i}")],
            )
            for i in range(200)
        ]
        run = RunInfo(suite="demo", status="success", total_cases=200, completed_cases=200, git_sha=f"{n}" * 40,
                      started_at=f"2026-11-0{n}T00:00:00Z", config_hash="sha256:cfg")  # fmt: skip
        return Results(run=run, cases=cases)

    with open_history(history_url) as db:
        writer = Writer(db)
        for n in (1, 2):
            run_id = writer.run(results(n, True), recorded_by="run")
            writer.gate("promote", suite="demo", candidate_run=run_id, verdict="pass")
    base, cand = results(2, True), results(3, False)
    comparison = compare(base, cand, None)
    assert "language=ko" in [u.unit for u in comparison.regressed]
    done = record_comparison(comparison, cand, base, action="compare", cases=False)
    assert done.without_cases == ["candidate"]  # the baseline was in the history already
    [trend] = comparison.trends
    ko = next(u for u in comparison.units if u.unit == "language=ko")
    assert trend.labels == ["1111111", "2222222", "candidate"]
    assert trend.values == [1.0, 1.0, round(ko.candidate, 4)]


def test_a_gate_still_records_its_runs_in_full(history_url: str) -> None:
    """Only `compare` keeps unseen runs to their header: the gate made its candidate and records
    it, cases and all (as `run`, `import`, `reset` and `history sync` do)."""
    from evals.compare.analysis import compare

    base, cand = sample_results("1" * 40), sample_results("2" * 40)
    done = record_comparison(compare(base, cand, None), cand, base, action="gate")
    assert done.failures == 0 and done.without_cases == []
    assert rows(history_url, "SELECT COUNT(*) FROM cases") == [(16,)]


def test_grafana_dashboard_queries_run_on_postgresql(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Every SQL text in examples/grafana (panels, variables, annotations), with Grafana's macros
    and variables filled in as Grafana would, runs on a real PostgreSQL history and finds rows."""
    import re

    url = new_url("postgresql", tmp_path, request)
    dashboard = json.loads((ROOT / "examples" / "grafana" / "evalgate-history.json").read_text(encoding="utf-8"))
    with open_history(url) as db:
        writer = Writer(db)
        first = writer.run(sample_results("1" * 40, "2026-11-01T00:00:00Z", 0.9), recorded_by="run")
        second = writer.run(sample_results("2" * 40, "2026-11-02T00:00:00Z", 0.2), recorded_by="run")
        writer.gate("reset", suite="demo", candidate_run=first, verdict="reset", reset_reason="start", actor="ann")
        writer.gate("gate", suite="demo", candidate_run=second, baseline_run=first, verdict="fail", reason="ko")
        queries = [t["rawSql"] for p in dashboard["panels"] for t in p["targets"]]
        queries += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
        queries += [a["rawQuery"] for a in dashboard["annotations"]["list"]]
        assert len(queries) == 10
        for sql in queries:
            sql = re.sub(
                r"\$__timeFilter\(([^()]*(?:\([^()]*\))?[^()]*)\)", r"(\1 BETWEEN '2026-01-01' AND '2027-01-01')", sql
            )
            sql = sql.replace("$suite", "demo").replace("$unit", "'overall', 'language=ko'")
            assert "$" not in sql, sql
            assert db.query(sql), sql


def test_plot_without_matplotlib_says_how_to_get_it(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    with open_history(str(db)) as engine:
        Writer(engine).run(sample_results(), recorded_by="run")
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"  # as if the extra were not installed
        "from evals.cli.app import main\n"
        f"raise SystemExit(main(['history', 'plot', '--url', {str(db)!r}, '--out', {str(tmp_path / 't.png')!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "pip install 'evalgate-action[plot]'" in done.stderr
    assert not (tmp_path / "t.png").exists()
    missing = subprocess.run(
        [sys.executable, "-m", "evals", "history", "show", "--url", str(tmp_path / "none.sqlite")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert missing.returncode == 2 and "no history at" in missing.stderr
    assert not (tmp_path / "none.sqlite").exists()


def test_a_run_outside_git_is_labelled_by_its_name_else_by_when_it_started():
    from evals.history.trends import RunPoint

    assert RunPoint(4, "a" * 40, "2026-12-01T10:00:05Z", True).label == "aaaaaaa"
    assert RunPoint(4, None, "2026-12-01T10:00:05Z", True).label == "2026-12-01 10:00"
    assert RunPoint(4, None, None, True).label == "run4"
    assert RunPoint(4, None, None, True, name="v1.2").label == "v1.2"
    assert RunPoint(4, None, None, True, name="content-" + "c" * 40).label == "content-cccc"  # as `baseline list`


def _cli(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALGATE_"))}
    return subprocess.run(
        [sys.executable, "-m", "evals", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def test_history_add_of_a_bad_file_says_what_it_recorded_before_it(tmp_path: Path) -> None:
    """`history add good bad` records good, then stops with exit 2 naming bad and saying good is
    in (adding it again changes nothing). Gzipped files, traces and the same file twice behave."""
    import gzip

    from evals.results.files import save_results

    save_results(sample_results(), tmp_path / "good.json")
    (tmp_path / "good.json.gz").write_bytes(gzip.compress((tmp_path / "good.json").read_bytes()))
    (tmp_path / "bad.json").write_text('{"schema_version": 1, "run": ', encoding="utf-8")
    db = tmp_path / "h.sqlite"

    refused = _cli(tmp_path, "history", "add", "--url", str(db), "good.json.gz", "bad.json")
    assert refused.returncode == 2 and "bad.json" in refused.stderr and "Traceback" not in refused.stderr
    assert "(recorded before it: good.json.gz; adding them again changes nothing)" in refused.stderr
    first = _cli(tmp_path, "history", "add", "--url", str(db), "bad.json")
    assert first.returncode == 2 and "recorded before it" not in first.stderr
    db.unlink()

    added = _cli(tmp_path, "history", "add", "--url", str(db), "good.json.gz", "good.json")
    assert added.returncode == 0, added.stderr
    assert "good.json.gz: added as run 1 of suite demo with 8 cases\n" in added.stdout
    assert "good.json: already there (run 1); nothing to add" in added.stdout
    assert rows(str(db), "SELECT COUNT(*) FROM events") == [(4 * 15,)]  # 15 attempts, 4 events each

    partial = sample_results("2" * 40)
    partial.run.status, partial.run.total_cases = "cancelled", 20
    save_results(partial, tmp_path / "partial.json")
    said = _cli(tmp_path, "history", "add", "--url", str(db), "partial.json")
    assert said.returncode == 0 and "(a partial run: cancelled, 8/20 cases; `history show` leaves it out" in said.stdout


def test_history_switched_off_says_which_switch_and_what_gets_past_it(tmp_path: Path) -> None:
    """EVALGATE_HISTORY=off wins over EVALGATE_HISTORY_URL, so the message must not suggest it."""
    off = _cli(
        tmp_path, "history", "show", env={"EVALGATE_HISTORY": "off", "EVALGATE_HISTORY_URL": str(tmp_path / "h")}
    )
    assert off.returncode == 2 and "EVALGATE_HISTORY=off switches it off" in off.stderr
    assert "set EVALGATE_HISTORY_URL" not in off.stderr and "--url" in off.stderr
    (tmp_path / "evalgate.yml").write_text(
        "suite: t\ncases: cases.jsonl\nhistory: {enabled: false}\n", encoding="utf-8"
    )
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "x"}\n', encoding="utf-8")
    disabled = _cli(tmp_path, "history", "show")
    assert disabled.returncode == 2 and "evalgate.yml:3: history.enabled is false" in disabled.stderr


def test_plot_to_a_path_it_cannot_write_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    db = tmp_path / "h.sqlite"
    with open_history(str(db)) as engine:
        Writer(engine).run(sample_results(), recorded_by="run")
    (tmp_path / "file").write_text("", encoding="utf-8")
    done = _cli(tmp_path, "history", "plot", "--url", str(db), "--out", "file/t.png")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "file/t.png: cannot write" in done.stderr


def test_trend_compares_whole_runs_and_says_why_it_is_empty(history_url: str) -> None:
    """A cancelled run's rates are over the cases it reached: it is left out of the trend unless
    asked for (as subsets are). An empty --baselines view and a metric no run records say why."""
    with open_history(history_url) as db:
        writer = Writer(db)
        untraced = sample_results("1" * 40, "2026-11-01T00:00:00Z")
        for case in untraced.cases:
            for attempt in case.attempts:
                attempt.trace = None
        writer.run(untraced, recorded_by="run")
        partial = sample_results("2" * 40, "2026-11-02T00:00:00Z", ko_pass=1.0)
        partial.run.status, partial.run.completed_cases, partial.run.total_cases = "cancelled", 8, 20
        writer.run(partial, recorded_by="run")
        whole = load_trends(db, units=["overall"])
        everything = load_trends(db, units=["overall"], include_subsets=True)
        baselines = render(load_trends(db, baselines_only=True))
        no_tools = render(load_trends(db, metric="tool_calls", units=["overall"]))
    assert [run.sha for run in whole.runs] == ["1" * 40]
    assert [run.sha for run in everything.runs] == ["1" * 40, "2" * 40]
    assert "left out: 1 partial run(s) (cancelled, failed or timed out); --include-subsets" in render(whole)
    with open_history(history_url) as db:  # the same commit twice: the matrix tells the columns apart
        Writer(db).run(sample_results("1" * 40, "2026-11-04T00:00:00Z", ko_pass=0.0), recorded_by="run")
        matrix = render(load_trends(db))
    assert ["run", "#1", "#3"] in [line.split() for line in matrix.splitlines()], matrix
    assert "left out" not in render(everything)
    with open_history(history_url) as db:  # a `compare` of a file the history had not seen
        Writer(db).run(sample_results("3" * 40, "2026-11-03T00:00:00Z"), recorded_by="compare", cases=False)
        shown = render(load_trends(db, units=["overall"]))
    assert "2 run(s), oldest first" in shown  # the two whole runs; not the header-only one
    assert "left out: 1 run(s) known by their header alone" in shown and "evalgate history add" in shown
    assert "none became a baseline in this history" in baselines and "history sync" in baselines
    assert "no tool_calls values to show in the 1 run(s)" in no_tools


def breakable_suite(folder: Path) -> Path:
    """A 40-case suite over two languages whose bot answers every Korean case wrong under BREAK=1."""
    from fakes.suites import echo_cases, write_suite

    config = write_suite(
        folder,
        echo_cases(40, language=["en", "ko"]),
        target={"python": "bot:answer"},
        scorers=["exact"],
        slices=["language"],
    )
    (folder / "bot.py").write_text(
        "import os\ndef answer(q):\n    return 'no' if os.environ.get('BREAK') and int(q[1:]) % 2 else q\n",
        encoding="utf-8",
    )
    return config


@pytest.mark.e2e
def test_a_gate_outside_git_is_named_in_the_history_by_its_sha(tmp_path: Path) -> None:
    """Outside git a run has no commit: `history show` calls it by the --sha its reset and gate
    were given (docs/spec.md#outside-git), not by a start time that every quick run shares."""
    config = breakable_suite(tmp_path / "s")
    where = {"EVALGATE_HISTORY_URL": str(tmp_path / "h.sqlite")}
    reset = _cli(tmp_path / "s", "reset", "--config", str(config), "--reason", "start", "--sha", "v1", env=where)
    assert reset.returncode == 0, reset.stderr
    gate = _cli(tmp_path / "s", "gate", "--config", str(config), "--sha", "v2", env={**where, "BREAK": "1"})
    assert gate.returncode == 1, gate.stderr
    shown = _cli(tmp_path / "s", "history", "show", "--slice", "language=ko", env=where)
    assert shown.returncode == 0, shown.stderr
    labels = [line.split()[0] for line in shown.stdout.splitlines()[3:5]]
    assert labels == ["v1", "v2"], shown.stdout
    assert rows(str(tmp_path / "h.sqlite"), "SELECT candidate_sha FROM gates WHERE action = 'gate'") == [("v2",)]


def test_a_named_config_must_exist_and_no_history_here_points_at_config(tmp_path: Path) -> None:
    """`history add --config typo.yml` wrote into the working folder's history and said nothing;
    from a folder without evalgate.yml, "no history" says where a suite's history is."""
    from evals.results.files import save_results

    save_results(sample_results(), tmp_path / "r.json")
    typo = _cli(tmp_path, "history", "add", "--config", "evalgat.yml", "r.json")
    assert typo.returncode == 2 and "evalgat.yml: config file not found" in typo.stderr
    assert not (tmp_path / ".evalgate").exists()
    shown = _cli(tmp_path, "history", "show", "--config", "evalgat.yml")
    assert shown.returncode == 2 and "evalgat.yml: config file not found" in shown.stderr
    nothing = _cli(tmp_path, "history", "show")
    assert nothing.returncode == 2 and "a suite's history is next to its config (--config PATH)" in nothing.stderr


@pytest.mark.e2e
def test_a_gate_tells_the_history_which_run_is_the_baseline(tmp_path: Path) -> None:
    """A baseline the history never saw become one (committed with the suite, made with the history
    off, or on another machine): the gate records its manifest entry as `history sync` would, once,
    so `history show --baselines` has it and the regressed slice gets its trend chart."""
    config = breakable_suite(tmp_path / "s")
    reset = _cli(
        tmp_path / "s",
        "reset",
        "--config",
        str(config),
        "--reason",
        "r",
        "--sha",
        "v1",
        env={"EVALGATE_HISTORY": "off"},
    )
    assert reset.returncode == 0, reset.stderr
    db = tmp_path / "h.sqlite"
    for _ in range(2):
        gate = _cli(
            tmp_path / "s", "gate", "--config", str(config), env={"EVALGATE_HISTORY_URL": str(db), "BREAK": "1"}
        )
        assert gate.returncode == 1, gate.stderr
    assert rows(str(db), "SELECT action, candidate_sha, reset_reason FROM gates WHERE action <> 'gate'") == [
        ("reset", "v1", "r")
    ]
    trends = json.loads((tmp_path / "s" / ".evalgate" / "out" / "comparison.json").read_text(encoding="utf-8"))[
        "trends"
    ]
    assert trends and trends[0]["unit"] == "language=ko" and trends[0]["labels"] == ["v1", "candidate"]
    shown = _cli(tmp_path / "s", "history", "show", "--baselines", "--slice", "overall", "--url", str(db))
    assert shown.returncode == 0 and "v1" in shown.stdout and "◆ reset" in shown.stdout, shown.stdout
