"""evalgate: gate LLM and agent changes on their eval suite.

The package is laid out by stage, data flowing one way (docs/architecture.md): ``suite`` →
``run`` → ``results`` → ``compare`` → ``report`` → ``github`` / ``store`` → ``history``, tied
together by ``pipeline`` and driven by the commands in ``cli``; ``importers`` bring other
harnesses' results in, ``common`` holds what every stage may use. The layers are a checked
contract (``[tool.importlinter]`` in pyproject.toml).

Stable public names for users' code: ``evals.scorers``, ``evals.targets``, ``evals.trace``,
``evals.stats`` and ``evals.importers.import_results``."""

__version__ = "0.1.0"
