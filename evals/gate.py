"""``evalgate gate``: the whole pipeline in one command, and what the GitHub Action runs.

config → baseline (the store's choice for this event, plus the blessed one for the drift guard;
read first, so a broken store costs no suite run) → candidate (run the suite — the smoke subset on
PRs — in a child process that never sees the GitHub token, or take ``--results``, importing it
first with ``--results-format``) → compare → reports in ``--out-dir`` → publish (inside GitHub Actions:
step summary, annotations, sticky PR comment, outputs) → promote (push to the default branch, or
``--promote``). The exit code is the verdict's (SPEC §9). Publishing never changes it: a comment
that cannot be posted (a fork's read-only token) is a warning, and its body is kept in the out dir
(``comment.md`` + ``comment.json``) for the two-phase ``workflow_run`` flow (``evalgate comment``).

``--mode reset`` and ``--mode comment`` (or what ``auto`` picks for the event) hand over to
``evalgate reset`` and ``evalgate comment``, so the action needs one command line for every mode."""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from evals.activity import MODES, Activity, detect, guard_pull_request_target
from evals.config import BaselineSpec, MetricSpec, SuiteConfig, load_config
from evals.errors import EXIT_INFRA, EXIT_PASS, EXIT_USAGE, EvalgateError, InfraError, UsageError
from evals.results import Results, atomic_write, load_results, save_results

if TYPE_CHECKING:
    from evals.baseline import LoadedBaseline
    from evals.comparison import Comparison
    from evals.github import GitHubClient

DEFAULT_OUT_DIR = ".evalgate/out"
COMMENT_SCHEMA = "evalgate.comment/1"
# Where a GitHub token can sit in our environment: the action's `github-token` input (as
# GITHUB_TOKEN), the gh CLI's names, and INPUT_* variables a runner sets for action inputs.
TOKEN_VARS = ("GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
TOKEN_FD_VAR = "EVALGATE_TOKEN_FD"
MIN_TOKEN_CHARS = 16  # GitHub's tokens are 40+ characters


class CommentMeta(BaseModel):
    """``comment.json``: which PR and commit a stored report belongs to (the two-phase fork flow)."""

    schema_: str = Field(alias="schema")
    repository: str | None
    pr_number: int
    head_sha: str
    base_sha: str | None = None
    gate_id: str
    verdict: str
    comparison: str = "comparison.json"
    body: str = "comment.md"


@dataclass
class GateOutcome:
    comparison: Comparison
    exit_code: int
    paths: dict[str, Path]
    baseline: LoadedBaseline | None
    outputs: dict[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------ CLI


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
        "--slice-key",
        dest="slice_keys",
        action="append",
        default=[],
        metavar="KEY",
        help="also slice by this case tag (an imported file's metadata/var key); repeatable, added to the config's "
        "slices:",
    )
    parser.add_argument(
        "--sha",
        metavar="COMMIT",
        help="the commit (or any stable label) the candidate stands for when promoted or reset; default: "
        "GITHUB_SHA, the results' run.git_sha, the checkout's HEAD, else (outside git) a digest of the results",
    )
    parser.add_argument(
        "--out-dir", default=DEFAULT_OUT_DIR, help=f"where reports and results are written (default {DEFAULT_OUT_DIR})"
    )
    from evals.baseline_cmd import add_store_options

    add_store_options(parser)


def configure(parser: argparse.ArgumentParser) -> None:
    add_candidate_options(parser)
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="auto: chosen from the GitHub event (PR → smoke, push to the default branch → full + promote, "
        "workflow_dispatch → reset); outside Actions a full gate against the local store",
    )
    parser.add_argument(
        "--tolerance",
        metavar="DELTA",
        help="tolerance for every rate metric (pass_rate, score, error_rate, pass@k), as in `evalgate compare`: "
        '0.02 or "5%%"',
    )
    parser.add_argument("--comment", choices=("on", "off"), default="on", help="post the sticky PR comment")
    parser.add_argument(
        "--promote",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="store the candidate as the new baseline when the gate allows it (default: on a push to the "
        "default branch only)",
    )
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    parser.add_argument("--reason", help="why the baseline is reset (mode reset)")
    parser.add_argument("--pr", type=int, metavar="N", help="pull request number (mode comment)")
    parser.add_argument("--report-dir", metavar="DIR", help="stored report to post (mode comment; default --out-dir)")


