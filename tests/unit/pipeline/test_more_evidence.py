"""gate.more_evidence end to end (docs/spec.md#more-evidence): a 25-case slice that got 28 points worse is
inconclusive on the first look; with more evidence the gate re-runs that slice's cases on both
sides — the baseline's from a git worktree of its commit — and fails naming the slice. Imported
results have nothing to re-run; a suite outside git cannot re-run its baseline and says so."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakes.suites import git


def _bot(
    repo: Path,
    broken: list[int],
    slow_s: float = 0.0,
    cost: float | None = None,
    ko_cost: float = 0,
    ko_rate: float = 0.0,
    calls: Path | None = None,
) -> None:
    """The bot answers the input back, except for ``broken`` ones; ko inputs take ``slow_s``; with
    ``cost``, each answer reports it (ko answers ``ko_cost`` more). With ``ko_rate`` it answers a ko
    input wrong at that rate, attempt by attempt: a stochastic target, reproducible (the k-th call
    for an input, counted in files under ``calls``, draws from a hash of the input and k; salted so
    that the first two attempts break 6 and 7 of the 25 ko cases at 0.35: inconclusive at first)."""
    wrong = sorted(f"q{i}" for i in broken)
    out = "'wrong' if text in BROKEN or flaky(text) else text"
    price = f"{cost!r} + ({ko_cost!r} if int(text[1:]) >= 475 else 0)"
    (repo / "bot.py").write_text(
        f"import hashlib\nimport pathlib\nimport time\n\nBROKEN = set({wrong!r})\n"
        f"CALLS = pathlib.Path({str(calls or repo)!r})\n\n\n"
        "def flaky(text):\n"
        f"    if int(text[1:]) < 475 or not {ko_rate!r}:\n        return False\n"
        "    counter = CALLS / text\n"
        "    with counter.open('a') as f:\n        f.write('x')\n"
        "    k = counter.stat().st_size\n"
        f"    return hashlib.sha256(f'{{text}}:{{k}}:4'.encode()).digest()[0] < 256 * {ko_rate!r}\n\n\n"
        f"def answer(text):\n"
        f"    if int(text[1:]) >= 475:\n        time.sleep({slow_s})\n"
        + (f"    return {out}\n" if cost is None else f"    return {{'output': {out}, 'cost_usd': {price}}}\n"),
        encoding="utf-8",
    )


def _suite(repo: Path, **gate) -> None:
    config = {
        "suite": "t",
        "cases": "cases.jsonl",
        "target": {"python": "bot:answer"},
        "scorers": ["exact"],
        "slices": ["language"],
        **({"gate": gate} if gate else {}),
    }
    (repo / "evalgate.yml").write_text(yaml.safe_dump(config), encoding="utf-8")


def _gate(repo: Path, store: Path, *extra: str) -> tuple[int, dict, str]:
    env = {**os.environ, "EVALGATE_HISTORY": "on"}  # the history records every look
    done = subprocess.run(
        [sys.executable, "-m", "evals", "gate", "--config", "evalgate.yml", "--store", "local",
         "--baseline-dir", str(store), *extra],
        cwd=repo, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    path = repo / ".evalgate" / "out" / "comparison.json"
    return done.returncode, json.loads(path.read_text()) if path.exists() else {}, done.stderr


def _repo(
    tmp_path: Path,
    slow_s: float = 0.0,
    cost: float | None = None,
    ko_cost: float = 0,
    *,
    ko_rate: float = 0.35,
    base_ko: tuple[int, ...] = (),
    cand_ko: tuple[int, ...] = (),
) -> tuple[Path, Path]:
    """500 cases (475 en, 25 ko); the baseline commit breaks 20 en cases (and ``base_ko``), the
    candidate commit 20 other en cases (noise overall), ``cand_ko``, and answers every ko case
    wrong at ``ko_rate`` per attempt (a stochastic regression of the ko slice)."""
    repo, store = tmp_path / "repo", tmp_path / "store"
    repo.mkdir()
    (tmp_path / "calls").mkdir()
    cases = [
        {"id": f"c{i:03d}", "input": f"q{i}", "expected": f"q{i}", "tags": {"language": "ko" if i >= 475 else "en"}}
        for i in range(500)
    ]
    (repo / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    _suite(repo)
    _bot(repo, [*range(20), *base_ko], cost=cost, ko_cost=ko_cost)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "baseline")
    _, comparison, err = _gate(repo, store, "--seed")
    assert comparison["verdict"] == "no-baseline", err
    _bot(repo, [*range(20, 40), *cand_ko], slow_s, cost, ko_cost, ko_rate, tmp_path / "calls")
    git(repo, "commit", "-qam", "candidate")
    return repo, store


@pytest.mark.e2e
def test_a_small_slice_inconclusive_at_first_fails_with_more_evidence(tmp_path):
    repo, store = _repo(tmp_path)
    code, first, err = _gate(repo, store)
    assert (code, first["verdict"]) == (0, "inconclusive"), err
    ko = next(u for u in first["units"] if u["unit"] == "language=ko")
    assert ko["verdict"] == "inconclusive" and ko["delta"] < -0.2

    _suite(repo, more_evidence={"max_batches": 10})
    code, c, err = _gate(repo, store, "--html", "page.html")
    assert (code, c["verdict"]) == (1, "fail"), err
    assert "language=ko" in c["reason"]
    page = (repo / "page.html").read_text()
    assert "More evidence: regressed after" in page and "t-test on per-case means" in page
    me = c["more_evidence"]
    assert me["ended"] == "fail"
    assert me["first_look_alpha"] == pytest.approx(0.04) and me["sequential_alpha"] == pytest.approx(0.01)
    assert len(me["looks"]) >= 2 and all(look["units"] == ["language=ko"] for look in me["looks"][1:])
    assert me["attempts"] == 2 * 25 * (len(me["looks"]) - 1)
    assert c["gate"]["alpha"] == pytest.approx(0.04)
    # The candidate's results say which cases got which batches; only the ko cases got any.
    results = json.loads((repo / ".evalgate" / "out" / "results.json").read_text())
    assert [b["units"] for b in results["run"]["batches"]] == [["language=ko"]] * (len(me["looks"]) - 1)
    batched = {c["id"] for c in results["cases"] if any(a["batch"] for a in c["attempts"])}
    assert batched == {f"c{i:03d}" for i in range(475, 500)}
    # The baseline side ran the baseline commit's bot: its ko cases pass there.
    base = json.loads((repo / ".evalgate" / "out" / "more-evidence" / "baseline-1.json").read_text())
    assert all(a["passed"] for case in base["cases"] for a in case["attempts"])
    assert git(repo, "worktree", "list").count("\n") == 0  # the baseline's worktree is gone
    # The history records every look.
    db = sqlite3.connect(repo / ".evalgate" / "history.sqlite")
    looks = db.execute("SELECT look, units, cases, attempts, outcome FROM gate_looks ORDER BY look").fetchall()
    assert looks[-1][-1] == "fail" and [row[0] for row in looks] == list(range(len(me["looks"])))
    assert looks[1][1:4] == ("language=ko", 25, 50)
    strongest = db.execute("SELECT strongest_unit, strongest_p_value, strongest_level FROM gate_looks").fetchall()
    assert strongest[0] == (None, None, None)  # the first look is the fixed-sample rule's
    unit, p, level = strongest[-1]
    assert unit == "pass_rate on language=ko" and p <= level
    report = (repo / ".evalgate" / "out" / "report.md").read_text()
    assert "More evidence: regressed after" in report and "it never counts as another case" in report
    assert "e-value" not in report and "does not raise false alarms" not in report
    banner = report.split("\n\n", 1)[0]
    assert "Reached after 2 batches of re-runs" in banner

    # Run again on the same first look (--results): the batch files are reused, same verdict.
    code, again, err = _gate(repo, store, "--results", ".evalgate/out/results.json")
    assert (code, again["verdict"]) == (1, "fail"), err
    assert "reusing candidate-1.json" in err
    assert [(look["look"], look["outcome"]) for look in again["more_evidence"]["looks"]] == [
        (look["look"], look["outcome"]) for look in me["looks"]
    ]


@pytest.mark.e2e
def test_a_deterministic_target_stops_after_one_batch_because_its_answers_repeat(tmp_path):
    """A deterministic bot, and a change whose ko cases flip both ways (9 break, 2 are fixed): the
    first look is inconclusive and the ko slice looks worse, so a batch re-runs it — and every
    answer, on both sides, is the first look's again. Counting those as new observations failed
    the gate after a few batches of the same 25 answers; the batches stop after one instead, the
    verdict stays the first look's and the report and the log say why."""
    repo, store = _repo(tmp_path, ko_rate=0.0, base_ko=(475, 476), cand_ko=tuple(range(477, 486)))
    _suite(repo, more_evidence={"max_batches": 10})
    code, c, err = _gate(repo, store)
    assert (code, c["verdict"]) == (0, "inconclusive"), err
    me = c["more_evidence"]
    sentence = "the target answered the same: more attempts cannot help; more cases can"
    assert me["summary"] == f"stopped after batch 1: {sentence}"
    assert [(look["look"], look["repeated"], look["level"]) for look in me["looks"]] == [
        (0, False, None),
        (1, True, None),
    ]
    assert me["attempts"] == 50 and me["ended"] == "inconclusive"
    ko = next(v for v in me["looks"][1]["values"] if v["unit"] == "language=ko")
    assert ko["repeated"] and ko["cases"] == 25 and ko["observed_drop"] == pytest.approx(7 / 25)
    assert sentence in c["reason"] and sentence in err
    report = (repo / ".evalgate" / "out" / "report.md").read_text()
    assert sentence in report and "every re-run answered as before" in report


