"""The options of the commands that reach the library (``gate``, ``reset``, ``run``, and the store
of ``promote``, ``baseline`` and ``history sync``), as typed models declared once.

Each field is one option: its type and default are the field's, and its :class:`Flag` says the
rest — the command-line spelling and help (``evals.cli.options`` builds the parsers from it), the
``EVALGATE_*`` variable the command reads when the flag is absent (what the GitHub Action's inputs
set, action.yml), and that input's name. The child ``evalgate run`` a gate starts is spelled from
the same declarations (:func:`run_argv`), so no flag is written twice. The library reads these
models, never ``argparse``. How a declaration is read and spelled is ``evals.suite.flags``."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from evals.common.errors import UsageError
from evals.suite.flags import Options, argv_of, declared_flag, flag

DEFAULT_OUT_DIR = ".evalgate/out"
DEFAULT_GRACE_S = 5.0
# What a gate does (evals.github.activity picks it from the event for mode auto).
Kind = Literal["smoke", "full", "reset", "compare", "comment", "run"]
Mode = Literal["auto", Kind]
MODES: tuple[Mode, ...] = get_args(Mode)


def _words(text: str) -> list[str]:
    """The action's list inputs: separated by spaces or commas (``slice-key: "language, topic"``)."""
    return text.replace(",", " ").split()


def _true(text: str) -> bool:
    return text == "true"


def _cache_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise UsageError(f"the cache input is on or off, not {text!r} (EVALGATE_CACHE_INPUT)")
    return text == "off"


class StoreOptions(Options):
    """Which baseline store: the config's ``baseline:`` unless these say otherwise."""

    store: Annotated[
        Literal["local", "github-release"] | None,
        flag(
            "--store",
            help="baseline store (default: the config's baseline.store; github-release inside Actions, else local)",
            env="EVALGATE_BASELINE_STORE",
            action_input="baseline-store",
        ),
    ] = None
    baseline_tag: Annotated[
        str | None,
        flag(
            "--baseline-tag",
            metavar="TAG",
            help="release tag of the github-release store",
            env="EVALGATE_BASELINE_TAG",
            action_input="baseline-tag",
        ),
    ] = None
    baseline_dir: Annotated[
        str | None, flag("--baseline-dir", metavar="DIR", help="folder of the local store (default: baseline.path)")
    ] = None


class CandidateOptions(Options):
    """What ``gate`` and ``reset`` share: which suite, which candidate, where the files go, which store."""

    config: Annotated[
        str,
        flag(
            "--config",
            help="suite config (default: ./evalgate.yml)",
            env="EVALGATE_CONFIG",
            action_input="config",
        ),
    ] = "evalgate.yml"
    results: Annotated[
        str | None,
        flag(
            "--results",
            metavar="FILE",
            help="gate this results file instead of running the suite",
            env="EVALGATE_RESULTS",
            action_input="results",
        ),
    ] = None
    results_format: Annotated[
        str | None,
        flag(
            "--results-format",
            metavar="FORMAT",
            help="--results is another harness's output: import it first (a format of `evalgate import`, or auto)",
            env="EVALGATE_RESULTS_FORMAT",
            action_input="results-format",
        ),
    ] = None
    slice_keys: Annotated[
        list[str],
        flag(
            "--slice-key",
            metavar="KEY",
            help="also slice by this case tag (an imported file's metadata/var key); repeatable, added to the "
            "config's slices:",
            env="EVALGATE_SLICE_KEYS",
            action_input="slice-key",
            from_env=_words,
        ),
    ] = []  # noqa: RUF012 (a pydantic field, copied per instance; ruff cannot see Options is a model)
    sha: Annotated[
        str | None,
        flag(
            "--sha",
            metavar="COMMIT",
            help="the commit (or any stable label) the candidate stands for when promoted or reset, and its name "
            "in the history outside git; default: GITHUB_SHA, the results' run.git_sha, the checkout's HEAD, else "
            "(outside git) a digest of the results",
        ),
    ] = None
    out_dir: Annotated[
        str,
        flag(
            "--out-dir",
            help=f"where reports and results are written (default {DEFAULT_OUT_DIR})",
            env="EVALGATE_OUT_DIR",
            action_input="out-dir",
        ),
    ] = DEFAULT_OUT_DIR
    no_cache: Annotated[
        bool,
        flag(
            "--no-cache",
            help="pay for every answer again: the suite runs this command starts do not use the response cache "
            "(config cache:; the same as EVALGATE_CACHE=off)",
            env="EVALGATE_CACHE_INPUT",
            action_input="cache",
            from_env=_cache_off,
        ),
    ] = False
    store: StoreOptions = StoreOptions()


