"""Statistics of "more evidence" (docs/spec.md#more-evidence): each later look's test and its share of α.

**The estimand stays the first look's**: the suite's cases as a sample of the inputs they stand
for. A re-run attempt of a case reduces only that case's attempt noise; it never adds a case. So
at every look after a batch, a unit is tested on its **per-case means** over all attempts so far
(both sides), ``d_i = mean_base_i − mean_cand_i`` oriented so that positive is worse, with the
**between-case** variance of those n means — n is the unit's case count, never its attempt count:

    t = (mean(d) − δ) / (sd(d) / √n),   p = P(T_{n−1} ≥ t)      (H0: the drop is at most δ)

a one-sample t-test on the per-case means (Student 1908). A case's mean estimates its own
expected drop whatever the number of its attempts, and the cases are the independent units of the
sample, so the test needs no model of how the attempts of one case relate to each other: when a
target repeats its first answer exactly (temperature 0, a seeded bot), the per-case means *are*
the first look's values and the test is the first look's data again, not a growing pile of copies;
when the candidate only redraws which cases are hard, the per-case means' spread between cases
carries that and the test stays at its level. The t reference at the tiny levels used here (α·w
of a 25-case slice at a later look is ~10⁻⁵) is checked by ``benchmarks/sim_evidence.py``.

**α spent over the looks** (Lan & DeMets 1983, "Discrete sequential boundaries for clinical
trials", Biometrika 70(3):659–663, with the power spending function ``α·t²`` of Kim & DeMets 1987,
Biometrika 74(1):149–154): the first look keeps the fixed-sample rule at (1 − ρ)·α; the later
looks share ρ·α as ``ρα·t²`` of the information time t = k/K, K = ``max_batches`` (fixed by the
config, before any data), so look k gets ``look_levels(ρα, K)[k − 1]`` and the K levels sum to
ρ·α. Back-loaded because a later look holds more attempts: measured against ``ln(1 + (e − 1)t)``
(Pocock type), t and t³, t² catches a 25-case slice's −0.30 within 10 batches 0.88 / 0.88 / 0.88
of the time on the three per-case models, against 0.87 / 0.85 / 0.83 (``benchmarks/sim_evidence.py``).
The looks are combined by the union bound (Bonferroni over looks): P(any look falsely fails) ≤
(1 − ρ)α + Σ α_k = α however the looks correlate — repetition of the first look's answers
included — and whenever the batches stop; a look that is not taken leaves its α unspent. Within a
look, units are merged by weighted Holm with the gate's own α weights
(``evals.compare.stats.weighted_holm``), as at the first look.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

Side = Literal["worse", "not_worse"]

METHOD = "t-test on per-case means (between-case variance), α spent over the looks as ρα·(k/K)² (Lan–DeMets)"


def look_levels(level: float, max_batches: int) -> np.ndarray:
    """α of looks 1..K (K = ``max_batches``): the increments of ``level·(k/K)²``. They sum to
    ``level`` and grow with k (at K = 10 the first later look gets 0.01·level, the last 0.19·level):
    a later look holds more attempts and spends more."""
    if max_batches < 1:
        return np.zeros(0)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), not {level}")
    spent = level * (np.arange(max_batches + 1) / max_batches) ** 2
    return np.diff(spent)


def drop_test(total: ArrayLike, square: ArrayLike, n: ArrayLike, delta: ArrayLike, side: Side = "worse") -> np.ndarray:
    """One-sided p-values of the t-test on per-case mean drops, from each unit's Σd, Σd² and n
    (broadcast; vectorised over replicates and units). ``"worse"``: H0 "mean drop ≤ δ";
    ``"not_worse"``: H0 "mean drop ≥ δ" (what a pass needs). Fewer than 2 cases: p = 1. Every case
    with the same drop (no spread): p = 0 when that drop is on the alternative's side of δ, else 1."""
    if side not in ("worse", "not_worse"):
        raise ValueError(f"side must be 'worse' or 'not_worse', not {side!r}")
    # Student's t CDF. scipy is slow to load (and ~20 MB): only more evidence and fail fast get here.
    from scipy.special import stdtr

    s = 1.0 if side == "worse" else -1.0
    total_, square_, n_ = np.broadcast_arrays(
        np.asarray(total, dtype=float), np.asarray(square, dtype=float), np.asarray(n, dtype=float)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = total_ / n_
        var = (square_ - total_ * mean) / (n_ - 1.0)
        # Σd² − (Σd)²/n cancels to rounding noise when every d is equal: that is no spread.
        var = np.where(var > 1e-12 * (1.0 + np.abs(square_ / n_)), var, 0.0)
        gap = s * (mean - np.asarray(delta, dtype=float))
        t = gap / np.sqrt(var / n_)
        p = np.where(var > 0, stdtr(np.maximum(n_ - 1.0, 1.0), -t), np.where(gap > 0, 0.0, 1.0))
    return np.where(n_ >= 2, p, 1.0)
