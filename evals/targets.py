"""Public name for what a user's Python target may use (docs/running.md, "Targets"): the
``TargetOutput`` it may return, the ``TargetFailure`` it raises to say whose fault a failure was
(``"infra"`` is retried), and the ``Target`` interface. A stable path: the code lives in
``evals.run.targets``, which may move; this module does not."""

from evals.run.targets.base import Target, TargetFailure, TargetOutput

__all__ = ["Target", "TargetFailure", "TargetOutput"]
