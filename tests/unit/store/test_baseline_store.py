"""The baseline store (docs/spec.md#baseline-store) on real files, a real git history and (below) the fake GitHub
server."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from fakes.github_server import GitHubServer, github_api_fixture  # noqa: F401  (registers the fixture)
from fakes.suites import git

from evals.common.errors import InfraError, UsageError
from evals.results.files import save_results
from evals.results.manifest import Manifest, manifest_name, snapshot_name
from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.store import ancestry
from evals.store.baseline import (
    BaselineStore,
    GitHubReleaseStore,
    LocalStore,
    StoreCorrupt,
    open_store,
    promotion_allowed,
)
from evals.store.releases import ReleaseBlobs
from evals.store.write import encode_snapshot, sha256_digest
from evals.suite.config import SuiteConfig

# ------------------------------------------------------------------------------------- helpers


def results_for(sha: str, passed: list[bool], suite: str = "demo") -> Results:
    cases = [CaseResult(id=f"c{i}", attempts=[Attempt(passed=p, score=float(p))]) for i, p in enumerate(passed)]
    run = RunInfo(
        suite=suite,
        status="success",
        total_cases=len(cases),
        completed_cases=len(cases),
        git_sha=sha,
        git_ref="refs/heads/main",
        config_hash="sha256:cfg",
    )
    return Results(run=run, cases=cases)


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, list[str]]:
    """A real repository with six commits on main, a day apart: c[0] oldest."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = []
    for day in range(6):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"c{day}", date=f"2026-11-0{day + 1}T12:00:00Z")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return repo, shas


def local(tmp_path: Path, repo: Path | None = None, **kw) -> LocalStore:
    kw.setdefault("grace", timedelta(0))
    kw.setdefault("settle_s", 0.0)
    return LocalStore(tmp_path / "store", repo=repo, **kw)


# ------------------------------------------------------------------------------------- rules


def test_promotion_allowed_only_on_pass_or_inconclusive_with_drift_guard():
    assert promotion_allowed("pass", True)[0]
    assert promotion_allowed("inconclusive", True)[0]
    for verdict in ("fail", "incomplete", "incompatible", "no-baseline"):
        ok, why = promotion_allowed(verdict, True)
        assert not ok and verdict in why
    ok, why = promotion_allowed("pass", False)
    assert not ok and "drift" in why


def test_snapshot_bytes_are_reproducible_gzip():
    a, b = encode_snapshot(results_for("a" * 40, [True, False])), encode_snapshot(results_for("a" * 40, [True, False]))
    assert a == b and a[:2] == b"\x1f\x8b" and a[4:8] == b"\0\0\0\0"  # gzip mtime field is zero
    assert json.loads(gzip.decompress(a))["run"]["git_sha"] == "a" * 40
    with pytest.raises(UsageError):
        snapshot_name("../etc")


def test_ancestry_reads_real_git_history(history, tmp_path: Path):
    repo, shas = history
    walk = ancestry.ancestors(shas[3], repo=repo)
    assert walk.shas == shas[3::-1] and walk.complete and walk.warning is None
    assert ancestry.is_ancestor(shas[1], shas[3], repo=repo) is True
    assert ancestry.is_ancestor(shas[3], shas[1], repo=repo) is False
    assert ancestry.is_ancestor(shas[1], "f" * 40, repo=repo) is None
    assert ancestry.commit_date(shas[0], repo=repo).isoformat() == "2026-11-01T12:00:00+00:00"
    assert ancestry.resolve(repo, "--output=x") is None and not (repo / "x").exists()
    assert not ancestry.ancestors(shas[0], repo=None).complete


# ------------------------------------------------------------------------------------- local store


