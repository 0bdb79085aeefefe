"""Harbor job directories (``harbor run``): ``<job>/config.json``, ``<job>/result.json`` (the
job summary, which may omit trials) and ``<job>/<trial>/result.json`` per trial, which is what
is read. A task's trials are its attempts; the verifier's ``rewards`` dict gives the score
(``--metric`` picks the key, default ``reward``) and named scores.

Exceptions follow Harbor's own error policy by exception type: sandbox, provider, Harbor and
cancellation failures are infra errors (not the agent's fault); a verifier failure is a scorer
error; an agent that ran out of budget (timeout, context window) or refused keeps its reward,
which Harbor counts as valid; anything else (a crashing agent, an unknown type) is a target
error."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from evals.common.errors import InputFileError
from evals.importers.common import (
    ImportOptions,
    as_number,
    as_object,
    attempt,
    build_results,
    load_json,
    make_error,
    new_case,
    not_format,
    numeric_scores,
)
from evals.results.infra import error_kind
from evals.results.model import Attempt, CaseResult, ErrorKind, Results, RunStatus, TargetInfo

FORMAT = "harbor"
DEFAULT_REWARD_KEY = "reward"

# Exception type names from harbor.models.trial.error_policy, grouped by the error kind they mean
# here. Types whose reward Harbor treats as valid (agent budget exhausted, refusal) are in
# _REWARD_VALID; unknown types are target errors.
_INFRA = frozenset(
    [
        "EnvironmentStartTimeoutError",
        "SandboxBuildFailedError",
        "AgentSetupTimeoutError",
        "HealthcheckError",
        "SandboxLikelyOutOfMemoryError",
        "MemoryLimitExceededError",
        "SSHAccessError",
        "GKEExecStreamClosedError",
        "GKEPodNotFoundError",
        "RuntimeRequestError",
        "AddTestsDirError",
        "DownloadVerifierDirError",
        "ApiError",
        "ApiRateLimitError",
        "ApiInternalServerError",
        "ApiOverloadedError",
        "ApiConnectionClosedError",
        "ApiResponseStalledError",
        "UnknownApiError",
        "NetworkConnectionError",
        "ApiConnectionError",
        "ApiUsageLimitError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "APIConnectionError",
        "APIError",
        "Timeout",
        "AgentAuthenticationError",
        "ModelNotFoundError",
        "ApiProviderResourceNotFoundError",
        "AuthenticationError",
        "PermissionDeniedError",
        "NotFoundError",
        "ServiceOperationsUnsupportedError",
        "VercelScopeError",
        "DspyImportError",
        "MissingExtraError",
        "RegradeError",
        "CancelledError",
    ]
)
_SCORER = frozenset(
    ["VerifierTimeoutError", "RewardFileNotFoundError", "RewardFileEmptyError", "VerifierOutputParseError"]
)
_REWARD_VALID = frozenset(
    [
        "AgentTimeoutError",
        "ContextWindowExceededError",
        "OutputTokenExceededError",
        "ContextLengthExceededError",
        "OutputLengthExceededError",
        "AgentSafetyRefusalError",
        "ContentPolicyViolationError",
    ]
)
_TIMEOUTS = frozenset({"AgentTimeoutError"})


def _error_kind(exception_type: str, message: str) -> ErrorKind:
    if exception_type in _INFRA:
        return "infra"
    if exception_type in _SCORER:
        return "scorer"
    if exception_type in _TIMEOUTS:
        return "timeout"
    # A type Harbor's policy does not list (an agent's own exception) may still be a network failure.
    return error_kind(exception_type, message)


def _is_trial(data: Any) -> bool:
    return isinstance(data, dict) and "trial_name" in data and "task_name" in data


def _is_job(data: Any) -> bool:
    return isinstance(data, dict) and "n_total_trials" in data and "stats" in data


def _collect(inputs: list[Path]) -> tuple[list[tuple[Path, dict[str, Any]]], list[tuple[Path, dict[str, Any]]]]:
    """(trial results, job results) from job directories, trial directories or result files."""
    trials: list[tuple[Path, dict[str, Any]]] = []
    jobs: list[tuple[Path, dict[str, Any]]] = []

    def take(path: Path) -> None:
        data = load_json(path, "Harbor result.json")
        if _is_trial(data):
            trials.append((path, data))
        elif _is_job(data):
            jobs.append((path, data))
        else:
            raise not_format(path, FORMAT, "neither a trial result (trial_name, task_name) nor a job result")

    for path in inputs:
        if path.is_dir():
            found = sorted(p for p in [path / "result.json", *path.glob("*/result.json")] if p.is_file())
            if not found:
                raise not_format(path, FORMAT, "no result.json in the directory or its trial directories")
            for result in found:
                take(result)
        elif path.is_file():
            take(path)
        else:
            raise InputFileError(path, "file not found")
    if not trials:
        where = ", ".join(str(p) for p in inputs)
        raise InputFileError(where, "no Harbor trial result.json found (a job directory holds one per trial)")
    return trials, jobs


def _seconds(start: Any, end: Any) -> float | None:
    try:
        delta = datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))
    except ValueError:
        return None
    return delta.total_seconds() if delta.total_seconds() >= 0 else None


def _attempt(trial: dict[str, Any], reward_key: str | None) -> Attempt:
    rewards = (trial.get("verifier_result") or {}).get("rewards") or {}
    exception = trial.get("exception_info") if isinstance(trial.get("exception_info"), dict) else None
    agent = as_object(trial.get("agent_result"))
    timing = as_object(trial.get("agent_execution"))
    seconds = _seconds(timing.get("started_at"), timing.get("finished_at")) if timing else None
    if seconds is None:
        seconds = _seconds(trial.get("started_at"), trial.get("finished_at"))
    error = None
    metadata: dict[str, Any] = {"trial": trial.get("trial_name")}
    if exception is not None:
        exc_type = str(exception.get("exception_type") or "Exception")
        metadata["exception"] = exc_type
        if not (rewards and exc_type in _REWARD_VALID):
            message = str(exception.get("exception_message") or "")
            error = make_error(_error_kind(exc_type, message), f"{exc_type}: {message}")
    elif not rewards:
        error = make_error("scorer", "the trial has no verifier rewards")
    main = as_number(rewards.get(reward_key)) if reward_key and error is None else None
    return attempt(
        passed=main == 1.0 if main is not None and main in (0.0, 1.0) else None,
        score=main,
        scores=numeric_scores(rewards) if error is None else {},
        latency_ms=seconds * 1000 if seconds is not None else None,
        tokens_in=agent.get("n_input_tokens"),
        tokens_out=agent.get("n_output_tokens"),
        cost_usd=as_number(agent.get("cost_usd")),
        error=error,
        metadata=metadata,
    )


def _reward_key(trials: list[tuple[Path, dict[str, Any]]], options: ImportOptions) -> str | None:
    keys = list(dict.fromkeys(k for _p, t in trials for k in ((t.get("verifier_result") or {}).get("rewards") or {})))
    if options.metric is not None:
        if options.metric not in keys:
            raise InputFileError(trials[0][0], f"no reward {options.metric!r}; rewards: {', '.join(keys) or 'none'}")
        return options.metric
    if DEFAULT_REWARD_KEY in keys or not keys:
        return DEFAULT_REWARD_KEY
    return keys[0]


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
    trials, jobs = _collect(inputs)
    reward_key = _reward_key(trials, options)
    cases: dict[str, CaseResult] = {}
    for _path, trial in sorted(trials, key=lambda pt: (str(pt[1].get("started_at") or ""), pt[1]["trial_name"])):
        task = str(trial["task_name"])
        if task not in cases:
            task_id = as_object(trial.get("task_id"))
            cases[task] = new_case(task, input_value=task_id or None)
            # A task directory is pinned by its checksum: the pairing hash of the case.
            cases[task].hash = f"sha256:{trial['task_checksum']}" if trial.get("task_checksum") else None
            if trial.get("source"):
                cases[task].slices["source"] = str(trial["source"])
        cases[task].attempts.append(_attempt(trial, reward_key))
    if len({c.slices.get("source") for c in cases.values()}) <= 1:  # one dataset: the slice says nothing
        for case in cases.values():
            case.slices.pop("source", None)

    status: RunStatus = "success"
    message = None
    configured: list[int] = []
    expected_trials = sum(int(job.get("n_total_trials") or 0) for _p, job in jobs)
    for path, job in jobs:
        config_path = path.parent / "config.json"
        if config_path.is_file():
            config = load_json(config_path, "Harbor job config.json")
            if isinstance(config, dict) and isinstance(config.get("n_attempts"), int):
                configured.append(config["n_attempts"])
        if not job.get("finished_at"):
            status = "cancelled"
            message = f"{path}: the job has no finished_at (stopped or still running)"
    if expected_trials > len(trials):
        status = "error" if status == "success" else status
        message = message or f"{len(trials)} of {expected_trials} trials have a result.json"
    first = trials[0][1]
    agent_info = first.get("agent_info") or {}
    model_info = agent_info.get("model_info") or {}
    model = "/".join(p for p in (model_info.get("provider"), model_info.get("name")) if p) or None
    # Without the job config, the attempts actually made per task are the best guess.
    n_attempts = max(configured) if configured else max(len(c.attempts) for c in cases.values())
    expected_cases = expected_trials // n_attempts if expected_trials else None
    return build_results(
        cases.values(),
        fmt=FORMAT,
        inputs=inputs,
        suite=",".join(sorted({str(t.get("source")) for _p, t in trials if t.get("source")})) or "harbor",
        options=options,
        status=status,
        total_cases=expected_cases,
        message=message,
        target=TargetInfo(
            kind="harbor",
            model=model,
            params={"agent": agent_info.get("name"), "agent_version": agent_info.get("version")},
        ),
        started_at=min((str(j.get("started_at")) for _p, j in jobs if j.get("started_at")), default=None),
        ended_at=max((str(j.get("finished_at")) for _p, j in jobs if j.get("finished_at")), default=None),
        expected_attempts=n_attempts,
        source={
            "job_ids": [j.get("id") for _p, j in jobs],
            "reward_key": reward_key,
            "n_trials": len(trials),
            "n_total_trials": expected_trials or None,
            # The job summary's own counts, kept to compare with the trials actually found.
            "summary": [
                {k: (j.get("stats") or {}).get(k) for k in ("n_completed_trials", "n_errored_trials")} for _p, j in jobs
            ],
        },
    )
