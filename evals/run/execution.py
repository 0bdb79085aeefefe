"""Running the suite on the candidate into a results file (docs/spec.md#running): which cases, resuming a
partial run, and the file written as cases finish.

The file is written at the start (``running``, nothing done), every few seconds while cases finish,
and at the end, each time atomically with a status and counts that are true at that moment
(a partial run must never read as a whole one)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from evals import __version__
from evals.common.errors import InputFileError, UsageError
from evals.common.gitinfo import current_ref, current_sha, uncommitted_changes
from evals.results import console
from evals.results.files import load_results
from evals.results.model import (
    CaseResult,
    FailFastStop,
    Results,
    RunInfo,
    RunStatus,
    SampleDesign,
    TargetInfo,
)
from evals.results.spend import LimitStop, limit_amount, limit_sentence, resume_hint, spend_of
from evals.results.summary import case_values
from evals.run.batch.lane import batch_step, keep_submitted, open_lane
from evals.run.cache import ResponseCache, open_cache
from evals.run.containment import RunContainment
from evals.run.failfast import StopRulePlan, stopped_message, stratified_order
from evals.run.progress import Progress
from evals.run.recorder import Recorder, RunSink, WrittenRun
from evals.run.runner import Runner, RunSettings, StopReason
from evals.run.scorers.builtin import build_scorers
from evals.run.shards import shard_of
from evals.run.smoke import CaseHistory, draw_smoke, subset_label
from evals.run.targets.base import Target
from evals.run.targets.code import build_target
from evals.run.unanswered import AnswerTally
from evals.suite.cases import Case, check_case_set, filter_cases, limit_cases, load_cases
from evals.suite.config import SuiteConfig
from evals.suite.limits import LimitsSpec
from evals.suite.options import DEFAULT_GRACE_S


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def select_cases(
    cases: list[Case],
    config: SuiteConfig,
    *,
    smoke: bool,
    shard: tuple[int, int] | None,
    filters: list[str] | None = None,
    limit: int | None = None,
    history: CaseHistory | None = None,
    ids: list[str] | None = None,
) -> tuple[list[Case], str | None, SampleDesign | None]:
    """The cases this run covers (smoke, then ``--filter``, ``--limit``, then the shard), the
    ``subset`` label (a development subset is compared on its own ids and never promoted) and,
    for an informative smoke draw (``history``: the runs it reads), its design. Narrowing such a
    draw further (filter, limit, shard) changes its inclusion probabilities: the design is then
    dropped and the comparison unweighted, as for any development subset."""
    subset = None
    sample = None
    if smoke:
        draw = draw_smoke(cases, config.smoke, config.slices, history)
        if draw.note:
            console.info(draw.note, source="run")
        cases, sample = draw.cases, draw.sample
        subset = subset_label(config.smoke)
        if not cases and config.smoke.tag:
            raise UsageError(
                f"{config.path or 'config'}: smoke.tag {config.smoke.tag!r} matches no case "
                "(it names a tag key, or key=value)"
            )
    labels = [subset] if subset else []
    if filters:
        cases = filter_cases(cases, filters)
        labels.append("filter:" + ",".join(filters))
    if limit is not None:
        cases = limit_cases(cases, limit)
        labels.append(f"limit:{limit}")
    if ids is not None:
        cases = only_ids(cases, ids)
        labels.append(f"ids:{len(cases)}")
    if shard is not None:
        cases = [c for c in cases if shard_of(c.id, shard[1]) == shard[0]]
    if filters or limit is not None or shard is not None or ids is not None:
        sample = None
    return cases, "+".join(labels) or None, sample


def only_ids(cases: list[Case], ids: list[str]) -> list[Case]:
    """The cases named in ``ids`` (``--ids``: a more-evidence batch), in the suite's order; an id
    the suite does not hold is an error — the batch would silently shrink."""
    known = {c.id for c in cases}
    unknown = [i for i in ids if i not in known]
    if unknown:
        shown = ", ".join(repr(i) for i in unknown[:5]) + (" …" if len(unknown) > 5 else "")
        raise UsageError(f"--ids: {len(unknown)} id(s) the suite does not hold: {shown}")
    wanted = set(ids)
    return [c for c in cases if c.id in wanted]


def _same_target(a: TargetInfo | None, b: TargetInfo) -> bool:
    if a is None:
        return False
    strip = {"system_fingerprint"}  # learnt while running, not configured

    def params(info: TargetInfo) -> dict[str, object]:
        return {k: v for k, v in info.params.items() if k not in strip}

    return a.kind == b.kind and a.model == b.model and params(a) == params(b)


def resumable(
    output: Path, config: SuiteConfig, cases: list[Case], target: TargetInfo
) -> tuple[dict[str, CaseResult], Results | None]:
    """Cases of an earlier run in ``output`` that need not run again: complete, same case hash,
    same number of attempts, made under the same config hash and target."""
    if not output.exists():
        console.info(f"--resume: {output} does not exist yet; running every case", source="run")
        return {}, None
    try:
        previous = load_results(output)
    except InputFileError as exc:
        raise InputFileError(
            exc.where, exc.problem, "--resume reads it to skip finished cases; move it away or drop --resume"
        ) from None
    if previous.run.suite != config.suite:
        raise UsageError(
            f"{output}: holds suite {previous.run.suite!r}, not {config.suite!r}; "
            "pick another --output or drop --resume"
        )
    if previous.run.config_hash != config.config_hash():
        keep_submitted(previous, output, "this config's scorers/metrics differ (config hash)")
        console.info(
            f"--resume: {output} was made with other scorers/metrics (config hash differs); running every case",
            source="run",
        )
        return {}, None
    if not _same_target(previous.run.target, target):
        keep_submitted(
            previous, output, "this run's target differs (another model or parameters, or a run that does not batch)"
        )
        console.info(f"--resume: {output} was made with another target; running every case", source="run")
        return {}, None
    wanted = {c.id: c.hash for c in cases}
    kept = {
        r.id: r
        for r in previous.cases
        if r.id in wanted and r.hash == wanted[r.id] and r.complete and len(r.attempts) == config.attempts
    }
    console.info(
        f"--resume: keeping {len(kept)} complete cases from {output}, running {len(cases) - len(kept)}", source="run"
    )
    return kept, previous


def execute(
    config: SuiteConfig,
    output: Path,
    *,
    smoke: bool = False,
    shard: tuple[int, int] | None = None,
    resume: bool = False,
    progress: bool | None = None,
    grace_s: float = DEFAULT_GRACE_S,
    filters: list[str] | None = None,
    limit: int | None = None,
    lean: bool = False,
    history: CaseHistory | None = None,
    ids: list[str] | None = None,
    attempt_offset: int = 0,
    cache: bool = True,
    rerun: str = "--resume",
    fail_fast: StopRulePlan | None = None,
    sink: RunSink | None = None,
) -> Results | WrittenRun:
    """Run the suite and write ``output``. ``progress``: True a bar, False plain lines, None a bar
    on a terminal. SIGINT/SIGTERM stop the run (status ``cancelled``); a second one skips the grace
    period. A ``limits:`` key stops it too (``cancelled`` for cost and tokens, ``timeout`` for the
    wall clock; ``run.limit`` says which) once what is in flight has finished; a ``resume`` counts
    what its kept cases spent toward the cost and token limits. Returns what was written last
    (``lean``: as a ``WrittenRun``, whose cases are read back only when asked for); the caller
    decides what an incomplete run means. ``history``: what an informative smoke draw reads
    (``evals.history.flaky.smoke_history``). ``cache``: False is ``--no-cache`` (the config's
    ``cache:`` block is what turns the response cache on). ``rerun``: the command that resumes this
    run (``evalgate run --config ... --resume``), for the message of a run that stopped early.
    ``fail_fast``: the stopping rule for the cases in the order they run (``evals.run.failfast``);
    the cases then run in the stratified order, and the run stops scheduling when it says so.
    ``sink``: where the run's record goes as it is made besides the file (``RunSink``: the
    history's live record, ``evals.history.live``)."""
    output = Path(output)
    git_facts = _ask_git(config)
    every_case = load_cases(config)
    responses = open_cache(config, use=cache)
    scorers = build_scorers(config.scorers, config.root, config.where, responses if judge_cached(config) else None)
    check_case_set(config, every_case)
    cases, subset, sample = select_cases(
        every_case, config, smoke=smoke, shard=shard, filters=filters, limit=limit, history=history, ids=ids
    )
    target = build_target(config, responses)
    lane = open_lane(target, smoke=smoke, more_evidence=ids is not None)
    info = target.info()
    kept, previous = resumable(output, config, cases, info) if resume else ({}, None)
    git_sha, git_ref, git_dirty = git_facts()
    run = RunInfo(
        suite=config.suite,
        status="running",
        total_cases=len(cases),
        completed_cases=0,
        started_at=previous.run.started_at if previous and kept else now_iso(),
        git_sha=git_sha,
        git_ref=git_ref,
        git_dirty=git_dirty,
        config_hash=config.config_hash(),
        definitions=config.definitions(),
        gate_settings=config.gate_settings(),
        target=info,
        attempts_per_case=config.attempts,
        shard=f"{shard[0]}/{shard[1]}" if shard else None,
        subset=subset,
        sample=sample,
        evalgate_version=__version__,
    )
    recorder = Recorder(output, cases, run, kept, sink=sink)
    todo = [c for c in cases if c.id not in kept]
    if lane is not None:  # batch: true (docs/spec.md#batch-pricing): submit, or collect what was
        attempts = range(attempt_offset, attempt_offset + config.attempts)
        recorded = previous.run.provider_batch if previous is not None else None
        run.provider_batch, pending = batch_step(lane, recorded, todo, attempts, rerun, output)
        if pending is not None:
            run.status, run.message, run.ended_at = "pending", pending, now_iso()
            recorder.write()
            if responses is not None:
                _close_cache(responses)
            console.info(pending, source="run")
            return recorder.written() if lean else recorder.results()
    recorder.write()
    rule = None
    if fail_fast is not None:
        todo = stratified_order(todo, config.slices, config.gate.seed)
        rule = fail_fast(todo)
    stopped: list[FailFastStop] = []
    settings = RunSettings(
        attempts=config.attempts,
        concurrency=config.concurrency,
        timeout_s=config.timeout_s,
        retries=config.retries,
        limits=shard_share(config.limits, shard[1] if shard else 1) if config.limits.enabled else None,
        grace_s=grace_s,
        attempt_offset=attempt_offset,
        spent_before=spend_of(a for r in kept.values() for a in r.attempts) if kept else None,
    )
    runner = Runner(settings, target, scorers, secrets=target.secrets)
    bar = Progress(len(cases), done=recorder.completed, bar=progress)
    tally = AnswerTally()
    for result in kept.values():
        tally.add(result)

    def on_case(result: CaseResult) -> None:
        tally.add(result)
        errors = sum(1 for a in result.attempts if a.error is not None)
        bar.update(
            cases=1 if result.complete else 0,
            errors=1 if errors else 0,
            retries=sum(a.retries for a in result.attempts),
            passed=case_values(result)[0],
        )
        recorder.add(result)
        if rule is not None and not stopped and (stop := rule.add(result)) is not None:
            stopped.append(stop)
            runner.stop_early()

    # What is loaded by now (modules, config, cases) lives through the run: frozen, the collector's
    # full passes skip it. Unfrozen, one such pass over ~40k objects stalls every in-flight attempt
    # for ~20 ms. And collections come less often: a case's short-lived objects are mostly freed
    # before the next one runs, where the default threshold (700) ran ~270 collections per 10,000
    # cases, ~0.1 s in all, each a pause for every attempt in flight.
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(10_000, 20, 20)
    try:
        try:
            # Processes the target starts (and theirs) do not outlive the run: a helper left
            # holding the run's stderr kept the gate, which reads it to EOF, waiting.
            with RunContainment():
                reason = asyncio.run(_run(runner, target, todo, on_case))
        except BaseException as exc:
            # The file must not go on saying "running" for a run that is over.
            interrupted = isinstance(exc, KeyboardInterrupt)
            run.status = "cancelled" if interrupted else "error"
            internal = f"the run stopped on an internal error: {type(exc).__name__}"
            run.message = "interrupted" if interrupted else internal
            run.ended_at = now_iso()
            with contextlib.suppress(Exception):
                recorder.write()
            raise
        finally:
            gc.set_threshold(*thresholds)
            gc.unfreeze()
        run.target = info.model_copy(update={"params": {**info.params, **target.observed()}})
        if reason == "limit" and recorder.completed == len(recorder.order):
            reason = "done"  # reached with the last case: nothing was left out
        run.limit = runner.limit if reason == "limit" else None
        at_once = bool(kept) and runner.spent.attempts == 0
        run.status, run.message = _final_status(reason, recorder, settings, runner.limit, at_once=at_once, rerun=rerun)
        if stopped:  # the stop stands even if what was in flight completed the run: its look was taken
            run.fail_fast = stopped[0]
            if reason == "fail_fast":
                run.message = stopped_message(stopped[0], recorder.completed, len(cases), rerun)
        unanswered = tally.verdict(target.wire) if run.status == "success" else None
        if unanswered is not None:
            run.status, run.message = "error", unanswered
        run.ended_at = now_iso()
        if unanswered is None:
            recorder.end()  # the run's record (the history's live one) is made while the file is written
        recorder.write()
    finally:
        if responses is not None:  # after the end went: closing it overlaps the record too
            _close_cache(responses)
    if unanswered is not None:
        bar.finish("error (the target answered nothing)")
        raise UsageError(unanswered)
    if run.limit is not None:
        # Which limit only: the summary's note (or, under a gate, the gate's verdict) says the rest once.
        stop = run.limit
        bar.finish(f"{run.status} by limits.{stop.limit} ({limit_amount(stop.limit, stop.value)})")
    else:
        bar.finish(run.status if not run.message else f"{run.status} ({run.message})")
    if lean:
        return recorder.written()
    return recorder.results()


