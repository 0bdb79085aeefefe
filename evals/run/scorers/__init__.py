"""What turns an output into a score (docs/spec.md#scorers): the ``Score`` and ``Scorer`` (``base``), the
built-in scorers, user callables and how one attempt's scores combine (``builtin``), and the
model-graded ``judge``. A new built-in scorer is a params model and a factory in ``builtin``."""
