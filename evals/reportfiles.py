"""The files a gate leaves in its out dir (report.md, comparison.json, comment.md) and reading a
comparison.json back (``evalgate promote --comparison``, the stored report of the fork flow)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evals.results import atomic_write

if TYPE_CHECKING:
    from evals.comparison import Comparison
    from evals.config import SuiteConfig


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


def parse_comparison(raw: bytes, where: str | Path) -> Comparison:
    """A comparison.json, validated against the model (exit 2 naming the file and field otherwise)."""
    from pydantic import ValidationError

    from evals.comparison import Comparison
    from evals.errors import InputFileError

    try:
        return Comparison.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise InputFileError(where, f"not a comparison.json: {loc}: {first['msg']}") from None