def _ask_git(config: SuiteConfig) -> Callable[[], tuple[str | None, str | None, bool | None]]:
    """The run's git sha, ref and whether tracked files differ from them (``uncommitted``), asked
    of git in a thread while the cases and the target load (a few git processes, each waited for
    in turn, were ~20 ms of every run's start); the returned call waits for the answer."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="evalgate-git")
    asked = pool.submit(lambda: (current_sha(config.root), current_ref(config.root), uncommitted(config)))
    pool.shutdown(wait=False)  # its thread ends once git has answered
    return asked.result


def uncommitted(config: SuiteConfig) -> bool | None:
    """Whether tracked files differ from HEAD as the run starts (the baseline store's folder left
    out: promotions write there): such a run is not of its git_sha alone, and reports say so.
    None outside git."""
    if current_sha(config.root, env={}) is None:
        return None
    return bool(uncommitted_changes(config.root, exclude=config.resolve(config.baseline.path)))


def judge_cached(config: SuiteConfig) -> bool:
    return config.cache is not None and config.cache.judge


def _close_cache(responses: ResponseCache) -> None:
    """Prune the folder to its cap if this run wrote to it, and say what the cache did (nothing
    when no call could be cached: a python target without a ``cache.key`` and no judge)."""
    responses.close()
    stats = responses.stats
    if stats.hits or stats.misses or stats.written or stats.bad or stats.pruned:
        console.info(f"response cache: {stats.line()} ({responses.folder})", source="run")


async def _run(runner: Runner, target: Target, todo: list[Case], on_case: Callable[[CaseResult], None]) -> StopReason:
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        name = signal.Signals(signum).name
        if runner.reason == "cancelled":
            console.info(f"{name} again: abandoning in-flight attempts now", source="run")
        else:
            console.info(
                f"{name}: no new cases; waiting up to {runner.settings.grace_s:g}s for in-flight attempts", source="run"
            )
        runner.stop()

    installed = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # not the main thread
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append(signum)
    try:
        return await runner.run(todo, on_case)
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
        await target.aclose()
        for scorer in runner.scorers:
            await scorer.aclose()


def shard_share(limits: LimitsSpec, shards: int) -> LimitsSpec:
    """A shard's part of the budget: a matrix of N shards spends at most the configured cost and
    tokens between them (each its 1/N), as one unsharded run would. The wall clock is each job's."""
    if shards == 1:
        return limits
    return limits.model_copy(
        update={
            "max_cost_usd": limits.max_cost_usd / shards if limits.max_cost_usd is not None else None,
            "max_tokens": max(1, limits.max_tokens // shards) if limits.max_tokens is not None else None,
        }
    )


def _final_status(
    reason: StopReason,
    recorder: Recorder,
    settings: RunSettings,
    limit: LimitStop | None,
    *,
    at_once: bool,
    rerun: str,
) -> tuple[RunStatus, str | None]:
    total, done = len(recorder.order), recorder.completed
    if reason == "cancelled" or (reason == "fail_fast" and done < total):  # fail fast's message is its own
        return "cancelled", f"cancelled after {done} of {total} cases; rerun with {rerun} to finish"
    if reason == "limit" and limit is not None:
        return _limit_status(limit, done, total, at_once, rerun)
    if done == total:
        return "success", None
    failed = [i for i in recorder.order if i in recorder.done and not recorder.done[i]]
    shown = ", ".join(failed[:10]) + (f" and {len(failed) - 10} more" if len(failed) > 10 else "")
    return "error", (
        f"{len(failed)} of {total} cases still had infra errors after {settings.retries.max} "
        f"{'retry' if settings.retries.max == 1 else 'retries'} ({shown}); "
        f"rerun with {rerun} to redo them"
    )


def _limit_status(limit: LimitStop, done: int, total: int, at_once: bool, rerun: str) -> tuple[RunStatus, str]:
    """A limit stop: ``timeout`` for the wall clock (the run-level timeout it replaces),
    ``cancelled`` for cost and tokens (stopped on purpose, like a cancel, and resumable like one);
    ``run.limit`` says which. The message says what to do next."""
    # No spend here: the file keeps it in run.limit.spend and every summary prints it beside this.
    what = f"{limit_sentence(limit)} after {done} of {total} cases"
    again = " (this resume stopped before any attempt: the cases it kept had spent it)" if at_once else ""
    status: RunStatus = "timeout" if limit.limit == "max_duration_s" else "cancelled"
    return status, f"{what}{again}; to finish it, {resume_hint(limit, rerun)}"
