"""Where a gate's or a reset's candidate comes from: a results file the user brings
(``--results``, imported first when ``--results-format`` names another harness), or a fresh run
of the suite in a child process that never sees the GitHub token; and the config it is judged by
(the suite's, or defaults derived from brought results)."""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from evals.config import BaselineSpec, MetricSpec, SuiteConfig, load_config
from evals.errors import EXIT_INFRA, EXIT_PASS, EXIT_USAGE, InfraError, UsageError
from evals.results import Results, load_results, save_results
from evals.stores import add_store_options
from evals.token_guard import seal_process, suite_env

DEFAULT_OUT_DIR = ".evalgate/out"


def add_candidate_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by gate and reset: which suite, which candidate, where the files go."""
    parser.add_argument("--config", default="evalgate.yml", help="suite config (default: ./evalgate.yml)")
    parser.add_argument("--results", metavar="FILE", help="gate this results file instead of running the suite")
    parser.add_argument(
        "--results-format",
        metavar="FORMAT",
        help="--results is another harness's output: import it first (a format of `evalgate import`, or auto)",
    )
    parser.add_argument(
        "--out-dir", default=DEFAULT_OUT_DIR, help=f"where reports and results are written (default {DEFAULT_OUT_DIR})"
    )
    add_store_options(parser)


def out_dir_of(args: argparse.Namespace) -> Path:
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def load_config_or_defaults(args: argparse.Namespace) -> tuple[SuiteConfig, tuple[Results, Path] | None]:
    """The suite config; or, when results are brought (``--results``) and there is no config file,
    defaults derived from those results (which are then already loaded, and returned too)."""
    if not args.results or Path(args.config).exists():
        return load_config(args.config), None
    # Said loudly: a mistyped --config path lands here too.
    given = load_given(args, out_dir_of(args))
    print(f"evalgate: no {args.config}: gating {given[1]} with the default settings", file=sys.stderr)
    return config_for_results(given[0]), given


def config_for_results(results: Results) -> SuiteConfig:
    """The settings ``evalgate compare`` uses without a config, as a config: the run's own metric
    (pass_rate, or score when nothing says passed) and every slice key in the file. With no suite
    to run there is nothing for a reset to run either, so the first complete run on the default
    branch seeds the baseline (``on_missing: seed``)."""
    from evals.metrics import default_metric, slice_keys_of

    return SuiteConfig(
        suite=results.run.suite,
        cases=[],
        slices=slice_keys_of([results]),
        metrics={default_metric([results]): MetricSpec()},
        baseline=BaselineSpec(on_missing="seed"),
    )


def obtain_candidate(
    config: SuiteConfig, args: argparse.Namespace, out_dir: Path, *, smoke: bool
) -> tuple[Results, Path]:
    """The candidate results and the file they are in: ``--results``, else a fresh run written to
    the out dir."""
    if args.results:
        return load_given(args, out_dir)
    path = out_dir / "results.json"
    return run_suite(Path(args.config), path, smoke=smoke), path


def load_given(args: argparse.Namespace, out_dir: Path) -> tuple[Results, Path]:
    """``--results``, imported into the out dir first when ``--results-format`` names another harness."""
    given = Path(args.results)
    if args.results_format and args.results_format != "evalgate":
        from evals.importers import import_results

        results = import_results(args.results_format, [given])
        path = out_dir / "results.json"
        save_results(results, path)
        return results, path
    return load_results(given), given


def run_suite(config_path: Path, output: Path, *, smoke: bool, env: Mapping[str, str] = os.environ) -> Results:
    """Run the suite as ``python -P -m evals run`` in a child process and read what it wrote.

    The suite is user code (a python target runs in the runner's process) and this process may
    hold the GitHub token (in its client, and in the environment the action gave it). So the code
    under test never shares a process with the token: the child starts from a fresh interpreter
    (exec: none of our memory), with an environment without the token (``suite_env``), and this
    process is made non-dumpable first, so the child cannot read the token from
    ``/proc/<our pid>/environ``. A partial run (exit 3 with a results file) is still returned:
    the comparison says ``incomplete``."""
    output.unlink(missing_ok=True)  # never gate on an earlier gate's file
    # -P: `evals` is ours, not a package of that name in the user's checkout (python targets put
    # their own folders on sys.path explicitly, evals.targets.import_callable).
    command = [sys.executable, "-P", "-m", "evals", "run", "--config", str(config_path), "--output", str(output)]
    command += ["--progress", "lines", *(["--smoke"] if smoke else [])]
    seal_process()
    # Its own process group: a Ctrl-C on a terminal reaches it once, through `_relay`, not twice.
    child = subprocess.Popen(
        command, env=suite_env(env), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, process_group=0
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


def _relay(child: subprocess.Popen[str]) -> str:
    """Pass the child's stderr (progress, its error line) through; stop signals we receive are
    passed on, so a cancelled job's run ends as ``cancelled`` with its results written. Returns
    the child's last stderr line."""
    from evals.escape import log_line

    tail: collections.deque[str] = collections.deque(maxlen=1)

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert child.stderr is not None  # Popen(stderr=PIPE)
        for line in child.stderr:
            # The suite's output is untrusted: it never issues a workflow command in our log.
            sys.stderr.write(log_line(line.rstrip("\n")) + "\n")
            if line.strip():
                tail.append(line.strip())
        child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return tail[0] if tail else ""


def candidate_sha(sha: str | None, candidate: Results) -> str:
    """The commit a candidate stands for: ``sha`` (the event's), else the run's, else the checkout's HEAD."""
    sha = sha or candidate.run.git_sha
    if not sha:
        from evals.gitinfo import current_sha

        sha = current_sha()
    if not sha:
        raise UsageError("cannot promote: no commit sha (run inside a git checkout, or set GITHUB_SHA)")
    return sha