class GateOptions(CandidateOptions):
    """``evalgate gate`` (and every mode of the action)."""

    mode: Annotated[
        Mode,
        flag(
            "--mode",
            help="auto: chosen from the GitHub event (PR → smoke, push to the default branch → full + promote, "
            "workflow_dispatch → reset); outside Actions a full gate against the local store. run: only run the "
            "suite and write results.json (the first job of the two-job layout; no token needed)",
            env="EVALGATE_MODE",
            action_input="mode",
        ),
    ] = "auto"
    tolerance: Annotated[
        str | None,
        flag(
            "--tolerance",
            metavar="DELTA",
            help="tolerance for every rate metric (pass_rate, score, error_rate, pass@k), as in `evalgate compare`: "
            '0.02 or "5%%"',
            env="EVALGATE_TOLERANCE",
            action_input="tolerance",
        ),
    ] = None
    comment: Annotated[
        Literal["on", "off"],
        flag(
            "--comment",
            help="post the sticky PR comment",
            env="EVALGATE_COMMENT",
            action_input="comment",
        ),
    ] = "on"
    promote: Annotated[
        bool | None,
        flag(
            "--promote",
            help="store the candidate as the new baseline when the gate allows it (default: on a push to the "
            "default branch only)",
        ),
    ] = None
    seed: Annotated[
        bool,
        flag(
            "--seed",
            help="when the store has no baseline yet, store this complete run as the first (blessed) baseline: "
            "baseline.on_missing: seed for this gate (default: warn, and name the reset that stores it)",
            env="EVALGATE_SEED",
            action_input="seed",
            from_env=_true,
        ),
    ] = False
    html: Annotated[str | None, flag("--html", metavar="FILE", help="also write a self-contained HTML report")] = None
    reason: Annotated[
        str | None,
        flag("--reason", help="why the baseline is reset (mode reset)", env="EVALGATE_REASON", action_input="reason"),
    ] = None
    pr: Annotated[
        int | None,
        flag(
            "--pr",
            metavar="N",
            help="pull request number (mode comment)",
            env="EVALGATE_PR_NUMBER",
            action_input="pr-number",
        ),
    ] = None
    gate_id: Annotated[
        str | None,
        flag(
            "--gate-id",
            metavar="ID",
            help="the gate id a stored report must carry to be posted (mode comment, required): which sticky "
            "comment is updated is the workflow's choice, never the artifact's",
            env="EVALGATE_GATE_ID",
            action_input="gate-id",
        ),
    ] = None
    report_dir: Annotated[
        str | None,
        flag(
            "--report-dir",
            metavar="DIR",
            help="stored report to post (mode comment; default --out-dir)",
            env="EVALGATE_REPORT_DIR",
            action_input="report-dir",
        ),
    ] = None
    evidence: Annotated[
        str | None,
        flag(
            "--evidence",
            metavar="DIR",
            help="gate.more_evidence: replay the batches the side jobs ran (--evidence-side), from the folder holding "
            "their candidate-N.json and baseline-N.json, instead of running any here",
            env="EVALGATE_EVIDENCE",
            action_input="evidence",
        ),
    ] = None
    evidence_digest: Annotated[
        str | None,
        flag(
            "--evidence-digest",
            metavar="DIGESTS",
            help="the sha256 digests the baseline side's job printed (`baseline-1.json=<hex> ...`, `-` for none): "
            "its files in --evidence must be those (required in GitHub Actions)",
            env="EVALGATE_EVIDENCE_DIGEST",
            action_input="evidence-digest",
        ),
    ] = None
    evidence_side: Annotated[
        Literal["candidate", "baseline"] | None,
        flag(
            "--evidence-side",
            help="gate.more_evidence in side jobs: with --results, take the first look as the gate would and, if it "
            "is inconclusive, run this side's batches of its selected cases into --out-dir/more-evidence (the "
            "candidate's from this checkout, the baseline's from a worktree of the baseline's commit) and print "
            "their digests; no comparison, report or comment",
            env="EVALGATE_EVIDENCE_SIDE",
            action_input="evidence-side",
        ),
    ] = None
    preflight: Annotated[
        bool,
        flag(
            "--preflight",
            help="only check that this job may install and run the suite (the event, the mode, a token that can "
            "write) and exit: the action runs it before installing the suite's own dependencies",
        ),
    ] = False


class ResetOptions(CandidateOptions):
    """``evalgate reset``."""

    reason: Annotated[str, flag("--reason", required=True, help="why (recorded in the manifest with the actor)")]
    actor: Annotated[str | None, flag("--actor", help="who resets (default: GITHUB_ACTOR, else the OS user)")] = None


def _limit_help(what: str, key: str) -> str:
    return (
        f"stop at this many {what} or at the config's limits.{key}, whichever comes first (a more-evidence batch "
        "runs with what is left of the gate's limits)"
    )


