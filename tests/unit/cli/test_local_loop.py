"""The local loop (docs/spec.md#local-loop) through the real CLI on a copy of the quickstart suite outside any
git checkout: `run` ends with the summary table, `show` prints it for any results file,
`--limit`/`--filter` make subsets compared on their own ids, progress shows ETA and the running
pass rate, and `reset` / a first `gate --results` / promotions work without a commit (`--sha`, else a
digest; ordered by time); inside git, a promotion of a dirty working tree warns."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from fakes.paths import FIXTURES, ROOT
from fakes.suites import git

from evals.common.errors import UsageError
from evals.results.files import load_results
from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.results.summary import percentile, summarize, wilson
from evals.run.progress import Progress
from evals.store.baseline import LocalStore
from evals.suite.cases import Case, filter_cases, limit_cases

FIX = FIXTURES / "importers"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """The quickstart suite (bot, cases, config) without its store, in a folder outside git."""
    folder = tmp_path / "suite"
    shutil.copytree(
        ROOT / "examples" / "quickstart", folder, ignore=shutil.ignore_patterns("baselines", "*.md", ".evalgate")
    )
    return folder / "evalgate.yml"


def evalgate(*args: str, cwd: Path, python_exe: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [python_exe, "-m", "evals", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**environ, **(env or {})},
        check=False,
    )


def test_run_ends_with_the_summary_table(suite, tmp_path, python_exe):
    out = tmp_path / "results.json"  # the default: --help and the last line say so
    assert "(default: ./results.json)" in evalgate("run", "--help", cwd=tmp_path, python_exe=python_exe).stdout
    done = evalgate("run", "--config", str(suite), cwd=tmp_path, python_exe=python_exe)
    assert done.returncode == 0, done.stderr
    table, last = done.stderr[done.stderr.index("quickstart: 240/240 cases complete") :].rstrip("\n").rsplit("\n", 1)
    assert last == "evalgate run: results written to results.json" and out.exists()
    grid = table.split("\n\n")[1]  # the headline, the table, then the lines below it
    rows = {line.split()[0]: line.split() for line in grid.splitlines() if line.split()[0] != "unit"}
    assert rows["overall"][1:4] == ["240", "89.2%", "84.6%"]  # cases, pass rate, CI low
    assert rows["language=ko"][1] == "80" and rows["category=sort"][1] == "60"
    assert "errors:  none in 240 attempts" in table and re.search(r"latency: p50 \d+ ms, p95 \d+ ms", table)
    # The failed cases, per slice value: only the HTML page named them.
    failed = load_results(out)
    ko = [c.id for c in failed.cases if c.slices.get("language") == "ko" and not c.attempts[0].passed]
    assert len(ko) > 3
    line = next(line for line in table.splitlines() if " language=ko " in line and ": " in line)
    assert line.split() == [
        "language=ko",
        f"{len(ko)}:",
        *(f"{i}," for i in ko[:3]),
        "…",
        "and",
        str(len(ko) - 3),
        "more",
    ]
    assert (
        table.count("failed:  ") == 1 and "failed:  category=" in table and " overall " not in table.split("failed:")[1]
    )
    # `show` prints the same table for the file
    shown = evalgate("show", str(out), cwd=tmp_path, python_exe=python_exe)
    assert shown.returncode == 0 and shown.stdout.strip() == table.strip()


@pytest.mark.e2e
def test_the_documented_gitignore_keeps_what_run_and_gate_write_out_of_git_add(suite, python_exe):
    """docs/running.md's .gitignore block left out ./results.json, `run`'s default output: a user's
    `git add -A` committed it. With the block, only the suite's own files (and the baseline store,
    which is meant to be shared) are added."""
    doc = (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    block = re.search(r"```gitignore\n(.*?)```", doc, re.DOTALL)
    assert block, "docs/running.md has no ```gitignore block"
    folder = suite.parent
    (folder / ".gitignore").write_text(textwrap.dedent(block.group(1)), encoding="utf-8")
    git(folder, "init", "-q")
    assert evalgate("run", "--config", "evalgate.yml", cwd=folder, python_exe=python_exe).returncode == 0
    gated = evalgate(
        "gate", "--config", "evalgate.yml", "--store", "local", "--baseline-dir", "store", "--seed",
        cwd=folder, python_exe=python_exe, env={"EVALGATE_HISTORY": "on"},
    )  # fmt: skip
    assert gated.returncode == 0, gated.stderr
    written = {"results.json", ".evalgate/out/results.json", ".evalgate/history.sqlite"}
    assert all((folder / path).exists() for path in written)
    git(folder, "add", "-A")
    added = set(git(folder, "diff", "--cached", "--name-only").split())
    assert not added & written and not any(p.startswith(".evalgate/") for p in added), sorted(added)
    assert "evalgate.yml" in added


def test_show_summarises_an_imported_partial_run_and_says_so(tmp_path, python_exe):
    """Any results file: here inspect_ai's own log of a run whose requests failed, read with
    --from auto; exit 3 because the run is partial."""
    shown = evalgate(
        "show", str(FIX / "inspect_ai" / "netfail.eval"), "--from", "auto", cwd=tmp_path, python_exe=python_exe
    )
    assert shown.returncode == 3, shown.stderr
    assert "netfail: 2/8 cases complete, imported from inspect_ai — PARTIAL" in shown.stdout
    assert "errors:  infra 6 (timeout 2, connection 1, dns 1, rate-limit 1, server-error 1) of 8 attempts" in (
        shown.stdout
    )
    assert "tokens:  20 in, 2 out" in shown.stdout
    as_json = json.loads(evalgate("show", str(FIX / "inspect_ai" / "netfail.eval"), "--from", "inspect_ai", "--json",
                                  cwd=tmp_path, python_exe=python_exe).stdout)  # fmt: skip
    assert as_json["units"][0] == {
        "unit": "overall", "cases": 8, "scored": 2, "pass_rate": 0.5, "ci_low": pytest.approx(0.0945, abs=1e-3),
        "ci_high": pytest.approx(0.9055, abs=1e-3), "score": 0.5, "errored": 6, "failed": 1, "failed_ids": ["wrong"],
    }  # fmt: skip


def test_summary_statistics():
    # Wilson 95% for 8/10: 0.490–0.943 (Agresti & Coull 1998, table values)
    low, high = wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert percentile([1, 2, 3, 4, 5], 95) == pytest.approx(4.8)  # numpy.percentile's linear rule
    cases = [
        CaseResult(id="a", slices={"l": "x"}, attempts=[Attempt(passed=True, tokens_in=3, tokens_out=2, cost_usd=0.5)]),
        CaseResult(id="b", slices={"l": "y"}, attempts=[Attempt(passed=False), Attempt(passed=True)]),
    ]
    s = summarize(Results(run=RunInfo(suite="s", status="success", total_cases=2, completed_cases=2), cases=cases))
    assert [u.unit for u in s.units] == ["overall", "l=x", "l=y"]
    assert s.units[0].pass_rate == 0.75 and s.units[2].pass_rate == 0.5
    assert (s.tokens_in, s.tokens_out, s.cost_usd, s.attempts) == (3, 2, 0.5, 3)


def test_limit_and_filter_make_a_subset_compared_on_its_ids(suite, tmp_path, python_exe):
    out = tmp_path / "dev.json"
    done = evalgate(
        "run", "--config", str(suite), "-o", str(out), "--filter", "language=ko", "--filter", "category=sort",
        "--limit", "5", cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = load_results(out)
    assert results.run.subset == "filter:language=ko,category=sort+limit:5"
    assert len(results.cases) == 5 and all(c.slices == {"language": "ko", "category": "sort"} for c in results.cases)
    # Against the full quickstart baseline: paired on these five ids only, never a removal.
    compared = evalgate(
        "compare", "--baseline", str(next((ROOT / "examples/quickstart/baselines").glob("baseline-*.json.gz"))),
        "--candidate", str(out), "--config", str(suite), "--json", str(tmp_path / "c.json"),
        cwd=tmp_path, python_exe=python_exe,
    )  # fmt: skip
    comparison = json.loads((tmp_path / "c.json").read_text())
    assert comparison["case_diff"]["n_paired"] == 5 and comparison["case_diff"]["n_removed"] == 0, compared.stdout
    ids = evalgate("run", "--config", str(suite), "-o", str(tmp_path / "ids.json"), "--filter", "ko-sort-00*",
                   cwd=tmp_path, python_exe=python_exe)  # fmt: skip
    assert ids.returncode == 0, ids.stderr
    assert {c.id for c in load_results(tmp_path / "ids.json").cases} == {f"ko-sort-00{i}" for i in range(1, 10)}


def test_filter_errors_say_what_exists():
    cases = [Case(id=f"q{i}", tags={"lang": "ko" if i % 2 else "en"}) for i in range(4)]
    assert [c.id for c in filter_cases(cases, ["q1", "q2"])] == ["q1", "q2"]
    assert [c.id for c in filter_cases(cases, ["lang=k*"])] == ["q1", "q3"]
    with pytest.raises(UsageError, match=r"'language'.*lang.*fix the spelling in --filter"):
        filter_cases(cases, ["language=ko"])
    with pytest.raises(UsageError, match=r"lang=fr.*matches no lang value \(en, ko\)"):
        filter_cases(cases, ["lang=fr"])
    with pytest.raises(UsageError, match=r"'z\*'.*matches no case id"):
        filter_cases(cases, ["z*"])
    with pytest.raises(UsageError, match="--limit must be at least 1"):
        limit_cases(cases, 0)


def test_progress_shows_eta_and_the_running_pass_rate():
    import io

    stream = io.StringIO()
    bar = Progress(10, bar=False, stream=stream)
    bar.started -= 4.0  # four seconds in
    bar._last = -1e9
    for passed in (1.0, 0.0):
        bar.update(cases=1, passed=passed)
        bar._last = -1e9
    line = stream.getvalue().strip().splitlines()[-1]
    assert "2/10 cases, pass 50%" in line and re.search(r"ETA 1[56]s", line), line
    bar.update(cases=1, errors=1, retries=1, passed=0.0)  # a case whose target crashed: complete, with an error
    assert "1 infra retry," in bar._line()
    bar.finish("success")
    assert stream.getvalue().endswith("success: 3/10 cases complete, 1 with errors\n")


@pytest.mark.e2e
def test_reset_and_first_gate_work_outside_git(suite, tmp_path, python_exe):
    """Outside a git checkout: reset names the snapshot by --sha, or by a digest of the results
    without it; a first `gate --results --seed` with no config seeds the store the same way."""
    store = tmp_path / "store"
    named = evalgate("reset", "--config", str(suite), "--reason", "first", "--store", "local",
                     "--baseline-dir", str(store), "--sha", "v1.0", cwd=tmp_path, python_exe=python_exe)  # fmt: skip
    assert named.returncode == 0, named.stdout + named.stderr
    assert [s.sha for s in LocalStore(store).list().snapshots] == ["v1.0"]

    given = tmp_path / "given.json"
    shutil.copyfile(tmp_path / ".evalgate" / "out" / "results.json", given)
    other = tmp_path / "elsewhere"
    other.mkdir()
    seeded = evalgate("gate", "--results", str(given), "--seed", cwd=other, python_exe=python_exe)
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    assert "pass --sha COMMIT" in seeded.stderr
    snapshots = LocalStore(other / ".evalgate" / "baselines").list().snapshots
    assert len(snapshots) == 1 and re.fullmatch(r"content-[0-9a-f]{40}", snapshots[0].sha)


def test_a_sha_that_cannot_name_a_snapshot_says_what_sha_takes(suite, tmp_path, python_exe):
    """Checked before the suite runs: no run is wasted on a name the store refuses."""
    store = ["--store", "local", "--baseline-dir", str(tmp_path / "s")]
    done = evalgate("reset", "--config", str(suite), "--reason", "x", *store, "--sha", "v 1/0",
                    cwd=tmp_path, python_exe=python_exe)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--sha" in done.stderr and "'v 1/0'" in done.stderr
    assert "evalgate run:" not in done.stderr  # refused before running


CRASHING_BOT = """
def answer(question):
    if "+" in question:
        raise ValueError("cannot add:\\n" + "x" * 300)  # two lines, far too long for one
    if "-" in question:
        raise KeyError(question)  # a message of its own per case
    return question["tags"]  # the new user's bug: a str is not a mapping
