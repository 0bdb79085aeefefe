"""Where more evidence's batches come from (docs/spec.md#more-evidence). The gate's sequential loop
(``evals.pipeline.evidence.gather``) asks a source for batch N of the cases it selected, and looks:

- :class:`RunningSource` runs both sides here, each a child ``evalgate run``: the candidate's from
  this checkout, the baseline's from ``evals.pipeline.baseline_side`` (a worktree of its commit,
  or its recorded openai target). Only where the candidate's code is trusted as much as the
  baseline's: outside GitHub Actions (the developer's own code), or a job that ran no PR.
- :class:`ReplaySource` reads the batch files the two side jobs of the more-evidence workflow wrote
  (``evalgate gate --evidence-side``, ``evals.pipeline.side_job``): the baseline's side ran in
  a job of its own, on a fresh checkout of the base commit, before or apart from any PR code
  (docs/spec.md#more-evidence). The baseline side's files are checked against the sha256 digests that job gave as
  its output (``--evidence-digest``): an artifact can be replaced by any job of the run, the PR's
  included; a job's outputs only by that job.

Every batch is one file per side, ``candidate-N.json`` and ``baseline-N.json``, in one folder."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from evals.common.errors import EvalgateError, InputFileError, UsageError
from evals.common.escape import log_value
from evals.pipeline.baseline_side import BaselineSide, remove_baseline_side
from evals.pipeline.candidate import content_digest, run_suite
from evals.results import console
from evals.results.files import load_results
from evals.results.model import Results
from evals.run.cache import CACHE_DIR_ENV
from evals.suite.options import RunOptions

FOLDER = "more-evidence"
SideName = Literal["candidate", "baseline"]
SIDES: tuple[SideName, ...] = ("candidate", "baseline")
# The layout that runs the baseline's side where no PR code ran (docs/github-action.md).
LAYOUT = (
    'the jobs of .github/workflows/eval-gate-more-evidence.yml (docs/github-action.md, "More evidence on pull '
    "requests\"): each side runs its batches in a job of its own, the baseline's on a fresh checkout of the base "
    "commit, and the gate replays them with `--evidence`"
)


@dataclass
class Batch:
    """One batch's two sides (no baseline side when the candidate's did not complete)."""

    candidate: Results
    baseline: Results | None


class BatchSource(Protocol):
    description: str  # how the baseline side ran, for the report
    short: str  # the baseline side in a sentence ("abc123def456", "the recorded target")

    def batch(self, number: int, ids: list[str], offset: int, caps: Mapping[str, float | None]) -> Batch | str:
        """Batch ``number`` of ``ids`` (attempts from ``offset`` on), or why a side has none."""
        ...

    def resume(self, candidate_path: Path) -> str:
        """What completes a batch that did not."""
        ...

    def close(self) -> None: ...


def batch_name(side: SideName, number: int) -> str:
    return f"{side}-{number}.json"


def start_folder(out_dir: Path, candidate: Results, baseline_key: str) -> Path:
    """The batches' folder for this first look: the files of a gate on another first look (another
    candidate run, another baseline) are removed, those of the same one are kept to be reused."""
    folder = (out_dir / FOLDER).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    state = folder / "first-look.json"
    key = json.dumps({"candidate": content_digest(candidate), "baseline": baseline_key}, sort_keys=True)
    if not state.exists() or state.read_text(encoding="utf-8") != key:
        for stale in folder.glob("*-*.json"):
            stale.unlink()
        for stale in folder.glob("batch-*.ids"):
            stale.unlink()
        state.write_text(key, encoding="utf-8")
    return folder


def run_batch_side(
    side: SideName,
    config_path: Path,
    folder: Path,
    number: int,
    ids: list[str],
    offset: int,
    cwd: Path,
    *,
    target: str | None = None,
    caps: Mapping[str, float | None] | None = None,
    cache_dir: Path | None = None,
) -> Results:
    """One side of one batch as a child ``evalgate run`` writing ``<side>-N.json``, reusing a
    complete file of an earlier gate on the same first look (:func:`start_folder`) and resuming a
    partial one. ``cache_dir``: the response cache folder to use instead of the config's."""
    path = folder / batch_name(side, number)
    ids_file = folder / f"batch-{number}.ids"
    ids_file.write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    earlier = None
    if path.exists():
        try:
            earlier = load_results(path)
        except EvalgateError:  # an unreadable leftover is run again, not trusted
            earlier = None
    if earlier is not None and earlier.run.total_cases == len(ids):
        if earlier.run.is_complete and sorted(c.id for c in earlier.cases) == ids:
            console.info(f"more evidence: {side}: reusing {path.name} (complete)", source="gate")
            return earlier
        console.info(
            f"more evidence: {side}: resuming {path.name} ({earlier.run.completed_cases}/{len(ids)} cases done)",
            source="gate",
        )
    resume = earlier is not None and earlier.run.total_cases == len(ids)
    batch = {"ids": str(ids_file), "attempts": 1, "attempt_offset": offset, "target": target, **(caps or {})}
    options = RunOptions.model_validate({"config": str(config_path), "output": str(path), "resume": resume, **batch})
    env = {**os.environ, CACHE_DIR_ENV: str(cache_dir)} if cache_dir is not None else os.environ
    return run_suite(options, env=env, cwd=cwd)


