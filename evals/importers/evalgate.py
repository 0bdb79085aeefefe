"""evalgate's own results file (docs/spec.md#results-format), passed through unchanged: so ``--from auto`` (and the
action's ``results-format: auto``) accept a file ``evalgate run`` or an earlier import wrote,
validated exactly as every other command reads it."""

from __future__ import annotations

from pathlib import Path

from evals.common.errors import UsageError
from evals.importers.common import ImportOptions
from evals.results.files import load_results
from evals.results.model import Results


def import_files(inputs: list[Path], options: ImportOptions) -> Results:
    if len(inputs) != 1:
        raise UsageError(
            f"{len(inputs)} evalgate results files given; an evalgate results file is already one run: pass one"
        )
    return load_results(inputs[0])
