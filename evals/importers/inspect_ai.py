"""inspect_ai logs: ``.eval`` (a zip of JSON members) and ``.json`` (the same content in one
document). inspect_ai itself is not needed.

Current inspect versions compress ``.eval`` members with zstd (zip method 93), which Python's
``zipfile`` reads only from 3.14 on; the zip's central directory is still read by ``zipfile``,
and method-93 members are located through their local header and decompressed with
``zstandard``. Each sample × epoch is one attempt. Partial logs (``cancelled``, ``error``, or a
``started`` log whose process died) are imported as partial runs, with the counts taken from the
samples present, not from the log's summary.

Two kinds of log are refused (exit 2) because they would import as runs that look complete but
hold nothing to gate on: a log with no samples although samples were run (written with
``--no-log-samples``, or saved from a header-only read), and a log none of whose samples has a
score (run with ``inspect eval --no-score``). A log stopped before any sample finished is a partial
run of 0 cases, not an error in the file."""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import zstandard

from evals.common import jsonsafe
from evals.common.errors import InputFileError
from evals.importers.common import (
    ImportOptions,
    as_number,
    as_object,
    attempt,
    build_results,
    choose_slices,
    load_json,
    make_error,
    new_case,
    not_format,
)
from evals.results.inflate import inflate_limit, inflated_too_large
from evals.results.infra import error_kind
from evals.results.model import Attempt, CaseResult, Results, RunStatus, TargetInfo

FORMAT = "inspect_ai"
ZIP_METHOD_ZSTD = 93
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_HEADER_SIGNATURE = 0x04034B50
# inspect_ai's value_to_float: CORRECT/INCORRECT/PARTIAL/NOANSWER.
_LETTER_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORD_VALUES = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
_STATUS: dict[str, RunStatus] = {"success": "success", "cancelled": "cancelled", "error": "error"}


# ------------------------------------------------------------------------------------ reading


