"""Batch pricing (docs/spec.md#batch-pricing): a model target's requests sent to the provider's batch
API by one invocation and collected by a later one (``providers``: the two APIs; ``lane``: what a
run submits, and how the collected answers reach the target)."""