"""


@pytest.mark.e2e
def test_the_errors_most_common_messages_are_shown(suite, tmp_path, python_exe):
    """A target that errors on every case: `run`'s summary, `show` and the gate's log say what
    the error was (the most common messages per kind, counted, on one line each), not only how many."""
    (suite.parent / "bot.py").write_text(CRASHING_BOT, encoding="utf-8")
    out = tmp_path / "crash.json"
    done = evalgate("run", "--config", str(suite), "-o", str(out), cwd=tmp_path, python_exe=python_exe)
    assert done.returncode == 0, done.stderr
    messages = [a.error.message for c in load_results(out).cases for a in c.attempts]
    counts = {kind: sum(1 for m in messages if m.startswith(kind)) for kind in ("TypeError", "ValueError", "KeyError")}
    assert counts == {"TypeError": 206, "ValueError": 20, "KeyError": 14}  # 14 distinct KeyErrors
    shown = evalgate("show", str(out), cwd=tmp_path, python_exe=python_exe)
    for text in (done.stderr, shown.stdout):
        errors = text[text.index("errors:") :].splitlines()
        assert errors[0] == "errors:  target 240 of 240 attempts", text
        assert errors[1] == "         206 × target: TypeError: string indices must be integers, not 'str'"
        # One line, clipped to 160 characters: the message's line break is a space.
        clipped = "ValueError: cannot add: " + "x" * 135 + "…"
        assert len(clipped) == 160 and errors[2] == "          20 × target: " + clipped
        assert re.fullmatch(r"           1 × target: KeyError: '.+'", errors[3]), errors
        assert errors[4] == "               target: 13 other messages (all in the results file)"
        assert not any(line.startswith(" ") for line in errors[5:]), errors  # three messages a kind, no more
    # The gate runs the suite without the table: its log still says what the errors were.
    gated = evalgate("gate", "--config", str(suite), "--store", "local", "--baseline-dir", str(tmp_path / "s"),
                     cwd=tmp_path, python_exe=python_exe)  # fmt: skip
    assert "evalgate run: 206 × target: TypeError: string indices must be integers, not 'str'" in gated.stderr
    # ... and so does a gate of brought results, which runs nothing.
    brought = evalgate("gate", "--config", str(suite), "--results", str(out), "--store", "local",
                       "--baseline-dir", str(tmp_path / "s"), cwd=tmp_path, python_exe=python_exe)  # fmt: skip
    assert "evalgate gate: 206 × target: TypeError: string indices must be integers, not 'str'" in brought.stderr


def test_error_messages_shown_are_masked(tmp_path, python_exe):
    """A results file evalgate did not write may hold a secret in an error message: `show` masks
    it (the run's own environment's secret values, known formats) before printing."""
    secret = "s3cr3t-value-of-the-endpoint-key"
    attempt = {"error": {"kind": "infra", "message": f"401 from https://api.example.com?key={secret}"}}
    run = {"suite": "s", "status": "success", "total_cases": 1, "completed_cases": 1}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema_version": 1, "run": run, "cases": [{"id": "a", "attempts": [attempt]}]}))
    shown = evalgate("show", str(path), cwd=tmp_path, python_exe=python_exe, env={"ENDPOINT_API_KEY": secret})
    assert "1 × infra: 401 from https://api.example.com?key=***" in shown.stdout, shown.stdout
    assert secret not in shown.stdout


def test_a_grouped_error_message_names_its_cases(tmp_path, python_exe):
    """Messages that name their case are grouped into one line per cause; the line printed
    "failed on case <case id>" with the placeholder unfilled. It names the cases now."""
    run = {"suite": "s", "status": "success", "total_cases": 5, "completed_cases": 5}

    def case(i: int, error: str | None) -> dict:
        attempt = {"output": "x", "passed": True, "score": 1.0}
        if error:
            attempt = {"error": {"kind": "scorer", "message": error.format(repr(f"es-{i:03d}"))}}
        return {"id": f"es-{i:03d}", "attempts": [attempt]}

    failed = "scorer 'capital' failed on case {}: TypeError: unsupported operand"
    cases = [case(i, failed) for i in range(4)] + [case(4, "scorer 'judge' gave no verdict for case {}")]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema_version": 1, "run": run, "cases": cases}))
    shown = evalgate("show", str(path), cwd=tmp_path, python_exe=python_exe)
    assert "<case id>" not in shown.stdout, shown.stdout
    assert (
        "4 × scorer: scorer 'capital' failed on case 'es-000': TypeError: unsupported operand "
        "(also cases 'es-001', 'es-002' and 1 more)"
    ) in shown.stdout
    assert "1 × scorer: scorer 'judge' gave no verdict for case 'es-004'" in shown.stdout


@pytest.mark.e2e
def test_outside_git_a_later_run_is_promoted_and_an_older_one_is_not(suite, tmp_path, python_exe):
    """docs/spec.md#promotion, docs/spec.md#outside-git: no commits to order outside git, so the runs' start times do;
    the outcome says which order decided, and a refusal says "not promoted" once."""
    store = ["--store", "local", "--baseline-dir", str(tmp_path / "store")]
    first = evalgate("reset", "--config", str(suite), "--reason", "first", *store, "--sha", "v1",
                     cwd=tmp_path, python_exe=python_exe)  # fmt: skip
    assert first.returncode == 0, first.stderr
    old = tmp_path / "v1.json"
    shutil.copyfile(tmp_path / ".evalgate" / "out" / "results.json", old)
    time.sleep(1.1)  # run times have one-second resolution, and a tie is not newer

    later = evalgate("gate", "--config", str(suite), "--promote", "--sha", "v2", *store,
                     cwd=tmp_path, python_exe=python_exe)  # fmt: skip
    assert later.returncode == 0, later.stderr
    assert "evalgate gate: promoted v2 as the baseline" in later.stderr
    assert "no git repository, so ordered by time (v2: run start" in later.stderr
    assert "after the current baseline v1: run start" in later.stderr

    older = evalgate("promote", "--config", str(suite), "--results", str(old), "--sha", "v3", *store,
                     cwd=tmp_path, python_exe=python_exe)  # fmt: skip
    assert older.returncode == 1, older.stdout + older.stderr
    assert "evalgate promote: not promoted: v3 is not newer than the current baseline v2" in older.stdout
    assert older.stdout.count("not promoted") == 1 and "fetch-depth" not in older.stdout
    assert [s.sha for s in LocalStore(tmp_path / "store").list().snapshots] == ["v1", "v2"]


@pytest.mark.e2e
def test_a_local_promotion_of_a_dirty_tree_warns_naming_head(suite, tmp_path, python_exe):
    """Uncommitted changes to tracked files: the baseline is still stored under HEAD (not refused),
    with a warning naming HEAD and the files, and a note in the manifest's reason."""
    folder = suite.parent
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "c1")
    clean = evalgate("reset", "--config", str(suite), "--reason", "first", cwd=folder, python_exe=python_exe)
    assert clean.returncode == 0, clean.stderr
    assert "uncommitted" not in clean.stderr

    (folder / "make_cases.py").write_text((folder / "make_cases.py").read_text() + "\n# tidied\n")
    git(folder, "commit", "-q", "-am", "c2")
    head = git(folder, "rev-parse", "HEAD")
    (folder / "bot.py").write_text((folder / "bot.py").read_text() + "\n# an edit never committed\n")
    dirty = evalgate("gate", "--config", str(suite), "--promote", cwd=folder, python_exe=python_exe)
    assert dirty.returncode == 0, dirty.stderr
    assert f"evalgate gate: promoted {head[:12]} as the baseline" in dirty.stderr
    assert (
        f"evalgate: warning: HEAD {head[:12]} is stored as the baseline while the working tree has uncommitted "
        "changes to tracked files (bot.py)" in dirty.stderr
    )
    listed = evalgate("baseline", "list", "--config", str(suite), cwd=folder, python_exe=python_exe)
    assert f"uncommitted changes at HEAD {head[:12]}: bot.py" in listed.stdout


