"""The results file (docs/spec.md#results-format): what ``run`` writes, what the baseline store keeps, what
importers produce. Field names are part of the interface; do not rename them."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator, model_validator

from evals.common.errors import InputFileError, UsageError
from evals.results.spend import JudgeUsage, LimitStop
from evals.results.trace import TraceEvent, check_events

SCHEMA_VERSION: Final = 1
OUTPUT_LIMIT_BYTES = 8 * 1024
INFLATE_LIMIT_ENV = "EVALGATE_MAX_INFLATED_MB"
DEFAULT_INFLATE_LIMIT_MB = 1024

RunStatus = Literal["pending", "running", "success", "error", "cancelled", "timeout"]
ErrorKind = Literal["infra", "target", "scorer", "timeout"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class AttemptError(_Model):
    kind: ErrorKind
    message: str


class RetryRecord(_Model):
    """One infra failure that was retried: kept so a run's record is honest about recovery."""

    kind: ErrorKind = "infra"
    message: str
    status: int | None = None
    wait_s: float | None = None
    latency_ms: float | None = None


class Attempt(_Model):
    # Strict: "passed": "yes" (or "no", 1, "false") is a file some tool got wrong, not a verdict
    # to guess; pydantic's lax mode would read "no" as False but "false" and "yes" as well.
    passed: StrictBool | None = None
    score: Annotated[float, Field(ge=0, le=1)] | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    latency_ms: Annotated[float, Field(ge=0)] | None = None
    tokens_in: Annotated[int, Field(ge=0)] | None = None
    tokens_out: Annotated[int, Field(ge=0)] | None = None
    cost_usd: Annotated[float, Field(ge=0)] | None = None
    output: Any = None
    output_sha256: str | None = Field(default=None, description="sha256 of the full output text.")
    output_truncated: StrictBool = False
    error: AttemptError | None = None
    retries: Annotated[int, Field(ge=0)] = 0
    retry_history: list[RetryRecord] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    trace: list[TraceEvent] | None = Field(default=None, description="Ordered events of the attempt.")
    cached: StrictBool = Field(default=False, description="The answer came from the response cache.")
    judge_usage: JudgeUsage | None = Field(
        default=None,
        description="What a judge scorer's calls cost while scoring this attempt; none when no judge was "
        "paid (no judge, or its verdict came from the cache). Counted in the run's spend and limits, not in the "
        "tokens and cost_usd above, which are the target's.",
    )
    batch: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="The more-evidence batch that added this attempt; none for the first look."
    )

    @field_validator("trace")
    @classmethod
    def _trace_rules(cls, trace: list[TraceEvent] | None) -> list[TraceEvent] | None:  # also lazyload's dicts
        if trace:
            check_events(trace)  # seq without gaps, every tool_call answered
        return trace

    @property
    def is_infra_error(self) -> bool:
        return self.error is not None and self.error.kind == "infra"