def main(args: argparse.Namespace) -> int:
    isolate_token()
    activity = detect(args.mode, reason=args.reason, pr_number=args.pr)
    print(f"evalgate gate: {activity.why}", file=sys.stderr)
    try:
        guard_pull_request_target(activity, [Path.cwd(), Path(args.config).resolve().parent])
    except EvalgateError as exc:
        report_failure(exc, activity)
        raise
    if activity.kind == "comment":
        from evals.comment import post_stored

        return post_stored(Path(args.report_dir or args.out_dir), activity, pr_number=args.pr)
    if activity.kind == "reset":
        from evals.reset import run_reset

        return run_reset(args, activity)
    if activity.kind == "compare" and not args.results:
        raise UsageError("mode compare gates a results file you bring: pass --results FILE (input `results`)")
    try:
        config, given = load_config_or_defaults(args)
        if args.tolerance and args.tolerance.strip():
            from evals.compare import apply_tolerance_override

            config = apply_tolerance_override(config, args.tolerance)
        outcome = run_gate(config, activity, args, candidate=given)
    except EvalgateError as exc:
        report_failure(exc, activity)
        raise
    print(f"evalgate gate: {outcome.comparison.verdict}: {outcome.comparison.reason}")
    print(f"report: {outcome.paths['report']}")
    if "html" in outcome.paths:
        print(f"html: {outcome.paths['html']}")
    return outcome.exit_code


def isolate_token(env: MutableMapping[str, str] = os.environ) -> None:
    """Make sure the environment this process was started with holds no GitHub token: a child
    can read that block from ``/proc/<pid>/environ`` even after ``os.environ`` forgets it. If it
    does (``GITHUB_TOKEN``, the gh CLI's names, ``INPUT_*TOKEN*``, or another variable with the
    same value), this process re-executes itself without those variables, handing the token over
    on a pipe (``EVALGATE_TOKEN_FD``); the new image keeps it only in ``os.environ`` (which that
    file does not show) for the client and the store."""
    fd_text = env.pop(TOKEN_FD_VAR, None)
    if fd_text:
        try:
            with os.fdopen(int(fd_text), encoding="utf-8") as handle:
                token = handle.read()
        except (ValueError, OSError) as exc:
            raise UsageError(f"{TOKEN_FD_VAR}={fd_text!r}: cannot read the GitHub token from it ({exc})") from None
        if token:
            env["GITHUB_TOKEN"] = token
        return
    clean = suite_env(env)
    if os.name != "posix" or not any(value for name, value in env.items() if name not in clean):
        return
    removed = sorted(name for name in env if name not in clean)
    print(f"evalgate: kept out of the suite's environment: {', '.join(removed)}", file=sys.stderr)
    token = next((env[name] for name in TOKEN_VARS if env.get(name)), "")
    read_end, write_end = os.pipe()
    os.write(write_end, token.encode("utf-8"))  # a pipe holds far more than a token: no blocking
    os.close(write_end)
    os.set_inheritable(read_end, True)
    sys.stdout.flush()
    sys.stderr.flush()
    # -P: however this process was started (`python -m evals` puts the working folder first on
    # sys.path), the new image never imports from the user's checkout (an `evals/` or `yaml.py`
    # there would run with the token).
    argv = [sys.orig_argv[0], "-P", *sys.orig_argv[1:]]
    os.execve(sys.executable, argv, {**clean, TOKEN_FD_VAR: str(read_end)})


def load_config_or_defaults(args: argparse.Namespace) -> tuple[SuiteConfig, tuple[Results, Path] | None]:
    """The suite config; or, when results are brought (``--results``) and there is no config file,
    defaults derived from those results (which are then already loaded, and returned too)."""
    flag_keys = list(dict.fromkeys(getattr(args, "slice_keys", None) or []))
    if not args.results or Path(args.config).exists():
        config = load_config(args.config)
        config.slices = list(dict.fromkeys([*config.slices, *flag_keys]))
        return config, None
    # Said loudly: a mistyped --config path lands here too.
    given = load_given(args, _out_dir(args), flag_keys or None)
    print(f"evalgate: no {args.config}: gating {given[1]} with the default settings", file=sys.stderr)
    config = config_for_results(given[0])
    if flag_keys:
        config.slices = flag_keys
    return config, given


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


# ------------------------------------------------------------------------------------------ pipeline


