"""``python -m evals.compare``: the seed workflow's spelling of ``evalgate compare``."""

from evals.cli.app import module_main

module_main("compare")
