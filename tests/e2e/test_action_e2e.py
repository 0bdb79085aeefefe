"""End to end: the action's own ``run:`` steps, read from action.yml, in a simulated runner against
the fake GitHub server (tests/fakes/github_server.py) over real HTTP, on a copy of the quickstart suite
in a real git repository; and the README's local command against the committed quickstart store.

The runner is simulated by ``fakes.actions``, whose docstring says what is simulated and how.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.actions import ACTION, BASH, CONFIG, PR, TAG, WORKFLOWS, Job, StepRun
from fakes.expressions import Expr
from fakes.paths import ROOT
from fakes.repository import World, our_comments, regressed
from fakes.repository import origin as origin  # the fixture
from fakes.repository import world as world  # the fixture
from fakes.suites import echo_cases, git, write_suite

from evals.github.models import ACTIONS_BOT_LOGIN as BOT_LOGIN
from evals.github.publish import comment_marker, sticky_body
from evals.results.files import load_results
from evals.results.manifest import manifest_name
from evals.store.baseline import GitHubReleaseStore
from evals.store.promotion import SEED_REASON

# ------------------------------------------------------------------------------------------ the stories


def test_first_push_seeds_then_a_regressed_pr_fails_with_one_sticky_comment(world: World) -> None:
    gh, main = world.gh, world.checkout("main")
    first = world.runner.run(world.push(main, world.origin.main_sha))
    assert first.returncode == 0, first.log
    assert first.outputs["verdict"] == "no-baseline"
    assert first.outputs["promoted"] == "true"
    assert world.latest_sha() == world.origin.main_sha
    seeded = world.manifest()["snapshots"][-1]  # the first reference point: the drift guard holds from here
    assert (seeded["blessed"], seeded["reason"], seeded["actor"]) == (True, SEED_REASON, "octo-dev")
    assert "no-baseline" in first.summary.lower() or "no baseline" in first.summary.lower()

    feature = world.checkout("feature")
    head = world.commit(feature, "tweak the prompt")
    run = world.runner.run(regressed(world.pull_request(feature, head)))
    assert run.returncode == 1, run.log
    assert run.outputs["verdict"] == "fail"
    assert run.outputs["baseline-sha"] == world.origin.main_sha
    assert run.outputs["comment-url"]
    comments = our_comments(gh)
    assert len(comments) == 1
    assert "language=ko" in comments[0]["body"]
    # No history URL in Actions: the regressed slice's trend comes from the store's snapshots. With
    # one baseline it has two points, which say no more than the Δ: comparison.json keeps it, the
    # comment leaves it out (docs/spec.md#pr-comment: trends need ≥ 3 points).
    trends = json.loads(Path(run.outputs["comparison-path"]).read_text())["trends"]
    assert any(t["unit"] == "language=ko" and t["labels"] == [world.origin.main_sha[:7], "candidate"] for t in trends)
    assert "Trends" not in comments[0]["body"]
    assert "::error" in run.stdout  # annotations for the regressed units
    assert Path(run.outputs["report-path"]).is_file()
    assert json.loads(Path(run.outputs["comparison-path"]).read_text())["verdict"] == "fail"
    smoke = load_results(run.outputs["results-path"])
    assert smoke.run.subset and len(smoke.cases) < 240  # PRs run the smoke subset

    # A new push to the PR: the same comment is updated in place, never a second one.
    head2 = world.commit(feature, "tweak it again")
    again = world.runner.run(regressed(world.pull_request(feature, head2)))
    assert again.returncode == 1, again.log
    after = our_comments(gh)
    assert len(after) == 1 and after[0]["id"] == comments[0]["id"]
    assert after[0]["body"] != comments[0]["body"] and head2[:10] in after[0]["body"]
    assert world.latest_sha() == world.origin.main_sha  # a PR never promotes


def workflow_run_job(
    world: World,
    run_id: int,
    head_sha: str,
    *,
    repo: str = "forker/evals",
    branch: str = "feature",
    name: str = "eval-gate",
    conclusion: str = "success",
    workflow: Path = WORKFLOWS / "eval-gate-fork-comment.yml",
) -> Job:
    """``workflow`` (eval-gate-fork-comment.yml) triggered by the run ``run_id`` of the workflow
    ``name`` for a PR from ``repo``'s ``branch`` at ``head_sha`` (the event's ``workflow_run`` as
    GitHub sends it, in part)."""
    payload = {
        "workflow_run": {
            "id": run_id,
            "name": name,
            # GitHub's numeric ids, stable per workflow and per repository (made up here, alike).
            "workflow_id": zlib.crc32(name.encode()),
            "path": f".github/workflows/{name}.yml",  # the shipped workflows' files are named after their names
            "event": "pull_request",
            "conclusion": conclusion,
            "head_sha": head_sha,
            "head_branch": branch,
            "head_repository": {"full_name": repo, "id": zlib.crc32(repo.encode())},
        },
        "repository": {"full_name": world.gh.repo, "default_branch": "main"},
    }
    base = world.checkout(f"base-{run_id}")
    job = Job("workflow_run", payload, base, world.origin.main_sha, "refs/heads/main", world.gh.write_token)
    job.workflow = workflow
    return job


def _on(workflow: Path) -> dict[str, Any]:
    spec = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    return spec.get("on", spec.get(True))  # YAML 1.1 reads a bare `on` key as true


def triggered_by(world: World, pr: Job, run: StepRun) -> list[Job]:
    """What GitHub starts when the workflow run ``run`` of the PR event ``pr`` completes: a
    ``workflow_run`` event for each workflow here whose ``on.workflow_run.workflows`` names the
    completed workflow's ``name:``, carrying the run's head and conclusion."""
    name = yaml.safe_load(pr.workflow.read_text(encoding="utf-8"))["name"]
    head = pr.payload["pull_request"]["head"]
    listening = [
        path
        for path in sorted(WORKFLOWS.glob("*.yml"))
        if isinstance(_on(path), dict) and name in ((_on(path).get("workflow_run") or {}).get("workflows") or [])
    ]
    return [
        workflow_run_job(
            world,
            run.run_id,
            head["sha"],
            repo=head["repo"]["full_name"],
            branch=head["ref"],
            name=name,
            conclusion="success" if run.returncode == 0 else "failure",
            workflow=path,
        )
        for path in listening
    ]


def concurrency_group(world: World, job: Job) -> str:
    """The workflow-level concurrency group a run of ``job`` joins."""
    spec = yaml.safe_load(job.workflow.read_text(encoding="utf-8"))
    return Expr(world.runner.contexts(job, world.tmp)).render(spec["concurrency"]["group"])


def test_fork_pr_passes_without_comment_then_two_phase_flow_posts_it(world: World) -> None:
    gh = world.gh
    world.seed()
    fork = world.checkout("fork")
    head = world.commit(fork, "a contribution from a fork")
    run = world.runner.run(world.pull_request(fork, head, fork=True))
    assert run.returncode == 0, run.log  # the 403 on the comment does not turn the check red
    assert run.outputs["verdict"] == "pass"
    assert our_comments(gh) == []
    assert "::warning" in run.stderr and "fork" in run.stderr
    meta = json.loads((run.out_dir / "comment.json").read_text())
    assert meta["pr_number"] == PR and meta["head_sha"] == head
    assert (run.out_dir / "comment.md").is_file() and run.summary

    # Phase two: eval-gate-fork-comment.yml, triggered by that run, downloads its artifact and posts.
    def workflow_run(run_id: int, head_sha: str) -> Job:
        return workflow_run_job(world, run_id, head_sha)

    posted = world.runner.run(workflow_run(run.run_id, head))
    assert posted.returncode == 0, posted.log
    comments = our_comments(gh)
    assert len(comments) == 1 and posted.outputs["comment-url"]
    assert posted.outputs["verdict"] == "pass"

    # The fork's code wrote that artifact, so it may lie. A report for another commit than the
    # triggering run's is refused (exit 2) ...
    def forged(run_id: int, **changes: Any) -> int:
        folder = world.runner.artifacts / str(run_id) / "evalgate-report"
        shutil.copytree(world.runner.artifacts / str(run.run_id) / "evalgate-report", folder)
        (folder / "comment.json").write_text(json.dumps(meta | changes))
        return run_id

    refused = world.runner.run(workflow_run(forged(10_001), "f" * 40))
    assert refused.returncode == 2, refused.log
    assert "does not belong" in refused.stderr
    # ... one naming someone else's PR is not posted there (that PR's head is not this commit) ...
    other = world.checkout("other")
    world.pull_request(other, world.commit(other, "someone else's PR"), number=PR + 1)
    aimed = world.runner.run(workflow_run(forged(10_002, pr_number=PR + 1), head))
    assert aimed.returncode == 0, aimed.log
    assert "not posted" in aimed.stderr and our_comments(gh, PR + 1) == []
    # ... and once the PR has moved on, the older push's report is not posted either.
    world.pull_request(fork, world.commit(fork, "a newer push"), fork=True)
    stale = world.runner.run(workflow_run(run.run_id, head))
    assert stale.returncode == 0 and "not posted" in stale.stderr
    assert len(our_comments(gh)) == 1 and our_comments(gh)[0]["body"] == comments[0]["body"]


def test_a_fork_artifact_cannot_retarget_the_comment_of_another_pr_with_the_same_head_commit(world: World) -> None:
    """A victim's fork PR fails and its comment says so. Anyone can push that same
    commit to a fork of their own and open a PR; their gate's artifact (their workflow, their
    files) names the victim's PR. The sha checks all hold, so it used to overwrite the FAIL comment
    with a PASS. The comment job now posts only to the PR whose head repository, branch and sha are
    the triggering run's."""
    gh = world.gh
    world.seed()
    fork = world.checkout("fork")
    head = world.commit(fork, "a contribution from a fork")
    victim = world.runner.run(regressed(world.pull_request(fork, head, fork=True)))
    assert victim.outputs["verdict"] == "fail", victim.log
    posted = world.runner.run(workflow_run_job(world, victim.run_id, head))
    assert posted.returncode == 0, posted.log
    (failed_comment,) = our_comments(gh)
    assert "fail" in failed_comment["body"].lower()

    copy = world.pull_request(fork, head, fork=True, number=PR + 1)  # mallory/evals:copy, the same commit
    copy.payload["pull_request"]["head"] |= {"repo": {"full_name": "mallory/evals"}, "ref": "copy"}
    attacker = world.runner.run(copy)
    assert attacker.outputs["verdict"] == "pass", attacker.log
    artifact = world.runner.artifacts / str(attacker.run_id) / "evalgate-report" / "comment.json"
    meta = json.loads(artifact.read_text(encoding="utf-8"))
    artifact.write_text(json.dumps(meta | {"pr_number": PR}), encoding="utf-8")

    retargeted = world.runner.run(workflow_run_job(world, attacker.run_id, head, repo="mallory/evals", branch="copy"))
    assert retargeted.returncode == 2, retargeted.log
    assert f"names PR #{PR}, whose head is forker/evals:feature" in retargeted.stderr
    assert "the run that made the artifact was for mallory/evals:copy" in retargeted.stderr
    assert our_comments(gh) == [failed_comment]  # the FAIL stands, untouched
    assert not [r for r in gh.requests if "/issues/comments/" in r.path and r.method == "PATCH"]