class RunningSource:
    """Both sides run here, the candidate's first; the baseline's only after a complete one."""

    def __init__(self, side: BaselineSide, config_path: Path, out_dir: Path, candidate: Results) -> None:
        self.side = side
        self.description = side.description
        self.short = side.short
        self.config_path = config_path.resolve()
        self.folder = start_folder(out_dir, candidate, side.key)

    def batch(self, number: int, ids: list[str], offset: int, caps: Mapping[str, float | None]) -> Batch:
        cand = run_batch_side("candidate", self.config_path, self.folder, number, ids, offset, Path.cwd(), caps=caps)
        if not cand.run.is_complete:
            return Batch(cand, None)
        base = run_batch_side(
            "baseline", self.side.config_path, self.folder, number, ids, offset, self.side.cwd,
            target=self.side.target, caps=caps, cache_dir=self.side.cache_dir,
        )  # fmt: skip
        return Batch(cand, base)

    def resume(self, candidate_path: Path) -> str:
        return f"resume with `evalgate gate --results {candidate_path}` and the same --out-dir"

    def close(self) -> None:
        remove_baseline_side(self.side)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def side_digests(folder: Path, side: SideName) -> str:
    """``baseline-1.json=<sha256> baseline-2.json=<sha256>`` of a side's batch files, ``-`` for none:
    what a side job gives as its output, for the gate's ``--evidence-digest``."""
    files = sorted(folder.glob(f"{side}-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    return " ".join(f"{p.name}={file_digest(p)}" for p in files) or "-"


def check_digests(folder: Path, given: str) -> None:
    """The baseline side's files in ``folder`` are exactly the ones its job wrote (``given``, that
    job's output); else exit 2 naming the file."""
    expected: dict[str, str] = {}
    for entry in given.split():
        name, _, digest = entry.partition("=")
        if entry == "-":
            continue
        if not name.startswith("baseline-") or len(digest) != 64:
            raise UsageError(
                f"--evidence-digest {log_value(entry, limit=80)}: expected NAME=SHA256 entries as the baseline side's "
                "job prints them (`baseline-1.json=<64 hex>`, or `-` for no batch)"
            )
        expected[name] = digest
    found = {p.name: p for p in folder.glob("baseline-*.json")}
    for name in sorted(set(found) | set(expected)):
        where = folder / name
        if name not in expected:
            why = "is not one the baseline side's job wrote (not in --evidence-digest)"
        elif name not in found:
            why = "is missing (the baseline side's job wrote it)"
        elif (actual := file_digest(found[name])) != expected[name]:
            why = f"has sha256 {actual[:16]}…, not the {expected[name][:16]}… the baseline side's job wrote"
        else:
            continue
        raise InputFileError(
            where,
            f"{why}: the baseline side's files were changed after its job (an artifact can be replaced by any job "
            "of the run)",
            "gate only with the files and the digests of the same workflow run",
        )


class ReplaySource:
    """Batches the side jobs ran, read from ``folder``: each filtered to the cases the gate's look
    selected. A side that has no such batch, or not every selected case in it, did not run it:
    the loop stops there (never a pass)."""

    def __init__(self, folder: Path, description: str) -> None:
        self.folder = folder
        self.description = description
        self.short = "the baseline side's job"

    def batch(self, number: int, ids: list[str], offset: int, caps: Mapping[str, float | None]) -> Batch | str:
        del offset, caps  # what the sides ran with; the gate checks what they spent, not what they were allowed
        read: dict[SideName, Results] = {}
        for side in SIDES:
            path = self.folder / batch_name(side, number)
            if not path.exists():
                return f"the {side} side ran no batch {number} ({path.name} is not in {self.folder})"
            results = load_results(path)
            have = {c.id for c in results.cases}
            lacking = [i for i in ids if i not in have]
            if lacking:
                return (
                    f"the {side} side's batch {number} did not run {len(lacking)} of the {len(ids)} cases this look "
                    f"selected (e.g. {log_value(lacking[0], limit=60)}): the sides re-run the first look's selection"
                )
            wanted = set(ids)
            read[side] = results.model_copy(update={"cases": [c for c in results.cases if c.id in wanted]})
        return Batch(read["candidate"], read["baseline"])

    def resume(self, candidate_path: Path) -> str:
        del candidate_path  # the side jobs ran the batches, not this one
        return "re-run the side jobs and the gate (a side job run again with its out-dir kept resumes its batch)"

    def close(self) -> None:
        return None
