"""Where a gate's or a reset's candidate comes from: a results file the user brings
(``--results``, imported first when ``--results-format`` names another harness), or a fresh run
of the suite in a child process that never sees the GitHub token; and the config it is judged by
(the suite's, or defaults derived from brought results)."""

from __future__ import annotations

import collections
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from evals.common.errors import EXIT_INFRA, EXIT_PASS, EXIT_USAGE, InfraError, UsageError
from evals.github.token_guard import seal_process, suite_env
from evals.results import console
from evals.results.files import load_results, save_results
from evals.results.masking import mask_results
from evals.results.model import Results
from evals.run.cache import CACHE_ENV
from evals.suite.config import SuiteConfig
from evals.suite.flags import argv_of
from evals.suite.loading import load_config
from evals.suite.options import CandidateOptions, GateOptions, RunOptions, run_argv
from evals.suite.overrides import with_overrides
from evals.suite.scoring import MetricSpec


def out_dir_of(options: CandidateOptions) -> Path:
    out_dir = Path(options.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def no_cache_for_suite_runs(options: CandidateOptions) -> None:
    """``--no-cache`` of a gate or a reset: every suite run it starts — the candidate, and the
    more-evidence batches on both sides — is a child ``evalgate run``, which inherits this."""
    if options.no_cache:
        os.environ[CACHE_ENV] = "off"


def load_config_or_defaults(options: CandidateOptions) -> tuple[SuiteConfig, tuple[Results, Path] | None]:
    """The suite config with the command line's overrides; or, when results are brought
    (``--results``) and there is no config file, defaults derived from those results (which are
    then already loaded, and returned too)."""
    if options.sha:  # the store would refuse it only after the whole suite has run
        from evals.results.manifest import snapshot_name

        snapshot_name(options.sha)
    given = None
    if not options.results or Path(options.config).exists():
        config = load_config(options.config)
    else:
        flag_keys = list(dict.fromkeys(options.slice_keys))
        # Said loudly: a mistyped --config path lands here too.
        given = load_given(options, out_dir_of(options), flag_keys or None)
        console.info(f"no {options.config}: gating {given[1]} with the default settings")
        config = config_for_results(given[0], slices=flag_keys or None)
    return with_overrides(config, options), given


def gate_reset_command(options: CandidateOptions, results_path: Path) -> str:
    """The reset that blesses the run this gate compared: the same config, commit and store."""
    from evals.compare.compatibility import reset_command

    config = options.config if Path(options.config).exists() else None
    return reset_command(results_path, config=config, sha=options.sha, store=options.store)


def gate_resume_command(options: CandidateOptions, results_path: Path, results: Results) -> str:
    """The run that finishes the candidate this gate compared: its config, its file, its subset."""
    again = RunOptions(
        config=options.config, output=str(results_path), smoke=results.run.subset == "smoke", resume=True
    )
    return shlex.join(["evalgate", "run", *argv_of(again)])


def gate_again_command(options: GateOptions, results_path: Path) -> str:
    """The gate of the finished candidate: this gate's config and flags, on its results file."""
    again = options.model_copy(update={"results": str(results_path), "results_format": None})
    return shlex.join(["evalgate", "gate", *argv_of(again)])


def config_for_results(results: Results, slices: list[str] | None = None) -> SuiteConfig:
    """The settings ``evalgate compare`` uses without a config, as a config: the run's own metric
    (pass_rate, or score when nothing says passed) and every slice key in the file. The first run
    is not seeded (``on_missing: warn``, as with a config): a broken run would become the blessed
    baseline unseen. ``evalgate reset --results FILE``, or ``gate --seed``, stores it. ``slices``:
    the ones asked for (``--slice-key``) instead of every key in the file."""
    from evals.compare.metrics import default_metric, slice_keys_of

    return SuiteConfig(
        suite=results.run.suite,
        cases=[],
        slices=slices or slice_keys_of([results]),
        metrics={default_metric([results]): MetricSpec()},
    )


def obtain_candidate(
    config: SuiteConfig, options: CandidateOptions, out_dir: Path, *, smoke: bool, fail_fast: Path | None = None
) -> tuple[Results, Path]:
    """The candidate results and the file they are in: ``--results``, else a fresh run written to
    the out dir (failing fast against the baseline results in ``fail_fast``, when given). Every
    slice the config asks for (with ``--slice-key``) must be carried by a case."""
    if options.results:
        return load_given(options, out_dir, config.slices or None)
    path = out_dir / "results.json"
    resume = not smoke and _submitted_batch(path, config.suite)
    against = str(fail_fast) if fail_fast else None
    results = run_suite(
        RunOptions(config=options.config, output=str(path), smoke=smoke, resume=resume, fail_fast_baseline=against)
    )
    _require_slices(results, path, config.slices)
    return results, path


def _submitted_batch(path: Path, suite: str) -> bool:
    """Whether ``path`` holds this suite's run that an earlier gate submitted to a provider's batch
    API (docs/spec.md#batch-pricing): this gate then collects it (a resume) rather than deleting
    it and paying for the same requests again."""
    if not path.is_file():
        return False
    try:
        previous = load_results(path)
    except UsageError:  # not a results file any more: the fresh run replaces it
        return False
    batch = previous.run.provider_batch
    return previous.run.suite == suite and batch is not None and batch.state == "submitted"


def load_given(options: CandidateOptions, out_dir: Path, slice_keys: list[str] | None = None) -> tuple[Results, Path]:
    """``--results``, imported into the out dir first when ``--results-format`` names another harness
    (slicing by ``slice_keys`` — the config's ``slices:`` and ``--slice-key`` — when given, else by the
    format's default keys)."""
    assert options.results is not None  # the callers' `if options.results`
    given = Path(options.results)
    if options.results_format and options.results_format != "evalgate":
        from evals.importers import import_results

        results = import_results(
            options.results_format, [given], slice_keys=slice_keys, slices_asked_in="slices: or --slice-key"
        )
        path = out_dir / "results.json"
        save_results(results, path)
        return results, path
    # Promoted, reported and recorded from here on: masked first if another harness wrote it.
    results = mask_results(load_results(given))
    _require_slices(results, given, slice_keys or [])
    return results, given


def _require_slices(results: Results, path: Path, keys: list[str]) -> None:
    from evals.suite.slices import require_slice_keys

    if not results.cases:  # nothing could carry a key: the gate says why (incomplete, or empty)
        return
    carried = {key for case in results.cases for key in case.slices}
    missing = [key for key in keys if key not in carried]
    if missing:
        # An import keeps only the keys asked for: list what its source offered instead.
        offered = carried | set(results.run.source.get("tag_keys") or [])
        where = f"{path} (slices: / --slice-key)"
        require_slice_keys(missing, offered - set(missing), where=where, asked_in="slices: or --slice-key")


def run_suite(options: RunOptions, *, env: Mapping[str, str] = os.environ, cwd: Path | None = None) -> Results:
    """Run the suite as ``python -P -m evals run`` with ``options`` (without its summary table, with
    progress as lines) in a child process and read what it wrote.

    The suite is user code (a python target runs in the runner's process) and this process may
    hold the GitHub token (in its client, and in the environment the action gave it). So the code
    under test never shares a process with the token: the child starts from a fresh interpreter
    (exec: none of our memory), with an environment without the token (``suite_env``), and this
    process is made non-dumpable first, so the child cannot read the token from
    ``/proc/<our pid>/environ``. A partial run (exit 3 with a results file) is still returned:
    the comparison says ``incomplete``."""
    output = Path(options.output)
    if not options.resume:
        output.unlink(missing_ok=True)  # never gate on an earlier gate's file
    quiet = options.model_copy(update={"summary": False, "progress": "lines"})
    # -P: `evals` is ours, not a package of that name in the user's checkout (python targets put
    # their own folders on sys.path explicitly, evals.run.targets.code.import_callable).
    command = [sys.executable, "-P", "-m", "evals", "run", *run_argv(quiet)]
    seal_process()
    # Its own process group: a Ctrl-C on a terminal reaches it once, through `_relay`, not twice.
    # `evalgate run` writes nothing to stdout; what does is the suite's code or a tool it starts
    # (straight to fd 1), so that goes through the relay's guard too.
    child = subprocess.Popen(
        command,
        cwd=cwd,
        env={**suite_env(env), console.RELAYED_ENV: "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        process_group=0,
    )
    last = _relay(child)
    code = child.returncode
    if code in (EXIT_PASS, EXIT_INFRA) and output.exists():
        return load_results(output)
    said = f": {last}" if last else ""
    if code == EXIT_USAGE:
        raise UsageError(f"the suite run stopped on a usage error{said}")
    why = f"was killed by signal {-code}" if code < 0 else f"ended with exit {code}"
    raise InfraError(f"the suite run {why} without a results file{said}")


# How long the suite's output may stay open after the run exited: a process the suite started and
# that escaped the run's clean-up (it cleared its environment and left the session) can hold the
# pipe for ever, and the gate must not wait on it.
OUTPUT_GRACE_S = 5.0


def _relay(child: subprocess.Popen[str]) -> str:
    """Pass the child's output through (stderr: progress, its error line; stdout: whatever the
    suite wrote); stop signals we receive are passed on, so a cancelled job's run ends as
    ``cancelled`` with its results written. Returns the child's last line. Once the child has
    exited its output gets :data:`OUTPUT_GRACE_S` to end; then the gate goes on without it."""

    tail: collections.deque[str] = collections.deque(maxlen=1)

    def pump() -> None:
        assert child.stdout is not None  # Popen(stdout=PIPE, stderr=STDOUT)
        for line in child.stdout:
            console.relayed(line.rstrip("\n"))
            if line.strip():
                tail.append(line.strip())

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    # A daemon thread: one still blocked on a held pipe never keeps this process from exiting.
    reader = threading.Thread(target=pump, name="evalgate-suite-output", daemon=True)
    try:
        reader.start()
        child.wait()
        reader.join(OUTPUT_GRACE_S)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if reader.is_alive():
        console.warning(
            f"the suite run exited but a process it started still holds its output after {OUTPUT_GRACE_S:g} s; "
            "not waiting for it (it escaped the run's clean-up: check the target for helpers that detach)"
        )
    return tail[0] if tail else ""


def candidate_sha(candidate: Results, *, event_sha: str | None, explicit: str | None = None) -> str:
    """What the candidate's snapshot is named by: ``--sha``, the event's commit, the run's own
    ``git_sha``, the checkout's HEAD; outside git, a digest of the results' content (docs/spec.md#outside-git), so
    the same results always get the same name and different ones never share it."""
    sha = explicit or event_sha or candidate.run.git_sha
    if not sha:
        from evals.common.gitinfo import current_sha

        sha = current_sha()
    if not sha:
        sha = content_digest(candidate)
        console.info(
            f"no commit (not a git checkout, no GITHUB_SHA): the baseline is named by the results' "
            f"content, {sha}; pass --sha COMMIT to name it"
        )
    return sha


def content_digest(results: Results) -> str:
    """``content-`` + 40 hex of the sha256 of the cases (ids, inputs, attempts): a stable name for a
    run that has no commit."""
    import hashlib
    import json

    body = json.dumps([c.model_dump(mode="json") for c in results.cases], sort_keys=True, separators=(",", ":"))
    return "content-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:40]