def test_a_fork_artifact_does_not_choose_which_gate_s_comment_it_updates(world: World) -> None:
    """The sticky comment a stored report updates is the one of the gate id in its comment.json,
    which the fork's code wrote: a fork's eval-gate run could overwrite the more-evidence gate's
    comment on its PR. The comment workflow now names the gate id per triggering workflow file, and
    an artifact naming another is refused (exit 2), the other gate's comment left alone; a run of a
    workflow file the comment workflow does not know posts nothing."""
    gh = world.gh
    world.seed()
    fork = world.checkout("fork")
    head = world.commit(fork, "a contribution from a fork")
    other_gate = gh.add_comment(
        PR, sticky_body("the more-evidence gate: FAIL", "quickstart-more-evidence")[0], BOT_LOGIN
    )
    run = world.runner.run(world.pull_request(fork, head, fork=True))
    assert run.outputs["verdict"] == "pass", run.log
    artifact = world.runner.artifacts / str(run.run_id) / "evalgate-report" / "comment.json"
    meta = json.loads(artifact.read_text(encoding="utf-8"))
    assert meta["gate_id"] == "quickstart"
    artifact.write_text(json.dumps(meta | {"gate_id": "quickstart-more-evidence"}), encoding="utf-8")

    before = len(gh.requests)
    refused = world.runner.run(workflow_run_job(world, run.run_id, head))
    assert refused.returncode == 2, refused.log
    assert "is the report of gate 'quickstart-more-evidence', and this workflow posts gate 'quickstart'" in (
        refused.stderr
    )
    renamed = workflow_run_job(world, run.run_id, head)
    renamed.payload["workflow_run"]["path"] = ".github/workflows/my-eval-gate.yml"  # a fork's file, named alike
    unknown = world.runner.run(renamed)
    assert unknown.returncode == 2 and "name its gate id" in unknown.stderr, unknown.log
    assert [c["body"] for c in gh.comments(PR)] == [other_gate["body"]]
    assert not [r for r in gh.requests[before:] if "/issues/" in r.path and r.method != "GET"]


def test_push_promotes_and_dispatch_reset_blesses_with_reason(world: World) -> None:
    world.seed()
    main = world.checkout("main")
    sha = world.commit(main, "merge a good change")
    run = world.runner.run(world.push(main, sha))
    assert run.returncode == 0, run.log
    assert run.outputs["verdict"] == "pass" and run.outputs["promoted"] == "true"
    assert world.latest_sha() == sha

    reset_sha = world.commit(main, "accept new behaviour")
    job = world.push(main, reset_sha)
    job.event_name, job.dispatch_inputs = "workflow_dispatch", {"reason": "new Korean tokenizer"}
    job.payload = {"inputs": job.dispatch_inputs, "ref": "refs/heads/main", "repository": job.payload["repository"]}
    reset = world.runner.run(regressed(job))
    assert reset.returncode == 0, reset.log
    assert reset.outputs["verdict"] == "reset"
    entry = world.manifest()["snapshots"][-1]
    assert entry["sha"] == reset_sha and entry["blessed"] is True
    assert entry["reason"] == "new Korean tokenizer" and entry["actor"] == "octo-dev"
    assert "new Korean tokenizer" in reset.summary


def test_faults_during_download_and_comment_are_retried(world: World) -> None:
    gh = world.gh
    world.seed()
    feature = world.checkout("feature")
    head = world.commit(feature, "change")
    gh.faults.add("GET", r"/releases/assets/\d+$", "500", times=1)
    gh.faults.add("GET", r"^/", "truncate", server="storage")
    gh.faults.add("GET", r"/releases/\d+/assets$", "reset", times=1)
    gh.faults.add("POST", r"/issues/\d+/comments$", "502", times=1)
    run = world.runner.run(regressed(world.pull_request(feature, head)))
    assert gh.faults.pending() == []
    assert run.returncode == 1, run.log
    assert run.outputs["verdict"] == "fail"
    assert len(our_comments(gh)) == 1
    # Each retry is one line in the job log (the truncated storage download may take two: the cut
    # body, then the API's fresh redirect).
    retries = [line for line in run.log.splitlines() if line.startswith("evalgate: GitHub:")]
    assert len(retries) >= 4 and all("retry" in line for line in retries), run.log


def test_baseline_store_down_is_exit_3_and_comment_down_keeps_the_verdict(world: World) -> None:
    gh = world.gh
    world.seed()
    feature = world.checkout("feature")
    head = world.commit(feature, "change")
    gh.faults.add("GET", r"/releases/assets/\d+$", "500", times=1000)
    down = world.runner.run(world.pull_request(feature, head))
    assert down.returncode == 3, down.log
    assert down.outputs["verdict"] == "error"
    assert "error" in down.summary
    assert not (down.out_dir / "results.json").exists()  # the baseline is read first: no suite run was wasted
    gh.faults.clear()

    gh.faults.add("*", r"/issues/", "500", times=1000)
    run = world.runner.run(regressed(world.pull_request(feature, head)))
    assert run.returncode == 1, run.log  # the verdict's exit code, not the comment's failure
    assert run.outputs["verdict"] == "fail" and run.outputs["comment-url"] == ""
    assert "::warning" in run.stderr
    assert our_comments(gh) == []


def test_faults_during_promotion_retry_or_exit_3_with_previous_baseline_intact(world: World) -> None:
    gh = world.gh
    world.seed()
    main = world.checkout("main")
    first = world.commit(main, "change one")
    gh.faults.add("POST", r"/releases/\d+/assets$", "reset-after", times=1)
    ok = world.runner.run(world.push(main, first))
    assert ok.returncode == 0, ok.log
    assert gh.faults.pending() == []
    assert world.latest_sha() == first

    second = world.commit(main, "change two")
    before = world.manifest()
    gh.faults.add("POST", r"/releases/\d+/assets$", "500", times=1000)
    failed = world.runner.run(world.push(main, second))
    assert failed.returncode == 3, failed.log
    gh.faults.clear()
    assert world.manifest() == before and world.latest_sha() == first
    store = GitHubReleaseStore(gh.client(), tag=TAG, repo=main)
    assert store.latest().ref.snapshot.sha == first  # still loads and verifies


