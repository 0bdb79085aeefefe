"""GitHub (docs/spec.md#github): the REST client (``client``) over its HTTP layer (``transport``), the activity a
gate performs chosen from the event (``activity``), publishing the sticky PR comment, step
summary and outputs (``publish``), the fork flow's stored report (``stored_report``), and keeping
the token from the code under test (``token_guard``). May import ``evals.report`` and everything
below it; never ``store``, ``history`` or ``pipeline``."""