def test_tokens_a_target_reports_on_one_side_only_are_not_zero_on_the_other():
    from evals.report.html import render_html
    from evals.results.summary import render_text

    run = RunInfo(suite="s", status="success", total_cases=2, completed_cases=2)
    cases = [CaseResult(id=f"c{i}", attempts=[Attempt(passed=True, tokens_in=9)]) for i in range(2)]
    summary = summarize(Results(schema_version=1, run=run, cases=cases))
    assert "tokens:  18 in, – out" in render_text(summary)
    assert "Tokens: 18 in, – out." in render_html(summary=summary)


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"scorers": ["contains"]}, "scorer/metric definitions differ"),
        ({"suite": "renamed"}, "the baseline is a run of suite 't', the candidate of suite 'renamed'"),
    ],
)
def test_a_gate_against_another_suites_store_runs_no_case(tmp_path, python_exe, change, says):
    """A gate whose stored baseline is another suite's (or of other scorer definitions)
    ran every case — a paid model's every call — before saying `incompatible`. The store's
    baseline is checked against the config first: the same verdict and exit, zero calls."""
    import yaml
    from fakes.suites import echo_cases, write_suite

    calls = tmp_path / "calls.log"
    bot = tmp_path / "bot.py"
    bot.write_text(
        "import json, sys\n"
        f"open({str(calls)!r}, 'a').write('x')\n"
        "print(json.dumps({'output': json.load(sys.stdin)['input']}))\n"
    )
    config = write_suite(tmp_path, echo_cases(6), target={"command": [python_exe, str(bot)]}, scorers=["exact"])
    store = ["--store", "local", "--baseline-dir", str(tmp_path / "store")]
    reset = evalgate("reset", "--config", str(config), "--reason", "first", "--sha", "v1", *store,
                     cwd=tmp_path, python_exe=python_exe)  # fmt: skip
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert len(calls.read_text()) == 6

    config.write_text(yaml.safe_dump({**yaml.safe_load(config.read_text()), **change}, sort_keys=False))
    gated = evalgate("gate", "--config", str(config), *store, cwd=tmp_path, python_exe=python_exe)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert gated.stdout.startswith("evalgate gate: incompatible: ") and says in gated.stdout
    assert "reset" in gated.stdout and "no case was run" in gated.stdout
    assert len(calls.read_text()) == 6, "no case may run against an incompatible baseline"