def _out_dir(args: argparse.Namespace) -> Path:
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def run_gate(
    config: SuiteConfig,
    activity: Activity,
    args: argparse.Namespace,
    *,
    candidate: tuple[Results, Path] | None = None,
) -> GateOutcome:
    """The pipeline after the config is known; ``candidate`` when the caller already has it. The
    baselines are read first: a corrupt or unreachable store fails before a (costly) suite run."""
    from evals.baseline_cmd import load_baselines, open_store_for
    from evals.promote import promote_candidate
    from evals.reset import actor_name

    out_dir = _out_dir(args)
    client = github_client(activity)
    store = open_store_for(config, args, client=client)
    baselines = load_baselines(store, config, pr_base_sha=activity.base_sha, is_pr=activity.is_pr)
    baseline = baselines.baseline
    candidate, results_path = candidate or obtain_candidate(config, args, out_dir, smoke=activity.kind == "smoke")
    comparison = baselines.compare(candidate, config)
    from evals.history import record_comparison, record_promotion

    record_comparison(
        comparison, candidate, baseline.results if baseline else None, config=config, actor=activity.actor
    )
    paths = write_report_files(comparison, config, out_dir)
    paths["results"] = results_path
    if getattr(args, "html", None):
        from evals.html import write_html
        from evals.summary import summarize

        paths["html"] = Path(args.html)
        write_html(paths["html"], results=candidate, summary=summarize(candidate, config.slices), comparison=comparison)
    if activity.is_pr:
        write_comment_meta(comparison, config, activity, out_dir)
        paths["comment-meta"] = out_dir / "comment.json"

    exit_code = comparison.exit_code
    outputs = {
        "verdict": comparison.verdict,
        "report-path": str(paths["report"]),
        "comparison-path": str(paths["comparison"]),
        "results-path": str(results_path),
        "baseline-sha": _baseline_sha(baseline),
        "comment-url": "",
        "promoted": "false",
    }
    if activity.in_actions:
        outputs.update(publish(comparison, config, activity, client, comment=args.comment == "on", out_dir=out_dir))
        set_outputs_safely(outputs)  # before promoting: a failed promotion then only changes `verdict`

    wants_promotion = args.promote if args.promote is not None else activity.promote
    # Locally, `on_missing: seed` means what it says: the first full run becomes the baseline. In
    # Actions only the default branch's runs may (activity.promote), never a PR's or a side branch's.
    seeding = (
        args.promote is None
        and not activity.in_actions
        and comparison.verdict == "no-baseline"
        and config.baseline.on_missing == "seed"
    )
    wants_promotion = wants_promotion or seeding
    if wants_promotion and baselines.drift_unchecked:
        print("evalgate gate: not promoting: the drift guard could not be checked", file=sys.stderr)
    elif wants_promotion and activity.is_pr:
        print("evalgate gate: not promoting: a pull request's candidate never becomes the baseline", file=sys.stderr)
    elif wants_promotion:
        done = promote_candidate(
            store,
            candidate,
            comparison,
            sha=candidate_sha(activity, candidate, explicit=getattr(args, "sha", None)),
            actor=actor_name(activity.actor),
            on_missing=config.baseline.on_missing,
        )
        print(f"evalgate gate: {done.message}", file=sys.stderr)
        record_promotion(candidate, done.result.snapshot if done.result else None, config=config, comparison=comparison)
        outputs["promoted"] = "true" if done.promoted else "false"
        if activity.in_actions:
            set_outputs_safely({"promoted": outputs["promoted"]})
    return GateOutcome(comparison, exit_code, paths, baseline, outputs)


def github_client(activity: Activity, env: Mapping[str, str] = os.environ) -> GitHubClient | None:
    """Inside Actions, a client for the workflow's repository with the action's token; outside,
    None (the store builds one itself if the config asks for a github-release store)."""
    if not activity.in_actions:
        return None
    from evals.github import GitHubClient

    return GitHubClient.from_env(env)


def obtain_candidate(
    config: SuiteConfig, args: argparse.Namespace, out_dir: Path, *, smoke: bool
) -> tuple[Results, Path]:
    """The candidate results and the file they are in: ``--results``, else a fresh run written to
    the out dir. Every slice the config asks for (with ``--slice-key``) must be carried by a case."""
    if args.results:
        return load_given(args, out_dir, config.slices or None)
    path = out_dir / "results.json"
    results = run_suite(Path(args.config), path, smoke=smoke)
    _require_slices(results, path, config.slices)
    return results, path


