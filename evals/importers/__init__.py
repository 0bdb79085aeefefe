"""Import results from other harnesses (docs/spec.md#importers): ``import_results(fmt, inputs, **options)``
maps promptfoo, inspect_ai, lm-evaluation-harness, OpenAI evals, Harbor, JUnit, DeepEval,
pytest-json-report and Braintrust outputs to
evalgate's results file (docs/spec.md#results-format), so they can be compared and gated like evalgate's own runs;
an evalgate results file passes through unchanged.

One module per harness; a new one registers in ``detect`` (``--from auto``) and here. May import
``evals.suite``, ``evals.results`` and ``evals.common`` only."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evals.common.errors import InputFileError, UsageError
from evals.results import console
from evals.results.masking import mask_case_names
from evals.results.model import Results

# Format name -> module (each exposes ``import_files(inputs, options) -> Results``).
FORMATS: dict[str, str] = {
    "promptfoo": "evals.importers.promptfoo",
    "inspect_ai": "evals.importers.inspect_ai",
    "lm_eval": "evals.importers.lm_eval",
    "openai_evals": "evals.importers.openai_evals",
    "harbor": "evals.importers.harbor",
    "junit": "evals.importers.junit",
    "deepeval": "evals.importers.deepeval",
    "pytest_json": "evals.importers.pytest_json",
    "braintrust": "evals.importers.braintrust",
    "evalgate": "evals.importers.evalgate",
}
ALIASES: dict[str, str] = {
    "inspect": "inspect_ai",
    "inspect-ai": "inspect_ai",
    "lm-eval": "lm_eval",
    "lm-evaluation-harness": "lm_eval",
    "openai-evals": "openai_evals",
    "oaieval": "openai_evals",
    "pytest": "junit",
    "junit-xml": "junit",
    "pytest-json": "pytest_json",
    "pytest-json-report": "pytest_json",
}


def format_name(fmt: str) -> str:
    """The canonical name of ``fmt`` ('auto' stays 'auto'); UsageError for an unknown one."""
    name = ALIASES.get(fmt.lower(), fmt.lower())
    if name != "auto" and name not in FORMATS:
        raise UsageError(f"unknown import format {fmt!r}; choose one of: auto, {', '.join(FORMATS)}")
    return name


def import_results(
    fmt: str, inputs: Sequence[str | Path], *, slices_asked_in: str = "--slice-key", **options: Any
) -> Results:
    """Read ``inputs`` (files or directories) of format ``fmt`` (or "auto": detected from the
    content) and return them as evalgate Results. Options: see ``ImportOptions``. Files that are
    not what they claim raise ``InputFileError`` (exit 2) naming the file and the reason.

    Every command that reads another harness's output comes through here (``import``, ``show
    --from``, ``gate --results-format``), so a slice key asked for (``slice_keys``; what to fix is
    named by ``slices_asked_in``) slices the same way everywhere, and one no case carries is a
    UsageError listing the keys the source offered, never an import without that slice."""
    from evals.importers.common import ImportOptions
    from evals.importers.detect import detect_format

    paths = [Path(p) for p in inputs]
    if not paths:
        raise UsageError("no input files to import")
    try:
        opts = ImportOptions(**options)
    except ValidationError as exc:
        raise UsageError(f"invalid import options: {exc.errors(include_url=False)[0]['msg']}") from None
    name = format_name(fmt)
    for path in paths:
        if not path.exists():
            raise InputFileError(path, "file not found")
    if name == "auto":
        name = detect_format(paths)
    module = importlib.import_module(FORMATS[name])
    where = paths[0] if len(paths) == 1 else ", ".join(map(str, paths))
    try:
        results = module.import_files(paths, opts)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        # Fields of an unexpected type or shape: the file is not the output the importer knows.
        raise InputFileError(
            where,
            f"not readable as {name} output: {type(exc).__name__}: {str(exc)[:300]}",
            f"if this is unmodified {name} output, please report it with the tool's version",
        ) from None
    # Masked before they are cut: a cut could leave half a secret that no pattern recognises.
    results.cases = [mask_case_names(case) for case in results.cases]
    _cap_names(results, where)
    if opts.slice_keys and results.cases:  # no case at all: the run is empty, and says so itself
        from evals.suite.slices import require_slice_keys

        carried = {key for case in results.cases for key in case.slices}
        missing = [key for key in opts.slice_keys if key not in carried]
        # An import keeps only the keys asked for: list what its source offered instead.
        offered = carried | set(results.run.source.get("tag_keys") or [])
        require_slice_keys(missing, offered - set(missing), where=str(where), asked_in=slices_asked_in)
    return results


# A case id or slice value past this many characters is shortened at import. Parametrised test
# names carry their arguments (a 20 MB id was kept whole: in every report, the store, the history);
# the cut keeps a digest of the whole, so two long ids stay two ids.
MAX_NAME_CHARS = 512


def _cap_names(results: Results, where: object) -> None:
    capped = 0
    for case in results.cases:
        if len(case.id) > MAX_NAME_CHARS:
            case.id, capped = _shortened(case.id), capped + 1
        for key, value in list(case.slices.items()):
            if len(value) > MAX_NAME_CHARS:
                case.slices[key], capped = _shortened(value), capped + 1
    if capped:
        console.warning(
            f"{where}: {capped} case id(s) or slice value(s) longer than {MAX_NAME_CHARS} characters were shortened "
            "(their start and a digest of the whole are kept, so they stay distinct)",
            source="import",
        )


def _shortened(name: str) -> str:
    digest = hashlib.sha256(name.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
    return f"{name[: MAX_NAME_CHARS - 20]}…#{digest}"
