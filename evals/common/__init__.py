"""Leaf helpers that every stage may import: the typed errors and their exit codes (docs/spec.md#exit-codes),
making untrusted text inert in markdown and workflow commands, the base of the stdout/stderr
wrappers, the job log's guard against workflow commands evalgate did not mean, and what git says
about the checkout. Imports nothing else of ``evals``."""