def load_given(args: argparse.Namespace, out_dir: Path, slice_keys: list[str] | None = None) -> tuple[Results, Path]:
    """``--results``, imported into the out dir first when ``--results-format`` names another harness
    (slicing by ``slice_keys`` — the config's ``slices:`` and ``--slice-key`` — when given, else by the
    format's default keys)."""
    given = Path(args.results)
    if args.results_format and args.results_format != "evalgate":
        from evals.importers import import_results

        results = import_results(args.results_format, [given], slice_keys=slice_keys)
        path = out_dir / "results.json"
        save_results(results, path)
    else:
        results, path = load_results(given), given
    _require_slices(results, given, slice_keys or [])
    return results, path


def _require_slices(results: Results, path: Path, keys: list[str]) -> None:
    from evals.slices import require_slice_keys

    carried = {key for case in results.cases for key in case.slices}
    missing = [key for key in keys if key not in carried]
    if missing:
        # An import keeps only the keys asked for: list what its source offered instead.
        offered = carried | set(results.run.source.get("tag_keys") or [])
        require_slice_keys(missing, offered - set(missing), where=f"{path} (slices: / --slice-key)")


def run_suite(config_path: Path, output: Path, *, smoke: bool, env: Mapping[str, str] = os.environ) -> Results:
    """Run the suite as ``python -P -m evals run`` in a child process and read what it wrote.

    The suite is user code (a python target runs in the runner's process) and this process holds
    the GitHub token (in its client, and in the environment the action gave it). So the code under
    test never shares a process with the token: the child starts from a fresh interpreter (exec:
    none of our memory), with an environment without the token (``suite_env``), and this process
    is made non-dumpable first, so the child cannot read the token from ``/proc/<our pid>/environ``.
    A partial run (exit 3 with a results file) is still returned: the comparison says
    ``incomplete``."""
    output.unlink(missing_ok=True)  # never gate on an earlier gate's file
    # -P: `evals` is ours, not a package of that name in the user's checkout (python targets put
    # their own folders on sys.path explicitly, evals.targets.import_callable).
    command = [
        sys.executable,
        "-P",
        "-m",
        "evals",
        "run",
        "--config",
        str(config_path),
        "--output",
        str(output),
        "--no-summary",
    ]
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
    tail: collections.deque[str] = collections.deque(maxlen=1)

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert child.stderr is not None  # Popen(stderr=PIPE)
        for line in child.stderr:
            sys.stderr.write(line)
            if line.strip():
                tail.append(line.strip())
        child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return tail[0] if tail else ""


def suite_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the GitHub token: the token variables, any ``INPUT_*TOKEN*`` variable, and
    any variable whose value contains one of those tokens (the same token under another name;
    only for token-length values, so a placeholder like "x" does not take PATH with it). The
    suite's own secrets (an API key for the model under test) stay."""
    named = [env[name] for name in TOKEN_VARS if env.get(name)]
    named += [v for k, v in env.items() if k.upper().startswith("INPUT_") and "TOKEN" in k.upper()]
    tokens = {token for token in named if len(token) >= MIN_TOKEN_CHARS}
    return {
        name: value
        for name, value in env.items()
        if name not in TOKEN_VARS
        and not (name.upper().startswith("INPUT_") and "TOKEN" in name.upper())
        and not any(token in value for token in tokens)
    }


