"""How flaky a case is (docs/spec.md#flaky-cases): from the attempts of one run (k ≥ 2) and from its outcomes in
several runs of the same config. Both are read as one quantity, the probability that two
independent tries of the case disagree — ``2·p·(1 − p)`` for a case that passes with
probability ``p`` — so "flips 40%" means the same whichever evidence it came from."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

Stability = Literal["stable pass", "flaky", "stable fail"]


def attempt_flip_rate(passed: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """Per case, the unbiased estimate ``2·c·(k − c) / (k·(k − 1))`` of the probability that two
    of its attempts disagree, from ``c`` passes of ``k`` judged attempts (the share of the
    ``k(k−1)/2`` pairs of attempts that differ); NaN where ``k < 2``."""
    passed, judged = np.asarray(passed, dtype=float), np.asarray(judged, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(judged >= 2, 2.0 * passed * (judged - passed) / (judged * (judged - 1.0)), np.nan)


def stability(passed: int, judged: int) -> Stability:
    """``stable pass`` (every judged attempt passed), ``stable fail`` (none did) or ``flaky``."""
    if passed == judged:
        return "stable pass"
    return "stable fail" if passed == 0 else "flaky"


def pass_hat_k(passed: int, judged: int, k: int) -> float | None:
    """pass^k: the probability that ``k`` attempts drawn without replacement from the ``judged``
    ones *all* pass, ``C(c, k) / C(n, k)`` — the reliability counterpart of pass@k (any of ``k``
    passes; Chen et al. 2021) used for agents by τ-bench (Yao et al. 2024, arXiv:2406.12045).
    None when fewer than ``k`` attempts were judged."""
    if judged < k or k < 1:
        return None
    return math.comb(passed, k) / math.comb(judged, k)


def run_flip_rate(outcomes: Sequence[float]) -> float | None:
    """The mean squared change of a case's pass rate between consecutive runs (with one attempt
    per run: the share of consecutive pairs whose verdict differs — the discordance of
    ``evals.history.discordance``, per case); None with fewer than two runs."""
    if len(outcomes) < 2:
        return None
    pairs = list(itertools.pairwise(outcomes))
    return sum((a - b) ** 2 for a, b in pairs) / len(pairs)
