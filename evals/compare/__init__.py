"""Comparing a candidate with a baseline (docs/spec.md#decision-rule): per-case metric values (``metrics``), pairing
on case ids and the units (``pairing``), the paired test of one unit (``paired``), the
statistics (``stats``), the decision rule (``decide``), the special verdicts
(``compatibility``), the case diff, the two runs' summaries (``runs``), lean loading of large
results files (``lazyload``), and ``analysis.compare``, which makes the ``Comparison``
(``model``) every later stage reads. ``python -m evals.compare`` is ``evalgate compare``
(``__main__``). May import ``evals.suite``, ``evals.results`` and ``evals.common``; never
``github``, ``store`` or ``history``."""
