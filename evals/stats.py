"""Public name for evalgate's statistics (docs/spec.md#decision-rule, docs/decision-rule.md): the paired tests,
intervals and multiple-testing corrections the gate uses, for a user's own analysis or a
simulation. A stable path: the code lives in ``evals.compare.stats``, which may move; this module
does not."""

from evals.compare.stats import (
    bh_qvalues,
    bootstrap_mean,
    bootstrap_mean_se,
    bootstrap_p_worse,
    bootstrap_percentile_delta,
    bootstrap_t_p,
    holm,
    mcnemar_worse,
    mde,
    norm_cdf,
    norm_ppf,
    paired_clt,
    pass_at_k,
    percentile_interval,
    smoothed_mean_delta,
    weighted_holm,
)

__all__ = [
    "bh_qvalues",
    "bootstrap_mean",
    "bootstrap_mean_se",
    "bootstrap_p_worse",
    "bootstrap_percentile_delta",
    "bootstrap_t_p",
    "holm",
    "mcnemar_worse",
    "mde",
    "norm_cdf",
    "norm_ppf",
    "paired_clt",
    "pass_at_k",
    "percentile_interval",
    "smoothed_mean_delta",
    "weighted_holm",
]