class CaseResult(_Model):
    id: Annotated[str, Field(min_length=1)]
    slices: dict[str, str] = Field(default_factory=dict)
    attempts: list[Attempt] = Field(default_factory=list)
    hash: str | None = Field(default=None, description="sha256 of the case's input and expected value.")
    input: Any = None
    expected: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every attempt ran without an infra error (wrong answers and target errors count as done)."""
        return bool(self.attempts) and not any(a.is_infra_error for a in self.attempts)


class TargetInfo(_Model):
    kind: str
    model: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str | None = Field(
        default=None,
        description="The system prompt's text (masked), beside its path and sha256 in params: with it an openai "
        "target is defined by this file alone, so more evidence can re-run this run's side without its commit.",
    )


class Stratum(_Model):
    population: Annotated[int, Field(ge=1)] = Field(description="N_h: the full suite's cases in this stratum.")
    drawn: Annotated[int, Field(ge=1)] = Field(description="n_h: how many of them the smoke run drew.")
    variance: Annotated[float, Field(ge=0)] = Field(
        description="S_h²: the run-to-run variance of a case's outcome the history predicted (the allocation's "
        "weight; the variance of a stratum with one drawn case)."
    )


class Inclusion(_Model):
    stratum: str
    probability: Annotated[float, Field(gt=0, le=1)] = Field(description="π_i = n_h / N_h.")


class SampleDesign(_Model):
    """How a smoke run drawn with ``smoke.select: informative`` chose its cases: the
    strata and each drawn case's inclusion probability, which make its comparison a stratified
    Horvitz–Thompson estimate of the full suite (``evals.compare.sampling``)."""

    method: Literal["stratified"] = "stratified"
    history_runs: Annotated[int, Field(ge=0)] = Field(description="Runs of the history the strata were read from.")
    strata: dict[str, Stratum]
    cases: dict[str, Inclusion]

    @model_validator(mode="after")
    def _known_strata(self) -> SampleDesign:
        for case_id, inclusion in self.cases.items():
            if inclusion.stratum not in self.strata:
                raise ValueError(f"sample.cases[{case_id!r}]: stratum {inclusion.stratum!r} is not in sample.strata")
        return self


class BatchInfo(_Model):
    """One more-evidence batch whose attempts this file holds."""

    batch: Annotated[int, Field(ge=1)]
    units: list[str] = Field(default_factory=list, description="The units whose cases it re-ran.")
    case_ids: list[str] = Field(default_factory=list)


class ProviderBatch(_Model):
    """Requests of this run sent to a provider's batch API (docs/spec.md#batch-pricing): the batches'
    ids, so that a later ``evalgate run --resume`` collects them."""

    api: Literal["openai", "anthropic"] = Field(description="OpenAI Batch or Anthropic Message Batches.")
    state: Literal["submitted", "collected"] = Field(
        description="submitted: the answers are at the provider (collect with --resume); collected: read into "
        "this file's attempts (those the batch did not answer are infra errors, which --resume submits again)."
    )
    ids: list[str] = Field(description="The batches' ids, as the provider named them.")
    requests: Annotated[int, Field(ge=0)] = Field(description="Requests sent in them (one per attempt).")
    requests_digest: str | None = Field(
        None,
        description="A digest of the requests the run had to make when it submitted them (custom_id and body "
        "of each, the cached ones too): a resume whose requests differ refuses to collect them.",
    )
    submitted_at: str | None = None
    collected_at: str | None = None


class FailFastStop(_Model):
    """Why ``gate.fail_fast`` stopped scheduling cases (docs/spec.md#fail-fast): a blocking unit's
    regression was certain at a look under the anytime-valid rule. The run is partial (status
    ``cancelled``) and ``--resume`` completes it."""

    unit: str = Field(description="The blocking unit whose regression stopped the run (e.g. language=ko).")
    metric: str
    look: Annotated[int, Field(ge=1)] = Field(
        description="The look (one per block of completed cases) that stopped it."
    )
    looks: Annotated[int, Field(ge=1)] = Field(description="The looks planned before the run.")
    cases_at_look: Annotated[int, Field(ge=0)] = Field(description="Cases completed when that look was taken.")
    unit_cases: Annotated[int, Field(ge=0)] = Field(description="The unit's paired cases completed at that look.")
    observed_drop: float = Field(description="The unit's mean per-case drop at that look (positive: worse).")
    tolerance: float
    p_value: Annotated[float, Field(ge=0, le=1)]
    level: Annotated[float, Field(ge=0, le=1)] = Field(description="The unit's level at that look: α·share·w·spent.")
    alpha_share: Annotated[float, Field(gt=0, lt=1)] = Field(
        description="The share of the gate's α fail fast spends over its looks; the fixed-sample rule keeps the rest."
    )
    also: list[str] = Field(default_factory=list, description="Other units rejected at the same look.")


class RunInfo(_Model):
    suite: str
    status: RunStatus
    total_cases: Annotated[int, Field(ge=0)]
    completed_cases: Annotated[int, Field(ge=0)]
    started_at: str | None = None
    ended_at: str | None = None
    git_sha: str | None = None
    git_ref: str | None = None
    git_dirty: bool | None = Field(
        default=None,
        description="Tracked files differed from git_sha when the run started (uncommitted changes): the run is of "
        "that commit plus them. Null when not recorded (no git, an importer).",
    )
    config_hash: str | None = None
    definitions: dict[str, Any] | None = Field(
        default=None, description="What config_hash covers (scorers, directions), so a mismatch can say what changed."
    )
    gate_settings: dict[str, Any] | None = Field(
        default=None,
        description="The config's metrics, gate:, slices and smoke: when the run was made; a gate lists what a "
        "candidate's config changes of them against its baseline's.",
    )
    target: TargetInfo | None = None
    attempts_per_case: Annotated[int, Field(ge=1)] = 1
    shard: str | None = Field(default=None, description='"i/N" when this file holds one shard.')
    subset: str | None = Field(default=None, description='"smoke" or "tag:..." when only part of the suite ran.')
    sample: SampleDesign | None = Field(
        default=None, description="Strata and inclusion probabilities of an informative smoke draw."
    )
    message: str | None = Field(default=None, description="Why the run is not a success, if it is not.")
    limit: LimitStop | None = Field(
        default=None,
        description="The limits: key that stopped this run and what was spent; the run is then partial "
        "(cancelled for cost or tokens, timeout for the duration) and --resume completes it.",
    )
    fail_fast: FailFastStop | None = Field(
        default=None,
        description="gate.fail_fast stopped scheduling cases: which unit regressed and at which look; the run is "
        "then partial (cancelled) and --resume completes it.",
    )
    evalgate_version: str | None = None
    source: dict[str, Any] = Field(default_factory=dict, description="Importer provenance (format, files, versions).")
    provider_batch: ProviderBatch | None = Field(
        default=None, description="The provider batch API's batches this run's answers came from (batch: true)."
    )
    batches: list[BatchInfo] = Field(
        default_factory=list, description="More-evidence batches: which cases got one more attempt (attempt.batch)."
    )

    @property
    def is_complete(self) -> bool:
        return self.status == "success" and self.completed_cases == self.total_cases


class Results(_Model):
    schema_version: Literal[1] = SCHEMA_VERSION
    run: RunInfo
    cases: list[CaseResult] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> Results:
        seen: set[str] = set()
        for index, case in enumerate(self.cases):
            if case.id in seen:
                raise ValueError(f"duplicate case id {case.id!r} at cases[{index}]")
            seen.add(case.id)
        if self.run.completed_cases > self.run.total_cases:
            raise ValueError(
                f"run.completed_cases ({self.run.completed_cases}) exceeds run.total_cases ({self.run.total_cases})"
            )
        return self

    def by_id(self) -> dict[str, CaseResult]:
        return {c.id: c for c in self.cases}


class ResultsView(Protocol):
    """A run as its readers (the summary, the history) see it: ``Results``, or a run whose cases
    are made as they are read (``evals.compare.lazyload.LazyResults`` from a file,
    ``evals.run.execution.WrittenRun`` from what a run just wrote)."""

    @property
    def run(self) -> RunInfo: ...

    @property
    def cases(self) -> Sequence[CaseResult]: ...


# ---------------------------------------------------------------------------------------- helpers


# json.dumps with options builds an encoder per call (~3.5 µs of the ~10 a small case's hash took);
# one made once encodes the same bytes.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def case_hash(input_value: Any, expected: Any) -> str:
    """The per-case pairing hash: sha256 of the canonical JSON of input and expected."""
    text = _CANONICAL_JSON.encode({"input": input_value, "expected": expected})
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def clip_output(output: Any, limit: int = OUTPUT_LIMIT_BYTES) -> tuple[Any, str, bool]:
    """Store at most ``limit`` bytes of an output. Returns (stored, sha256 of the full text,
    truncated?). Non-string outputs that fit are kept as they are (JSON values)."""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    raw = text.encode("utf-8")
    full_hash = "sha256:" + hashlib.sha256(raw).hexdigest()
    if len(raw) <= limit:
        return output, full_hash, False
    return raw[:limit].decode("utf-8", errors="ignore"), full_hash, True


def _describe(exc: ValidationError, data: Any) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:5]:
        loc = err["loc"]
        where = ""
        for p in loc:
            where += f"[{p}]" if isinstance(p, int) else (("." if where else "") + str(p))
        if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
            with contextlib.suppress(KeyError, IndexError, TypeError):
                where += f" (case id {data['cases'][loc[1]]['id']!r})"
        parts.append(f"{where or '(top level)'}: {err['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def inflate_limit() -> int:
    """How many bytes compressed input (a gzipped results file, a zip member) may expand to:
    ``EVALGATE_MAX_INFLATED_MB`` megabytes (default 1024), so a small crafted file cannot take
    the machine's memory."""
    raw = os.environ.get(INFLATE_LIMIT_ENV, "").strip()
    if not raw:
        return DEFAULT_INFLATE_LIMIT_MB << 20
    try:
        megabytes = int(raw)
        if megabytes <= 0:
            raise ValueError
    except ValueError:
        raise UsageError(f"{INFLATE_LIMIT_ENV}={raw!r}: expected a whole number of megabytes above 0") from None
    return megabytes << 20


def inflated_too_large(where: str | Path, what: str = "decompressed data") -> InputFileError:
    limit_mb = inflate_limit() >> 20
    return InputFileError(
        where,
        f"{what} larger than {limit_mb:,} MB: refusing to inflate it",
        f"if the file is genuine, raise the limit with {INFLATE_LIMIT_ENV}=<megabytes>",
    )


GZIP_MAGIC = b"\x1f\x8b"
_ZERO_PADDING = re.compile(rb"\0*")
_INPUT_CHUNK = 1 << 14  # compressed bytes fed per step: zlib copies what a step leaves unread
_INFLATE_CHUNK = 1 << 18  # inflated bytes per step: memory while counting is one of these
# Inflated data is kept while it is counted up to this size (most results files: one pass); past
# it, only counted, and inflated again once it is known to fit. So a bomb holds at most this much.
_KEEP_WHILE_COUNTING = 64 << 20


def _inflated(raw: bytes) -> Iterator[bytes]:
    """The inflated bytes of every gzip member in ``raw``, a chunk at a time; zlib.error or
    EOFError when the data is corrupt or cut short (zlib checks each member's CRC and length)."""
    view = memoryview(raw)
    start = 0
    while start < len(raw):
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data: memoryview | bytes
        pos, data = start, view[start:start]
        while not member.eof:
            if not data:
                data, pos = view[pos : pos + _INPUT_CHUNK], min(pos + _INPUT_CHUNK, len(raw))
            # Output may still be pending inside zlib once its input is consumed: call until the
            # end marker; no input left and no output before it is data cut short.
            chunk = member.decompress(data, _INFLATE_CHUNK)
            data = member.unconsumed_tail
            if not chunk and not data and pos == len(raw) and not member.eof:
                raise EOFError("compressed data ended before the end-of-stream marker")
            yield chunk
        # The next member starts where this one's data ended; members may be padded with zeros.
        padding = _ZERO_PADDING.match(raw, pos - len(member.unused_data))
        assert padding is not None  # \0* matches everywhere, if only the empty string
        start = padding.end()


def gunzip(raw: bytes, where: str | Path) -> bytes:
    """Gzip data (any number of members) inflated, up to :func:`inflate_limit` bytes.

    A bomb is refused without holding what it inflates to: the bytes are counted as they are
    inflated, a chunk at a time, and refused the moment the count passes the limit; past
    :data:`_KEEP_WHILE_COUNTING` they are only counted, and inflated again to keep them once they
    are known to fit (a second inflate costs a fraction of parsing the JSON they hold). The size a
    gzip trailer states is not used: it is the last member's alone, modulo 4 GiB, and a cut-short
    file's last bytes state anything."""
    limit = inflate_limit()
    try:
        kept: list[bytes] | None = []
        size = 0
        for chunk in _inflated(raw):
            size += len(chunk)
            if size > limit:
                raise inflated_too_large(where, "gzip data that inflates")
            if kept is not None:
                kept.append(chunk)
                if size > _KEEP_WHILE_COUNTING:
                    kept = None
        return b"".join(kept if kept is not None else _inflated(raw))
    except (EOFError, zlib.error) as exc:
        raise InputFileError(where, f"corrupt or truncated gzip data: {exc}") from None


def read_json_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic (whatever its name)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputFileError(path, "file not found") from None
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc}") from None
    return gunzip(raw, path) if raw[:2] == GZIP_MAGIC else raw


