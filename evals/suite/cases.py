"""Eval cases (docs/spec.md#cases): loading JSONL, YAML and CSV case files into ``Case`` models.

Every problem ends in an InputFileError naming the file and the line (and, for a duplicate id, where
the id was first seen), so a broken case file never surfaces as a traceback or a silently
skipped case.

Formats (by file extension):
- ``.jsonl`` / ``.ndjson``: one JSON object per line; blank lines are skipped.
- ``.yaml`` / ``.yml``: one document holding a list of mappings.
- ``.csv``: a header row, then one case per row; see ``_CsvColumns`` for the column rules.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from evals.common.errors import InputFileError, UsageError
from evals.common.gcpause import gc_paused
from evals.results.files import json_problem
from evals.results.masking import env_secrets, mask_name, mask_slices
from evals.results.model import case_hash
from evals.suite.config import SuiteConfig
from evals.suite.slices import require_slice_keys
from evals.suite.targets import CommandTarget
from evals.suite.yamlsource import check_aliases, did_you_mean

CASE_KEYS = ("id", "input", "expected", "tags", "metadata")
TOO_DEEP = "values nested too deeply to read"
_GLOB_CHARS = re.compile(r"[*?\[]")
_YamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Case(BaseModel):
    """One case. ``id`` is the pairing key between runs; ``tags`` are its slice values
    (``{"language": "ko"}``); ``source`` is ``file:line`` for error messages. ``id`` and ``tags``
    are masked (docs/spec.md#masked-names): what evalgate records, selects and pairs by; when
    masking changed them, ``written`` keeps them as the case file wrote them, for the target."""

    model_config = ConfigDict(extra="forbid")

    id: str
    input: Any = None
    expected: Any = None
    tags: dict[str, str] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str = ""
    written: tuple[str, dict[str, str]] | None = None

    def as_written(self) -> Case:
        """The case as its file wrote it: what the target is given (a target may look its
        fixtures up by id). Never recorded."""
        if self.written is None:
            return self
        case_id, tags = self.written
        return self.model_copy(update={"id": case_id, "tags": tags, "written": None})

    @cached_property
    def hash(self) -> str:
        """sha256 of input and expected (``results.case_hash``): a changed case is not paired."""
        return case_hash(self.input, self.expected)


# ---------------------------------------------------------------------------------------- loading


def load_cases(config: SuiteConfig) -> list[Case]:
    """All cases of the suite, in file order (files in pattern order, glob matches sorted).
    Raises InputFileError naming file and line for any bad row, duplicate or missing id."""
    cases: list[Case] = []
    first_seen: dict[str, str] = {}
    with gc_paused():
        for path in case_files(config):
            cases.extend(_read_file(path))
    # Masked as they enter (docs/spec.md#masked-names), with what a command target's env: adds to
    # the environment it reads: every run, results file, report and the history see only these.
    extra = env_secrets(config.target.env) if isinstance(config.target, CommandTarget) else ()
    for case in cases:
        case_id, tags = mask_name(case.id, extra), mask_slices(case.tags, extra)
        if case_id != case.id or tags != case.tags:
            case.written, case.id, case.tags = (case.id, case.tags), case_id, tags
        # A duplicate is one of the masked ids: two ids that mask alike would be one in every file.
        where = first_seen.get(case.id)
        if where is None:
            first_seen[case.id] = case.source
        else:
            raise InputFileError(
                case.source,
                f"duplicate case id {case.id!r} (first used at {where})",
                "give one of them a new id; keep the old one on the case the baseline knows it by",
            )
    return cases


def check_case_set(config: SuiteConfig, cases: list[Case]) -> None:
    """What would make a run of these cases mean nothing is an error (docs/spec.md#config-errors): no cases at all,
    a ``slices:`` key no case carries, a scorer that needs ``expected`` on a case without one."""
    if not cases:
        files = case_files(config)
        if not files:
            raise InputFileError(
                config.where("cases"),
                "the case set is empty: cases: lists no file",
                "name the case files, e.g. cases: cases.jsonl; a gate on no cases means nothing",
            )
        names = ", ".join(str(_display(p)) for p in files)
        formats = "; ".join(dict.fromkeys(_CASE_LAYOUT.get(p.suffix.lower(), "") for p in files))
        raise InputFileError(
            config.where("cases"),
            f"the case set is empty: {names} {'holds' if len(files) == 1 else 'hold'} no case",
            f"add cases: {formats}; a gate on no cases means nothing",
        )
    if config.slices:
        require_slice_keys(config.slices, {k for c in cases for k in c.tags}, where=config.where("slices"))
    for index, scorer in enumerate(config.scorers):
        if not scorer.needs_expected:
            continue
        lacking = [c for c in cases if c.expected is None]
        if lacking:
            others = f" (and {len(lacking) - 1} more cases)" if len(lacking) > 1 else ""
            raise InputFileError(
                lacking[0].source,
                f"case {lacking[0].id!r} has no expected value, but scorer {scorer.name!r} "
                f"({config.where('scorers', index)}) compares with it{others}",
                "add expected to the cases, or use a scorer that needs none (json_valid, a python callable)",
            )


def case_files(config: SuiteConfig) -> list[Path]:
    """The files ``cases:`` names, each once. A pattern that matches nothing is an error that
    points at the ``cases:`` entry in the config."""
    files: list[Path] = []
    seen: set[Path] = set()
    patterns = config.case_patterns
    for index, pattern in enumerate(patterns):
        if _GLOB_CHARS.search(pattern):
            # root_dir, not root/pattern: a folder name with [ or * in it must not act as a pattern.
            found = glob.glob(pattern, root_dir=config.root, recursive=True)
            matches = sorted((config.root / p).resolve() for p in found)
            matches = [p for p in matches if p.is_file()]
            if not matches:
                raise InputFileError(
                    _config_where(config, index),
                    f"cases pattern {pattern!r} matches no file under {config.root}",
                )
        else:
            path = config.resolve(pattern)
            if not path.is_file():
                raise InputFileError(
                    _config_where(config, index),
                    f"cases file {pattern!r} not found (looked for {path})",
                    "paths are relative to the folder of the config file",
                )
            matches = [path]
        for path in matches:
            if path not in seen:
                seen.add(path)
                files.append(path)
    return files


def _config_where(config: SuiteConfig, index: int) -> str:
    return config.where("cases", index) if isinstance(config.cases, list) else config.where("cases")


def _display(path: Path) -> Path:
    """Paths in messages: relative to the working directory when below it (shorter, clickable in CI logs)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


# How a case is written in each format, for the message about a file that holds none.
_CASE_LAYOUT = {
    ".jsonl": "one JSON object per line in .jsonl",
    ".ndjson": "one JSON object per line in .ndjson",
    ".yaml": "a list of mappings in .yaml (- id: ...)",
    ".yml": "a list of mappings in .yml (- id: ...)",
    ".csv": "one row per case under the header row in .csv",
}


def _read_file(path: Path) -> Iterator[Case]:
    path = _display(path)
    suffix = path.suffix.lower()
    readers = {".jsonl": _read_jsonl, ".ndjson": _read_jsonl, ".yaml": _read_yaml, ".yml": _read_yaml}
    if suffix == ".csv":
        return _read_csv(path)
    if suffix in readers:
        return readers[suffix](path)
    raise InputFileError(
        path, f"unknown case file type {suffix or '(no extension)'!r}", "use .jsonl, .yaml/.yml or .csv"
    )


def _read_text(path: Path, encoding: str = "utf-8") -> str:
    try:
        return path.read_text(encoding=encoding)
    except UnicodeDecodeError as exc:
        raise InputFileError(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc}") from None


def _read_jsonl(path: Path) -> Iterator[Case]:
    decode = json.JSONDecoder().decode
    for number, line in enumerate(_read_text(path, "utf-8-sig").split("\n"), start=1):  # not at U+2028 etc.
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = decode(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(where, f"invalid JSON: {json_problem(exc)}") from None
        except RecursionError:
            raise InputFileError(where, TOO_DEEP) from None
        yield _case_from_mapping(row, where)


def _read_yaml(path: Path) -> Iterator[Case]:
    text = _read_text(path)
    loader = _YamlLoader(text)
    try:
        root = loader.get_single_node()
        check_aliases(root, path)
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise InputFileError(f"{path}:{mark.line + 1}" if mark else path, f"invalid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise InputFileError(path, f"invalid YAML: {exc}") from None
    except RecursionError:
        raise InputFileError(path, TOO_DEEP) from None
    finally:
        loader.dispose()
    if root is None or data is None:
        return
    if not isinstance(data, list):
        raise InputFileError(path, "a YAML case file must be a list of mappings (- id: ...)")
    for node, row in zip(root.value, data, strict=True):
        yield _case_from_mapping(row, f"{path}:{node.start_mark.line + 1}", in_yaml=True)


def _case_from_mapping(row: Any, where: str, *, in_yaml: bool = False) -> Case:
    if not isinstance(row, dict):
        raise InputFileError(where, f"a case must be an object with id and input, got {type(row).__name__}")
    unknown = [k for k in row if k not in CASE_KEYS]
    if unknown:
        raise InputFileError(
            where,
            f"unknown case key {unknown[0]!r} (case keys are {', '.join(CASE_KEYS)})",
            # A typo of a case key is likelier than an extra field: suggest the key, as for the config.
            did_you_mean(unknown[0], CASE_KEYS) or "put extra fields under metadata",
        )
    if "input" not in row:
        raise InputFileError(where, f"case {_id_for_message(row)} has no input")
    metadata = row.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise InputFileError(where, f"metadata must be a mapping, got {type(metadata).__name__}")
    return Case.model_construct(
        id=_check_id(row.get("id"), where),
        input=row["input"],
        expected=row.get("expected"),
        tags=_check_tags(row.get("tags"), where, in_yaml=in_yaml),
        metadata=metadata,
        source=where,
    )


def _id_for_message(row: dict[str, Any]) -> str:
    return repr(row["id"]) if "id" in row else "(no id)"


def _check_id(value: Any, where: str) -> str:
    # Integer ids are common in exported datasets; their decimal text is just as stable.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is None:
        raise InputFileError(where, "case has no id", "every case needs a stable, unique id: the pairing key")
    if not isinstance(value, str) or not value.strip():
        raise InputFileError(where, f"case id must be a non-empty string, got {value!r}")
    return value


def _check_tags(value: Any, where: str, *, in_yaml: bool) -> dict[str, str]:
    """``tags`` as read from a JSON line or (``in_yaml``) a YAML file: the hints show that syntax
    (CSV cells are strings already)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        example = (
            "tags: {language: ko, category: math}; for a flag write {smoke: 'yes'}"
            if in_yaml
            else '"tags": {"language": "ko", "category": "math"}; for a flag write {"smoke": "yes"}'
        )
        raise InputFileError(
            where, f"tags must be a mapping of slice key to string value, got {type(value).__name__}", f"e.g. {example}"
        )
    for key, tag in value.items():
        if not isinstance(key, str) or not key.strip() or "=" in key:
            raise InputFileError(where, f"tag key {key!r} must be a non-empty string without '='")
        if not isinstance(tag, str) or not tag:
            raise InputFileError(
                where,
                f"tag {key!r} must have a non-empty string value, got {_spelled(tag)}",
                _tag_hint(key, tag, in_yaml),
            )
    return value


def _spelled(value: Any) -> str:
    """A value read from a case file, as JSON writes it (``true``, not Python's ``True``); what
    JSON has no type for (a YAML date), as text."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _tag_hint(key: str, tag: Any, in_yaml: bool) -> str:
    if tag is None or tag == "":
        return "leave the tag out of a case that has no such value"
    if isinstance(tag, (list, dict)):
        return "a tag holds one value; put structured data under metadata"
    if not in_yaml:
        return f"write the value as a JSON string: {json.dumps(key)}: {json.dumps(_spelled(tag))}"
    if isinstance(tag, bool):  # written yes, on, true...: which one is lost
        return f"YAML reads an unquoted yes/no/true/false as a boolean: quote the value, e.g. {key}: 'yes'"
    kind = "number" if isinstance(tag, (int, float)) else type(tag).__name__
    return f"YAML reads {tag} as a {kind}: quote it, {key}: '{tag}'"


# ---------------------------------------------------------------------------------------- CSV


class _CsvColumns:
    """CSV column rules. Every cell is text, never guessed:
    - ``id`` (required), ``input`` (required), ``expected``: the cell's text as is.
    - ``input:json``, ``expected:json``: the cell is JSON text and is decoded (invalid JSON is an error).
    - ``tags.<key>``: a slice value; an empty cell means the case has no such tag.
    - ``metadata.<key>`` (text) and ``metadata.<key>:json`` (decoded JSON).
    An empty ``expected`` cell means the case has no expected value; an empty metadata cell is left out."""

    def __init__(self, header: list[str], where: str):
        self.fields: list[tuple[str, str | None, bool]] = []  # (section, key, json?)
        seen: set[tuple[str, str | None]] = set()
        for column in header:
            name, _, kind = column.strip().partition(":")
            if kind not in ("", "json"):
                raise InputFileError(where, f"CSV column {column!r}: unknown suffix ':{kind}' (only ':json')")
            section, dot, key = name.partition(".")
            is_json = kind == "json"
            field: tuple[str, str | None, bool]
            if section in ("id", "input", "expected") and not dot and not (is_json and section == "id"):
                field = (section, None, is_json)
            elif section in ("tags", "metadata") and dot and key and not (is_json and section == "tags"):
                field = (section, key, is_json)
            else:
                raise InputFileError(
                    where,
                    f"unknown CSV column {column!r}",
                    "columns are id, input, expected (input:json, expected:json to decode JSON), "
                    "tags.<key>, metadata.<key>[:json]",
                )
            if field[:2] in seen:
                raise InputFileError(where, f"CSV column {column!r} appears twice")
            seen.add(field[:2])
            self.fields.append(field)
        for required in ("id", "input"):
            if (required, None) not in seen:
                raise InputFileError(where, f"CSV header has no {required!r} column")

    def row(self, cells: list[str], where: str) -> dict[str, Any]:
        if len(cells) != len(self.fields):
            raise InputFileError(where, f"row has {len(cells)} cells, the header has {len(self.fields)}")
        row: dict[str, Any] = {"tags": {}, "metadata": {}}
        for (section, key, is_json), cell in zip(self.fields, cells, strict=True):
            if key is None:
                if section == "expected" and cell == "":
                    continue
                row[section] = _json_cell(cell, section, where) if is_json else cell
            elif cell != "":
                row[section][key] = _json_cell(cell, f"{section}.{key}", where) if is_json else cell
        return row


def _json_cell(cell: str, column: str, where: str) -> Any:
    try:
        return json.loads(cell)
    except json.JSONDecodeError as exc:
        raise InputFileError(where, f"column {column}:json holds invalid JSON: {json_problem(exc)}") from None
    except RecursionError:
        raise InputFileError(where, TOO_DEEP) from None


def _read_csv(path: Path) -> Iterator[Case]:
    text = _read_text(path, "utf-8-sig")  # Excel writes a BOM
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)  # rows end at newlines, not U+2028 etc.
    try:
        header = next(reader, None)
        if header is None:
            return
        columns = _CsvColumns(header, f"{path}:1")
        start = reader.line_num + 1
        for cells in reader:
            where = f"{path}:{start}"
            start = reader.line_num + 1
            if not any(c.strip() for c in cells):
                continue
            yield _case_from_mapping(columns.row(cells, where), where)
    except csv.Error as exc:
        raise InputFileError(f"{path}:{reader.line_num}", f"invalid CSV: {exc}") from None


# ------------------------------------------------------------------------------ development subsets


def filter_cases(cases: list[Case], patterns: list[str]) -> list[Case]:
    """The cases matching ``patterns`` (``--filter``), in suite order: each is an id glob
    (``q-00*``) or ``key=value`` on a tag (the value may be a glob too). Patterns on the same key
    (or several id globs) are alternatives; different keys must all match. A pattern that matches
    no case is an error that says what exists."""
    groups: dict[str | None, list[str]] = {}
    for pattern in patterns:
        name, sep, value = pattern.partition("=")
        if sep and (not name.strip() or not value.strip()):
            raise UsageError(f"--filter {pattern!r}: expected an id glob or KEY=VALUE")
        groups.setdefault(name.strip() if sep else None, []).append(value.strip() if sep else pattern)
    keys = [k for k in groups if k is not None]
    require_slice_keys(keys, {k for c in cases for k in c.tags}, where="--filter", asked_in="--filter")
    for key, globs in groups.items():
        values = sorted({c.id if key is None else c.tags.get(key, "") for c in cases} - {""})
        for wanted in globs:
            if not any(fnmatchcase(v, wanted) for v in values):
                what = "case id" if key is None else f"{key} value"
                shown = ", ".join(values[:10]) + (f" and {len(values) - 10} more" if len(values) > 10 else "")
                spelled = wanted if key is None else f"{key}={wanted}"
                raise UsageError(f"--filter {spelled!r}: matches no {what} ({shown})")

    def keep(case: Case) -> bool:
        return all(
            any(fnmatchcase(case.id if key is None else case.tags.get(key, ""), wanted) for wanted in globs)
            for key, globs in groups.items()
        )

    return [c for c in cases if keep(c)]


def limit_cases(cases: list[Case], limit: int) -> list[Case]:
    """The first ``limit`` cases in suite order (``--limit``)."""
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    return cases[:limit]
