"""Where more evidence re-runs the baseline's side (docs/spec.md#more-evidence): a git worktree of the baseline's
commit, or — where git cannot give it — the model target (``openai``, ``anthropic``) the baseline run
recorded, when that record defines the target on its own (its endpoint, model, sampling parameters
and system prompt; no tools, which are code). The slices were chosen because of the first look, so the baseline's
stored values cannot stand in for fresh attempts (``benchmarks/sim_evidence.py`` measures the
false fails that would cause); where neither way works, more evidence says why and does not run."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evals.report.facts import without_paths

if TYPE_CHECKING:
    from evals.results.model import Results, TargetInfo
    from evals.store.baseline import LoadedBaseline
    from evals.suite.config import SuiteConfig

GIT_TIMEOUT_S = 300
# What a model target's run records about it that decides its answers, per kind, beside its
# base_url; anything else in params (tools, steps) is code or a loop this record cannot rebuild.
RECORDED = {
    "openai": ("api", "temperature", "seed", "max_tokens", "max_output_tokens", "top_p"),
    "anthropic": (
        "platform",
        "region",
        "project",
        "max_tokens",
        "temperature",
        "top_p",
        "stop_sequences",
        "cache_prompt",
    ),
}
# A recorded key left out means the default (the record writes these only when they are not).
UNRECORDED: dict[str, object] = {"cache_prompt": True, "api": "chat"}
LEARNT = {"system_fingerprint"}  # what the server told the run, not configuration


@dataclass
class BaselineSide:
    """How the baseline's batches run: ``evalgate run --config config_path`` from ``cwd``, with
    ``target`` (``--target FILE``) when it is not the config's own. ``key`` names this side in the
    batch files' state (a commit, or the recorded target's digest), so files of another baseline
    are never reused."""

    key: str
    config_path: Path
    cwd: Path
    description: str
    target: str | None = None
    scratch: Path | None = None  # a temp folder of ours, removed at the end
    worktree_of: Path | None = None  # the checkout whose worktree ``scratch`` holds
    # The checkout's response cache folder, for the worktree's runs: its own goes with it, and a
    # re-run of the same gate paid for every baseline answer again. Keys hold the code's
    # identity, so the baseline's answers never stand in for the candidate's.
    cache_dir: Path | None = None

    @property
    def short(self) -> str:
        return self.key[:12] if self.worktree_of is not None else "the recorded target"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL
    )


def prepare_baseline_side(config: SuiteConfig, config_path: Path, baseline: LoadedBaseline) -> BaselineSide | str:
    """The baseline's commit in a worktree; else its recorded model target; else why neither."""
    worktree = _worktree(config, config_path, baseline)
    if isinstance(worktree, BaselineSide):
        return worktree
    recorded = _recorded_target(config, config_path, baseline.results)
    if isinstance(recorded, BaselineSide):
        return recorded
    # The reason goes to stderr, comparison.json and the PR comment alike: one wording, without the
    # machine's paths (git's own messages name the scratch worktree's absolute path).
    return without_paths(f"{worktree}; and {recorded}")


def _worktree(config: SuiteConfig, config_path: Path, baseline: LoadedBaseline) -> BaselineSide | str:
    """A worktree of the baseline's commit holding the suite's config, or why there cannot be one."""
    sha = baseline.results.run.git_sha or (baseline.ref.snapshot.sha if baseline.ref.snapshot else None)
    if not sha:
        return "the baseline run records no git commit, so its commit cannot be checked out"
    config_path = config_path.resolve()
    try:
        top = _git(config_path.parent, "rev-parse", "--show-toplevel")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"git is not available ({exc}), so the baseline's commit cannot be checked out"
    if top.returncode != 0:
        return (
            f"{without_paths(str(config_path))} is not in a git checkout, so the baseline's commit {sha[:12]} "
            "cannot be checked out"
        )
    root = Path(top.stdout.strip())
    if _git(root, "cat-file", "-e", f"{sha}^{{commit}}").returncode != 0:
        fetched = _git(root, "fetch", "--quiet", "--no-tags", "--depth=1", "origin", sha)
        if fetched.returncode != 0 or _git(root, "cat-file", "-e", f"{sha}^{{commit}}").returncode != 0:
            return (
                f"the baseline's commit {sha[:12]} is not in this checkout and could not be fetched "
                "(in Actions: actions/checkout with fetch-depth: 0)"
            )
    # Outside the checkout: a worktree inside it would show in its status and its scans.
    scratch = Path(tempfile.mkdtemp(prefix="evalgate-baseline-"))
    tree = scratch / "tree"
    added = _git(root, "worktree", "add", "--detach", "--force", str(tree), sha)
    relative = config_path.relative_to(root)
    side = BaselineSide(
        key=sha,
        config_path=tree / relative,
        cwd=tree,
        description=f"re-run at the baseline's commit {sha[:12]} (a git worktree of it)",
        scratch=scratch,
        worktree_of=root,
        cache_dir=config.resolve(config.cache.dir) if config.cache is not None else None,
    )
    if added.returncode != 0:
        remove_baseline_side(side)
        return f"git worktree add of the baseline's commit {sha[:12]} failed: {added.stderr.strip()[:300]}"
    if not side.config_path.exists():
        remove_baseline_side(side)
        return f"the baseline's commit {sha[:12]} has no {relative}"
    return side