def seal_process() -> None:
    """Linux: PR_SET_DUMPABLE 0, which makes this process's /proc files (environ, mem) unreadable
    to other processes of the same user — the suite's child among them. Elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


def candidate_sha(activity: Activity, candidate: Results, *, explicit: str | None = None) -> str:
    """What the candidate's snapshot is named by: ``--sha``, the event's commit, the run's own
    ``git_sha``, the checkout's HEAD; outside git, a digest of the results' content (SPEC §13), so
    the same results always get the same name and different ones never share it."""
    sha = explicit or activity.candidate_sha or candidate.run.git_sha
    if not sha:
        from evals.gitinfo import current_sha

        sha = current_sha()
    if not sha:
        sha = content_digest(candidate)
        print(
            f"evalgate: no commit (not a git checkout, no GITHUB_SHA): the baseline is named by the results' "
            f"content, {sha}; pass --sha COMMIT to name it",
            file=sys.stderr,
        )
    return sha


def content_digest(results: Results) -> str:
    """``content-`` + 40 hex of the sha256 of the cases (ids, inputs, attempts): a stable name for a
    run that has no commit."""
    import hashlib

    body = json.dumps([c.model_dump(mode="json") for c in results.cases], sort_keys=True, separators=(",", ":"))
    return "content-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:40]


def _baseline_sha(baseline: LoadedBaseline | None) -> str:
    """The commit of the baseline used: its snapshot's, or the run's own for a legacy baseline.json."""
    if baseline is None:
        return ""
    if baseline.ref.snapshot is not None:
        return baseline.ref.snapshot.sha
    return baseline.results.run.git_sha or ""


# ------------------------------------------------------------------------------------------ reports


def render(comparison: Comparison, config: SuiteConfig | None, kind: str, *, max_chars: int | None = None) -> str:
    from evals.report import options_from_config, render_markdown

    return render_markdown(comparison, kind=kind, max_chars=max_chars, **options_from_config(config))  # type: ignore[arg-type]


def write_report_files(comparison: Comparison, config: SuiteConfig, out_dir: Path) -> dict[str, Path]:
    """report.md (full, uncut), comparison.json, and comment.md (the PR-comment tier)."""
    from evals.report import options_from_config, write_reports

    paths = {
        "report": out_dir / "report.md",
        "comparison": out_dir / "comparison.json",
        "comment": out_dir / "comment.md",
    }
    write_reports(
        comparison,
        report=paths["report"],
        json_path=paths["comparison"],
        **options_from_config(config),
    )
    atomic_write(paths["comment"], render(comparison, config, "comment").encode("utf-8"))
    return paths


def write_comment_meta(comparison: Comparison, config: SuiteConfig, activity: Activity, out_dir: Path) -> None:
    meta = CommentMeta(
        schema=COMMENT_SCHEMA,
        repository=activity.repository,
        pr_number=activity.pr_number or 0,
        head_sha=activity.head_sha or activity.sha or "",
        base_sha=activity.base_sha,
        gate_id=config.gate_id,
        verdict=comparison.verdict,
    )
    data = json.dumps(meta.model_dump(by_alias=True), indent=2) + "\n"
    atomic_write(out_dir / "comment.json", data.encode("utf-8"))


# ------------------------------------------------------------------------------------------ publishing


def publish(
    comparison: Comparison,
    config: SuiteConfig | None,
    activity: Activity,
    client: GitHubClient | None,
    *,
    comment: bool,
    out_dir: Path,
    headline: str = "",
) -> dict[str, str]:
    """Step summary (after ``headline``, markdown the caller escaped), annotations and the sticky
    comment. Each may fail; none changes the verdict."""
    from evals.publish import emit_annotations, upsert_sticky_comment_or_warn, warn, write_step_summary
    from evals.report import annotations

    outputs: dict[str, str] = {}
    try:
        from evals.report import MAX_CHARS

        room = MAX_CHARS["summary"] - len(headline.encode("utf-8"))
        write_step_summary(headline + render(comparison, config, "summary", max_chars=room))
    except (OSError, EvalgateError) as exc:
        warn(f"could not write the step summary: {exc}")
    emit_annotations(annotations(comparison))
    if not (comment and activity.is_pr and client is not None):
        return outputs
    body = (out_dir / "comment.md").read_text(encoding="utf-8")
    gate_id = config.gate_id if config else comparison.candidate_run.suite
    where = f"{out_dir / 'comment.md'} (with comment.json)"
    hint = (
        f"A pull request from a fork gets a read-only token. The comment is in {where}; post it with the "
        "two-phase workflow_run flow (mode: comment)."
        if activity.fork
        else f"The comment is in {where}."
    )
    result = upsert_sticky_comment_or_warn(client, activity.pr_number or 0, body, gate_id, hint=hint)
    if result is None:
        return outputs
    outputs["comment-url"] = result.url or ""
    return outputs


def set_outputs_safely(outputs: dict[str, str]) -> None:
    from evals.publish import set_outputs, warn

    try:
        set_outputs(outputs)
    except EvalgateError as exc:
        warn(f"could not write the step outputs: {exc}")


def report_failure(exc: EvalgateError, activity: Activity) -> None:
    """Inside Actions, a gate that could not decide still says why on the run page and in the
    ``verdict`` output ("error"), so a workflow's later steps can tell it from a regression."""
    if not activity.in_actions:
        return
    from evals.escape import code_block
    from evals.publish import write_step_summary

    # The message can quote user files (case ids, values): a code block keeps it inert. Wrapped,
    # since a code block cuts long lines.
    message = "\n".join(textwrap.fill(line, 110, break_on_hyphens=False) for line in str(exc).splitlines())
    with contextlib.suppress(OSError, EvalgateError):
        write_step_summary(f"## evalgate: error (exit {exc.exit_code})\n\n{code_block(message)}\n")
    set_outputs_safely({"verdict": "error"})


if __name__ == "__main__":
    from evals.cli import module_main

    raise SystemExit(module_main("gate"))