def json_problem(exc: json.JSONDecodeError) -> str:
    """The decoder's message with its column, read as a sentence: several of its messages end in
    "at" ("Unterminated string starting at") and expect the position to follow."""
    msg = exc.msg.removesuffix(" at")
    return f"{msg} at column {exc.colno}"


def looks_truncated(exc: json.JSONDecodeError) -> bool:
    """The decoder stopped where a cut-short file would stop it: at the end of the text (in
    characters: ``exc.pos`` counts them, not bytes), inside a string that never closes, or inside a
    ``true``/``false``/``null`` that the end of the file cut."""
    tail = exc.doc[exc.pos :].strip()
    return not tail or exc.msg.startswith("Unterminated string") or any(w.startswith(tail) for w in LITERALS)


LITERALS = ("true", "false", "null")


def parse_results(raw: bytes, where: str | Path) -> Results:
    if not raw.strip():
        # What a run killed before its first write, or a failed download, leaves behind.
        what = "empty" if not raw else "blank (only whitespace)"
        raise InputFileError(where, f"the file is {what}: no results in it", "check the path, or run the suite again")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise InputFileError(where, "not UTF-8 text (is this a results file?)") from None
    except json.JSONDecodeError as exc:
        hint = "the file looks truncated" if looks_truncated(exc) else None
        raise InputFileError(f"{where}:{exc.lineno}", f"invalid JSON: {json_problem(exc)}", hint) from None
    except RecursionError:  # json.loads recurses per nesting level
        raise InputFileError(where, "JSON nested too deeply to be a results file") from None
    if not isinstance(data, dict):
        raise InputFileError(where, "not a results file: expected a JSON object with schema_version, run, cases")
    version = data.get("schema_version")
    if version is None:
        raise InputFileError(
            where,
            "not a results file: no schema_version",
            "output of another harness: `evalgate import --from auto FILE -o results.json` converts it; "
            "`show --from auto` and `gate --results-format auto` read it as it is",
        )
    if version != SCHEMA_VERSION:
        raise InputFileError(
            where,
            f"unsupported schema_version {version!r}; this evalgate reads {SCHEMA_VERSION}",
            "upgrade evalgate or re-create the file",
        )
    try:
        return Results.model_validate(data)
    except ValidationError as exc:
        raise InputFileError(where, f"invalid results file: {_describe(exc, data)}") from None