class RunOptions(Options):
    """``evalgate run``, and the child run a gate, a reset or a more-evidence batch starts (:func:`run_argv`)."""

    config: Annotated[str, flag("--config", help="suite config (default: ./evalgate.yml)")] = "evalgate.yml"
    output: Annotated[
        str,
        flag("--output", "-o", help="results file (default: ./results.json); .json.gz is gzipped"),
    ] = "results.json"
    smoke: Annotated[bool, flag("--smoke", help="run only the smoke subset (config smoke:)")] = False
    shard: Annotated[
        str | None, flag("--shard", metavar="I/N", help="run only shard I of N (join them with `evalgate merge`)")
    ] = None
    resume: Annotated[bool, flag("--resume", help="keep complete cases already in --output, run the rest")] = False
    concurrency: Annotated[int | None, flag("--concurrency", metavar="N", help="override the config's concurrency")] = (
        None
    )
    grace_s: Annotated[
        float,
        flag(
            "--grace-s",
            metavar="S",
            help=f"on SIGINT/SIGTERM, how long in-flight attempts may finish (default {DEFAULT_GRACE_S:g})",
        ),
    ] = DEFAULT_GRACE_S
    progress: Annotated[
        Literal["auto", "bar", "lines"],
        flag("--progress", help="progress on stderr (auto: bar on a TTY)"),
    ] = "auto"
    filters: Annotated[
        list[str] | None,
        flag(
            "--filter",
            metavar="PATTERN",
            help="development run: only cases whose id matches this glob, or whose tag KEY matches KEY=VALUE "
            "(repeatable; same key: either, different keys: both); the run is marked as a subset",
        ),
    ] = None
    limit: Annotated[
        int | None,
        flag("--limit", metavar="N", help="development run: only the first N cases; the run is marked as a subset"),
    ] = None
    ids: Annotated[
        str | None,
        flag(
            "--ids",
            metavar="FILE",
            help="only the cases whose ids are listed in FILE, one per line (what a more-evidence batch runs); "
            "the run is marked as a subset",
        ),
    ] = None
    attempts: Annotated[int | None, flag("--attempts", metavar="N", help="override the config's attempts per case")] = (
        None
    )
    target: Annotated[
        str | None,
        flag(
            "--target",
            metavar="FILE",
            help="run the target FILE defines (JSON: the config's target: mapping) instead of the config's; how "
            "more evidence re-runs a baseline from the openai target its results recorded",
        ),
    ] = None
    attempt_offset: Annotated[
        int,
        flag(
            "--attempt-offset",
            metavar="K",
            help="number this run's attempts from K (a more-evidence batch: its attempts are new ones, not a "
            "repeat of the first look's, for the response cache too)",
        ),
    ] = 0
    no_cache: Annotated[
        bool,
        flag(
            "--no-cache",
            help="pay for every answer again: do not read or write the response cache (config cache:; the same as "
            "EVALGATE_CACHE=off)",
        ),
    ] = False
    fail_fast_baseline: Annotated[
        str | None,
        flag(
            "--fail-fast-baseline",
            metavar="FILE",
            help="fail fast against the baseline results in FILE (what a pull request's gate passes with "
            "gate.fail_fast): run the cases in a seeded order stratified by slice and stop scheduling once a "
            "blocking unit's regression is certain; --resume finishes a stopped run",
        ),
    ] = None
    max_cost_usd: Annotated[
        float | None, flag("--max-cost-usd", metavar="USD", help=_limit_help("USD", "max_cost_usd"))
    ] = None
    max_tokens: Annotated[
        int | None, flag("--max-tokens", metavar="TOKENS", help=_limit_help("tokens", "max_tokens"))
    ] = None
    max_duration_s: Annotated[
        float | None, flag("--max-duration-s", metavar="SECONDS", help=_limit_help("seconds", "max_duration_s"))
    ] = None
    html: Annotated[
        str | None, flag("--html", metavar="FILE", help="also write a self-contained HTML report of the run")
    ] = None
    summary: Annotated[
        bool,
        flag(
            "--summary",
            help="end with the summary table: pass rate with CI overall and per slice, errors, tokens, latency, "
            "cost (--no-summary: only the errors' most common messages, if any attempt errored; a run a limit "
            "stopped is named by its limit, and what it spent and how to finish it are left to the caller, as the "
            "gate says them with its verdict; evalgate show FILE prints them)",
        ),
    ] = True


def run_argv(options: RunOptions) -> list[str]:
    """The arguments of the ``evalgate run`` a gate, a reset or a batch starts."""
    return argv_of(options, always=("config", "output"))


def reset_argv(options: ResetOptions, *, always: tuple[str, ...] = ()) -> list[str]:
    """The arguments of ``evalgate reset`` that blesses ``options.results``: the suite and the store
    first (``always``: named even at their default), then the results and the reason."""
    tail = [declared_flag(ResetOptions, "results"), str(options.results)]
    tail += [declared_flag(ResetOptions, "reason"), options.reason]
    return [*argv_of(options, always=always, skip=("results", "reason")), *tail]
