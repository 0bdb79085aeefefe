"""Anytime-valid statistics for ``gate.more_evidence`` (SPEC §5): betting e-processes on paired
per-case drops and their weighted e-Holm merge.

Observations are oriented per-case paired drops ``y = base − cand`` in [−1, 1] (positive: the
candidate is worse). For H0 "the mean drop is at most δ" a bettor stakes a fixed fraction λ of its
wealth on each observation, which multiplies by ``1 + λ·(y − δ)``; mixing over a fixed grid of λ
with equal prior weights gives an e-process (Waudby-Smith & Ramdas 2024, "Estimating means of
bounded random variables by betting", JRSS-B 86(1), §3, discrete mixtures). Its expectation is
at most 1 under H0 at every stopping time, so by Ville's inequality it ever reaches ``1/α`` with
probability at most α, however many looks are taken and whatever decided to look again.

Re-running the *same* cases: each batch's factors multiply over its cases; with case i's own mean
drop μ_i, ``E Π(1 + λ(y_i − δ)) = Π(1 + λ(μ_i − δ)) ≤ exp(λ Σ(μ_i − δ)) ≤ 1`` when the cases'
mean drop is at most δ (1 + x ≤ eˣ). So the null tested is the finite-case one: "these cases'
mean drop is at most δ" — a fail after batches means these cases got worse.

The opposite side (H0′ "the mean drop is at least δ", factor ``1 + λ·(δ − y)``) is the
one-sided anytime-valid confidence sequence of Howard, Ramdas, McAuliffe & Sekhon (2021,
"Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Stat. 49(2)) read as a
test: when its e-value reaches ``1/α`` the drop is below δ (a pass).

Across units, weighted e-Holm: the closed testing procedure whose intersection tests are the
weighted averages of e-values (Vovk & Wang 2021, "E-values: calibration, combination and
applications", Ann. Stat. 49(3), §4–5). A weighted average of e-values is an e-value under any
dependence, so the family-wise error stays ≤ α over any number of looks."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

# 24 bets from 0.01 to 0.93, log-spaced: small bets win on small drops over many cases, large ones
# on large drops quickly. 0.93 keeps every factor ≥ 1 − 0.93·(1 + δ) > 0 for δ ≤ 0.07 and well
# away from 0 for the tolerances gates use; the factor is clipped at a floor for larger δ.
LAMBDAS = np.geomspace(0.01, 0.93, 24)
_FLOOR = 1e-12
Side = Literal["worse", "not_worse"]


def _sign(side: Side) -> float:
    if side not in ("worse", "not_worse"):
        raise ValueError(f"side must be 'worse' or 'not_worse', got {side!r}")
    return 1.0 if side == "worse" else -1.0


def log_wealth(y: ArrayLike, delta: float, side: Side) -> np.ndarray:
    """Σ over the last axis of ``log(1 + λ·s·(y − δ))`` for every λ in :data:`LAMBDAS` (s = +1
    for ``worse``, −1 for ``not_worse``). Shape ``(..., n) → (..., len(LAMBDAS))``; additive over
    batches, so a look's wealth is the sum of its batches'."""
    y = np.asarray(y, dtype=float)
    factors = 1.0 + LAMBDAS * (_sign(side) * (y[..., None] - delta))
    return np.log(np.maximum(factors, _FLOOR)).sum(axis=-2)


def log_wealth_counts(b: ArrayLike, c: ArrayLike, n: ArrayLike, delta: float, side: Side) -> np.ndarray:
    """:func:`log_wealth` of binary pairs from their counts: ``b`` with y = +1 (pass → fail),
    ``c`` with y = −1 (fail → pass), ``n − b − c`` with y = 0. Broadcasts over the counts."""
    b, c, n = (np.asarray(x, dtype=float)[..., None] for x in (b, c, n))
    s = _sign(side)

    def term(y: float) -> np.ndarray:
        return np.log(np.maximum(1.0 + LAMBDAS * (s * (y - delta)), _FLOOR))

    return b * term(1.0) + c * term(-1.0) + (n - b - c) * term(0.0)


def log_e(log_w: np.ndarray) -> np.ndarray:
    """log of the mixture e-value: ``log(mean_λ exp(log_w))`` over the last axis, computed stably."""
    log_w = np.asarray(log_w, dtype=float)
    top = log_w.max(axis=-1, keepdims=True)
    return (top + np.log(np.exp(log_w - top).mean(axis=-1, keepdims=True)))[..., 0]


def e_holm(log_e_values: np.ndarray, weights: np.ndarray, level: float) -> np.ndarray:
    """Weighted e-Holm at ``level``: unit i is rejected iff for every set S ∋ i of the units with
    weight > 0, ``Σ_S w_j e_j / Σ_S w_j ≥ 1/level``. Vectorised over leading axes of
    ``log_e_values`` (``(..., m)``); weights ``(m,)``; units of weight 0 are never rejected.

    For a given i the smallest weighted mean over sets containing i is reached by i with the k
    other units of smallest e, for some k (adding a unit lowers the mean iff its e is below it).
    Those sets are ``{i} ∪ P_k`` for the prefixes ``P_k`` of the units sorted by e, so the search
    is a minimum over m + 1 prefix sums per unit: O(m²) array work, no loop over subsets."""
    log_e_values = np.asarray(log_e_values, dtype=float)
    weights = np.asarray(weights, dtype=float)
    shape = log_e_values.shape
    out = np.zeros((int(np.prod(shape[:-1], dtype=int)), shape[-1]), dtype=bool)
    live = np.flatnonzero(weights > 0)
    if live.size == 0 or out.shape[0] == 0:
        return out.reshape(shape)
    e = np.exp(np.minimum(log_e_values.reshape(-1, shape[-1])[:, live], 700.0))
    w = np.broadcast_to(weights[live], e.shape)
    order = np.argsort(e, axis=1, kind="stable")
    rank = np.argsort(order, axis=1, kind="stable")  # each unit's place in the sorted order
    sorted_e = np.take_along_axis(e, order, axis=1)
    sorted_w = np.take_along_axis(w, order, axis=1)
    zeros = np.zeros((e.shape[0], 1))
    sums = np.concatenate([zeros, np.cumsum(sorted_w * sorted_e, axis=1)], axis=1)  # (rows, m + 1): P_0 .. P_m
    totals = np.concatenate([zeros, np.cumsum(sorted_w, axis=1)], axis=1)
    k = np.arange(e.shape[1] + 1)
    outside = k[None, None, :] <= rank[:, :, None]  # i is not in P_k: add it
    num = sums[:, None, :] + np.where(outside, (w * e)[:, :, None], 0.0)
    den = totals[:, None, :] + np.where(outside, w[:, :, None], 0.0)
    out[:, live] = (num / den).min(axis=2) >= 1.0 / level
    return out.reshape(shape)


def drop_upper_bound(y: ArrayLike, level: float, *, tol: float = 1e-4) -> float:
    """The anytime-valid upper confidence bound on the mean drop at ``level``: the smallest δ′ in
    [−1, 1] whose ``not_worse`` e-value reaches ``1/level`` (bisection: that e-value grows with δ′),
    or 1.0 when none does. A pass needs it below the tolerance."""
    target = np.log(1.0 / level)
    y = np.asarray(y, dtype=float)

    def reached(d: float) -> bool:
        return bool(log_e(log_wealth(y, d, "not_worse")) >= target)

    if not reached(1.0):
        return 1.0
    low, high = -1.0, 1.0
    while high - low > tol:
        mid = (low + high) / 2
        low, high = (low, mid) if reached(mid) else (mid, high)
    return high