def load_results(path: str | Path) -> Results:
    """Read a results file (JSON or gzipped JSON). Any problem is an InputFileError (exit 2)."""
    path = Path(path)
    return parse_results(read_json_bytes(path), path)


def dump_results(results: Results) -> bytes:
    return results.model_dump_json(exclude_none=False).encode("utf-8")


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once at import, before any thread exists.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


@contextmanager
def temp_copy(folder: Path, name: str, data: bytes) -> Iterator[Path]:
    """A complete, fsynced temporary file holding ``data`` in ``folder`` (hidden, named after
    ``name``), for the caller to rename or link into place; removed on exit if it is still there.
    OSError propagates. Its mode follows the umask like open()'s would (mkstemp makes 0600): a
    results file or a baseline snapshot is meant to be as readable as any file the user writes."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        yield Path(tmp)
    finally:
        Path(tmp).unlink(missing_ok=True)


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename: a reader never sees half a file.
    A path that cannot be written is the user's to fix (exit 2), not a crash."""
    try:
        with temp_copy(path.parent, path.name, data) as tmp:
            os.replace(tmp, path)
    except OSError as exc:
        raise InputFileError(path, f"cannot write: {exc.strerror or exc}", "check the output path") from None


def save_results(results: Results, path: str | Path) -> None:
    """Write atomically; gzip when the name ends in ``.gz``."""
    write_results_bytes(dump_results(results), path)


def write_results_bytes(data: bytes, path: str | Path) -> None:
    """``save_results`` for a results file already serialised (``dump_results``'s bytes)."""
    path = Path(path)
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    atomic_write(path, data)


def results_json_schema() -> dict[str, Any]:
    return Results.model_json_schema()