def _recorded_target(config: SuiteConfig, config_path: Path, baseline: Results) -> BaselineSide | str:
    """The baseline's model target rebuilt from its results file, run with the suite's config (its
    cases and scorers; the key, headers and prices of the suite's own target of that kind:
    credentials are never recorded), or why the record does not define it."""
    target = baseline.run.target
    kind = target.kind if target else "no"
    if target is None or kind not in RECORDED:
        return (
            f"the baseline's recorded target is {kind}, which is code: only a model target (openai, anthropic) "
            "runs from its record"
        )
    if getattr(config.target, kind, None) is None:
        return f"the suite's own target is not {kind}, so the key and headers the baseline's endpoint needs are unknown"
    params = {k: v for k, v in target.params.items() if k not in LEARNT}
    if "base_url" not in params or not target.model:
        return f"the baseline's recorded {kind} target names no endpoint or model"
    beyond = sorted(set(params) - {"base_url", "system_prompt", *RECORDED[kind]})
    if beyond:
        return f"the baseline's {kind} target used {', '.join(beyond)} (tools are code): only its commit can re-run it"
    prompt = _prompt_text(config, target)
    if prompt is not None and not isinstance(prompt, bytes):
        return prompt
    definition = {
        "base_url": params["base_url"],
        "model": target.model,
        # Every recorded key given, None included: the suite's own value must not fill a gap.
        **{k: params.get(k, UNRECORDED.get(k)) for k in RECORDED[kind]},
        "tools": {},
        "system_prompt": None,
    }
    digest = hashlib.sha256(json.dumps([definition, prompt.hex() if prompt else None]).encode()).hexdigest()
    scratch = Path(tempfile.mkdtemp(prefix="evalgate-baseline-"))
    if prompt is not None:
        (scratch / "system-prompt.txt").write_bytes(prompt)
        definition["system_prompt"] = str(scratch / "system-prompt.txt")  # absolute: read as it is
    (scratch / "target.json").write_text(json.dumps({kind: definition}), encoding="utf-8")
    return BaselineSide(
        key=f"recorded-target-{digest[:40]}",
        config_path=config_path.resolve(),
        cwd=Path.cwd(),
        description=f"re-run from the baseline's recorded {kind} target ({target.model} at {params['base_url']})",
        target=str(scratch / "target.json"),
        scratch=scratch,
    )


def _prompt_text(config: SuiteConfig, target: TargetInfo) -> bytes | str | None:
    """The baseline's system prompt as bytes (None: it had none), or why it is not known: the text
    recorded beside its sha256, else the file at its recorded path here if its sha256 matches."""
    recorded = target.params.get("system_prompt")
    if recorded is None:
        return None
    if not isinstance(recorded, dict) or not isinstance(recorded.get("sha256"), str):
        return "the baseline's system prompt is recorded without its sha256"
    want = recorded["sha256"]
    candidates: list[bytes] = []
    if target.system_prompt is not None:
        candidates.append(target.system_prompt.encode("utf-8"))
    if isinstance(recorded.get("path"), str):
        with contextlib.suppress(OSError):  # gone or unreadable here: the recorded text is all there is
            candidates.append(config.resolve(recorded["path"]).read_bytes())
    for text in candidates:
        if "sha256:" + hashlib.sha256(text).hexdigest() == want:
            return text
    where = recorded.get("path") or "its file"
    return (
        f"the baseline's system prompt ({where}, {want[:19]}…) is not in its results file with that sha256 (a run "
        f"before evalgate recorded it, or masked) and {where} here differs"
    )


def remove_baseline_side(side: BaselineSide) -> None:
    if side.worktree_of is not None and side.scratch is not None:
        _git(side.worktree_of, "worktree", "remove", "--force", str(side.scratch / "tree"))
    if side.scratch is not None:
        shutil.rmtree(side.scratch, ignore_errors=True)
