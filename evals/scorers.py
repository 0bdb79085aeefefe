"""Public name for what a user's Python scorer may use (docs/config.md, "Scorers"): the ``Score``
it may return, the errors it may raise, and the text helpers the built-in scorers use. A stable
path: the code lives in ``evals.run.scorers``, which may move; this module does not."""

from evals.run.scorers.base import Score, Scorer, ScorerError, ScorerUnavailable, as_text, same_json, verdict
from evals.run.scorers.builtin import extract_final_answer, normalize_text, parse_number

__all__ = [
    "Score",
    "Scorer",
    "ScorerError",
    "ScorerUnavailable",
    "as_text",
    "extract_final_answer",
    "normalize_text",
    "parse_number",
    "same_json",
    "verdict",
]
