"""Anytime-valid statistics for "more evidence" (docs/spec.md#more-evidence): a betting e-process per unit, weighted
e-Holm across units.

Observations are per-case paired *drops* ``y = base − cand`` in [−1, 1], oriented by the caller
(positive = the candidate is worse; lower-is-better metrics are flipped before they get here).

**The bet** (Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by
betting", JRSS-B 86(1)). For a null "E[y] ≤ δ" (side ``"worse"``, s = +1) or "E[y] ≥ δ" (side
``"not_worse"``, s = −1) the wealth of a fixed bet λ is Π_t (1 + λ·s·(y_t − δ)). Under the null each
factor has conditional expectation ≤ 1, so the wealth is a nonnegative supermartingale; the
e-process is the equal-weight mixture over the fixed grid ``LAMBDAS`` (a mixture of nonnegative
supermartingales with prior weights fixed in advance is one too). The grid and the weights are
fixed before any data, so the wealth of a batch depends on that batch only and accumulates by
adding log wealths: ``log_wealth(concat(a, b)) == log_wealth(a) + log_wealth(b)``. The e-value at a
look is the mixture of the *accumulated* wealths (``log_e`` of the summed log wealth), never a
product of per-batch mixtures.

**Ville's inequality**: P(sup_t e_t ≥ 1/α) ≤ α under the null, over any number of looks and any
data-dependent stopping rule. Weighted e-Holm (``e_holm``) is the closure of the weighted-average
e-merge (Vovk & Wang 2021, "E-values: calibration, combination and applications", Ann. Stat.
49(3)): a weighted average of e-processes with fixed weights is an e-process for the intersection
null whatever the dependence between units, so the family-wise error of rejecting by closed
testing is ≤ α at every look, again uniformly over looks.

**Re-run attempts and the finite-case null.** When a batch re-runs the *same* cases (each case's
pass probability fixed), the i.i.d. null no longer applies; what is tested is "these cases' mean
drop ≤ δ": with μ_i the mean drop of case i, a batch's product over its cases has expectation
Π_i (1 + λ s (μ_i − δ)) ≤ exp(λ s Σ_i (μ_i − δ)) ≤ 1 because 1 + x ≤ eˣ. So each *batch* (not each
observation inside a batch) is a supermartingale step, provided that a unit is updated only by
batches that re-ran every one of its cases and that looks are taken at batch ends. The estimand
with re-run attempts is "these cases got worse".

**The grid** ``LAMBDAS``: 24 bets spaced geometrically in [0.01, 0.93] (ratio ≈ 1.218 between
neighbours, so every bet in the range is within a factor 1.104 of a grid point and the mixture's
growth rate is within ~1% of the best fixed bet's in that range, less the log 24 ≈ 3.2 nats the
equal prior costs once). The bottom 0.01: a bet λ grows wealth by at most ≈ λ·gap per pair, so a
bet below 0.01 only helps for gaps that need ≳ 10⁵ pairs to reach 1/(ρα) = 1000 — beyond any
budget. The top 0.93: with δ = 0.02 the worst factor 1 − 0.93·(1 + δ) = 0.051 stays > 0, so one
adverse pair costs at most ≈ 3 nats, and strong drops (near-deterministic suites, large slices'
breaks) get bets close to the Kelly-optimal one.

**Positivity.** A factor's worst case over y ∈ [−1, 1] is 1 − λ·(1 + s·δ) (y = −1 for "worse",
y = +1 for "not_worse"). The grid's top end is safe only for 1 + s·δ < 1/0.93; for larger δ (e.g.
δ = 0.5 on "worse": 1 − 0.93·1.5 < 0) every bet is clipped to ``MAX_BET / (1 + s·δ)``
(``MAX_BET`` = 0.95), which keeps every factor ≥ 0.05. The clip is a function of δ alone (fixed
before the data), so validity and additivity are unchanged; at |δ| ≤ 0.0215 (the gate's default
0.02 included) nothing is clipped and the wealth is exactly Π(1 + λ s (y − δ)) over ``LAMBDAS``.
Clipped or not, every bet's wealth is monotone in δ (increasing for "not_worse", decreasing for
"worse"), so the "not_worse" e-process rejecting at δ is the time-uniform upper confidence
sequence for the mean drop lying below δ (Howard, Ramdas, McAuliffe & Sekhon 2021,
"Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Stat. 49(2)): what
``pass`` needs, overall's anytime-valid lower bound of the delta above −δ.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

Side = Literal["worse", "not_worse"]

LAMBDAS: np.ndarray = np.geomspace(0.01, 0.93, 24)
LAMBDAS.setflags(write=False)
# Every factor's worst case is ≥ 1 − MAX_BET = 0.05 (see "Positivity" above).
MAX_BET = 0.95


def _sign(side: Side) -> float:
    if side == "worse":
        return 1.0
    if side == "not_worse":
        return -1.0
    raise ValueError(f"side must be 'worse' or 'not_worse', not {side!r}")


def bets(delta: float, side: Side) -> np.ndarray:
    """The bets actually used for this δ and side: ``LAMBDAS``, each clipped to
    ``MAX_BET / (1 + s·δ)`` so that 1 + λ·s·(y − δ) ≥ 0.05 for every y in [−1, 1]."""
    s = _sign(side)
    delta = float(delta)
    if not -1.0 <= delta <= 1.0 or math.isnan(delta):
        raise ValueError(f"delta must be in [-1, 1], not {delta}")
    adverse = 1.0 + s * delta  # the largest possible loss per unit bet
    if adverse <= 0.0:
        return LAMBDAS.copy()  # no y in [-1, 1] can lose: every factor is ≥ 1
    return np.minimum(LAMBDAS, MAX_BET / adverse)


def log_wealth(y: ArrayLike, delta: float, side: Side) -> np.ndarray:
    """Sum over the last axis of ``y`` of log(1 + λ·s·(y − δ)) for every λ in ``LAMBDAS``; s = +1
    for side ``"worse"`` (H0: E[y] ≤ δ; large wealth = evidence the candidate is worse by more than
    δ), s = −1 for ``"not_worse"`` (H0′: E[y] ≥ δ; large wealth = evidence the drop is below δ, used
    for pass). ``y`` shape (..., n) → result shape (..., len(LAMBDAS)); n = 0 → zeros. Additive
    over batches. λ is clipped for large δ (module docstring, "Positivity")."""
    s = _sign(side)
    lam = bets(delta, side)
    values = np.asarray(y, dtype=float)
    if values.ndim == 0:
        raise ValueError("y must have at least one axis (the observations)")
    if values.size and not (np.all(values >= -1.0) and np.all(values <= 1.0)):
        raise ValueError("every observation y must be in [-1, 1]")
    out = np.zeros((*values.shape[:-1], lam.size))
    # One bet at a time keeps the memory at y's size (no (..., n, L) temporary).
    for j, bet in enumerate(lam):
        out[..., j] = np.log1p((bet * s) * (values - delta)).sum(axis=-1)
    return out


def log_wealth_counts(b: ArrayLike, c: ArrayLike, n: ArrayLike, delta: float, side: Side) -> np.ndarray:
    """``log_wealth`` for binary pairs from counts: ``b`` pairs with y = +1 (pass→fail), ``c`` with
    y = −1 (fail→pass), n − b − c with y = 0. Broadcasts; result shape
    broadcast(b, c, n).shape + (len(LAMBDAS),). Equals ``log_wealth`` on the expanded arrays."""
    s = _sign(side)
    lam = bets(delta, side) * s
    b_, c_, n_ = np.broadcast_arrays(np.asarray(b, dtype=float), np.asarray(c, dtype=float), np.asarray(n, dtype=float))
    if np.any(b_ < 0) or np.any(c_ < 0) or np.any(b_ + c_ > n_):
        raise ValueError("counts need b ≥ 0, c ≥ 0 and b + c ≤ n")
    up, down, zero = np.log1p(lam * (1.0 - delta)), np.log1p(lam * (-1.0 - delta)), np.log1p(lam * -delta)
    rest = n_ - b_ - c_
    return b_[..., None] * up + c_[..., None] * down + rest[..., None] * zero


def log_e(log_w: np.ndarray) -> np.ndarray:
    """log of the mixture e-value, log(mean over λ of exp(log_w)) over the last axis
    (logsumexp − log L), computed stably. An empty sample (log_w = 0) gives 0: e = 1."""
    lw = np.asarray(log_w, dtype=float)
    top = np.max(lw, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(lw - top).sum(axis=-1)) + top[..., 0]
    return out - math.log(lw.shape[-1])


def e_holm(log_e_values: np.ndarray, weights: np.ndarray, level: float) -> np.ndarray:
    """Weighted e-Holm (the closure of the weighted-average e-merge, Vovk & Wang 2021): unit i is
    rejected iff for EVERY subset S ∋ i of the units with weight > 0,
    Σ_{j∈S} w_j e_j / Σ_{j∈S} w_j ≥ 1/level. Units with weight 0 are never rejected.

    ``log_e_values`` shape (..., m) (vectorised over leading replicate axes), ``weights`` shape
    (m,), ≥ 0. Returns bool (..., m).

    The shortcut: for a fixed i, the weighted mean over S = {i} ∪ S′ is smallest when S′ holds
    exactly the other units whose e-value is below that smallest mean (adding a unit lowers a
    weighted mean iff its value is below it, whatever its weight), so the minimiser is a prefix of
    the other units sorted by e-value. With the units sorted once, every i's candidates are the
    sorted prefixes of length k = 0..m (with i added when it is not in the prefix): O(m²) per
    replicate instead of 2^m, in log space (e-values may overflow a float)."""
    le = np.asarray(log_e_values, dtype=float)
    w = np.asarray(weights, dtype=float)
    m = le.shape[-1]
    if w.shape != (m,):
        raise ValueError(f"weights must have shape ({m},), not {w.shape}")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite and ≥ 0")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), not {level}")
    if m == 0:
        return np.zeros(le.shape, dtype=bool)
    positive = w > 0
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    # Zero-weight units sort last and contribute nothing (log term −inf, weight 0).
    key = np.where(positive, le, np.inf)
    order = np.argsort(key, axis=-1, kind="stable")
    terms = np.where(positive, log_w + le, -np.inf)
    t_sorted = np.take_along_axis(np.broadcast_to(terms, le.shape), order, axis=-1)
    w_sorted = w[order]
    lead = (*le.shape[:-1], 1)
    prefix_log = np.concatenate([np.full(lead, -np.inf), np.logaddexp.accumulate(t_sorted, axis=-1)], axis=-1)
    prefix_w = np.concatenate([np.zeros(lead), np.cumsum(w_sorted, axis=-1)], axis=-1)
    r = np.arange(m)[:, None]  # unit's sorted position
    k = np.arange(m + 1)[None, :]  # prefix length
    inside = k > r  # the prefix already holds the unit
    with np.errstate(divide="ignore", invalid="ignore"):
        num = np.where(inside, prefix_log[..., None, :], np.logaddexp(prefix_log[..., None, :], t_sorted[..., :, None]))
        den = np.where(inside, prefix_w[..., None, :], prefix_w[..., None, :] + w_sorted[..., :, None])
        log_mean = num - np.log(den)
        log_mean = np.where(den > 0, log_mean, np.inf)
    smallest = log_mean.min(axis=-1)
    rejected_sorted = (smallest >= -math.log(level)) & (w_sorted > 0)
    out = np.empty_like(rejected_sorted)
    np.put_along_axis(out, order, rejected_sorted, axis=-1)
    return out
