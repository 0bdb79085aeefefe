"""The files a gate leaves in its out dir (report.md, comparison.json, comment.md) and reading a
comparison.json back (``evalgate promote --comparison``, the stored report of the fork flow)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.results.files import atomic_write

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.report.markdown import Kind
    from evals.suite.config import SuiteConfig


def render(comparison: Comparison, config: SuiteConfig | None, kind: Kind, *, max_chars: int | None = None) -> str:
    from evals.report.markdown import options_from_config, render_markdown

    return render_markdown(comparison, kind=kind, max_chars=max_chars, **options_from_config(config))


def write_report_files(comparison: Comparison, config: SuiteConfig, out_dir: Path) -> dict[str, Path]:
    """report.md (full, uncut), comparison.json, and comment.md (the PR-comment tier)."""
    from evals.report.markdown import options_from_config, write_reports

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


def parse_comparison(raw: bytes, where: str | Path, ignored: list[str] | None = None) -> Comparison:
    """A comparison.json, validated against the model (exit 2 naming the file and field otherwise).

    Fields this version does not know are left out, and their paths added to ``ignored``: the file
    may come from a newer evalgate (a PR's gate job runs the PR's evalgate, the comment phase the
    default branch's), and nothing is read from a field the model does not have."""
    import json

    from pydantic import ValidationError

    from evals.common.errors import InputFileError
    from evals.compare.model import Comparison

    try:
        return Comparison.model_validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    data: Any = None
    while all(e["type"] == "extra_forbidden" for e in errors):
        if data is None:
            data = json.loads(raw)
        for error in errors:
            *parents, key = error["loc"]
            node = data
            for part in parents:
                node = node[part]
            node.pop(key, None)
            if ignored is not None:
                ignored.append(".".join(str(p) for p in error["loc"]))
        try:
            return Comparison.model_validate_json(json.dumps(data))
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
    raise InputFileError(where, f"not a comparison.json: {loc}: {first['msg']}") from None


def write_outputs(
    comparison: Comparison,
    config: SuiteConfig | None,
    *,
    report: str | None,
    json_path: str | None,
    summary: str | None,
    template: str | None = None,
    junit: str | None = None,
) -> None:
    """``--report`` is PR-comment sized (the seed workflow posts it as the sticky comment);
    ``--summary`` is step-summary sized; ``--json`` is comparison.json with everything; ``--junit``
    is JUnit XML for CI dashboards."""
    if not (report or json_path or summary or junit):
        return
    # The report module (and jinja2) load only when an output is asked for.
    from evals.report import markdown as report_module

    options = report_module.options_from_config(config)
    if template:
        options["template"] = Path(template)
    sized: tuple[tuple[str | None, Kind], ...] = ((report, "comment"), (summary, "summary"))
    for path, kind in sized:
        if path:
            text = report_module.render_markdown(comparison, kind=kind, **options)
            atomic_write(Path(path), text.encode("utf-8"))
    if json_path or junit:
        report_module.write_reports(
            comparison,
            report=None,
            json_path=Path(json_path) if json_path else None,
            junit=Path(junit) if junit else None,
        )
