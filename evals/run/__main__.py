"""``python -m evals.run``: the seed workflow's spelling of ``evalgate run``."""

from evals.cli.app import module_main

module_main("run")
