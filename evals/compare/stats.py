"""Statistics for paired comparisons of eval runs (docs/spec.md#decision-rule).

Every function works on per-case values (one value per case: the mean over its attempts), so
resampling and standard errors are clustered by case, never by attempt. Sign convention: the
callers pass *oriented* deltas, ``d = candidate − baseline`` flipped so that positive is better;
"worse" tests ask whether the true delta is below ``−margin`` (the tolerance band).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

# A chunk of bootstrap indices holds at most this many elements (8 bytes each: ~32 MB).
CHUNK_ELEMENTS = 4_000_000
# Below this many distinct values a bootstrap of the mean samples category counts instead of cases.
MAX_CATEGORIES = 256


_NORMAL = statistics.NormalDist()


def norm_cdf(x: float) -> float:
    """Φ(x) of a number, the standard normal distribution function (``scipy.special.ndtr`` of a
    scalar; the stdlib keeps scipy out of the CLI's import)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def norm_ppf(q: ArrayLike) -> Any:
    """Φ⁻¹(q) elementwise (Wichura's AS 241 in ``statistics.NormalDist``, as
    ``scipy.special.ndtri``); −∞ at 0 and +∞ at 1."""

    def one(v: float) -> float:
        return -math.inf if v <= 0.0 else math.inf if v >= 1.0 else _NORMAL.inv_cdf(v)

    values = np.asarray(q, dtype=float)
    if values.ndim == 0:
        return one(float(values))
    return np.array([one(v) for v in values.ravel().tolist()]).reshape(values.shape)


def mcnemar_worse(b: int, c: int, n: int, margin: float = 0.0, *, mid_p: bool = False) -> float:
    """One-sided McNemar test that the candidate is worse than the baseline by more than
    ``margin`` (paired binary outcomes).

    ``b`` = pairs that went pass→fail, ``c`` = fail→pass, ``n`` = all pairs. Conditional on the
    ``D = b + c`` discordant pairs, ``b ~ Binomial(D, π)``; with no change ``π = ½`` (McNemar 1947;
    the exact form is the binomial sign test, ``scipy.stats.binomtest(b, D, 0.5, "greater")``).
    With ``margin = 0`` this is exactly McNemar's exact test. For a tolerance margin δ the null
    boundary ``p10 − p01 = δ`` corresponds to ``π0 = ½ + δ / (2·ψ)`` with ψ the discordant rate;
    ψ is estimated by ``D/n``, so with a margin the test is approximate (Nam 1997, Biometrics 53,
    and Liu et al. 2002, Stat. Med. 21, give unconditional score tests for this problem). When
    nothing changed (Δ = 0, inside the null) ``π0 > ½`` only makes it more conservative than
    McNemar's test, so the A/A false-alarm rate stays below α.

    Returns ``P(B ≥ b | D, π0)``; with ``mid_p``, the mid-p value ``P(B > b) + ½·P(B = b)``
    (Lancaster 1961). The exact test spends only 27–75% of its α at the boundary of the small
    units the gate tests (the discreteness of B and the estimated ψ); the mid-p test's size
    there stays within 1.01× its level for n = 25, 100, 200 where ψ ≤ 0.5 (Fagerland, Lydersen
    & Laake 2013, BMC Med. Res. Methodol. 13:91; ``docs/decision-rule.md``), so it is the default.
    """
    return float(mcnemar_worse_grid(np.array([b]), np.array([c]), n, margin, mid_p=mid_p)[0])


def mcnemar_worse_grid(b: np.ndarray, c: np.ndarray, n: int, margin: float = 0.0, *, mid_p: bool = False) -> np.ndarray:
    """:func:`mcnemar_worse` elementwise over arrays of counts (the same arithmetic): what the
    exact power of ``evals.compare.power`` enumerates the paired counts with."""
    from scipy import special  # only small binary units get here: keep scipy out of the CLI's import

    b = np.asarray(b, dtype=np.int64)
    d = b + np.asarray(c, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        pi0 = 0.5 + margin * n / (2.0 * d)
    # No discordant pair, or a boundary that needs more drops than there are discordant pairs: p = 1.
    untestable = (d == 0) | ~(pi0 < 1.0)
    pi0 = np.where(untestable, 0.5, pi0)
    # bdtrc(k, d, p) = P(B > k) = scipy.stats.binom.sf(k, d, p), without its overhead.
    at_least = np.where(b == 0, 1.0, special.bdtrc(np.maximum(b - 1, 0), d, pi0))
    p = at_least
    if mid_p:
        above = special.bdtrc(b, d, pi0)
        p = above + 0.5 * (at_least - above)
    return np.where(untestable, 1.0, p)


def paired_clt(d: np.ndarray, margin: float = 0.0) -> tuple[float, float, float, float]:
    """Paired CLT test of the mean of per-case deltas ``d`` (oriented, positive = better).

    Standard error ``sd(d)/√n`` of per-case means: with a case's attempts averaged first this is
    the cluster-robust SE with cases as clusters (Miller 2024, "Adding Error Bars to Evals",
    arXiv:2411.00640, §2.3 and §4 on paired differences). Returns ``(mean, se, p_worse, p_better)``
    with ``p_worse = Φ((mean + margin)/se)`` for H0: Δ ≥ −margin and
    ``p_better = 1 − Φ((mean − margin)/se)`` for H0: Δ ≤ margin.
    """
    n = d.size
    mean = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
    if se == 0.0:
        return mean, 0.0, 0.0 if mean < -margin else 1.0, 0.0 if mean > margin else 1.0
    return mean, se, norm_cdf((mean + margin) / se), norm_cdf(-(mean - margin) / se)


def smoothed_mean_delta(d: np.ndarray, scale: float = 1.0) -> tuple[float, float]:
    """Mean and SE of per-case deltas ``d`` after adding two pseudo-cases: weight ½ at ``−scale``,
    ½ at ``+scale`` and 1 at 0. Returns ``(Σd / (n+2), √((Σd² + scale²)/(n+2) − mean²) / √(n+2))``.

    For binary outcomes (``scale`` 1) this is exactly the "Wald+2" interval of Agresti & Min
    (2005, "Simple improved confidence intervals for comparing matched proportions", Stat. Med.
    24:729–740): add ½ to each cell of the paired 2×2 table, so the discordance is estimated by
    ``(b + c + 1)/(n + 2)`` and the difference by ``(c − b)/(n + 2)``. Unlike the plain SE it never
    collapses to 0 when every case has the same delta (all unchanged, or all flipped) — which says
    little about the noise of a 5-case slice, yet would give it an MDE equal to the tolerance.
    For other values in ``[−scale, scale]`` the same pseudo-cases put a floor of
    ``scale / (n + 2)`` under the SE; for large ``n`` it is the plain SE up to O(1/n)."""
    n = d.size
    total = n + 2.0
    mean = float(d.sum()) / total
    second = (float(np.dot(d, d)) + scale * scale) / total
    return mean, math.sqrt(max(second - mean * mean, 0.0) / total)


def _chunks(total: int, n: int) -> list[int]:
    per = max(1, CHUNK_ELEMENTS // max(n, 1))
    return [min(per, total - start) for start in range(0, total, per)]


def bootstrap_mean(d: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Paired bootstrap distribution of the mean of per-case deltas (Efron & Tibshirani 1993,
    ch. 6; resampling cases with replacement).

    When ``d`` takes few distinct values (binary outcomes give at most 3 deltas; k attempts give
    at most 2k+1) a resample is fully described by how often each value is drawn, so counts are
    drawn from ``Multinomial(n, frequencies)`` — the same distribution as resampling cases, at
    O(resamples × categories) instead of O(resamples × n). Otherwise indices are drawn in chunks
    of at most ``CHUNK_ELEMENTS`` to bound memory. Seeded through ``rng``: reproducible.
    """
    return _bootstrap_moments(d, resamples, rng, with_se=False)[0]


def bootstrap_mean_se(d: np.ndarray, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bootstrap_mean`'s distribution (the same draws for the same ``rng``) and each
    resample's standard error of its mean, ``sd / √n``: what :func:`bootstrap_t_p` studentizes by."""
    means, ses = _bootstrap_moments(d, resamples, rng, with_se=True)
    assert ses is not None
    return means, ses


def _bootstrap_moments(
    d: np.ndarray, resamples: int, rng: np.random.Generator, *, with_se: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    n = d.size
    values, counts = np.unique(d, return_counts=True)
    if values.size <= MAX_CATEGORIES:
        draws = rng.multinomial(n, counts / n, size=resamples)
        means = draws @ values / n
        if not with_se:
            return means, None
        centred = values - d.mean()  # variance is shift-free; centring avoids cancellation
        spread = np.maximum(draws @ (centred * centred) / n - (means - d.mean()) ** 2, 0.0)
        return means, np.sqrt(spread / (n - 1))  # sd (ddof 1) / √n = √(biased var / (n − 1))
    means = np.empty(resamples)
    ses = np.empty(resamples) if with_se else None
    start = 0
    for size in _chunks(resamples, n):
        drawn = d[rng.integers(0, n, size=(size, n))]
        means[start : start + size] = drawn.mean(axis=1)
        if ses is not None:
            ses[start : start + size] = drawn.std(axis=1, ddof=1) / math.sqrt(n)
        start += size
    return means, ses


def bootstrap_percentile_delta(
    base: np.ndarray, cand: np.ndarray, q: float, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Paired bootstrap distribution of ``percentile_q(cand) − percentile_q(base)`` (e.g. p95
    latency): the same resampled cases on both sides (Efron & Tibshirani 1993, §6.9 paired
    data). Chunked to bound memory; seeded through ``rng``."""
    n = base.size
    out = np.empty(resamples)
    start = 0
    for size in _chunks(resamples, n):
        idx = rng.integers(0, n, size=(size, n))
        out[start : start + size] = np.percentile(cand[idx], q, axis=1) - np.percentile(base[idx], q, axis=1)
        start += size
    return out


def percentile_interval(dist: np.ndarray, confidence: float) -> tuple[float, float]:
    """Bootstrap percentile interval (Efron & Tibshirani 1993, §13.3), as
    ``scipy.stats.bootstrap(method="percentile")``."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.percentile(dist, [100 * tail, 100 * (1 - tail)])
    return float(low), float(high)


def bootstrap_p_worse(dist: np.ndarray, margin: float) -> tuple[float, float]:
    """One-sided bootstrap p-values for H0: Δ ≥ −margin (worse) and H0: Δ ≤ margin (better),
    by inversion of the percentile interval: ``(1 + #{Δ* ≥ −margin}) / (B + 1)`` (Davison &
    Hinkley 1997, §4.4). Rejecting at α is the same as the one-sided (1−α) percentile bound
    excluding the band edge, so the p-value and the reported interval never disagree."""
    b = dist.size
    worse = (1 + int(np.count_nonzero(dist >= -margin))) / (b + 1)
    better = (1 + int(np.count_nonzero(dist <= margin))) / (b + 1)
    return min(worse, 1.0), min(better, 1.0)


def bootstrap_t_p(means: np.ndarray, ses: np.ndarray, center: float, se: float, margin: float) -> tuple[float, float]:
    """One-sided bootstrap-t p-values for H0: Δ ≥ −margin (worse) and H0: Δ ≤ margin (better)
    (Efron & Tibshirani 1993, §12.5; Davison & Hinkley 1997, §4.4.1): the observed
    ``t = (center ± margin) / se`` against the resamples' ``t* = (mean* − center) / se*``, as
    ``(1 + #{t* ≤ t}) / (B + 1)``. Studentizing is what keeps a small unit of a continuous metric
    at its level: the percentile bootstrap's tails are too short there (narrower by √((n−1)/n),
    normal instead of Student), so its p-values rejected 1.7× α at 20 cases and α 0.01, and up
    to 12× at 10 cases, against an exact paired t-test. A resample whose cases are all equal has
    ``se* = 0``: its t* is ±∞ (0 when it equals ``center``), which only makes the test stricter."""
    b = means.size
    t_star = bootstrap_t_star(means, ses, center)
    t_worse, t_better = _ratio(center + margin, se), _ratio(center - margin, se)
    worse = (1 + int(np.count_nonzero(t_star <= t_worse))) / (b + 1)
    better = (1 + int(np.count_nonzero(t_star >= t_better))) / (b + 1)
    return min(worse, 1.0), min(better, 1.0)


def bootstrap_t_star(means: np.ndarray, ses: np.ndarray, center: float) -> Any:
    """The resamples' ``t* = (mean* − center) / se*`` of :func:`bootstrap_t_p` (what
    ``evals.compare.bounds`` inverts it by)."""
    return _ratio(means - center, ses)


def _ratio(a: ArrayLike, b: ArrayLike) -> Any:
    """``a / b`` where ``b == 0`` gives ±∞ by the sign of ``a``, and 0 when ``a`` is 0 too."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(b > 0, a / np.where(b > 0, b, 1.0), np.sign(a) * np.inf)
    return np.nan_to_num(out, nan=0.0, posinf=np.inf, neginf=-np.inf)


def mde(se: ArrayLike, alpha: ArrayLike, power: float, margin: ArrayLike = 0.0) -> Any:
    """Minimum detectable drop: the true drop a one-sided level-``alpha`` test of
    H0: Δ ≥ −margin detects with probability ``power``, by the normal approximation
    ``margin + (z_{1−α} + z_{power}) · SE`` (e.g. Chow, Shao & Wang 2008, §3.1; ``alpha`` is the
    corrected level at which the unit is tested). Works elementwise on arrays."""
    return np.add(margin, (norm_ppf(np.subtract(1.0, alpha)) + norm_ppf(power)) * np.asarray(se))


def holm(p: np.ndarray) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values: ``p_(i) · (m − i + 1)``, made monotone, capped
    at 1 (as ``statsmodels.stats.multitest.multipletests(method="holm")``). Rejecting where the
    adjusted p ≤ α controls the family-wise error rate at α."""
    p = np.asarray(p, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adj = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out


def bh_qvalues(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg (1995) q-values: ``min_{j ≥ i} p_(j) · m / j``, capped at 1 (as
    ``scipy.stats.false_discovery_control(method="bh")``)."""
    p = np.asarray(p, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return out


def pass_at_k(n: ArrayLike, c: ArrayLike, k: int) -> np.ndarray:
    """Unbiased pass@k per case (Chen et al. 2021, "Evaluating Large Language Models Trained on
    Code", arXiv:2107.03374, eq. 1): ``1 − C(n−c, k) / C(n, k)`` with ``n`` attempts of which ``c``
    passed. NaN where ``n < k`` (too few attempts to estimate it)."""
    n, c = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(c, dtype=float))
    valid = n >= k
    # C(n−c, k) / C(n, k) = Π_{i<k} (n − c − i) / (n − i): no large binomials, and 0 once n − c < k.
    # A running product: memory stays one array however large k is, and k only matters where
    # some case has that many attempts.
    ratio = np.ones(n.shape)
    nn, fails = np.where(valid, n, k), np.where(valid, n - c, k)
    for i in range(k if valid.any() else 0):
        ratio *= np.clip((fails - i) / (nn - i), 0.0, None)
    return np.where(valid, 1.0 - ratio, np.nan)


def weighted_holm(p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted Holm (Holm 1979, §5) step-down adjusted p-values for weights ``w`` summing to at
    most 1: hypotheses are taken in order of ``p/w``; at each step the one taken is rejected when
    ``p_i ≤ α · w_i / W``, with ``W`` the total weight of those not yet rejected. So
    ``adj_(k) = max_{j ≤ k} min(1, p_(j) · W_j / w_(j))``; rejecting where ``adj ≤ α`` controls
    the family-wise error rate at α. With equal weights it is :func:`holm`. Units of weight 0
    are never rejected: their adjusted p is 1."""
    p = np.asarray(p, dtype=float)
    w = np.asarray(w, dtype=float)
    out = np.ones(p.size)
    live = np.flatnonzero(w > 0)
    if live.size == 0:
        return out
    order = live[np.argsort(p[live] / w[live], kind="stable")]
    remaining = np.cumsum(w[order][::-1])[::-1]  # weight of the hypotheses from step k on
    adj = np.maximum.accumulate(p[order] * remaining / w[order])
    out[order] = np.minimum(adj, 1.0)
    return out


def certifiable_tolerance(n: int, discordance: float, alpha: float, probability: float = 0.8) -> float:
    """The smallest tolerance δ at which an *unchanged* candidate passes with ``probability``:
    the gate's pass needs the smoothed lower bound ``center − z_{1−α}·SE`` to clear −δ, and for
    an unchanged candidate of ``n`` paired cases whose per-case deltas have mean square
    ``discordance`` (for binary outcomes: the share of cases whose outcome differs between two
    runs) that bound is normal with ``SE₀ = √(ψ·n + 1)/(n + 2)`` (the Agresti–Min pseudo-cases of
    :func:`smoothed_mean_delta`) and spread ``SD = √(ψ·n)/(n + 2)``, so
    ``δ = z_{1−α}·SE₀ + z_{probability}·SD``. With ``ψ = 0`` (two runs that agree on every case)
    it is the band the unit resolves at all, ``z_{1−α}/(n + 2)``: 0.0201 for 80 cases at α 0.05."""
    if n < 1:
        return math.inf
    total = n + 2.0
    psi = max(float(discordance), 0.0)
    se0 = math.sqrt(psi * n + 1.0) / total
    spread = math.sqrt(psi * n) / total
    return float(norm_ppf(1.0 - alpha)) * se0 + float(norm_ppf(probability)) * spread


def cases_to_certify(
    tolerance: float, discordance: float, alpha: float, probability: float = 0.8, limit: int = 10**9
) -> int | None:
    """The fewest paired cases at which :func:`certifiable_tolerance` is within ``tolerance``
    (None when no number up to ``limit`` is, e.g. a tolerance of 0). The bound falls as ``n``
    grows, so this is a bisection."""
    if tolerance <= 0 or certifiable_tolerance(limit, discordance, alpha, probability) > tolerance:
        return None
    low, high = 1, 1
    while certifiable_tolerance(high, discordance, alpha, probability) > tolerance:
        low, high = high, high * 2
    while low < high:
        mid = (low + high) // 2
        if certifiable_tolerance(mid, discordance, alpha, probability) > tolerance:
            low = mid + 1
        else:
            high = mid
    return low