def _zip_member(path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo, room: int) -> bytes:
    """The member's bytes, inflated to at most ``room`` bytes (what is left of the file's
    :func:`inflate_limit`), whatever size the zip claims."""
    if info.file_size > room:
        raise inflated_too_large(path, f"zip member {info.filename} (with the members before it)")
    if info.compress_type != ZIP_METHOD_ZSTD:
        try:
            with zf.open(info) as fh:
                data = fh.read(room + 1)
        except (NotImplementedError, zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
            raise InputFileError(path, f"cannot read zip member {info.filename}: {exc}") from None
    else:
        with path.open("rb") as fh:
            fh.seek(info.header_offset)
            header = fh.read(_LOCAL_HEADER.size)
            if len(header) != _LOCAL_HEADER.size or _LOCAL_HEADER.unpack(header)[0] != _LOCAL_HEADER_SIGNATURE:
                raise InputFileError(path, f"corrupt zip: bad local header for {info.filename}")
            name_len, extra_len = _LOCAL_HEADER.unpack(header)[9:11]
            fh.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
            compressed = fh.read(info.compress_size)
        try:
            with zstandard.ZstdDecompressor().stream_reader(compressed) as reader:
                data = _read_up_to(reader, room + 1)
        except zstandard.ZstdError as exc:
            raise InputFileError(path, f"corrupt zstd data in {info.filename}: {exc}") from None
    if len(data) > room:
        raise inflated_too_large(path, f"zip member {info.filename} (with the members before it)")
    return data


def _read_up_to(reader: Any, size: int) -> bytes:
    chunks, total = [], 0
    while total < size and (chunk := reader.read(min(1 << 20, size - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _read_eval_zip(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        # It starts like a zip (the caller checked): cut short, not some other kind of file.
        raise InputFileError(
            path,
            f"truncated or corrupt .eval log: the zip's central directory is missing or damaged ({exc})",
            "was it copied while inspect was still writing it? inspect writes the directory last",
        ) from None
    room = inflate_limit()

    def member_json(info: zipfile.ZipInfo) -> Any:
        nonlocal room
        raw = _zip_member(path, zf, info, room)
        room -= len(raw)
        try:
            return jsonsafe.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputFileError(path, f"zip member {info.filename} is not valid JSON: {exc}") from None

    with zf:
        members = {info.filename: info for info in zf.infolist()}
        if "header.json" in members:
            header = member_json(members["header.json"])
        elif "_journal/start.json" in members:  # the process died before writing the header
            header = {**member_json(members["_journal/start.json"]), "status": "started"}
        else:
            raise not_format(path, FORMAT, "zip has neither header.json nor _journal/start.json")
        samples = [
            member_json(info)
            for name, info in members.items()
            if name.startswith("samples/") and name.endswith(".json")
        ]
    return header, samples


def _read_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with path.open("rb") as fh:
        is_zip = fh.read(2) == b"PK"
    if is_zip:
        header, samples = _read_eval_zip(path)
    else:
        header = load_json(path, "inspect_ai log")
        if not isinstance(header, dict):
            raise not_format(path, FORMAT, "not a JSON object")
        samples = header.get("samples") or []
    if not isinstance(header.get("eval"), dict) or "task" not in header["eval"]:
        raise not_format(path, FORMAT, "no eval.task (not an inspect_ai log)")
    for sample in samples:
        if not isinstance(sample, dict) or "id" not in sample:
            raise InputFileError(path, "a sample has no id (corrupt inspect_ai log)")
    return header, samples


# ------------------------------------------------------------------------------------- values


def value_to_float(value: Any) -> float | None:
    """inspect_ai's ``value_to_float``: C=1, P=0.5, I=N=0, yes/true=1, no/false=0, numbers and
    numeric strings as numbers. A value it cannot read gives no score here (inspect warns and
    uses 0, which would count an unreadable grade as a wrong answer)."""
    if isinstance(value, str):
        text = value.strip()
        if text in _LETTER_VALUES:
            return _LETTER_VALUES[text]
        if text.lower() in _WORD_VALUES:
            return _WORD_VALUES[text.lower()]
        try:
            return as_number(float(text))
        except ValueError:
            return None
    return as_number(value)


def _is_binary(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip() in _LETTER_VALUES or value.strip().lower() in _WORD_VALUES
    return isinstance(value, bool) or (isinstance(value, int | float) and value in (0, 1))


def _flat_scores(scores: dict[str, Any]) -> dict[str, Any]:
    """scorer -> raw value; dict values become 'scorer/key'."""
    flat: dict[str, Any] = {}
    for name, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else score
        if isinstance(value, dict):
            flat.update({f"{name}/{key}": v for key, v in value.items()})
        else:
            flat[name] = value
    return flat


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") or p.get("reasoning") or "" for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if p) or None
    return None


def _resolve(value: Any, attachments: dict[str, str]) -> Any:
    """Replace inspect's ``attachment://<hash>`` references by the attached text."""
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments.get(value.removeprefix("attachment://"), value)
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _expected_samples(header: dict[str, Any]) -> int | None:
    dataset = header["eval"].get("dataset") or {}
    config = header["eval"].get("config") or {}
    if isinstance(config.get("sample_id"), list):
        return len(config["sample_id"])
    count = len(dataset["sample_ids"]) if isinstance(dataset.get("sample_ids"), list) else dataset.get("samples")
    if not isinstance(count, int):
        return None
    limit = config.get("limit")
    if isinstance(limit, int):
        return min(count, limit)
    if isinstance(limit, list) and len(limit) == 2 and all(isinstance(x, int) for x in limit):
        return min(count, limit[1]) - limit[0]
    return count


# ------------------------------------------------------------------------------------- checks


def _summary(header: dict[str, Any]) -> dict[str, Any]:
    return header["results"] if isinstance(header.get("results"), dict) else {}


def _summary_scorers(header: dict[str, Any]) -> list[str]:
    """The scorers the log's own results summarise (``scores`` since 0.3.x; ``scorers`` and
    ``scorer`` in version-2 logs)."""
    summary = _summary(header)
    entries = summary.get("scores") or summary.get("scorers") or [summary.get("scorer")]
    return [str(e["name"]) for e in entries if isinstance(e, dict) and e.get("name")]


def _refuse_empty_log(path: Path, header: dict[str, Any], samples: list[dict[str, Any]]) -> None:
    """A log without samples although samples ran, or whose samples were never scored, would
    import as a run with nothing to pair (a gate that is silently inconclusive forever): exit 2."""
    status = str(header.get("status") or "started")
    if not samples:
        completed = _summary(header).get("completed_samples")
        if status == "success" or (isinstance(completed, int) and completed > 0):
            ran = (
                f"its summary counts {completed} completed"
                if isinstance(completed, int) and completed > 0
                else f"the run ended with status {status}"
            )
            if (header["eval"].get("config") or {}).get("log_samples") is False:
                how, hint = "it was written with --no-log-samples", "re-run without --no-log-samples"
            else:
                how = "it was written without them (--no-log-samples, or saved from a header-only read)"
                hint = "import the log inspect wrote, with its samples; sample logging is on by default"
            raise InputFileError(path, f"the log holds no samples although {ran}: {how}; nothing to import", hint)
        if _expected_samples(header) is None:
            raise InputFileError(
                path, f"the log holds no samples: the run stopped before any sample finished (status: {status})"
            )
        return
    if any(not isinstance(s.get("error"), dict) for s in samples) and not any(
        value is not None for s in samples for value in _flat_scores(s.get("scores") or {}).values()
    ):
        count = f"{len(samples)} sample{'s' if len(samples) != 1 else ''}"
        summarised = _summary_scorers(header)
        if summarised:
            raise InputFileError(
                path,
                f"no sample has a score ({count}), although the log's results summarise scorer "
                f"{', '.join(summarised)}: the samples were saved without their scores",
                "import the log as inspect wrote it",
            )
        listed = ", ".join(_scorer_names(header, [])) or "none listed"
        raise InputFileError(
            path,
            f"the log was not scored: no sample has a score ({count}; scorers: {listed})",
            f"was it run with `inspect eval --no-score`? score it with `inspect score {path.name}` "
            "and import the scored log",
        )


# ------------------------------------------------------------------------------------- import


def _scorer_names(header: dict[str, Any], samples: list[dict[str, Any]]) -> list[str]:
    names = [s["name"] for s in header["eval"].get("scorers") or [] if isinstance(s, dict) and "name" in s]
    if not names and samples:
        names = list((samples[0].get("scores") or {}).keys())
    return names


def _primary(scorer_names: list[str], options: ImportOptions, path: Path) -> str | None:
    if options.metric is None:
        return scorer_names[0] if scorer_names else None
    if options.metric not in scorer_names:
        raise InputFileError(path, f"no scorer {options.metric!r}; scorers: {', '.join(scorer_names) or 'none'}")
    return options.metric


def _attempt(sample: dict[str, Any], primary: str | None, binary: bool) -> Attempt:
    flat = _flat_scores(sample.get("scores") or {})
    named = {k: f for k, v in flat.items() if (f := value_to_float(v)) is not None}
    raw = flat.get(primary) if primary else None
    main = value_to_float(raw)
    error = None
    if isinstance(sample.get("error"), dict):
        message = str(sample["error"].get("message") or "sample error")
        last_line = (str(sample["error"].get("traceback") or "").strip().splitlines() or [""])[-1]
        error = make_error(error_kind(f"{message}\n{last_line}"), message)
    output = as_object(sample.get("output"))
    usage = [u for u in (sample.get("model_usage") or {}).values() if isinstance(u, dict)]
    if not usage and isinstance(output.get("usage"), dict):
        # inspect before model_usage (0.3.4x and older) kept only the final generation's usage.
        usage = [output["usage"]]
    costs = [c for u in usage if (c := as_number(u.get("total_cost"))) is not None]
    choices = output.get("choices") or []
    text = output.get("completion") or (_text(choices[0].get("message", {}).get("content")) if choices else None)
    total_time = as_number(sample.get("total_time"))
    metadata: dict[str, Any] = {"epoch": sample.get("epoch")}
    if sample.get("limit"):
        metadata["limit"] = sample["limit"]
    return attempt(
        passed=(main == 1.0) if binary and main is not None else None,
        score=main,
        scores=named,
        latency_ms=total_time * 1000 if total_time is not None else None,
        tokens_in=sum(int(u.get("input_tokens") or 0) for u in usage) if usage else None,
        tokens_out=sum(int(u.get("output_tokens") or 0) for u in usage) if usage else None,
        cost_usd=sum(costs) if costs else None,
        output=text,
        error=error,
        metadata=metadata,
    )


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
    logs = [(path, *_read_log(path)) for path in inputs]
    seen: dict[str, Path] = {}
    for path, header, _samples in logs:
        task = str(header["eval"]["task"])
        if task in seen:
            raise InputFileError(
                path,
                f"task {task!r} is also in {seen[task]}: pass one log per task (after `inspect eval-retry`, its log)",
            )
        seen[task] = path
    tasks = sorted(seen)
    cases: dict[str, CaseResult] = {}
    tags: dict[str, dict[str, Any]] = {}
    statuses: list[tuple[Path, str, dict[str, Any]]] = []
    expected_total = 0
    epochs = 1
    for path, header, samples in logs:
        task = str(header["eval"]["task"])
        config = header["eval"].get("config") or {}
        epochs = max(epochs, int(config.get("epochs") or 1))
        expected_total += _expected_samples(header) or 0
        statuses.append((path, str(header.get("status") or "started"), header))
        _refuse_empty_log(path, header, samples)
        scorer_names = _scorer_names(header, samples)
        primary = _primary(scorer_names, options, path)
        binary = all(
            _is_binary(_flat_scores(s.get("scores") or {}).get(primary))
            for s in samples
            if primary in _flat_scores(s.get("scores") or {})
        )
        for sample in sorted(samples, key=lambda s: (int(s.get("epoch") or 1), str(s["id"]))):
            case_id = f"{task}/{sample['id']}" if len(tasks) > 1 else str(sample["id"])
            if case_id not in cases:
                attachments = sample.get("attachments") or {}
                cases[case_id] = new_case(
                    case_id,
                    input_value=_resolve(sample.get("input"), attachments),
                    expected=sample.get("target"),
                    hashed=True,
                )
                tags[case_id] = dict(sample.get("metadata") or {})
            cases[case_id].attempts.append(_attempt(sample, primary, binary))
    slices = choose_slices(tags, options.slice_keys)
    for case_id, case in cases.items():
        case.slices = slices[case_id]
        if len(tasks) > 1:
            case.slices["task"] = case_id.split("/", 1)[0]

    status: RunStatus = "success"
    messages = []
    for path, raw_status, header in statuses:
        if raw_status != "success":
            status = _STATUS.get(raw_status, "error") if status == "success" else status
            error = as_object(header.get("error"))
            reason = error.get("message") or ("the log was never finished" if raw_status == "started" else None)
            messages.append(f"{path.name}: {raw_status}" + (f": {reason}" if reason else ""))
    first = logs[0][1]
    evals = [h["eval"] for _p, h, _s in logs]
    models = sorted({str(e.get("model")) for e in evals if e.get("model")})
    stats = first.get("stats") or {}
    return build_results(
        cases.values(),
        fmt=FORMAT,
        inputs=inputs,
        suite=",".join(tasks),
        options=options,
        status=status,
        total_cases=expected_total or None,
        message="; ".join(messages)[:1000] or None,
        target=TargetInfo(
            kind="inspect_ai",
            model=models[0] if len(models) == 1 else None,
            params={"models": models} if len(models) > 1 else dict(first["eval"].get("model_generate_config") or {}),
        ),
        started_at=stats.get("started_at"),
        ended_at=stats.get("completed_at"),
        expected_attempts=epochs,
        source={
            "inspect_ai_version": (first["eval"].get("packages") or {}).get("inspect_ai"),
            "log_version": first.get("version"),
            "tasks": [
                {
                    "task": e.get("task"),
                    "task_version": e.get("task_version"),
                    "run_id": e.get("run_id"),
                    "eval_id": e.get("eval_id"),
                    "epochs": (e.get("config") or {}).get("epochs"),
                    "scorers": [s.get("name") for s in e.get("scorers") or [] if isinstance(s, dict)],
                }
                for e in evals
            ],
            "statuses": [s for _p, s, _h in statuses],
            # What the logs' own summaries claimed, kept for comparison with the counted samples.
            "summary_samples": [
                {k: (h.get("results") or {}).get(k) for k in ("total_samples", "completed_samples")}
                for _p, h, _s in logs
            ],
        },
        tags=tags,
    )