def test_promote_list_latest_roundtrip(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    assert store.latest() is None and store.list().snapshots == []
    first = store.promote(results_for(shas[0], [True, True]), sha=shas[0], verdict="seed", actor="alice")
    assert first.promoted and first.snapshot is not None
    second = store.promote(results_for(shas[1], [True, False]), sha=shas[1], verdict="pass", actor="bob")
    assert second.promoted

    files = sorted(p.name for p in (tmp_path / "store").iterdir())
    assert files == [snapshot_name(shas[0]), snapshot_name(shas[1]), manifest_name(1), manifest_name(2)]
    raw = (tmp_path / "store" / snapshot_name(shas[1])).read_bytes()
    manifest = Manifest.model_validate_json((tmp_path / "store" / manifest_name(2)).read_text())
    assert manifest.generation == 2
    assert [e.sha for e in manifest.snapshots] == shas[:2]
    entry = manifest.snapshots[-1]
    assert entry.digest == sha256_digest(raw) and entry.size == len(raw)
    assert (entry.verdict, entry.actor, entry.config_hash, entry.suite) == ("pass", "bob", "sha256:cfg", "demo")
    assert entry.commit_date == "2026-11-02T12:00:00Z"

    loaded = store.latest()
    assert loaded is not None and loaded.results.run.git_sha == shas[1]
    assert loaded.ref.source == f"local:{tmp_path / 'store'}" and loaded.ref.snapshot == entry
    assert store.list() == manifest


def test_select_walks_git_ancestry_to_the_nearest_snapshot(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    for i in (0, 2):
        store.promote(results_for(shas[i], [True]), sha=shas[i], verdict="pass")

    exact = store.select(base_sha=shas[2])
    assert exact.results.run.git_sha == shas[2] and exact.ref.note == "snapshot of the PR base commit"
    back = store.select(base_sha=shas[5])
    assert back.results.run.git_sha == shas[2] and "3 commit(s) back" in back.ref.note and not back.warnings
    older = store.select(base_sha=shas[1])
    assert older.results.run.git_sha == shas[0]  # the newer snapshot of c2 is not an ancestor of c1
    assert store.select(base_sha=None).results.run.git_sha == shas[2]

    # A merge brings in a side branch whose commit has the only snapshot: found after the first-parent line.
    git(repo, "checkout", "-q", "-b", "side", shas[3])
    git(repo, "commit", "-q", "--allow-empty", "-m", "side", date="2026-11-10T12:00:00Z")
    side = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", side, date="2026-11-11T12:00:00Z")
    merge = git(repo, "rev-parse", "HEAD")
    side_store = LocalStore(tmp_path / "side-store", repo=repo, grace=timedelta(0), settle_s=0)
    side_store.promote(results_for(side, [True]), sha=side, verdict="pass")
    assert side_store.select(base_sha=merge).results.run.git_sha == side


def test_select_without_history_falls_back_and_says_so(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    store.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass")
    store.promote(results_for(shas[4], [True]), sha=shas[4], verdict="pass")

    # A shallow clone (actions/checkout's default depth 1) knows the base commit and its date only.
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--branch", "main", f"file://{repo}", str(shallow)], check=True
    )
    git(shallow, "fetch", "-q", "--depth", "1", "origin", shas[3])
    clipped = LocalStore(tmp_path / "store", repo=shallow, grace=timedelta(0), settle_s=0)
    loaded = clipped.select(base_sha=shas[3])
    assert loaded.results.run.git_sha == shas[1]  # the latest snapshot of a commit not newer than the base
    assert any("shallow" in w for w in loaded.warnings) and "not newer than the PR base" in loaded.ref.note

    # A base commit git does not have at all: the latest, with a warning naming the missing history.
    unknown = clipped.select(base_sha="f" * 40)
    assert unknown.results.run.git_sha == shas[4]
    assert any("not in the checkout's history" in w for w in unknown.warnings)

    # Ancestors passed in by the caller are used as given.
    given = store.select(base_sha="e" * 40, ancestors=["e" * 40, "d" * 40, shas[1]])
    assert given.results.run.git_sha == shas[1] and "2 commit(s) back" in given.ref.note


def test_promotion_never_replaces_a_newer_commit(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    assert store.promote(results_for(shas[3], [True]), sha=shas[3], verdict="pass").promoted

    older = store.promote(results_for(shas[2], [True]), sha=shas[2], verdict="pass")
    assert not older.promoted and "older" in older.reason and older.snapshot is None
    assert not (tmp_path / "store" / snapshot_name(shas[2])).exists()

    again = store.promote(results_for(shas[3], [True]), sha=shas[3], verdict="pass")
    assert again.promoted and "identical" in again.reason and again.manifest.generation == 1

    rerun = store.promote(results_for(shas[3], [False]), sha=shas[3], verdict="pass")
    assert not rerun.promoted and "reset" in rerun.reason

    # A reset re-blesses a new run of the same commit under a second, digest-suffixed name.
    reset = store.promote(
        results_for(shas[3], [False]), sha=shas[3], verdict="reset", reason="new rubric", actor="carol", blessed=True
    )
    assert reset.promoted and reset.snapshot.blessed and reset.snapshot.name != snapshot_name(shas[3])
    assert reset.snapshot.name.startswith(f"baseline-{shas[3]}-")
    assert store.latest().results.cases[0].attempts[0].passed is False
    blessed = store.blessed()
    assert blessed.ref.snapshot.reason == "new rubric" and blessed.ref.snapshot.actor == "carol"
    assert (tmp_path / "store" / snapshot_name(shas[3])).exists()  # the first run is untouched

    # A reset may not go back in history either.
    back = store.promote(results_for(shas[1], [True]), sha=shas[1], verdict="reset", reason="x", blessed=True)
    assert not back.promoted

    assert store.promote(results_for(shas[5], [True]), sha=shas[5], verdict="pass").promoted


def test_promotion_order_by_commit_date_when_git_cannot_tell(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    store.promote(results_for(shas[4], [True]), sha=shas[4], verdict="pass")
    # A checkout that has only the candidate commit (shallow): the latest's recorded commit_date decides.
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True)
    git(shallow, "fetch", "-q", "--depth", "1", "origin", shas[2])
    clipped = LocalStore(tmp_path / "store", repo=shallow, grace=timedelta(0), settle_s=0)
    refused = clipped.promote(results_for(shas[2], [True]), sha=shas[2], verdict="pass")
    assert not refused.promoted and "dates decide" in refused.reason
    newer = clipped.promote(results_for(shas[5], [True]), sha=shas[5], verdict="pass")
    assert newer.promoted and any("commit date" in w for w in newer.warnings)

    # Diverged history (neither is an ancestor) with the same commit second: a tie is not "newer".
    git(repo, "checkout", "-q", "-b", "tie", shas[4])
    git(repo, "commit", "-q", "--allow-empty", "-m", "tie", date="2026-11-06T12:00:00Z")
    tie = git(repo, "rev-parse", "HEAD")
    tied = store.promote(results_for(tie, [True]), sha=tie, verdict="pass")
    assert not tied.promoted and "not newer" in tied.reason
    assert store.latest().results.run.git_sha == shas[5]


def test_keep_prunes_old_snapshots_but_never_the_blessed_one(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo, keep=2)
    store.promote(results_for(shas[0], [True]), sha=shas[0], verdict="reset", reason="start", blessed=True)
    for sha in shas[1:]:
        assert store.promote(results_for(sha, [True]), sha=sha, verdict="pass").promoted
    manifest = store.list()
    assert [e.sha for e in manifest.snapshots] == [shas[0], shas[4], shas[5]]
    names = {p.name for p in (tmp_path / "store").iterdir()}
    # The last 3 manifest generations are kept (gen 4 still names c2); snapshots none of them names are deleted.
    assert {n for n in names if n.startswith("manifest-")} == {manifest_name(g) for g in (4, 5, 6)}
    assert {n for n in names if n.startswith("baseline-")} == {snapshot_name(s) for s in (shas[0], *shas[2:])}
    assert store.blessed().results.run.git_sha == shas[0]


def test_prune_spares_young_unreferenced_snapshots(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo, grace=timedelta(hours=1))
    orphan = tmp_path / "store" / snapshot_name("ab" * 20)
    orphan.parent.mkdir()
    orphan.write_bytes(encode_snapshot(results_for("ab" * 20, [True])))  # a concurrent writer's, not yet named
    store.promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    assert orphan.exists()
    old = orphan.stat().st_mtime - 7200
    os.utime(orphan, (old, old))
    store.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass")
    assert not orphan.exists()


def test_legacy_baseline_json_is_read_until_the_first_manifest(tmp_path: Path, history):
    repo, shas = history
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "baseline.json").write_text(results_for(shas[0], [True, False]).model_dump_json())
    store = local(tmp_path, repo)
    legacy = store.latest()
    assert legacy.ref.legacy and legacy.ref.snapshot is None and legacy.results.run.git_sha == shas[0]
    assert store.select(base_sha=shas[3]).ref.legacy
    store.promote(results_for(shas[1], [True, True]), sha=shas[1], verdict="pass")
    now = store.latest()
    assert not now.ref.legacy and now.results.run.git_sha == shas[1]
    assert (folder / "baseline.json").exists()


def test_corrupt_snapshot_is_detected_and_skipped(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    for sha in shas[:2]:
        store.promote(results_for(sha, [True]), sha=sha, verdict="pass")
    victim = tmp_path / "store" / snapshot_name(shas[1])
    victim.unlink()
    victim.write_bytes(encode_snapshot(results_for(shas[1], [False])))  # valid gzip, wrong content

    loaded = store.latest()
    assert loaded.results.run.git_sha == shas[0]
    assert any("digest mismatch" in w for w in loaded.warnings) and "fell back" in loaded.ref.note
    assert store.select(base_sha=shas[1]).results.run.git_sha == shas[0]

    first = tmp_path / "store" / snapshot_name(shas[0])
    first.unlink()
    first.write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(StoreCorrupt, match="no snapshot passes verification"):
        store.latest()


def test_damaged_manifests_fall_back_or_fail_clearly(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    store.promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    folder = tmp_path / "store"
    (folder / manifest_name(7)).write_text('{"manifest_version": 1, "snap')  # a write that died half-way
    loaded = store.latest()
    assert loaded.results.run.git_sha == shas[0]
    assert any(manifest_name(7) in w and "not a valid manifest" in w for w in loaded.warnings)
    # The next writer goes above the debris, so readers see its manifest.
    result = store.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass")
    assert result.manifest.generation == 8 and store.latest().results.run.git_sha == shas[1]

    for path in folder.glob("manifest-*.json"):
        path.write_text("not json")
    with pytest.raises(StoreCorrupt, match="no manifest is readable"):
        store.latest()
    # A reset can still write a fresh manifest over a store whose manifests are all damaged.
    fresh = store.promote(results_for(shas[2], [True]), sha=shas[2], verdict="reset", reason="repair", blessed=True)
    assert fresh.promoted and store.latest().results.run.git_sha == shas[2]


def test_half_written_snapshot_debris_is_replaced_but_a_valid_one_never(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / snapshot_name(shas[0])).write_bytes(encode_snapshot(results_for(shas[0], [True]))[:20])
    assert store.promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass").promoted
    assert store.latest().results.run.git_sha == shas[0]

    # A complete, different snapshot under the name (another writer's, or an interrupted promotion's)
    # is never clobbered: a valid run of the same commit and scorer definitions is adopted as is.
    other = encode_snapshot(results_for(shas[1], [False]))
    (folder / snapshot_name(shas[1])).write_bytes(other)
    assert store.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass").promoted
    assert (folder / snapshot_name(shas[1])).read_bytes() == other
    assert store.latest().results.cases[0].attempts[0].passed is False

    # One a manifest names is never replaced by a promotion of another run of that commit.
    refused = store.promote(results_for(shas[1], [True, True]), sha=shas[1], verdict="pass")
    assert not refused.promoted and "already has a baseline snapshot" in refused.reason
    assert (folder / snapshot_name(shas[1])).read_bytes() == other


WRITER = textwrap.dedent(
    """
    import sys, time
    from datetime import timedelta
    from pathlib import Path
    sys.path[:0] = [sys.argv[4], str(Path(sys.argv[4]).parents[1])]  # this module, and tests/ for fakes
    from test_baseline_store import results_for
    from evals.store.baseline import LocalStore

    folder, prefix, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    # A manifest another writer is still writing reads as damaged: the writer waits settle_s once
    # before taking it for debris. 10 ms lost a promotion on a loaded CI machine (a writer descheduled
    # mid-write); the wait is only ever taken on that race, so a longer one costs this test nothing.
    store = LocalStore(folder, keep=100, repo=None, settle_s=0.5)
    while not go.exists():
        time.sleep(0.001)
    # Fewer promotions than evals.store.write.WRITE_ATTEMPTS: each lost race means the other writer
    # published, so no writer can run out of attempts. The shas have no git history to order
    # them, which only a reset (blessed) may store past.
    for i in range(6):
        sha = f"{prefix}{i:02d}"
        result = store.promote(results_for(sha, [i % 2 == 0]), sha=sha, verdict="reset", blessed=True)
        assert result.promoted, result.reason
    """
)


@pytest.mark.e2e
def test_two_processes_promoting_at_once_end_with_one_consistent_manifest(tmp_path: Path):
    folder, go = tmp_path / "store", tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(folder), prefix, str(go), str(Path(__file__).parent)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for prefix in ("aaaa", "bbbb")
    ]
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    store = LocalStore(folder, keep=100)
    manifest = store.list()
    shas = sorted(e.sha for e in manifest.snapshots)
    assert shas == sorted([f"aaaa{i:02d}" for i in range(6)] + [f"bbbb{i:02d}" for i in range(6)])
    assert manifest.generation == 12  # every publication took exactly one generation
    for entry in manifest.snapshots:
        assert store.load(entry).results.run.git_sha == entry.sha


# ------------------------------------------------------------------------------------- open_store


def test_open_store_defaults(tmp_path: Path):
    config = SuiteConfig(suite="s", cases="c.jsonl")
    config._root = tmp_path
    store = open_store(config, env={})
    assert isinstance(store, LocalStore) and store.folder == (tmp_path / ".evalgate/baselines").resolve()
    assert store.repo == tmp_path
    with pytest.raises(UsageError, match="token"):
        open_store(config, env={"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "o/r"})


# ------------------------------------------------------------------------------------- GitHub release store

TAG = "eval-baseline"


class BeforeCreate(ReleaseBlobs):
    """The real release backend, with a test hook called with each name just before it is
    uploaded: to interleave a concurrent writer or arm a server fault at an exact step."""

    def __init__(self, client, hook):
        super().__init__(client, TAG)
        self.hook = hook

    def create(self, name: str, data: bytes):
        self.hook(name)
        return super().create(name, data)


def gh_store(gh: GitHubServer, repo: Path | None = None, *, before_create=None, **kw) -> BaselineStore:
    kw.setdefault("grace", timedelta(0))
    kw.setdefault("settle_s", 0.0)
    if before_create is None:
        return GitHubReleaseStore(gh.client(), tag=TAG, repo=repo, **kw)
    return BaselineStore(BeforeCreate(gh.client(), before_create), f"github-release:{TAG}", repo=repo, **kw)


def asset_names(gh: GitHubServer) -> list[str]:
    return sorted(a["name"] for a in gh.assets(TAG))


def test_github_store_creates_the_release_promotes_and_selects(github_api: GitHubServer, history):
    gh, (repo, shas) = github_api, history
    store = gh_store(gh, repo)
    assert store.latest() is None and gh.releases() == []
    for sha in shas[:3]:
        assert store.promote(results_for(sha, [True]), sha=sha, verdict="pass", actor="bot").promoted
    assert [r["tag_name"] for r in gh.releases()] == [TAG]
    assert gh.latest_release_id is None  # a prerelease with make_latest false
    assert asset_names(gh) == sorted([*(snapshot_name(s) for s in shas[:3]), *(manifest_name(g) for g in (1, 2, 3))])
    data = gh.asset_data(TAG, snapshot_name(shas[1]))
    manifest = Manifest.model_validate_json(gh.asset_data(TAG, manifest_name(3)))
    assert manifest.snapshots[1].digest == sha256_digest(data)

    fresh = gh_store(gh, repo)  # another job: nothing cached
    assert fresh.latest().results.run.git_sha == shas[2]
    picked = fresh.select(base_sha=shas[4])
    assert picked.results.run.git_sha == shas[2] and picked.ref.source == f"github-release:{TAG}"
    # Downloads went to the storage host, never with the token.
    storage = gh.requests_to("storage")
    assert storage and not any(r.auth for r in storage)


def test_github_store_verifies_digests_on_download(github_api: GitHubServer, history):
    gh, (repo, shas) = github_api, history
    store = gh_store(gh, repo)
    for sha in shas[:2]:
        store.promote(results_for(sha, [True]), sha=sha, verdict="pass")
    client = gh.client()
    victim = next(a for a in gh.assets(TAG) if a["name"] == snapshot_name(shas[1]))
    client.delete_asset(victim["id"])
    gh.add_asset(TAG, snapshot_name(shas[1]), encode_snapshot(results_for(shas[1], [False])))
    loaded = store.latest()
    assert loaded.results.run.git_sha == shas[0] and any("digest mismatch" in w for w in loaded.warnings)


def test_github_store_reads_the_legacy_asset(github_api: GitHubServer, history):
    gh, (repo, shas) = github_api, history
    gh.add_asset(TAG, "baseline.json", results_for(shas[0], [True]).model_dump_json().encode())
    loaded = gh_store(gh, repo).latest()
    assert loaded.ref.legacy and loaded.results.run.git_sha == shas[0]


def test_github_store_concurrent_writer_name_clash_is_retried(github_api: GitHubServer, history):
    gh, (repo, shas) = github_api, history
    gh_store(gh, repo).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    at_gate, go = threading.Event(), threading.Event()

    def hold_manifest_upload(name: str) -> None:
        if name.startswith("manifest-") and not go.is_set():
            at_gate.set()
            go.wait(30)

    slow = gh_store(gh, repo, before_create=hold_manifest_upload)
    outcome: list = []
    writer = threading.Thread(
        target=lambda: outcome.append(slow.promote(results_for(shas[2], [True]), sha=shas[2], verdict="pass"))
    )
    writer.start()
    assert at_gate.wait(30)
    # While the first writer is about to publish generation 2, another one publishes it first.
    other = gh_store(gh, repo).promote(results_for(shas[1], [False]), sha=shas[1], verdict="pass")
    assert other.manifest.generation == 2
    go.set()
    writer.join(60)
    assert outcome and outcome[0].promoted and outcome[0].manifest.generation == 3
    clashes = [r for r in gh.requests if r.method == "POST" and r.status == 422]
    assert clashes  # the first writer's generation-2 upload met the name clash
    final = gh_store(gh, repo).list()
    assert [e.sha for e in final.snapshots] == shas[:3] and final.generation == 3
    assert Manifest.model_validate_json(gh.asset_data(TAG, manifest_name(2))).snapshots[-1].sha == shas[1]


STEPS = ("download", "upload", "manifest")
FAULTS = ("500", "502", "429", "secondary", "reset", "reset-after", "starter", "truncate")


def arm(gh: GitHubServer, step: str, kind: str, times: int):
    """Arm ``kind`` on the request that performs ``step`` of a promotion or a read."""
    if step == "download":  # both downloads of a read: the manifest's and the snapshot's
        for name in ("manifest-", "baseline-"):
            gh.faults.add("GET", rf"^/storage/\d+/{name}", kind, times, server="storage", retry_after=1)
        return None

    def hook(name: str) -> None:
        if name.startswith("baseline-" if step == "upload" else "manifest-") and not hook.armed:
            hook.armed = True
            gh.faults.add("POST", r"/assets$", kind, times, retry_after=1)

    hook.armed = False
    return hook


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("step", "kind"),
    [
        *((s, k) for s in STEPS for k in FAULTS if not (s == "download" and k == "starter")),
        ("download", "hang"),  # past the client's 1 s timeout: one slow case is enough
        ("manifest", "hang"),
    ],
)
def test_github_store_recovers_from_a_transient_fault(github_api: GitHubServer, history, step: str, kind: str):
    gh, (repo, shas) = github_api, history
    gh_store(gh, repo).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    store = gh_store(gh, repo, before_create=arm(gh, step, kind, times=1))
    if step == "download":
        assert store.latest().results.run.git_sha == shas[0]
    else:
        assert store.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass").promoted
        assert gh_store(gh, repo).latest().results.run.git_sha == shas[1]
    assert not gh.faults.pending()  # the fault really fired
    assert all(a["state"] == "uploaded" for a in gh.assets(TAG))


@pytest.mark.e2e
@pytest.mark.parametrize("step", ["download", "upload", "manifest"])
@pytest.mark.parametrize("kind", ["502", "reset"])
def test_github_store_persistent_fault_is_infra_error_and_the_baseline_survives(
    github_api: GitHubServer, history, step: str, kind: str
):
    gh, (repo, shas) = github_api, history
    gh_store(gh, repo).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    store = gh_store(gh, repo, before_create=arm(gh, step, kind, times=50))
    with pytest.raises(InfraError):
        if step == "download":
            store.latest()
        else:
            store.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass")
    gh.faults.clear()
    survivor = gh_store(gh, repo)
    assert survivor.latest().results.run.git_sha == shas[0] and survivor.list().generation == 1
    # Once GitHub recovers, the same promotion goes through (reusing an already uploaded snapshot).
    assert survivor.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass").promoted


def test_github_store_read_only_token_cannot_promote(github_api: GitHubServer, history):
    gh, (repo, shas) = github_api, history
    gh_store(gh, repo).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    readonly = GitHubReleaseStore(gh.client(token=gh.read_token), tag=TAG, repo=repo)
    assert readonly.latest().results.run.git_sha == shas[0]
    with pytest.raises(InfraError, match="contents: write"):
        readonly.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass")
    assert asset_names(gh) == [snapshot_name(shas[0]), manifest_name(1)]


def test_open_store_builds_a_github_client_from_the_environment(github_api: GitHubServer, tmp_path: Path):
    config = SuiteConfig(suite="s", cases="c.jsonl")
    config._root = tmp_path
    store = open_store(config, env={**github_api.env(), "GITHUB_ACTIONS": "true"})
    assert isinstance(store, GitHubReleaseStore) and store.source == f"github-release:{TAG}"
    assert store.latest() is None


def started(sha: str, at: str | None, passed: list[bool] | None = None) -> Results:
    """A run of ``sha`` that started (and ended) at ``at`` (None: no run times, like some imports)."""
    results = results_for(sha, passed or [True])
    results.run.started_at = results.run.ended_at = at
    return results


@pytest.fixture(params=["local", "github-release"])
def plain_store(request, tmp_path: Path):
    """A store of either kind whose writer stands in a folder that is no git repository."""
    plain = tmp_path / "plain"
    plain.mkdir()
    if request.param == "local":
        return local(tmp_path, plain)
    return gh_store(request.getfixturevalue("github_api"), plain)


def test_outside_git_promotions_are_ordered_by_run_time(plain_store: BaselineStore):
    """docs/spec.md#outside-git: with no repository there are no commits to order, so the runs' start times do —
    the same in both stores — and the outcome says so."""
    store = plain_store
    assert store.promote(started("v1", "2026-12-01T10:00:00Z"), sha="v1", verdict="pass").promoted
    newer = store.promote(started("v2", "2026-12-01T10:05:00Z"), sha="v2", verdict="pass")
    assert newer.promoted and "no git repository, so ordered by time" in newer.basis
    assert "v2: run start 2026-12-01 10:05:00 UTC, after the current baseline v1: run start" in newer.basis

    older = store.promote(started("v0", "2026-12-01T10:01:00Z"), sha="v0", verdict="pass")
    assert not older.promoted and older.reason.startswith("v0 is not newer than the current baseline v2")
    assert (
        "ordered by time" in older.reason and "not promoted" not in older.reason and "fetch-depth" not in older.reason
    )
    tie = store.promote(started("v3", "2026-12-01T10:05:00Z"), sha="v3", verdict="pass")
    assert not tie.promoted and "not after" in tie.reason  # the same second is not newer
    # A reset never goes back to an older run either.
    old_reset = store.promote(
        started("v0", "2026-12-01T10:01:00Z"), sha="v0", verdict="reset", reason="r", blessed=True
    )
    assert not old_reset.promoted and "not newer" in old_reset.reason
    # A name an earlier snapshot already has is taken, whatever the time.
    reused = store.promote(started("v1", "2026-12-01T11:00:00Z"), sha="v1", verdict="pass")
    assert not reused.promoted and "v1 already names an earlier baseline snapshot" in reused.reason
    assert "--sha" in reused.reason
    same_name = store.promote(started("v2", "2026-12-01T11:00:00Z", [False]), sha="v2", verdict="pass")
    assert not same_name.promoted and "--sha" in same_name.reason
    # A run that records no time cannot be ordered ("now" would put any old run first): only a
    # reset stores it, noted.
    untimed = store.promote(started("import", None), sha="import", verdict="pass")
    assert not untimed.promoted and "records no start or end time" in untimed.reason and "reset" in untimed.reason
    blessed = store.promote(started("import", None), sha="import", verdict="reset", reason="r", blessed=True)
    assert blessed.promoted and any("reset anyway" in w for w in blessed.warnings)
    assert [e.sha for e in store.list().snapshots] == ["v1", "v2", "import"]
    assert store.latest().results.run.git_sha == "import"


def test_runs_named_by_commits_are_never_ordered_by_time(tmp_path: Path):
    """Commit names where git cannot be read (not installed, a repository it refuses, a job with
    no checkout): a re-run of an old commit that started late must not replace a newer baseline."""
    store = local(tmp_path, repo=None)
    new, old = "b" * 40, "a" * 40
    assert store.promote(started(new, "2026-12-01T10:00:00Z"), sha=new, verdict="pass").promoted
    late = store.promote(started(old, "2026-12-01T11:00:00Z"), sha=old, verdict="pass")
    assert not late.promoted and "ordered by time" not in late.reason
    assert store.latest().results.run.git_sha == new


def test_outside_git_a_baseline_without_run_times_counts_from_its_promotion(tmp_path: Path):
    store = local(tmp_path, repo=None)
    assert store.promote(started("a", None), sha="a", verdict="pass").promoted
    created = store.list().snapshots[-1].created_at
    before = store.promote(started("b", "2020-01-01T00:00:00Z"), sha="b", verdict="pass")
    assert not before.promoted and f"a: promotion {created[:10]}" in before.reason
    after = store.promote(started("c", "2999-01-01T00:00:00Z"), sha="c", verdict="pass")
    assert after.promoted and "c: run start 2999-01-01" in after.basis


def test_inside_actions_without_a_checkout_nothing_orders_the_commits(tmp_path: Path):
    """A job without the repository's history cannot order commits, and the clock is no substitute
    (a re-run of an old workflow run starts late): refused, and the hint names the checkout; a
    reset goes ahead, noted."""
    store = local(tmp_path, repo=None, in_actions=True)
    assert store.promote(started("a" * 40, "2026-12-01T10:00:00Z"), sha="a" * 40, verdict="pass").promoted

    unordered = store.promote(started("b" * 40, "2026-12-01T11:00:00Z"), sha="b" * 40, verdict="pass")
    assert not unordered.promoted and "cannot tell" in unordered.reason and "fetch-depth: 0" in unordered.reason
    assert "not promoted" not in unordered.reason and "--sha" not in unordered.reason
    assert store.latest().results.run.git_sha == "a" * 40

    reset = store.promote(results_for("b" * 40, [True]), sha="b" * 40, verdict="reset", reason="r", blessed=True)
    assert reset.promoted and any("cannot tell" in w and "reset anyway" in w for w in reset.warnings)
    assert store.latest().results.run.git_sha == "b" * 40


def test_in_a_git_repository_names_git_does_not_know_are_refused_with_a_local_hint(tmp_path: Path, history):
    """Inside a repository, ancestry is the rule: a --sha that is no commit of it is refused (never
    ordered by the clock), and the hint says what to do locally: --sha or a reset, not fetch-depth."""
    repo, shas = history
    store = local(tmp_path, repo)
    assert store.promote(started(shas[2], "2026-12-01T10:00:00Z"), sha=shas[2], verdict="pass").promoted
    label = store.promote(started("v2", "2026-12-01T11:00:00Z"), sha="v2", verdict="pass")
    assert not label.promoted and "cannot tell whether v2 is newer" in label.reason
    assert f"v2 is not a commit of the git repository at {repo}: pass --sha COMMIT" in label.reason
    assert "fetch-depth" not in label.reason and "not promoted" not in label.reason

    other = local(tmp_path / "other", repo)
    assert other.promote(started("v1", "2026-12-01T10:00:00Z"), sha="v1", verdict="pass").promoted
    commit = other.promote(started(shas[3], "2026-12-01T11:00:00Z"), sha=shas[3], verdict="pass")
    assert not commit.promoted and "the current baseline's v1 is not a commit of the git repository" in commit.reason
    assert "evalgate reset --reason" in commit.reason


def _worktree(tmp_path: Path) -> tuple[Path, str]:
    """A repository with one committed file, app.py, and a committed local store folder."""
    repo = tmp_path / "work"
    (repo / "store").mkdir(parents=True)
    (repo / "app.py").write_text("x = 1\n")
    (repo / "store" / "keep.txt").write_text("tracked\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c0")
    return repo, git(repo, "rev-parse", "HEAD")


def test_a_local_promotion_of_a_dirty_tree_warns_and_notes_it_in_the_reason(tmp_path: Path):
    repo, head = _worktree(tmp_path)
    store = LocalStore(repo / "store", repo=repo, grace=timedelta(0), settle_s=0.0)
    (repo / "store" / "keep.txt").write_text("the store's own files are not the code\n")
    clean = store.promote(started(head, "2026-12-01T10:00:00Z"), sha=head, verdict="seed", blessed=True)
    assert clean.promoted and not any("uncommitted" in w for w in clean.warnings)
    assert store.list().snapshots[-1].reason is None

    (repo / "app.py").write_text("x = 2\n")  # edited, not committed
    dirty = store.promote(
        started(head, "2026-12-01T11:00:00Z"), sha=head, verdict="reset", reason="new model", blessed=True
    )
    assert dirty.promoted
    [warning] = [w for w in dirty.warnings if "uncommitted" in w]
    assert f"HEAD {head[:12]} is stored as the baseline" in warning and "(app.py)" in warning
    assert dirty.snapshot.reason == f"new model; uncommitted changes at HEAD {head[:12]}: app.py"
    assert store.list().snapshots[-1].reason == dirty.snapshot.reason

    # Staged changes count too; a commit other than HEAD, and Actions (clean checkouts), do not warn.
    git(repo, "add", "app.py")
    other = LocalStore(tmp_path / "s2", repo=repo, grace=timedelta(0), settle_s=0.0)
    assert other.promote(started("v9", "2026-12-01T10:00:00Z"), sha="v9", verdict="seed").snapshot.reason is None
    staged = other.promote(started(head, "2026-12-01T11:00:00Z"), sha=head, verdict="reset", reason="r", blessed=True)
    assert "uncommitted changes at HEAD" in staged.snapshot.reason
    ci = LocalStore(tmp_path / "s3", repo=repo, grace=timedelta(0), settle_s=0.0, in_actions=True)
    assert ci.promote(started(head, "2026-12-01T10:00:00Z"), sha=head, verdict="seed").snapshot.reason is None


def _corrupt(path: Path) -> None:
    path.unlink()
    path.write_bytes(encode_snapshot(results_for("0" * 40, [False])))  # valid gzip, wrong digest


@pytest.mark.e2e
def test_an_unreadable_blessed_snapshot_skips_the_drift_guard_and_promotes_nothing(tmp_path: Path, history):
    from evals.pipeline.candidate import config_for_results
    from evals.store.selection import load_baselines

    repo, shas = history
    store = local(tmp_path, repo)
    store.promote(results_for(shas[0], [True] * 4), sha=shas[0], verdict="seed", blessed=True)
    store.promote(results_for(shas[1], [True] * 4), sha=shas[1], verdict="reset", reason="r", blessed=True)
    store.promote(results_for(shas[2], [True] * 4), sha=shas[2], verdict="pass")
    candidate = results_for(shas[3], [True] * 4)
    config = config_for_results(candidate)

    # The newest blessed snapshot is damaged: the guard falls back to the older one and says so.
    _corrupt(tmp_path / "store" / snapshot_name(shas[1]))
    fell_back = load_baselines(store, config)
    assert fell_back.blessed.results.run.git_sha == shas[0] and fell_back.drift_unchecked is None
    assert any("digest mismatch" in w for w in fell_back.compare(candidate, config).warnings)

    # No blessed snapshot verifies: the gate still compares with the intact latest, without promoting.
    _corrupt(tmp_path / "store" / snapshot_name(shas[0]))
    results = tmp_path / "candidate.json"
    save_results(candidate, results)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "evals", "gate", "--results", str(results), "--config", str(tmp_path / "none.yml")]
    command += ["--baseline-dir", str(tmp_path / "store"), "--out-dir", str(out), "--promote"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "drift guard not checked" in done.stderr and "not promoting" in done.stderr
    assert "drift guard not checked" in (out / "report.md").read_text(encoding="utf-8")
    assert store.latest().results.run.git_sha == shas[2]


def test_rerunning_a_failed_promotion_of_the_same_commit_adopts_the_snapshot_it_left(github_api: GitHubServer, history):
    """ "Re-run failed jobs" after an outage: the failed run uploaded its snapshot, then could not
    publish the manifest. The re-run's bytes differ (timestamps); it adopts the orphan instead of
    stopping on "already holds a different snapshot"."""
    gh, (repo, shas) = github_api, history
    gh_store(gh, repo).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    first = results_for(shas[1], [True, True])
    first.run.started_at = "2026-12-01T10:00:00Z"
    with pytest.raises(InfraError):
        gh_store(gh, repo, before_create=arm(gh, "manifest", "502", times=50)).promote(
            first, sha=shas[1], verdict="pass"
        )
    gh.faults.clear()
    assert snapshot_name(shas[1]) in asset_names(gh)  # the orphan: uploaded, named by no manifest

    rerun = results_for(shas[1], [True, True])
    rerun.run.started_at = "2026-12-01T11:00:00Z"
    assert encode_snapshot(rerun) != encode_snapshot(first)
    result = gh_store(gh, repo).promote(rerun, sha=shas[1], verdict="pass")
    assert result.promoted, result.reason
    assert any("adopted" in w for w in result.warnings)
    latest = gh_store(gh, repo).latest()
    assert latest.ref.snapshot.sha == shas[1] and latest.results.run.started_at == "2026-12-01T10:00:00Z"
    assert result.snapshot.digest == sha256_digest(encode_snapshot(first))


def test_an_orphan_of_other_scorer_definitions_is_not_adopted_and_never_clobbered(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    store.promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    orphan = results_for(shas[1], [True])
    orphan.run.config_hash = "sha256:other-scorers"
    path = tmp_path / "store" / snapshot_name(shas[1])
    path.write_bytes(encode_snapshot(orphan))
    with pytest.raises(InfraError, match="never overwritten"):
        store.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass")
    assert path.read_bytes() == encode_snapshot(orphan)
    assert store.latest().results.run.git_sha == shas[0]


# ------------------------------------------------------------------------------------- immutable releases


def generation_releases(gh: GitHubServer) -> list[str]:
    return sorted(r["tag_name"] for r in gh.releases() if re.fullmatch(rf"{TAG}-g\d+", r["tag_name"]))


def test_immutable_releases_switch_to_one_release_per_promotion(github_api: GitHubServer, history):
    """With immutable releases on, a published release can take no asset: the first promotion
    publishes its draft, snapshot and manifest in, as the main release; seeing it immutable, the
    store switches to one release per promotion (a draft, its assets, then published as
    <tag>-g<generation>), read by every store — a read-only token's too."""
    gh, (repo, shas) = github_api, history
    gh.immutable_releases = True
    store = gh_store(gh, repo)
    for sha in shas[:3]:
        assert store.promote(results_for(sha, [True]), sha=sha, verdict="pass").promoted
    assert asset_names(gh) == [snapshot_name(shas[0]), manifest_name(1)]  # the first promotion's release
    assert generation_releases(gh) == [f"{TAG}-g{g:08d}" for g in (2, 3)]
    assert all(not r["draft"] and r["immutable"] and r["prerelease"] for r in gh.releases())
    assert gh.latest_release_id is None  # none of them became the repository's "Latest release"
    assert {r["name"] for r in gh.releases()} == {
        "evalgate baselines",
        *(f"evalgate baseline, manifest generation {g}" for g in (2, 3)),
    }

    reader = GitHubReleaseStore(gh.client(token=gh.read_token), tag=TAG, repo=repo, settle_s=0.0)
    assert reader.latest().results.run.git_sha == shas[2]
    assert reader.select(base_sha=shas[0]).results.run.git_sha == shas[0]
    assert [e.sha for e in reader.list().snapshots] == shas[:3]
    # Another writer (nothing cached) starts from the per-promotion layout right away.
    assert gh_store(gh, repo).promote(results_for(shas[3], [True]), sha=shas[3], verdict="pass").promoted
    assert generation_releases(gh)[-1] == f"{TAG}-g00000004"


@pytest.mark.parametrize("step", ["upload", "manifest"])
def test_a_failed_first_promotion_under_immutable_releases_leaves_no_release_behind(
    github_api: GitHubServer, history, step: str
):
    """The release used to be published empty before its first upload — with
    immutable releases an empty release on the base tag for good (its tag burned) — and a failed
    upload into the draft left the draft behind for an hour."""
    gh, (repo, shas) = github_api, history
    gh.immutable_releases = True
    with pytest.raises(InfraError):
        gh_store(gh, repo, before_create=arm(gh, step, "502", times=50)).promote(
            results_for(shas[0], [True]), sha=shas[0], verdict="pass"
        )
    assert gh.releases() == []
    gh.faults.clear()
    assert gh_store(gh, repo).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass").promoted
    assert [(r["tag_name"], r["draft"]) for r in gh.releases()] == [(TAG, False)]
    assert asset_names(gh) == [snapshot_name(shas[0]), manifest_name(1)]


def test_a_burned_main_tag_sends_the_first_write_to_a_generation_release(github_api: GitHubServer, history):
    """The main release was deleted by hand under immutable releases (or by an older version's
    cleanup): its tag can never hold a release again, so the first write publishes ``-g<n>``."""
    gh, (repo, shas) = github_api, history
    gh.immutable_releases = True
    gh._burned_tags.add(TAG)
    assert gh_store(gh, repo).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass").promoted
    assert [r["tag_name"] for r in gh.releases()] == [f"{TAG}-g00000001"]
    assert gh_store(gh, repo).latest().results.run.git_sha == shas[0]


def test_a_failed_or_refused_promotion_deletes_its_draft(github_api: GitHubServer, history):
    gh, (repo, shas) = github_api, history
    gh.immutable_releases = True
    gh_store(gh, repo).promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass")
    with pytest.raises(InfraError):
        gh_store(gh, repo, before_create=arm(gh, "manifest", "502", times=50)).promote(
            results_for(shas[2], [True]), sha=shas[2], verdict="pass"
        )
    gh.faults.clear()
    assert not [r for r in gh.releases() if r["draft"]]

    def older_lands_first(name: str) -> None:  # between the snapshot upload and the manifest's
        if name.startswith("manifest-") and not older_lands_first.done:
            older_lands_first.done = True
            assert gh_store(gh, repo).promote(results_for(shas[3], [True]), sha=shas[3], verdict="pass").promoted

    older_lands_first.done = False
    refused = gh_store(gh, repo, before_create=older_lands_first).promote(
        results_for(shas[2], [True]), sha=shas[2], verdict="pass"
    )
    assert not refused.promoted and "is older than the current baseline" in refused.reason, refused.reason
    assert not [r for r in gh.releases() if r["draft"]]


def test_a_deleted_generation_release_burns_its_tag_and_the_next_promotion_goes_above_it(
    github_api: GitHubServer, history
):
    """Someone deletes the newest <tag>-g<n> release by hand: with immutable releases its tag can
    never be used again (GitHub: 422 ``custom`` "tag_name was used by an immutable release", not
    ``already_exists``). The next promotion publishes generation n+1 instead of failing forever."""
    gh, (repo, shas) = github_api, history
    gh.immutable_releases = True
    for sha in shas[:2]:
        assert gh_store(gh, repo).promote(results_for(sha, [True]), sha=sha, verdict="pass").promoted
    newest = gh.client().get_release_by_tag(f"{TAG}-g00000002")
    assert newest is not None and gh.client().delete_release(newest)
    store = gh_store(gh, repo)
    assert store.promote(results_for(shas[2], [True]), sha=shas[2], verdict="pass").promoted
    assert generation_releases(gh) == [f"{TAG}-g00000003"]  # generation 1 is in the main release
    assert [e.sha for e in gh_store(gh, repo).list().snapshots] == [shas[0], shas[2]]
    assert not [r for r in gh.releases() if r["draft"]]


def test_an_existing_one_release_store_keeps_being_read_after_the_switch(github_api: GitHubServer, history):
    gh, (repo, shas) = github_api, history
    gh_store(gh, repo).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    # The organisation turns immutable releases on, and the old release is made immutable (it held
    # the store's first snapshot and manifest): the next promotion writes a release of its own.
    gh.immutable_releases = True
    gh._releases[next(iter(gh._releases))]["immutable"] = True
    store = gh_store(gh, repo)
    assert store.promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass").promoted
    assert generation_releases(gh) == [f"{TAG}-g00000002"]
    fresh = gh_store(gh, repo)
    assert [e.sha for e in fresh.list().snapshots] == shas[:2]
    assert fresh.select(base_sha=shas[0]).results.run.git_sha == shas[0]  # its snapshot is in the old release


def test_per_promotion_tag_is_the_compare_and_swap_between_concurrent_writers(github_api: GitHubServer, history):
    gh, (repo, shas) = github_api, history
    gh.immutable_releases = True
    gh_store(gh, repo).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    fired = []

    def interleave(name: str) -> None:
        if name.startswith("manifest-") and not fired:
            fired.append(name)  # another writer publishes this generation first
            assert gh_store(gh, repo).promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass").promoted

    result = gh_store(gh, repo, before_create=interleave).promote(
        results_for(shas[2], [True]), sha=shas[2], verdict="pass"
    )
    assert result.promoted and result.manifest.generation == 3
    assert generation_releases(gh) == [f"{TAG}-g{g:08d}" for g in (2, 3)]
    assert [e.sha for e in gh_store(gh, repo).list().snapshots] == shas[:3]
    assert not [r for r in gh.releases() if r["draft"]]  # the loser's draft was published under the next tag


def test_per_promotion_rerun_after_a_failed_publish_and_pruning(github_api: GitHubServer, history):
    gh, (repo, shas) = github_api, history
    gh.immutable_releases = True
    gh_store(gh, repo, keep=2).promote(results_for(shas[0], [True]), sha=shas[0], verdict="pass")
    gh.faults.add("PATCH", r"/releases/\d+$", "502", times=50)
    with pytest.raises(InfraError):
        gh_store(gh, repo, keep=2).promote(results_for(shas[1], [True]), sha=shas[1], verdict="pass")
    gh.faults.clear()
    assert not [r for r in gh.releases() if r["draft"]]  # the failed run deleted its draft
    for sha in shas[1:5]:  # "re-run failed jobs", then more promotions
        assert gh_store(gh, repo, keep=2).promote(results_for(sha, [True]), sha=sha, verdict="pass").promoted
    final = gh_store(gh, repo, keep=2).list()
    assert [e.sha for e in final.snapshots] == shas[3:5]
    # A release whose manifest is stale and whose snapshot no kept manifest (the last three
    # generations) names is deleted as a whole; the others stay, as immutable releases must.
    assert generation_releases(gh) == [f"{TAG}-g{g:08d}" for g in (2, 3, 4, 5)]
    assert gh_store(gh, repo).latest().results.run.git_sha == shas[4]


def test_a_local_store_inside_actions_is_called_out(tmp_path: Path, monkeypatch, capsys):
    """The quickstart's `baseline: {store: local}` copied into a workflow: on a runner the folder
    vanishes with it, so every gate there would be no-baseline. Said once, when the store opens."""
    from evals.store.selection import open_store_for

    config = SuiteConfig(suite="s", cases="c.jsonl", baseline={"store": "local", "path": "baselines"})
    config._root = tmp_path
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    open_store_for(config)
    assert "lost with the runner" in capsys.readouterr().err
    monkeypatch.delenv("GITHUB_ACTIONS")
    open_store_for(config)
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------------------------- promotion vs its gate


def gate_of(store: BaselineStore, candidate: Results):
    """The comparison a full gate on main makes: the candidate against the store's latest."""
    from evals.store.selection import load_baselines

    return load_baselines(store, GATED).compare(candidate, GATED)


def promote(store: BaselineStore, candidate: Results, comparison, *, on_missing: str = "warn"):
    from evals.store.promotion import promote_candidate

    sha = candidate.run.git_sha
    return promote_candidate(store, candidate, comparison, config=GATED, sha=sha, actor="bot", on_missing=on_missing)


GATED = SuiteConfig(suite="demo", cases="c.jsonl")
HALF = [i % 2 == 0 for i in range(60)]


@pytest.mark.e2e
def test_a_promotion_is_gated_again_against_a_baseline_that_landed_meanwhile(github_api: GitHubServer, history):
    """Two full gates on main read the same baseline. The first promotes a much
    better run; the second candidate — no worse than the baseline it was gated on, clearly worse
    than the new one — lost the manifest clash, re-read, and promoted on top of it: a regression
    no gate ever saw. Now it is gated again against what landed, and refused on that verdict."""
    from evals.compare.analysis import compare

    gh, (repo, shas) = github_api, history
    gh_store(gh, repo).promote(results_for(shas[0], HALF), sha=shas[0], verdict="pass")
    better, same = results_for(shas[1], [True] * 60), results_for(shas[2], HALF)
    gate_better, gate_same = gate_of(gh_store(gh, repo), better), gate_of(gh_store(gh, repo), same)
    assert gate_better.verdict == "pass" and gate_same.verdict in ("pass", "inconclusive")
    assert compare(better, same, GATED).verdict == "fail"  # what a gate after the first promotion says

    def first_lands(name: str) -> None:  # the second writer has read the store and uploaded its snapshot
        if name.startswith("manifest-") and not first_lands.done:
            first_lands.done = True
            done = promote(gh_store(gh, repo), better, gate_better)
            assert done.promoted, done.message

    first_lands.done = False
    outcome = promote(gh_store(gh, repo, before_create=first_lands), same, gate_same)
    assert first_lands.done and not outcome.promoted
    assert f"{shas[1][:12]} became the baseline while this candidate was gated" in outcome.message
    assert "gated again against it: verdict 'fail' is never promoted" in outcome.message, outcome.message
    assert outcome.comparison.verdict == "fail" and outcome.comparison.baseline.snapshot.sha == shas[1]
    assert gh_store(gh, repo).latest().results.run.git_sha == shas[1]
    # Later, without a race, the stale comparison meets the same check.
    assert not promote(gh_store(gh, repo), same, gate_same).promoted

    # A candidate that also holds against the baseline that landed is promoted on that verdict.
    late, first = results_for(shas[4], [True] * 60), results_for(shas[3], [True] * 60)
    gate_late = gate_of(gh_store(gh, repo), late)
    assert promote(gh_store(gh, repo), first, gate_of(gh_store(gh, repo), first)).promoted
    done = promote(gh_store(gh, repo), late, gate_late)
    assert done.promoted and f"gated again against {shas[3][:12]}" in done.message, done.message
    assert done.comparison.baseline.snapshot.sha == shas[3]


def test_a_seed_that_another_run_beat_is_gated_against_it(tmp_path: Path, history):
    repo, shas = history
    store = local(tmp_path, repo)
    gate = gate_of(store, results_for(shas[2], HALF))
    assert gate.verdict == "no-baseline"
    store.promote(results_for(shas[1], [True] * 60), sha=shas[1], verdict="seed", blessed=True)
    outcome = promote(store, results_for(shas[2], HALF), gate, on_missing="seed")
    assert not outcome.promoted and "gated again against it: verdict 'fail'" in outcome.message, outcome.message


def test_a_newer_entry_that_fails_verification_does_not_block_the_promotion(tmp_path: Path, history):
    """The gate compared with the previous snapshot because the newest is corrupt; promoting
    over the corrupt one is how the store heals, so it is no baseline the candidate missed."""
    repo, shas = history
    store = local(tmp_path, repo)
    for sha in shas[:2]:
        store.promote(results_for(sha, HALF), sha=sha, verdict="pass")
    victim = tmp_path / "store" / snapshot_name(shas[1])
    victim.unlink()
    victim.write_bytes(encode_snapshot(results_for(shas[1], [False] * 60)))
    gate = gate_of(store, results_for(shas[2], HALF))
    assert gate.baseline.snapshot.sha == shas[0]
    outcome = promote(store, results_for(shas[2], HALF), gate)
    assert outcome.promoted and "gated again" not in outcome.message, outcome.message


def test_a_snapshot_an_older_evalgate_stored_is_read_with_its_names_masked(tmp_path: Path, history):
    """Its ids held a key as written: read masked (docs/spec.md#masked-names), they pair with a
    candidate's and reach no report."""
    from evals.results.masking import mask_name

    repo, shas = history
    store = local(tmp_path, repo)
    old = results_for(shas[0], [True, True])
    key_id = "test_api[sk-live-9Qx7Lm2Np4Rt6Vw8Yz0Ab]"
    old.cases[0] = old.cases[0].model_copy(update={"id": key_id, "slices": {"db": "postgres://app:pa55w0rd@db/x"}})
    assert store.promote(old, sha=shas[0], verdict="seed", actor="alice").promoted
    loaded = store.latest()
    assert loaded is not None
    assert [c.id for c in loaded.results.cases] == [mask_name(key_id), "c1"]
    assert loaded.results.cases[0].slices["db"].startswith("postgres://***@db/x (masked ")


def test_a_stalled_writer_whose_generation_was_pruned_does_not_publish_below_the_top(tmp_path: Path):
    """A writer that read generation 1 and was descheduled while others published 2 … 5 (pruning 2)
    finds the name manifest-2 free again; publishing there would lose every promotion since.
    It is taken back (NameTaken: the writer re-reads and tries again), as a loaded CI machine showed."""
    from evals.store.blobs import NameTaken

    store = LocalStore(tmp_path / "store", keep=100, repo=None, settle_s=0)
    for i in range(5):
        sha = f"cccc{i:02d}"
        assert store.promote(results_for(sha, [True]), sha=sha, verdict="reset", blessed=True).promoted
    assert not (tmp_path / "store" / manifest_name(2)).exists()  # pruned: the name is free again
    stale = Manifest(generation=2, snapshots=store.list().snapshots[:1])
    with pytest.raises(NameTaken):
        store._publish(stale)
    assert not (tmp_path / "store" / manifest_name(2)).exists()
    assert [e.sha for e in store.list().snapshots] == [f"cccc{i:02d}" for i in range(5)]