@pytest.mark.e2e
def test_the_budget_ends_still_inconclusive(tmp_path):
    repo, store = _repo(tmp_path)
    _suite(repo, more_evidence={"max_batches": 1})
    code, c, err = _gate(repo, store)
    assert (code, c["verdict"]) == (0, "inconclusive"), err
    assert c["more_evidence"]["summary"].startswith("still inconclusive after 1 batch")
    assert "still inconclusive after 1 batch" in c["reason"]


@pytest.mark.e2e
def test_the_gates_limits_count_the_batches_too(tmp_path):
    """limits.max_cost_usd caps what the whole gate spends: the candidate's run ($5: 500 answers
    at $0.01) and every batch on both sides ($0.50 a batch: 25 ko cases twice). Each batch side is
    its own run, which used to get the whole limit again: the batches ran past it unseen."""
    repo, store = _repo(tmp_path, cost=0.01)
    config = yaml.safe_load((repo / "evalgate.yml").read_text())
    config["limits"] = {"max_cost_usd": 5.75}  # the run and one batch; the next would pass it
    config["gate"] = {"more_evidence": {"max_batches": 10}}
    (repo / "evalgate.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    code, c, err = _gate(repo, store)
    assert (code, c["verdict"]) == (0, "inconclusive"), err
    me = c["more_evidence"]
    assert len(me["looks"]) == 2 and me["attempts"] == 50
    assert me["spend"]["cost_usd"] == pytest.approx(0.5) == me["cost_usd"]
    assert me["summary"] == (
        "still inconclusive after 1 batch (limits.max_cost_usd $5.75 reached by the gate ($5.50 spent; the next "
        "batch needs about $0.50 more))"
    )
    # Each side of the batch ran under what was left ($0.75, then $0.50), and completed.
    sides = sorted((repo / ".evalgate" / "out" / "more-evidence").glob("*-1.json"))
    assert [json.loads(p.read_text())["run"]["status"] for p in sides] == ["success", "success"]
    # The Spend section counts the batches, as a row of their own.
    report = (repo / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
    assert "more evidence &#36;0.50 for 50 attempts" in report
    assert "| more evidence (both sides) | 50 |" in report


@pytest.mark.e2e
def test_a_batch_that_runs_out_of_the_limit_is_not_used(tmp_path):
    """The estimate goes by the first run's mean cost per attempt; ko answers cost 10× the rest,
    so a ko batch costs far more than estimated and its candidate side reaches what was left."""
    repo, store = _repo(tmp_path, cost=0.01, ko_cost=0.09)  # the run: 475 × $0.01 + 25 × $0.10 = $7.25
    config = yaml.safe_load((repo / "evalgate.yml").read_text())
    config["limits"] = {"max_cost_usd": 8.25}  # $1 left: the estimate ($0.73) fits, the batch ($5) does not
    config["gate"] = {"more_evidence": {"max_batches": 10}}
    (repo / "evalgate.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    code, c, err = _gate(repo, store)
    assert (code, c["verdict"]) == (0, "inconclusive"), err
    me = c["more_evidence"]
    assert [look["outcome"] for look in me["looks"]] == ["continue", "inconclusive"]
    assert me["summary"].startswith("still inconclusive after 0 batches (limits.max_cost_usd $8.25 reached by the gate")
    assert me["summary"].endswith("during batch 1, whose attempts are not used)")
    candidate_side = json.loads((repo / ".evalgate" / "out" / "more-evidence" / "candidate-1.json").read_text())
    assert candidate_side["run"]["limit"]["value"] == pytest.approx(1.0)  # what was left, not $8.25
    assert not (repo / ".evalgate" / "out" / "more-evidence" / "baseline-1.json").exists()


@pytest.mark.e2e
def test_with_no_slice_worse_than_the_tolerance_no_batch_runs_and_the_summary_says_so(tmp_path):
    """The candidate breaks 20 other en cases: overall is inconclusive, but no slice looks worse than
    −δ, so looks_worse has nothing to re-run. The summary said "still inconclusive after 0 batches
    (... any more)", as if batches had run."""
    repo, store = _repo(tmp_path)
    _bot(repo, list(range(20, 40)))
    git(repo, "commit", "-qam", "candidate without the ko regression")
    _suite(repo, more_evidence={"max_batches": 3})
    code, c, err = _gate(repo, store)
    assert (code, c["verdict"]) == (0, "inconclusive"), err
    summary = c["more_evidence"]["summary"]
    assert summary == (
        "no batch was run: no slice looks worse than −δ (the tolerance); only `select: all` can take overall to pass"
    )
    assert "any more" not in c["reason"] and "after 0 batches" not in c["reason"]
    assert summary in err


@pytest.mark.e2e
def test_imported_results_have_nothing_to_re_run(tmp_path):
    repo, store = _repo(tmp_path)
    _suite(repo, more_evidence={"max_batches": 3})
    junit = tmp_path / "junit.xml"
    junit.write_text('<testsuite name="s"><testcase classname="a" name="b"/></testsuite>', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "evals", "gate", "--config", "evalgate.yml", "--store", "local",
         "--baseline-dir", str(store), "--results", str(junit), "--results-format", "junit"],
        cwd=repo, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "nothing to re-run" in done.stderr


@pytest.mark.e2e
def test_without_git_the_baseline_side_cannot_run_and_the_first_look_keeps_its_alpha(tmp_path):
    repo, store = _repo(tmp_path)
    subprocess.run(["rm", "-rf", str(repo / ".git")], check=True)
    _suite(repo, more_evidence={"max_batches": 3})
    _, c, err = _gate(repo, store)
    assert c["verdict"] == "inconclusive", err
    assert c["gate"]["alpha"] == 0.05
    assert c["more_evidence"]["ended"] == "not-run"
    assert "not in a git checkout" in c["more_evidence"]["summary"]
    assert any("more evidence not run" in w for w in c["warnings"])
    # One wording everywhere, naming the config relative to the working folder: the report's warning
    # said ". is not in a git checkout" and its more-evidence heading the absolute /tmp/... folder.
    why = "evalgate.yml is not in a git checkout, so the baseline's commit"
    report = (repo / ".evalgate" / "out" / "report.md").read_text()
    for text in (c["more_evidence"]["summary"], c["more_evidence"]["baseline_side"], *c["warnings"], report, err):
        assert str(tmp_path) not in text
    assert report.count(why) == 3 and why in err


@pytest.mark.e2e
def test_a_cancelled_batch_is_incomplete_and_resumes(tmp_path):
    repo, store = _repo(tmp_path, slow_s=0.4)
    _suite(repo, more_evidence={"max_batches": 10})
    command = [sys.executable, "-m", "evals", "gate", "--config", "evalgate.yml", "--store", "local",
               "--baseline-dir", str(store)]  # fmt: skip
    gate = subprocess.Popen(command, cwd=repo, stderr=subprocess.PIPE, text=True)
    seen, batch = [], False
    for line in gate.stderr:
        seen.append(line)
        batch = batch or "more evidence: batch 1:" in line
        # The batch's child has finished a case and has others in flight (a fixed sleep after the
        # batch started raced the child's start on a loaded machine).
        if batch and "/25 cases" in line:
            gate.send_signal(signal.SIGTERM)
            break
    rest = gate.stderr.read()
    assert gate.wait(timeout=120) == 3, "".join(seen) + rest
    c = json.loads((repo / ".evalgate" / "out" / "comparison.json").read_text())
    assert c["verdict"] == "incomplete" and c["more_evidence"]["ended"] == "incomplete", "".join(seen) + rest
    assert "did not complete on the candidate side (cancelled" in c["reason"]
    partial = json.loads((repo / ".evalgate" / "out" / "more-evidence" / "candidate-1.json").read_text())
    assert partial["run"]["status"] == "cancelled" and 0 < partial["run"]["completed_cases"] < 25

    code, done, err = _gate(repo, store, "--results", ".evalgate/out/results.json")
    assert (code, done["verdict"]) == (1, "fail"), err
    assert "resuming candidate-1.json" in err
    assert "language=ko" in done["reason"]


# ------------------------------------------------------------------ the sides in jobs of their own

# The candidate's code, at import, plants a post-checkout hook in its checkout: a worktree of the
# baseline's commit made there afterwards answers "nope" to every case (the adversarial review's
# reproduction: an honest fail became inconclusive).
NOPE_HOOK = "#!/bin/sh\necho 'def answer(text):' > bot.py\necho '    return \"nope\"' >> bot.py\n"
PLANT_HOOK = """

_hook = pathlib.Path('.git/hooks/post-checkout')
if _hook.parent.is_dir():
    _hook.write_text(HOOK)
    _hook.chmod(0o755)
""".replace("HOOK", repr(NOPE_HOOK))


def _evalgate(cwd: Path, store: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evals", "gate", "--config", "evalgate.yml", "--store", "local",
         "--baseline-dir", str(store), *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, env=env or {**os.environ, "EVALGATE_HISTORY": "off"},
    )  # fmt: skip


def _digest_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("evidence-digest: ")).split(": ", 1)[1]


def _looks(c: dict) -> list[tuple]:
    return [(look["look"], look["outcome"], look["units"], look["cases"], look["attempts"]) for look in c["looks"]]


@pytest.mark.e2e
def test_the_baseline_side_in_a_fresh_checkout_is_untouched_by_the_candidates_hook(tmp_path):
    repo, store = _repo(tmp_path)
    base_sha = git(repo, "rev-list", "--max-parents=0", "HEAD")
    with (repo / "bot.py").open("a", encoding="utf-8") as fh:
        fh.write(PLANT_HOOK)
    git(repo, "commit", "-qam", "candidate: plants a hook")
    _suite(repo, more_evidence={"max_batches": 10})
    results = tmp_path / "results.json"
    ran = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--config", "evalgate.yml", "-o", str(results)],
        cwd=repo, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0 and (repo / ".git" / "hooks" / "post-checkout").exists(), ran.stderr

    # The candidate's side: in the PR's checkout, where its code ran.
    cand = _evalgate(repo, store, "--results", str(results), "--evidence-side", "candidate", "--out-dir", "cand")
    assert cand.returncode == 0, cand.stderr
    # The baseline's side: a fresh checkout of the base commit (its config enables more evidence).
    fresh = tmp_path / "base"
    git(tmp_path, "clone", "-q", str(repo), str(fresh))
    git(fresh, "checkout", "-q", base_sha)
    _suite(fresh, more_evidence={"max_batches": 10})
    base = _evalgate(fresh, store, "--results", str(results), "--evidence-side", "baseline", "--out-dir", "base")
    assert base.returncode == 0, base.stderr
    digests = _digest_line(base.stdout)
    assert digests.startswith("baseline-1.json=")
    evidence = tmp_path / "evidence"
    for folder in (repo / "cand" / "more-evidence", fresh / "base" / "more-evidence"):
        shutil.copytree(folder, evidence, dirs_exist_ok=True)
    assert all(a["passed"] for case in json.loads((evidence / "baseline-1.json").read_text())["cases"]
               for a in case["attempts"])  # fmt: skip

    # The gate replays the sides' batches: the honest fail.
    gate = _evalgate(repo, store, "--results", str(results), "--evidence", str(evidence), "--evidence-digest", digests)
    c = json.loads((repo / ".evalgate" / "out" / "comparison.json").read_text())
    assert (gate.returncode, c["verdict"]) == (1, "fail"), gate.stderr
    assert "language=ko" in c["reason"] and c["more_evidence"]["ended"] == "fail"
    assert c["more_evidence"]["baseline_side"].startswith("re-run by the baseline side's own job")

    # In one process (outside Actions: the developer's own code) the hook reaches the baseline side.
    single = _evalgate(repo, store, "--results", str(results), "--out-dir", "single")
    c = json.loads((repo / "single" / "comparison.json").read_text())
    assert (single.returncode, c["verdict"]) != (1, "fail"), single.stderr
    nope = json.loads((repo / "single" / "more-evidence" / "baseline-1.json").read_text())
    assert {a["output"] for case in nope["cases"] for a in case["attempts"]} == {"nope"}


@pytest.mark.e2e
def test_the_gate_replays_the_in_process_loop_and_refuses_changed_or_missing_files(tmp_path):
    """The in-process loop's batch files, replayed: the same verdict and looks. Then: a baseline
    file that is not the one its job wrote is refused (exit 2, naming it); a batch a side did not
    run stops the looks there, never a pass."""
    repo, store = _repo(tmp_path)
    _suite(repo, more_evidence={"max_batches": 10})
    code, ran, err = _gate(repo, store)
    assert (code, ran["verdict"]) == (1, "fail"), err
    batches = len(ran["more_evidence"]["looks"]) - 1
    evidence = tmp_path / "evidence"
    shutil.copytree(repo / ".evalgate" / "out" / "more-evidence", evidence)
    digests = " ".join(
        f"{p.name}={hashlib.sha256(p.read_bytes()).hexdigest()}"
        for p in sorted(evidence.glob("baseline-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    )
    results = ".evalgate/out/results.json"
    out = ("--out-dir", "replay")
    given = ("--results", results, "--evidence", str(evidence))
    replay = _evalgate(repo, store, *given, "--evidence-digest", digests, *out)
    c = json.loads((repo / "replay" / "comparison.json").read_text())
    assert (replay.returncode, c["verdict"], c["reason"]) == (1, "fail", ran["reason"]), replay.stderr
    assert _looks(c["more_evidence"]) == _looks(ran["more_evidence"])
    assert c["more_evidence"]["looks"][-1]["values"] == ran["more_evidence"]["looks"][-1]["values"]

    # A baseline file changed after its job (every ko answer right again, say): refused, named.
    changed = evidence / f"baseline-{batches}.json"
    data = json.loads(changed.read_text())
    for case in data["cases"]:
        case["attempts"][0]["passed"] = False
    changed.write_text(json.dumps(data), encoding="utf-8")
    refused = _evalgate(repo, store, *given, "--evidence-digest", digests)
    assert refused.returncode == 2 and f"baseline-{batches}.json" in refused.stderr, refused.stderr

    # The last batch missing on the candidate's side: the looks stop before it, and say why.
    changed.unlink()
    (evidence / f"candidate-{batches}.json").unlink()
    fewer = digests.rsplit(" ", 1)[0] if batches > 1 else "-"
    short = _evalgate(repo, store, *given, "--evidence-digest", fewer, *out)
    c = json.loads((repo / "replay" / "comparison.json").read_text())
    assert (short.returncode, c["verdict"]) == (0, "inconclusive"), short.stderr
    assert f"the candidate side ran no batch {batches}" in c["more_evidence"]["summary"]


@pytest.mark.e2e
def test_a_single_job_in_actions_on_a_pull_request_does_not_run_the_baseline_side(tmp_path):
    """The PR's code ran in this job (it ran the suite): the baseline side would run where that code
    could have planted a hook or changed the virtualenv or the cache. More evidence does not run,
    the first look keeps its whole α, and the message names the layout that runs it."""
    repo, store = _repo(tmp_path)
    _suite(repo, more_evidence={"max_batches": 10})
    payload = tmp_path / "event.json"
    pr = {"number": 7, "base": {"sha": git(repo, "rev-list", "--max-parents=0", "HEAD"), "ref": "main"},
          "head": {"sha": git(repo, "rev-parse", "HEAD"), "ref": "f", "repo": {"full_name": "o/r"}}}  # fmt: skip
    payload.write_text(json.dumps({"pull_request": pr, "repository": {"full_name": "o/r"}}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(payload),
        "GITHUB_REPOSITORY": "o/r", "GITHUB_REF": "refs/pull/7/merge", "EVALGATE_HISTORY": "off",
    }  # fmt: skip
    done = _evalgate(repo, store, "--mode", "full", "--comment", "off", env=env)
    c = json.loads((repo / ".evalgate" / "out" / "comparison.json").read_text())
    assert c["verdict"] == "inconclusive", done.stderr
    me = c["more_evidence"]
    assert me["ended"] == "not-run" and c["gate"]["alpha"] == 0.05 and me["first_look_alpha"] == 0.05
    assert "the pull request's code ran in this job" in me["summary"]
    assert "eval-gate-more-evidence.yml" in me["summary"] and "More evidence on pull requests" in me["summary"]
    assert not (repo / ".evalgate" / "out" / "more-evidence").exists()