def test_two_concurrent_promotions_leave_one_consistent_manifest(world: World) -> None:
    gh = world.gh
    world.seed()
    older_checkout = world.checkout("older")
    older = world.commit(older_checkout, "merge one")
    newer_checkout = world.checkout("newer")
    git(newer_checkout, "pull", "-q", str(older_checkout), "main")
    newer = world.commit(newer_checkout, "merge two")
    runs: dict[str, StepRun] = {}

    def push(name: str, checkout: Path, sha: str) -> None:
        runs[name] = world.runner.run(world.push(checkout, sha))

    threads = [
        threading.Thread(target=push, args=("older", older_checkout, older)),
        threading.Thread(target=push, args=("newer", newer_checkout, newer)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert runs["older"].returncode == 0, runs["older"].log
    assert runs["newer"].returncode == 0, runs["newer"].log
    manifest = world.manifest()
    shas = [s["sha"] for s in manifest["snapshots"]]
    assert shas[-1] == newer and len(shas) == len(set(shas))
    store = GitHubReleaseStore(gh.client(), tag=TAG, repo=newer_checkout)
    for info in store.list().snapshots:
        assert store.load(info).results.run.suite == "quickstart"  # every entry is there and verifies


def sharded_push(world: World, main: Path, note: str) -> tuple[str, StepRun]:
    """A commit of ``main`` (as it stands) pushed and run through the sharded workflow."""
    sha = world.commit(main, note)
    job = world.push(main, sha)
    job.workflow = WORKFLOWS / "eval-gate-sharded.yml"
    return sha, world.runner.run(job)


def test_sharded_workflow_merges_the_shards_and_promotes(world: World) -> None:
    world.seed()
    sha, run = sharded_push(world, world.checkout("main"), "merge a change")
    assert run.returncode == 0, run.log
    assert run.outputs["verdict"] == "pass" and run.outputs["promoted"] == "true"
    merged = load_results(run.outputs["results-path"])
    assert merged.run.shard is None and len(merged.cases) == 240
    assert world.latest_sha() == sha


def test_a_partial_shard_reaches_the_gate_as_incomplete(world: World) -> None:
    """The shards' runs are cut by limits.max_duration_s (exit 3, their results written): the shard
    and merge jobs carry on, and the gate says `incomplete` (exit 3) instead of being skipped. (A
    limit lets in-flight attempts finish, so the cases are slow enough that some never start.)"""
    world.seed()
    main = world.checkout("main")
    config = main / "examples" / "quickstart" / "evalgate.yml"
    config.write_text(config.read_text(encoding="utf-8") + "limits: {max_duration_s: 2}\n", encoding="utf-8")
    bot = main / "examples" / "quickstart" / "bot.py"
    bot.write_text(
        bot.read_text(encoding="utf-8")
        + "\n\n_answer = answer\n\n\ndef answer(question: str) -> str:\n"
        + "    import time\n\n    time.sleep(0.3)\n"
        + "    return _answer(question)\n",
        encoding="utf-8",
    )
    _, run = sharded_push(world, main, "a case that hangs")
    assert run.returncode == 3, run.log
    assert run.outputs["verdict"] == "incomplete" and run.outputs["promoted"] == "false"
    merged = load_results(run.outputs["results-path"])
    assert not merged.run.is_complete and merged.run.completed_cases < 240
    assert world.latest_sha() == world.origin.main_sha


# What a python target can find: the environment, every string reachable from this process's
# objects (and what they reference), and the environment of each ancestor process. Token-shaped strings are recorded.
SPY = """
import gc
import json
import os
import re
from pathlib import Path

import bot

TOKEN = re.compile(r"gh[pousr]_[0-9A-Za-z]{20,}")


memory = set()
seen = set()
stack = gc.get_objects()
while stack:  # everything reachable from the collector's objects, untracked containers included
    obj = stack.pop()
    if id(obj) in seen:
        continue
    seen.add(id(obj))
    if isinstance(obj, (bytes, bytearray)):
        memory.update(TOKEN.findall(obj.decode("latin-1")))
    elif isinstance(obj, str):
        memory.update(TOKEN.findall(obj))
    else:
        stack.extend(gc.get_referents(obj))
ancestors = {}
pid = os.getppid()
while pid > 1:
    try:
        ancestors[pid] = sorted(set(TOKEN.findall(Path(f"/proc/{pid}/environ").read_bytes().decode("latin-1"))))
    except OSError as exc:
        ancestors[pid] = "unreadable: " + str(exc.strerror)
    pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
found = {
    "env": sorted(t for v in os.environ.values() for t in TOKEN.findall(v)),
    "memory": sorted(memory),
    "ancestors": ancestors,
}
Path(os.environ["SPY_OUT"]).write_text(json.dumps(found))


def answer(question):
    return bot.answer(question)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_code_under_test_never_sees_the_token(world: World) -> None:
    """A python target runs the code under test; it must find no GitHub token anywhere it can look,
    even with the token also under the gh CLI's name, as a runner's INPUT_ variable and under a
    name of the user's own. A token-shaped canary in its environment shows the search works. This
    is the defence inside one job, so it is tested where it matters most: a single job that holds
    a write token, which the workflow accepted (allow-write-token-with-suite: true)."""
    gh = world.gh
    world.seed()
    feature = world.checkout("feature")
    quickstart = feature / "examples" / "quickstart"
    (quickstart / "spy.py").write_text(SPY, encoding="utf-8")
    config = yaml.safe_load((quickstart / "evalgate.yml").read_text(encoding="utf-8"))
    config["target"]["python"] = "spy:answer"
    (quickstart / "evalgate.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    head = world.commit(feature, "a target that looks for the token")
    job = world.pull_request(feature, head)
    canary = "ghs_" + "0" * 36
    spy_out = world.tmp / "spy.json"
    job.extra_env |= {
        "SPY_OUT": str(spy_out),
        "SPY_CANARY": canary,
        "GH_TOKEN": gh.write_token,
        "INPUT_GITHUB-TOKEN": gh.write_token,
        "MY_PAT": f"token {gh.write_token}",
    }
    inputs = {"config": CONFIG, "allow-write-token-with-suite": "true"}
    run = world.runner.action(job, world.tmp / "spied", _temp(world, "spied"), inputs)
    assert run.returncode == 0, run.log
    assert run.outputs["verdict"] == "pass" and run.outputs["comment-url"]  # the gate itself had the token
    found = json.loads(spy_out.read_text(encoding="utf-8"))
    assert found["env"] == [canary]
    assert found["memory"] == [canary]
    lineage = found["ancestors"]
    assert any(isinstance(v, list) for v in lineage.values()), lineage  # some ancestor was readable
    for tokens in lineage.values():
        assert gh.write_token not in tokens and gh.read_token not in tokens, lineage


def test_tolerance_input_overrides_rate_metrics_and_keeps_the_baseline_comparable(world: World) -> None:
    """`tolerance: 0.03` changes how deltas are judged, not what scores mean: a normal verdict
    against the stored baseline (not `incompatible`), with compare's rule (rate metrics only)."""
    world.seed()
    feature = world.checkout("feature")
    head = world.commit(feature, "change")
    run = world.runner.run(world.pull_request(feature, head), tolerance="0.03")
    assert run.returncode == 0, run.log
    assert run.outputs["verdict"] == "pass" and run.outputs["baseline-sha"] == world.origin.main_sha
    gate = json.loads(Path(run.outputs["comparison-path"]).read_text(encoding="utf-8"))["gate"]
    assert {m["metric"]: m["tolerance"] for m in gate["metrics"]} == {"pass_rate": 0.03, "format_valid": 0.05}


# Appended to the PR's bot.py: proof that the pull request's code ran (it is imported by the target).
PR_CODE = """
import os
from pathlib import Path

Path(os.environ["PR_CODE_RAN"]).write_text("the pull request's bot.py ran with this job's token in reach")
"""
BOT = "examples/quickstart/bot.py"


def _temp(world: World, name: str) -> Path:
    temp = world.tmp / f"{name}-temp"
    temp.mkdir()
    return temp


def _pr_code_in_a_base_checkout(world: World, layout: str) -> tuple[Path, str]:
    """A pull_request_target job's workspace: the base branch checked out (HEAD is main), with the
    PR's code brought in one of the ways that passed the old opt-in's commit checks."""
    feature = world.checkout("feature")
    (feature / BOT).write_text((feature / BOT).read_text(encoding="utf-8") + PR_CODE, encoding="utf-8")
    head = world.commit(feature, "untrusted change")
    base = world.checkout(f"base-{layout}")
    quickstart = base / "examples" / "quickstart"
    if layout == "checkout-file":  # git checkout <head> -- file: the PR's file in the tree, HEAD unchanged
        git(base, "fetch", "-q", str(feature), "HEAD")
        git(base, "checkout", head, "--", BOT)
    elif layout == "git-apply":  # gh pr diff | git apply
        diff = subprocess.run(
            ["git", "diff", world.origin.main_sha, head], cwd=feature, capture_output=True, check=True
        ).stdout
        subprocess.run(["git", "apply"], cwd=base, input=diff, check=True)
    else:  # a clone under a folder the old scan skipped, or the PR's sources without .git
        pr = base / "node_modules" / "pr" if layout == "clone-in-node_modules" else base / "pr-sources"
        if layout == "clone-in-node_modules":
            git(world.tmp, "clone", "-q", str(feature), str(pr))
        else:
            shutil.copytree(feature, pr, ignore=shutil.ignore_patterns(".git"))
        config = yaml.safe_load((quickstart / "evalgate.yml").read_text(encoding="utf-8"))
        config["target"]["path"] = [str(pr / "examples" / "quickstart")]
        (quickstart / "evalgate.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    assert git(base, "rev-parse", "HEAD") == world.origin.main_sha
    return base, head


LAYOUTS = ["checkout-file", "git-apply", "clone-in-node_modules", "sources-without-git"]


def _target_run(world: World, base: Path, head: str, ran: Path, name: str, inputs: dict[str, str]) -> StepRun:
    """The action under ``pull_request_target`` for the PR ``head`` on a checkout of ``base``; the
    PR's code marks ``ran`` if it ever runs."""
    job = world.pull_request(base, head)
    job.event_name = "pull_request_target"
    job.extra_env["PR_CODE_RAN"] = str(ran)
    return world.runner.action(job, world.tmp / name, _temp(world, name), {"config": CONFIG, **inputs})


@pytest.mark.parametrize("layout", LAYOUTS)
def test_pull_request_target_never_runs_the_suite_even_with_the_removed_opt_in(world: World, layout: str) -> None:
    """Under pull_request_target with allow-pull-request-target: true, the old guard
    checked commits and ran the PR's code in each of these layouts. Now the input is refused with
    what to do instead, and without it the suite is refused outright: nothing runs, nothing is asked
    of the API."""
    gh = world.gh
    world.seed()
    base, head = _pr_code_in_a_base_checkout(world, layout)
    ran = world.tmp / "pr-code-ran"

    def target_run(name: str, inputs: dict[str, str]) -> StepRun:
        return _target_run(world, base, head, ran, name, inputs)

    requests_before = len(gh.requests)
    opted_in = target_run("opted-in", {"allow-pull-request-target": "true"})
    assert opted_in.returncode == 2, opted_in.log
    assert "allow-pull-request-target ('true') was removed" in opted_in.stderr
    assert "workflow_run job with mode: comment" in opted_in.stderr
    assert "Migrating from allow-pull-request-target" in opted_in.stderr
    assert opted_in.outputs["verdict"] == "error" and "workflow_run" in opted_in.summary
    plain = target_run("plain", {})
    assert plain.returncode == 2, plain.log
    assert "pull_request_target: evalgate does not run the suite (smoke)" in plain.stderr
    assert "only mode: comment runs" in plain.stderr and "workflow_run" in plain.stderr
    assert not ran.exists(), ran.read_text()
    assert len(gh.requests) == requests_before  # no store read, no comment
    assert not (base / opted_in.out_dir / "results.json").exists()


def test_pull_request_target_refuses_every_mode_that_runs_the_suite_and_still_posts_a_stored_report(
    world: World,
) -> None:
    """run, smoke, full and reset are refused like auto; the removed input is refused in mode
    comment too (it must not pass silently anywhere). mode: comment itself still posts there."""
    gh = world.gh
    world.seed()
    base, head = _pr_code_in_a_base_checkout(world, "checkout-file")
    ran = world.tmp / "pr-code-ran"

    def target_run(name: str, inputs: dict[str, str]) -> StepRun:
        return _target_run(world, base, head, ran, name, inputs)

    for mode in ("run", "smoke", "full", "reset"):
        refused = target_run(mode, {"mode": mode, "reason": "try it"})
        assert refused.returncode == 2, refused.log
        assert f"does not run the suite ({mode})" in refused.stderr
    assert not ran.exists()

    # A report gated from a results file (no suite run), stored as the fork flow stores it ...
    gated_job = world.pull_request(base, head)
    gated = world.runner.action(
        gated_job,
        world.tmp / "gated",
        _temp(world, "gated"),
        {"config": CONFIG, "results": str(world.origin.baseline_results), "comment": "off"},
    )
    assert gated.returncode == 0, gated.log
    report = {"mode": "comment", "report-dir": str(base / gated.out_dir), "pr-number": str(PR), "gate-id": "quickstart"}
    with_old_input = target_run("comment-old-input", report | {"allow-pull-request-target": "true"})
    assert with_old_input.returncode == 2 and "was removed" in with_old_input.stderr
    assert our_comments(gh) == []
    # ... is posted by mode: comment under pull_request_target.
    posted = target_run("comment", report)
    assert posted.returncode == 0, posted.log
    assert posted.outputs["comment-url"] and len(our_comments(gh)) == 1


def test_a_reset_dispatched_on_a_side_branch_is_refused(world: World) -> None:
    """A reset blesses its run as the default branch's baseline: only on the default branch."""
    world.seed()
    side = world.checkout("side")
    sha = world.commit(side, "experiment")
    job = world.push(side, sha)
    job.event_name, job.ref, job.dispatch_inputs = "workflow_dispatch", "refs/heads/side", {"reason": "try it"}
    job.payload = {"inputs": job.dispatch_inputs, "ref": job.ref, "repository": job.payload["repository"]}
    requests_before = len(world.gh.requests)
    run = world.runner.run(job)
    assert run.returncode == 2, run.log
    assert "default branch main" in run.stderr and "refs/heads/side" in run.stderr
    assert run.outputs["verdict"] == "error"
    assert len(world.gh.requests) == requests_before  # the store was not even read
    assert world.latest_sha() == world.origin.main_sha


CHECKOUT_EVALS = "raise RuntimeError('the checkout's own evals package was imported')\n"
CHECKOUT_YAML = "import os\nfrom pathlib import Path\n\nPath(os.environ['YAML_MARKER']).write_text(str(os.getpid()))\n"


def test_a_checkout_with_its_own_evals_package_and_yaml_module_does_not_replace_evalgates(world: World) -> None:
    """The action runs evalgate with the checkout (the working folder) off sys.path: a repository's
    own ``evals/`` package or ``yaml.py`` is never imported by the gate, which holds the token."""
    world.seed()
    feature = world.checkout("feature")
    (feature / "evals").mkdir()
    (feature / "evals" / "__init__.py").write_text(CHECKOUT_EVALS, encoding="utf-8")
    (feature / "yaml.py").write_text(CHECKOUT_YAML, encoding="utf-8")
    head = world.commit(feature, "a repository with an evals package and a yaml.py")
    job = world.pull_request(feature, head)
    marker = world.tmp / "yaml-imported"
    job.extra_env["YAML_MARKER"] = str(marker)
    run = world.runner.run(job)
    assert run.returncode == 0, run.log
    assert run.outputs["verdict"] == "pass"
    assert not marker.exists(), f"the checkout's yaml.py ran in process {marker.read_text()}"
    # The gate said which variables it kept from the suite (names, never values).
    assert "kept out of the suite's environment: GITHUB_TOKEN" in run.stderr


def _gate_locally(config: Path, out_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evals", "gate", "--config", str(config), "--out-dir", str(out_dir)]
    return subprocess.run(command, cwd=config.parent, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_corrupt_store_fails_before_the_suite_runs(tmp_path: Path) -> None:
    """The baselines are read before the candidate is run: a store with no readable manifest is
    exit 3, and the target (which leaves a mark when imported) never ran."""
    (tmp_path / "marker.py").write_text(
        "import os\nfrom pathlib import Path\n\nPath(os.environ['MARKER']).touch()\n\n\n"
        "def answer(question):\n    return question\n",
        encoding="utf-8",
    )
    config = write_suite(tmp_path, echo_cases(4), target={"python": "marker:answer"}, baseline={"path": "store"})
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / manifest_name(1)).write_bytes(b"{not a manifest")
    marker = tmp_path / "target-ran"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | {"MARKER": str(marker)}
    broken = _gate_locally(config, tmp_path / "out", env)
    assert broken.returncode == 3, broken.stdout + broken.stderr
    assert "no manifest is readable" in broken.stderr
    assert not marker.exists()

    # The same suite with a sound (empty) store runs its target: the mark is a real signal.
    shutil.rmtree(tmp_path / "store")
    sound = _gate_locally(config, tmp_path / "out", env)
    assert sound.returncode == 0, sound.stdout + sound.stderr
    assert marker.exists()


def test_a_suite_run_that_cannot_start_is_exit_2_with_its_message(tmp_path: Path) -> None:
    """The suite runs in a child process; its one-line error reaches the gate's own message."""
    config = write_suite(tmp_path, echo_cases(2), target={"python": "no_such_module:answer"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    done = _gate_locally(config, tmp_path / "out", env)
    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "the suite run stopped on a usage error" in last and "no_such_module" in last


def test_reset_run_directly_also_keeps_the_token_from_the_suite(tmp_path: Path) -> None:
    """`evalgate reset` typed in a user's own `run:` step (not the action's exec): it re-executes
    itself without the token too, and says which variables it kept from the suite, never their values."""
    (tmp_path / "look.py").write_text(
        "import json, os\nfrom pathlib import Path\n\n\ndef answer(question):\n"
        "    token = Path(os.environ['SECRET_FILE']).read_text()\n"
        "    seen = sorted(k for k, v in os.environ.items() if 'TOKEN' in k or token in v)\n"
        "    Path(os.environ['LOOK_OUT']).write_text(json.dumps(seen))\n    return question\n",
        encoding="utf-8",
    )
    config = write_suite(tmp_path, echo_cases(2), target={"python": "look:answer"}, baseline={"path": "store"})
    token = "ghs_" + "7" * 36
    look = tmp_path / "seen.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))}
    (tmp_path / "token.txt").write_text(token, encoding="utf-8")  # for the target's search only
    env |= {"GITHUB_TOKEN": token, "PLANTED": token, "LOOK_OUT": str(look), "SECRET_FILE": str(tmp_path / "token.txt")}
    command = [sys.executable, "-m", "evals", "reset", "--reason", "first", "--sha", "a" * 40, "--config", str(config)]
    done = subprocess.run(
        [*command, "--out-dir", str(tmp_path / "out")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kept out of the suite's environment: GITHUB_TOKEN, PLANTED" in done.stderr
    assert token not in done.stdout + done.stderr
    assert json.loads(look.read_text(encoding="utf-8")) == []


# ------------------------------------------------------------------------------------ the response cache

# Appended to the quickstart's bot on a pull request: at import (before the run reads the cache) it
# writes a forged, well-formed entry for every case of the suite under the very keys its own run
# uses (the code's identity included: it is the PR's code that forges).
FORGER = """

from evals.run.cache import ResponseCache as _Cache
from evals.run.targets.base import case_payload as _payload
from evals.run.targets.identity import python_code as _code
from evals.suite.cases import load_cases as _load_cases
from evals.suite.loading import load_config as _load_config

_config = _load_config(__import__("pathlib").Path(__file__).with_name("evalgate.yml"))
_cache = _Cache(_config.resolve(_config.cache.dir), 1 << 30, _config.cache.key)
for _case in _load_cases(_config):
    _target = {"python": "bot:answer", "path": ["."], "code": _code(_config.root)}
    _key = _cache.key("python", {"target": _target, "case": _payload(_case)})
    _cache.put(_key, {"output": "FINAL ANSWER: forged", "latency_ms": 1.0})
_cache.close()  # written: entries are kept in memory until then
"""


def _with_cache(checkout: Path) -> None:
    config_path = checkout / "examples" / "quickstart" / "evalgate.yml"
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    config["cache"] = {"targets": "python", "key": "v1"}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def test_a_pull_requests_cache_never_reaches_a_run_on_main(world: World) -> None:
    """The response cache through eval-gate.yml's actions/cache step: a push to main saves the run
    job's entries; a PR restores them (the default branch's scope) and its code forges entries in
    the folder, which its run saves in the PR's scope; the next push to main restores main's cache
    only — every answer from the cache, none forged."""
    world.seed()
    main = world.checkout("main")
    _with_cache(main)
    first = world.runner.run(world.push(main, world.commit(main, "cache the suite's answers")))
    assert first.returncode == 0, first.log
    assert [key for ref, key, _ in world.runner.caches if ref == "refs/heads/main"]
    shutil.rmtree(main / "examples" / "quickstart" / ".evalgate")  # the next job is a fresh runner

    feature = world.checkout("feature")
    _with_cache(feature)
    with (feature / "examples" / "quickstart" / "bot.py").open("a", encoding="utf-8") as bot:
        bot.write(FORGER)
    pr = world.runner.run(world.pull_request(feature, world.commit(feature, "forge the cache")))
    forged = load_results(pr.outputs["results-path"])
    assert all(a.output == "FINAL ANSWER: forged" for c in forged.cases for a in c.attempts)  # it worked there
    assert pr.outputs["verdict"] == "fail", pr.log
    assert [key for ref, key, _ in world.runner.caches if ref == f"refs/pull/{PR}/merge"]  # and was saved

    again = world.runner.run(world.push(main, world.commit(main, "nothing that changes an answer")))
    assert again.returncode == 0 and again.outputs["verdict"] == "pass", again.log
    results = load_results(again.outputs["results-path"])
    attempts = [a for c in results.cases for a in c.attempts]
    assert len(attempts) == 240 and all(a.cached for a in attempts)  # main's own entries, restored
    assert not any("forged" in str(a.output) for a in attempts)


# ------------------------------------------------------------------------------------------ the docs


DOC = ROOT / "docs" / "github-action.md"
# What differs between this repository's workflows and the copies users paste from the docs.
TO_DOCS = [
    ("uses: $/.", "uses: evalgate/evalgate@<full-commit-sha> # v1"),
    ("examples/quickstart/evalgate.yml", "evalgate.yml"),
    # In a repository of your own, the more-evidence workflow gates your one config (see its header).
    ("examples/quickstart/evalgate-more-evidence.yml", "evalgate.yml"),
    ("examples/quickstart/.evalgate/cache", ".evalgate/cache"),
    (
        "EVALGATE_PACKAGE: . # this repository is evalgate",
        'EVALGATE_PACKAGE: "evalgate-action @ git+https://github.com/evalgate/evalgate@<full-commit-sha>"',
    ),
    ("          baseline-store: github-release\n", ""),
]


def doc_workflows(doc: Path = DOC) -> dict[str, str]:
    """The YAML blocks of a doc (docs/github-action.md by default) that start with
    ``# .github/workflows/<name>``."""
    blocks = re.findall(r"```yaml\n(# \.github/workflows/(\S+)\n.*?)```", doc.read_text(encoding="utf-8"), re.S)
    return {name: text for text, name in blocks}


def as_in_docs(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    for ours, theirs in TO_DOCS:
        text = text.replace(ours, theirs)
    return text


def test_the_docs_show_the_workflows_the_tests_run() -> None:
    docs = doc_workflows()
    for path in sorted(WORKFLOWS.glob("eval-gate*.yml")):
        assert path.name in docs, f"docs/github-action.md does not show {path.name}"
        assert yaml.safe_load(docs[path.name]) == yaml.safe_load(as_in_docs(path)), f"the docs' {path.name} differs"
    assert "eval-gate-byo.yml" in docs  # exercised by the next test
    # The README shows the main workflow; it must be the one the tests run too.
    readme = doc_workflows(ROOT / "README.md")
    assert set(readme) == {"eval-gate.yml"}
    assert yaml.safe_load(readme["eval-gate.yml"]) == yaml.safe_load(as_in_docs(WORKFLOWS / "eval-gate.yml"))


def test_bring_your_own_results_from_the_docs(world: World) -> None:
    """The docs' bring-your-own workflow: pytest's JUnit XML, imported and gated with mode: compare,
    no evalgate.yml. The first push seeds the baseline; a PR that breaks a third of the tests fails."""
    workflow = world.tmp / "eval-gate-byo.yml"
    workflow.write_text(doc_workflows()["eval-gate-byo.yml"].replace(TO_DOCS[0][1], TO_DOCS[0][0]), encoding="utf-8")
    main = world.checkout("byo")
    (main / "eval_tests").mkdir()
    (main / "eval_tests" / "test_answers.py").write_text(
        "import os\n\nimport pytest\n\n\n"
        "@pytest.mark.parametrize('n', range(40))\n"
        "def test_answer(n):\n"
        "    assert not (os.environ.get('BYO_REGRESS') == '1' and n % 3 == 0)\n",
        encoding="utf-8",
    )
    base = world.commit(main, "eval tests")
    push = world.push(main, base)
    push.workflow = workflow
    seeded = world.runner.run(push)
    assert seeded.returncode == 0, seeded.log
    assert seeded.outputs["verdict"] == "no-baseline" and seeded.outputs["promoted"] == "true"

    head = world.commit(main, "a change that breaks a third of the answers")
    pr = world.pull_request(main, head, base=base)
    pr.workflow = workflow
    pr.extra_env["BYO_REGRESS"] = "1"
    run = world.runner.run(pr)
    assert run.returncode == 1, run.log
    assert run.outputs["verdict"] == "fail" and run.outputs["baseline-sha"] == base
    assert len(our_comments(world.gh)) == 1


def test_dispatch_without_a_reason_is_a_usage_error(world: World) -> None:
    main = world.checkout("main")
    job = world.push(main, world.origin.main_sha)
    job.event_name, job.payload = "workflow_dispatch", {"inputs": {}, "repository": job.payload["repository"]}
    run = world.runner.run(job)
    assert run.returncode == 2, run.log
    assert "reason" in run.stderr
    assert world.gh.assets(TAG) == []


def test_the_readme_command_against_the_committed_quickstart_baseline(tmp_path: Path) -> None:
    """Outside Actions: the local store in examples/quickstart/baselines, read only."""
    store = ROOT / "examples" / "quickstart" / "baselines"
    before = sorted((p.name, p.read_bytes()) for p in store.iterdir())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "QUICKSTART_"))}
    command = [sys.executable, "-m", "evals", "gate", "--config", CONFIG]

    def gate(out: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, "--out-dir", str(tmp_path / out)],
            cwd=ROOT,
            env=env | extra,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    same = gate("same")
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.startswith("evalgate gate: pass") and str(tmp_path / "same" / "report.md") in same.stdout
    broken = gate("ko", QUICKSTART_REGRESS="ko")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert broken.stdout.startswith("evalgate gate: fail") and "language=ko" in broken.stdout.splitlines()[0]
    assert sorted((p.name, p.read_bytes()) for p in store.iterdir()) == before


def test_baseline_command_lists_and_fetches_the_committed_store(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}

    def baseline(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "evals", "baseline", *args]
        return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)

    listed = baseline("list", "--config", CONFIG)
    assert listed.returncode == 0, listed.stderr
    assert "blessed" in listed.stdout and "initial baseline" in listed.stdout
    fetched = baseline("fetch", "--config", CONFIG, "-o", str(tmp_path / "b.json"))
    assert fetched.returncode == 0, fetched.stderr
    assert len(load_results(tmp_path / "b.json").cases) == 240
    missing = baseline("show", "--config", CONFIG, "0000000")
    assert missing.returncode == 2 and "no snapshot of commit 0000000" in missing.stderr


# ------------------------------------------------------------------------------------------ activity


def detect_for(tmp_path: Path, event: str, payload: dict[str, Any], mode: str = "auto", **kw: Any) -> Any:
    from evals.github.activity import detect

    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REF": payload.get("ref", "refs/pull/3/merge"),
        "GITHUB_SHA": "a" * 40,
        "GITHUB_REPOSITORY": "octo/evals",
    }
    return detect(mode, env=env, **kw)


REPO = {"full_name": "octo/evals", "default_branch": "trunk"}


def test_activity_follows_the_event_and_the_default_branch(tmp_path: Path) -> None:
    from evals.common.errors import UsageError

    on_trunk = detect_for(tmp_path, "push", {"ref": "refs/heads/trunk", "repository": REPO})
    assert (on_trunk.kind, on_trunk.promote) == ("full", True)
    on_branch = detect_for(tmp_path, "push", {"ref": "refs/heads/main", "repository": REPO})
    assert (on_branch.kind, on_branch.promote) == ("smoke", False)  # main is not this repo's default branch
    nightly = detect_for(tmp_path, "schedule", {"repository": REPO})
    assert (nightly.kind, nightly.promote) == ("full", False)
    explicit = detect_for(tmp_path, "push", {"ref": "refs/heads/trunk", "repository": REPO}, mode="smoke")
    assert (explicit.kind, explicit.promote) == ("smoke", False)
    pr = {
        "pull_request": {
            "number": 3,
            "head": {"sha": "b" * 40, "repo": None},  # a deleted fork
            "base": {"sha": "c" * 40, "repo": {"full_name": "octo/evals"}},
        },
        "repository": REPO,
    }
    gated = detect_for(tmp_path, "pull_request", pr)
    assert (gated.kind, gated.pr_number, gated.fork, gated.candidate_sha) == ("smoke", 3, True, "b" * 40)
    with pytest.raises(UsageError, match="reason"):
        detect_for(tmp_path, "workflow_dispatch", {"repository": REPO}, reason="  ")
    with pytest.raises(UsageError, match="issues"):
        detect_for(tmp_path, "issues", {"repository": REPO})


# ------------------------------------------------------------------------------- hardening (trust boundaries)


IMPORT_MARK = """
import os
from pathlib import Path

# Imported wherever this suite's code runs: records which job (runner temp folder) that was.
with open(os.environ["IMPORT_MARKS"], "a", encoding="utf-8") as marks:
    marks.write(os.environ.get("RUNNER_TEMP", "?") + "\\n")
"""


def test_the_gate_job_runs_no_code_of_the_repository_and_the_suite_job_gets_no_token(world: World) -> None:
    """The shipped two-job layout: the suite's code is imported in the `run` job only (which is
    given no token and makes no API call); the `gate-pr` job gates its results artifact."""
    world.seed()
    feature = world.checkout("feature")
    bot = feature / "examples" / "quickstart" / "bot.py"
    bot.write_text(bot.read_text(encoding="utf-8") + IMPORT_MARK, encoding="utf-8")
    head = world.commit(feature, "a bot that records where it is imported")
    job = world.pull_request(feature, head)
    marks = world.tmp / "import-marks"
    job.extra_env["IMPORT_MARKS"] = str(marks)
    gate = world.runner.run(job)
    assert gate.returncode == 0, gate.log
    suite_run, gate_run = world.runner.action_runs
    assert gate_run is gate and gate.outputs["verdict"] == "pass" and gate.outputs["comment-url"]
    assert suite_run.returncode == 0 and "evalgate run: success" in suite_run.stdout
    temps = set(marks.read_text(encoding="utf-8").split())
    assert temps == {str(suite_run.out_dir.parent)}, temps  # only the run job imported the suite's code
    assert "::warning" not in suite_run.log  # no write token, no persisted credential there
    assert load_results(gate.outputs["results-path"]).run.subset  # the PR's smoke subset was gated


def test_the_action_refuses_install_in_a_job_that_gates_a_results_file(tmp_path: Path) -> None:
    install = next(step for step in ACTION["runs"]["steps"] if step.get("id") == "install")
    script = tmp_path / "install.sh"
    script.write_text(install["run"], encoding="utf-8")
    env = {"PATH": os.environ["PATH"], "EXTRA_INSTALL": "-r requirements.txt", "EVALGATE_RESULTS": "results.json"}
    # Every variable of the step's env: is set (to "" for an input not given), as the runner does.
    env |= {"BASE_PYTHON": "/nonexistent/python", "RUNNER_TEMP": str(tmp_path), "EVALGATE_EVIDENCE_SIDE": ""}
    assert set(install["env"]) <= set(env)
    done = subprocess.run([*BASH, str(script)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "gates a results file" in done.stderr
    assert not (tmp_path / "evalgate-venv").exists()  # refused before anything was installed
    # A side job of more evidence gates nothing: it runs the suite's batches, and may install for them.
    side = subprocess.run(
        [*BASH, str(script)], env={**env, "EVALGATE_EVIDENCE_SIDE": "candidate"}, capture_output=True, text=True
    )
    assert "gates a results file" not in side.stderr


# Appended to the PR's bot.py: what the suite's code finds of the credential actions/checkout persisted.
CREDENTIAL_SPY = """
import os
import subprocess
from pathlib import Path

found = subprocess.run(["git", "config", "--get-regexp", "extraheader"], capture_output=True, text=True).stdout
Path(os.environ["SPY_OUT"]).write_text(found)
"""
PERSISTED = "AUTHORIZATION: basic eC1hY2Nlc3M6c2VjcmV0"  # what actions/checkout leaves in .git/config by default


def test_a_single_job_with_a_write_token_refuses_to_run_the_suite_unless_the_workflow_accepts_it(
    world: World,
) -> None:
    """A single job that runs the suite with a token that can write was warned
    about, then the suite ran and reached the token (here: the credential checkout persisted).
    Now it is refused (exit 2) before the suite or the store, unless the workflow sets
    allow-write-token-with-suite: true, and then the step summary says what the suite could reach."""
    gh = world.gh
    world.seed()
    feature = world.checkout("feature")
    (feature / BOT).write_text((feature / BOT).read_text(encoding="utf-8") + CREDENTIAL_SPY, encoding="utf-8")
    head = world.commit(feature, "a bot that looks for a credential")
    git(feature, "config", "http.https://github.com/.extraheader", PERSISTED)
    spy = world.tmp / "spy.txt"

    def single_job(name: str, token: str, **inputs: str) -> StepRun:
        job = world.pull_request(feature, head)
        job.token = token
        job.extra_env["SPY_OUT"] = str(spy)
        return world.runner.action(job, world.tmp / name, _temp(world, name), {"config": CONFIG, **inputs})

    requests_before = len(gh.requests)
    refused = single_job("write-token", gh.write_token)
    assert refused.returncode == 2, refused.log
    assert "this job's token can write to octo/evals" in refused.stderr
    assert 'github-token: "" (mode: run)' in refused.stderr and "allow-write-token-with-suite: true" in refused.stderr
    assert refused.outputs["verdict"] == "error" and "allow-write-token-with-suite" in refused.summary
    assert not spy.exists(), "the suite ran"
    assert [r.path for r in gh.requests[requests_before:]] == [f"/api/v3/repos/{gh.repo}"]  # only the permissions
    misspelt = single_job("misspelt", gh.write_token, **{"allow-write-token-with-suite": "yes"})
    assert misspelt.returncode == 2 and "use true or false" in misspelt.stderr
    assert not spy.exists()

    accepted = single_job("accepted", gh.write_token, **{"allow-write-token-with-suite": "true"})
    assert accepted.returncode == 0, accepted.log
    assert accepted.outputs["verdict"] == "pass"
    assert "the suite's code could reach that token" in accepted.summary and "::warning" in accepted.stderr
    assert "persisted git credential" in accepted.stderr
    assert "eC1hY2Nlc3M6c2VjcmV0" in spy.read_text(encoding="utf-8")  # what the refusal keeps from the PR's code
    spy.unlink()

    reader = single_job("read-token", gh.read_token)
    assert reader.returncode == 0, reader.log
    assert "token can write" not in reader.log and "could reach" not in reader.summary
    assert "persisted git credential" in reader.stderr and "persist-credentials: false" in reader.stderr
    assert "eC1hY2Nlc3M6c2VjcmV0" not in reader.log

    # GitHub's permissions for an installation token are no evidence (push: false for one that can
    # write): only its 403 on a harmless write proves a token read-only, its 422 shows one that may write.
    gh.repo_permissions = "push-false"
    spy.unlink()
    unproven = single_job("push-false", gh.write_token)
    assert unproven.returncode == 2, unproven.log
    assert "this job's token can write to octo/evals (POST /repos/octo/evals/git/refs" in unproven.stderr
    assert not spy.exists(), "the suite ran"
    proven = single_job("read-token-probed", gh.read_token)
    assert proven.returncode == 0, proven.log
    assert "token can write" not in proven.log and "could reach" not in proven.summary


def test_a_pull_request_s_history_url_is_not_used_by_the_gate_job(world: World) -> None:
    """The gate job (a results file, a token that can comment or write) used the PR's config's
    PostgreSQL history.url, and sent the history's rows (the cases among them) to a server the PR
    named. Now that URL is not used there, with a warning; the gate itself goes on. A server here
    is a listening socket that counts the connections it gets."""
    import socket

    world.seed()
    feature = world.checkout("feature")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    config_file = feature / CONFIG
    config = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    config["history"] = {"url": f"postgresql://pr:secret@127.0.0.1:{port}/rows?connect_timeout=2"}
    config_file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    head = world.commit(feature, "the history goes to my server")
    job = world.pull_request(feature, head)
    given = {"config": CONFIG, "results": str(world.origin.baseline_results)}
    world.gh.repo_permissions = "push-false"  # GitHub's answer for GITHUB_TOKEN is no proof
    run = world.runner.action(job, world.tmp / "gate", _temp(world, "gate"), given)
    connections = 0
    try:
        while True:
            listener.accept()[0].close()
            connections += 1
    except TimeoutError:
        pass
    finally:
        listener.close()
    assert run.returncode == 0 and run.outputs["verdict"] == "pass", run.log
    assert connections == 0, run.log
    assert "comes from the pull request's config and is not used in this job" in run.stderr
    assert "secret" not in run.log


def test_evalgate_github_login_is_checked_before_a_comment_is_edited(world: World) -> None:
    """EVALGATE_GITHUB_LOGIN was trusted as given, so naming someone else made
    evalgate edit their comment that carried the marker. An installation token (GET /user: 403)
    comments as a bot, so a person's login is refused; a personal token comments as the login
    GET /user returns, so any other is refused. The comment is left alone, the verdict stands;
    mode: comment, whose only job is the comment, exits 2."""
    gh = world.gh
    world.seed()
    feature = world.checkout("feature")
    head = world.commit(feature, "change")
    text = sticky_body("my review notes, pasted with evalgate's marker", "quickstart")[0]
    persons = gh.add_comment(PR, text, login="octo-user")
    others = gh.add_comment(PR, text, login="someone-else")

    def gate(name: str, token: str, login: str, **inputs: str) -> StepRun:
        job = world.pull_request(feature, head)
        job.token = token
        job.extra_env["EVALGATE_GITHUB_LOGIN"] = login
        given = {"config": CONFIG, "results": str(world.origin.baseline_results), **inputs}
        return world.runner.action(job, world.tmp / name, _temp(world, name), given)

    as_person = gate("app-as-person", gh.write_token, "octo-user")
    assert as_person.returncode == 0, as_person.log
    assert as_person.outputs["verdict"] == "pass" and as_person.outputs["comment-url"] == ""
    assert "::warning" in as_person.stderr and "EVALGATE_GITHUB_LOGIN is 'octo-user'" in as_person.stderr
    assert "installation token" in as_person.stderr
    as_other = gate("pat-as-other", gh.user_token, "someone-else")
    assert as_other.returncode == 0 and as_other.outputs["verdict"] == "pass", as_other.log
    assert "this token is 'octo-user''s" in as_other.stderr
    report = {
        "mode": "comment",
        "report-dir": str(feature / as_other.out_dir),
        "pr-number": str(PR),
        "gate-id": "quickstart",
    }
    stored = gate("comment-as-person", gh.write_token, "octo-user", **report)
    assert stored.returncode == 2 and "EVALGATE_GITHUB_LOGIN is 'octo-user'" in stored.stderr, stored.log
    by_id = {c["id"]: c for c in gh.comments(PR)}
    assert by_id[persons["id"]]["body"] == text and by_id[others["id"]]["body"] == text
    assert len(by_id) == 2 and not [r for r in gh.requests if "/issues/" in r.path and r.method != "GET"]

    # The token's own identity named: octo-user's personal token may update octo-user's comment.
    own = gate("pat-as-itself", gh.user_token, "octo-user")
    assert own.returncode == 0 and own.outputs["comment-url"], own.log
    assert gh.comments(PR)[0]["body"] != text and gh.comments(PR)[1]["body"] == text


def test_a_job_that_installs_the_suites_dependencies_is_checked_before_they_are_installed(world: World) -> None:
    """Installing the `install` input runs the repository's code (its build) into evalgate's
    virtualenv, where a .pth file would run at the start of the Gate step, with the token, before
    any refusal there. So the refusals come in a step before that install: a token that can write,
    pull_request_target, a mode that runs no suite."""
    gh = world.gh
    world.seed()
    feature = world.checkout("feature")
    head = world.commit(feature, "change")

    def job_with_install(name: str, token: str, event: str = "pull_request", **inputs: str) -> StepRun:
        job = world.pull_request(feature, head)
        job.token, job.event_name = token, event
        given = {"config": CONFIG, "install": "-r requirements.txt", **inputs}
        return world.runner.action(job, world.tmp / name, _temp(world, name), given)

    writer = job_with_install("write-token", gh.write_token)
    assert writer.returncode == 2 and "token can write to octo/evals" in writer.stderr, writer.log
    assert writer.steps == ["preflight"]  # stopped before the suite's dependencies were installed
    target = job_with_install("target", gh.read_token, event="pull_request_target")
    assert target.returncode == 2 and "pull_request_target" in target.stderr, target.log
    assert target.steps == ["preflight"]
    comment = job_with_install("comment", gh.write_token, mode="comment", **{"report-dir": str(world.tmp)})
    assert comment.returncode == 2 and "install is for the job that runs the suite" in comment.stderr
    assert comment.steps == ["preflight"]

    reader = job_with_install("read-token", gh.read_token)
    assert reader.returncode == 0 and reader.outputs["verdict"] == "pass", reader.log
    assert reader.steps == ["preflight", "install-suite", "gate"]
    plain = world.runner.action(world.pull_request(feature, head), world.tmp / "plain", _temp(world, "plain"), {})
    assert plain.steps == ["gate"]  # no install input: no check step of its own


def test_a_token_that_cannot_see_the_repository_is_exit_3_not_no_baseline(world: World) -> None:
    """A 404 on the release lookup is "no baseline yet" only when the repository itself is visible."""
    world.seed()
    feature = world.checkout("feature")
    job = regressed(world.pull_request(feature, world.commit(feature, "change")))
    job.token = world.gh.stranger_token
    run = world.runner.action(job, world.tmp / "stranger", _temp(world, "stranger"), {"config": CONFIG})
    assert run.returncode == 3, run.log
    assert "not visible with this token" in run.stderr and run.outputs["verdict"] == "error"
    assert not (feature / run.out_dir / "results.json").exists()  # decided before the suite ran


INJECTED = "ko\n::add-mask::leak\n::stop-commands::halt\n::warning::forged"


def test_no_log_line_starts_a_workflow_command_evalgate_did_not_mean(world: World) -> None:
    """A slice value with line breaks, in a regressed slice: it reaches the verdict line, the
    report's annotations and the step summary, but no line of the log starts a command of its own."""
    raw = json.loads(world.origin.baseline_results.read_text(encoding="utf-8"))
    for case in raw["cases"]:
        if case["slices"].get("language") == "ko":
            case["slices"]["language"] = INJECTED
    baseline = world.tmp / "baseline-injected.json"
    baseline.write_text(json.dumps(raw), encoding="utf-8")
    for case in raw["cases"]:
        if case["slices"].get("language") == INJECTED:
            for attempt in case["attempts"]:
                attempt["passed"], attempt["score"] = False, 0.0
    candidate = world.tmp / "candidate-injected.json"
    candidate.write_text(json.dumps(raw), encoding="utf-8")
    store = GitHubReleaseStore(world.gh.client(), tag=TAG, repo=world.origin.path)
    store.promote(load_results(baseline), sha=world.origin.main_sha, verdict="seed", blessed=True)

    feature = world.checkout("feature")
    job = world.pull_request(feature, world.commit(feature, "change"))
    run = world.runner.action(
        job, world.tmp / "injected", _temp(world, "injected"), {"config": CONFIG, "results": str(candidate)}
    )
    assert run.returncode == 1, run.log
    assert "add-mask" in run.log  # the value is shown ...
    commands = [line for line in run.log.splitlines() if line.lstrip().startswith(("::", "##["))]
    assert commands, "evalgate's own annotations are missing"
    for line in commands:  # ... but every command line is one evalgate meant
        assert line.startswith(("::error ", "::warning ", "::notice ", "::warning title=evalgate::")), line


# ------------------------------------------------------------------------------------------ more evidence


MORE_EVIDENCE = WORKFLOWS / "eval-gate-more-evidence.yml"
MORE_EVIDENCE_CONFIG = "examples/quickstart/evalgate-more-evidence.yml"


# The PR's bot: a new version whose Spanish answers are wrong at random, attempt by attempt, as a
# sampled model's (FLAKY_SPANISH of tests/e2e/test_more_evidence_quickstart.py, at a rate the first
# look cannot decide on): a deterministic bot answers a re-run as it did at first, and more
# evidence stops after one batch, saying so.
SPANISH_ERROR_RATE = 0.25


def _break_spanish(checkout: Path) -> None:
    from test_more_evidence_quickstart import flaky_spanish

    with (checkout / BOT).open("a", encoding="utf-8") as fh:
        fh.write(flaky_spanish(checkout.parent / f"{checkout.name}-calls", SPANISH_ERROR_RATE))


# The PR's bot, at import, plants a post-checkout hook in its checkout (the adversarial review's
# reproduction): a worktree of the base commit made in that checkout afterwards answers "nope" to every
# case, and an honest fail became inconclusive.
NOPE_HOOK = "#!/bin/sh\nprintf 'def answer(question):\\n    return \"nope\"\\n' > examples/quickstart/bot.py\n"
PLANT_HOOK = """

import pathlib as _pathlib

_hook = _pathlib.Path(".git/hooks/post-checkout")
if _hook.parent.is_dir():
    _hook.write_text(HOOK)
    _hook.chmod(0o755)
""".replace("HOOK", repr(NOPE_HOOK))


def _more_evidence_pr(world: World, name: str) -> tuple[Path, str]:
    """A PR with the bot of ``_break_spanish`` and gate.more_evidence turned on in the suite's config."""
    feature = world.checkout(name)
    _break_spanish(feature)
    config_path = feature / CONFIG
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    config["gate"] = {"more_evidence": {"max_batches": 10}}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return feature, world.commit(feature, "a new bot version; more evidence on")


def test_the_two_job_layouts_gate_job_runs_no_batch_and_says_why(world: World) -> None:
    """Batches run the suite's code; the shipped gate job gates a results file with a token that
    can comment and runs no code of the repository. More evidence does not run there, the first
    look keeps its whole α, and the comment says why and where it can run."""
    world.seed()
    feature, head = _more_evidence_pr(world, "feature")
    gate = world.runner.run(world.pull_request(feature, head))
    assert gate.returncode in (0, 1), gate.log
    comparison = json.loads((gate.out_dir / "comparison.json").read_text())
    me = comparison["more_evidence"]
    assert me["ended"] == "not-run" and me["looks"] == []
    assert "gates a results file and runs no code of the repository" in me["summary"]
    assert comparison["gate"]["alpha"] == 0.05
    assert not (gate.out_dir / "more-evidence").exists()
    body = our_comments(world.gh)[0]["body"]
    assert "More evidence: not run: this job gates a results file" in body.replace("\\", "")


def test_the_more_evidence_config_is_the_quickstart_gated_with_more_evidence_under_its_own_gate_id() -> None:
    """eval-gate-more-evidence.yml gates its own config so that its comment is not eval-gate.yml's;
    anything but ``gate:`` (and the response cache, which no score depends on) differing would make
    it another suite, or one whose scorers the baselines eval-gate.yml promotes no longer match
    (incompatible on every PR)."""
    quickstart = yaml.safe_load((ROOT / CONFIG).read_text(encoding="utf-8"))
    more = yaml.safe_load((ROOT / MORE_EVIDENCE_CONFIG).read_text(encoding="utf-8"))
    gate = more.pop("gate")
    assert more.pop("cache")["targets"] == ["python"]
    assert more == {k: v for k, v in quickstart.items() if k not in ("gate", "cache")}
    assert gate["more_evidence"]["max_batches"] > 0
    assert gate["id"] not in ((quickstart.get("gate") or {}).get("id"), quickstart["suite"])


# The repository secret eval-gate-more-evidence.yml gives its baseline side's job alone (a fork's PR gets none).
SEAL_SECRET = {"EVALGATE_CACHE_SEAL_KEY": "3f9c1e7a5b2d48c6a0e4f7b9d1c3e5a7"}


def more_evidence_pr(world: World, checkout: Path, head: str, **pr: Any) -> Job:
    """The pull_request event as eval-gate-more-evidence.yml sees it. Each of its jobs asks for
    ``contents: read``, so GitHub gives it a token that can only read, from a fork or not."""
    job = world.pull_request(checkout, head, **pr)
    job.workflow, job.token = MORE_EVIDENCE, world.gh.read_token
    job.secrets = {} if pr.get("fork") else dict(SEAL_SECRET)
    jobs = yaml.safe_load(MORE_EVIDENCE.read_text(encoding="utf-8"))["jobs"].values()
    assert [spec["permissions"] for spec in jobs] == [{"contents": "read"}] * 4
    return job


def _comment_phase(world: World, pr: Job, run: StepRun) -> StepRun:
    """The workflow_run phase GitHub starts when ``run`` completes: exactly one workflow listens."""
    (phase,) = triggered_by(world, pr, run)
    assert phase.workflow.name == "eval-gate-fork-comment.yml"
    return world.runner.run(phase)


def _more_evidence_failed(world: World, run: StepRun, checkout: Path) -> dict[str, Any]:
    """``run`` was inconclusive at first, batched on both sides (each in its own job, the baseline's
    on a fresh checkout of the base commit) and failed naming the es slice."""
    comparison = json.loads((run.out_dir / "comparison.json").read_text())
    me = comparison["more_evidence"]
    assert me["baseline_side"].startswith("re-run by the baseline side's own job"), me
    assert len(me["looks"]) >= 2 and me["ended"] == "fail", me["summary"]
    assert run.returncode == 1 and run.outputs["verdict"] == "fail", run.log
    assert "language=es" in comparison["reason"]
    assert "More evidence: regressed after" in run.summary
    artifacts = world.runner.artifacts / str(run.run_id)
    baseline_side = json.loads((artifacts / "evalgate-evidence-baseline" / "baseline-1.json").read_text())
    # The baseline commit's bot answered, untouched by any hook the PR's code planted in its checkout.
    assert not any("nope" in str(a["output"]) for case in baseline_side["cases"] for a in case["attempts"])
    assert (artifacts / "evalgate-evidence-candidate" / "candidate-1.json").is_file()
    assert not (run.out_dir / "more-evidence").exists()  # the gate job ran no batch
    assert git(checkout, "worktree", "list").count("\n") == 0  # no worktree was made in the PR's checkout
    return comparison


def _baseline_attempts(world: World, run: StepRun, side: str = "baseline") -> list[dict[str, Any]]:
    """Every attempt of ``side``'s batch files of ``run``."""
    folder = world.runner.artifacts / str(run.run_id) / f"evalgate-evidence-{side}"
    return [
        attempt
        for path in sorted(folder.glob(f"{side}-*.json"))
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]
        for attempt in case["attempts"]
    ]


def _forge_answers(folder: Path, into: Path) -> None:
    """``folder``'s response cache with every answer of the bot replaced by "nope", each entry
    re-encoded so the cache would serve it, the seal left as it was: what a PR's code holding the
    runner's cache token could save in the PR's scope."""
    from evals.run.cache import encode

    def nope(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: nope(v) for k, v in value.items()}
        if isinstance(value, list):
            return [nope(v) for v in value]
        return "FINAL ANSWER: nope" if isinstance(value, str) and "FINAL ANSWER" in value else value

    shutil.copytree(folder, into)
    with contextlib.closing(sqlite3.connect(into / "cache.sqlite")) as db, db:
        rows = db.execute("SELECT key, data FROM entries").fetchall()
        assert rows
        for key, data in rows:
            value = json.loads(bytes(data).split(b"\n", 1)[1])["value"]
            db.execute("UPDATE entries SET data = ? WHERE key = ?", (encode(key, nope(value)), key))


def _as_posted(body: str) -> str:
    return body.replace("\\", "")  # the comment escapes markdown punctuation with backslashes


def test_a_pr_gets_more_evidence_in_a_read_only_job_and_one_sticky_comment_from_the_comment_phase(world: World) -> None:
    """The shipped eval-gate-more-evidence.yml on a same-repository PR whose bot also plants a
    post-checkout hook in its checkout (the review's reproduction: in one job, the base commit's
    worktree then answered "nope" and an honest fail became inconclusive). Its read-only jobs run
    the smoke subset, find the 20-case es slice inconclusive at a fixed sample, batch on both sides
    — the baseline's in a job of its own on a fresh checkout of the base commit — and the gate job
    replays the looks and fails naming the slice. It cannot comment; its completed run starts
    eval-gate-fork-comment.yml, which posts that verdict with its More evidence section.
    eval-gate.yml's own PR gate keeps its own comment."""
    gh = world.gh
    world.seed()
    feature = world.checkout("feature")
    _break_spanish(feature)
    with (feature / BOT).open("a", encoding="utf-8") as fh:
        fh.write(PLANT_HOOK)
    head = world.commit(feature, "a new bot version")
    pr = more_evidence_pr(world, feature, head)
    gate = world.runner.run(pr)
    assert (feature / ".git" / "hooks" / "post-checkout").is_file()  # planted by the PR's code, in vain
    _more_evidence_failed(world, gate, feature)
    baseline_side = world.runner.action_runs[2]
    assert "sealed the response cache" in baseline_side.stderr, baseline_side.log
    assert not any(a.get("cached") for a in _baseline_attempts(world, gate))
    # Its token cannot comment, and it does not try: the comment phase is the one writer.
    assert not [r for r in gh.requests if "/comments" in r.path]
    posted = _comment_phase(world, pr, gate)
    assert posted.returncode == 0, posted.log
    assert posted.outputs["verdict"] == "fail" and posted.outputs["comment-url"]
    (comment,) = our_comments(gh)
    body = _as_posted(comment["body"])
    assert comment_marker("quickstart-more-evidence") in comment["body"]
    assert "language=es" in body and "More evidence: regressed after" in body
    assert "[!CAUTION]" in body  # the failing verdict's banner

    # eval-gate.yml gates the same PR in its two jobs and comments itself, under the suite's gate
    # id: its completed run starts the comment phase too, whose job does not run for a
    # same-repository PR. Two gates, two comments, neither written by the other's workflow.
    two_jobs = world.pull_request(feature, head)
    first_look = world.runner.run(two_jobs)
    assert first_look.outputs["comment-url"], first_look.log
    (phase,) = triggered_by(world, two_jobs, first_look)
    assert world.runner.jobs(phase) == []
    mine = [c for c in our_comments(gh) if comment_marker("quickstart") in c["body"]]
    assert len(mine) == 1 and len(our_comments(gh)) == 2
    # The two workflows' comment phases for one branch are in different concurrency groups, so one
    # finishing never cancels the other's comment job; a newer run of the same workflow does.
    again = workflow_run_job(world, 99, head, repo=gh.repo, branch="feature", name="eval-gate-more-evidence")
    assert concurrency_group(world, phase) != concurrency_group(world, again)
    assert concurrency_group(world, again) == concurrency_group(world, triggered_by(world, pr, gate)[0])
    # A fork whose owner's name continues the workflow's name ("more-evidence-<owner>") must not
    # land in this PR's group, where each of its pushes would cancel this PR's comment job.
    forger = f"more-evidence-{gh.repo}"
    forged = workflow_run_job(world, 98, head, repo=forger, branch="feature", name="eval-gate")
    assert f"eval-gate-{forger}-feature" == f"eval-gate-more-evidence-{gh.repo}-feature"  # names joined by "-" collide
    assert concurrency_group(world, forged) != concurrency_group(world, again)

    # A second push: batches again, and the comment phase updates the same comment in place. Nothing
    # is asked again: the baseline side's job restored the folder its first run sealed, the PR's jobs
    # their own cache.
    head2 = world.commit(feature, "tweak it again")
    pr2 = more_evidence_pr(world, feature, head2)
    gate2 = world.runner.run(pr2)
    _more_evidence_failed(world, gate2, feature)
    assert "is sealed by an earlier baseline-side job" in world.runner.action_runs[2].stderr
    for side in ("baseline", "candidate"):  # neither side pays for its batches again
        attempts = _baseline_attempts(world, gate2, side)
        assert attempts and all(a.get("cached") for a in attempts), side
    assert _comment_phase(world, pr2, gate2).returncode == 0
    after = [c for c in our_comments(gh) if comment_marker("quickstart-more-evidence") in c["body"]]
    assert [c["id"] for c in after] == [comment["id"]] and len(our_comments(gh)) == 2
    assert after[0]["body"] != comment["body"] and head2[:10] in after[0]["body"]

    # The artifact was written by a job that ran the PR's code, so it may lie. One for another
    # commit than the triggering run's is refused; one naming another PR is not posted there.
    def forged(run_id: int, **changes: Any) -> int:
        folder = world.runner.artifacts / str(run_id) / "evalgate-report"
        shutil.copytree(world.runner.artifacts / str(gate2.run_id) / "evalgate-report", folder)
        meta = json.loads((folder / "comment.json").read_text())
        (folder / "comment.json").write_text(json.dumps(meta | changes))
        return run_id

    def phase_for(run_id: int, sha: str) -> Job:
        return workflow_run_job(
            world, run_id, sha, repo=gh.repo, branch="feature", name="eval-gate-more-evidence", conclusion="failure"
        )

    refused = world.runner.run(phase_for(forged(10_001, head_sha=head), head2))
    assert refused.returncode == 2 and "does not belong" in refused.stderr, refused.log
    other = world.checkout("other")
    world.pull_request(other, world.commit(other, "someone else's PR"), number=PR + 1)
    aimed = world.runner.run(phase_for(forged(10_002, pr_number=PR + 1), head2))
    assert aimed.returncode == 0 and "not posted" in aimed.stderr, aimed.log
    assert our_comments(gh, PR + 1) == [] and [c["body"] for c in our_comments(gh) if c["id"] == comment["id"]] == [
        after[0]["body"]
    ]

    # The PR's code, having reached the runner's cache token, saves in the PR's scope the baseline
    # side's folder with every answer turned into "nope" (its seal copied along). The next run's
    # baseline side restores that one (the PR's scope is searched first), finds the seal broken,
    # removes it and asks the baseline's bot again: the honest fail stands.
    saved = [c for c in world.runner.caches if c[1].startswith("evalgate-more-evidence-baseline-")]
    assert saved and all(scope == pr2.ref for scope, _, _ in saved)
    _forge_answers(saved[-1][2], world.tmp / "forged-cache")
    base = pr2.payload["pull_request"]["base"]["sha"]
    world.runner.caches.append((pr2.ref, f"evalgate-more-evidence-baseline-{base}-z", world.tmp / "forged-cache"))
    gate3 = world.runner.run(more_evidence_pr(world, feature, head2))
    _more_evidence_failed(world, gate3, feature)  # no "nope" among the baseline side's answers
    assert "was not used (its seal does not match what it holds" in world.runner.action_runs[2].stderr
    assert not any(a.get("cached") for a in _baseline_attempts(world, gate3))


def test_a_fork_pr_gets_more_evidence_and_its_comment_the_same_way(world: World) -> None:
    """A fork's PR runs eval-gate-more-evidence.yml with the same read-only token a same-repository
    PR gets there; the comment phase posts its failing verdict on that PR, once."""
    world.seed()
    fork = world.checkout("fork")
    _break_spanish(fork)
    head = world.commit(fork, "a contribution from a fork")
    pr = more_evidence_pr(world, fork, head, fork=True, number=PR + 2)
    gate = world.runner.run(pr)
    _more_evidence_failed(world, gate, fork)
    assert our_comments(world.gh, PR + 2) == []
    posted = _comment_phase(world, pr, gate)
    assert posted.returncode == 0 and posted.outputs["verdict"] == "fail", posted.log
    (comment,) = our_comments(world.gh, PR + 2)
    body = _as_posted(comment["body"])
    assert comment_marker("quickstart-more-evidence") in comment["body"]
    assert "language=es" in body and "More evidence: regressed after" in body
    assert our_comments(world.gh) == []  # no other PR touched
