"""Running the suite on the candidate (docs/spec.md#running): the asyncio runner, the targets
(``evals.run.targets``) and scorers (``evals.run.scorers``) it calls, HTTP keep-alive
connections, containment of what a target starts, progress, the smoke subset, shards and their
merge, and the execution that writes the results file as cases finish (``execution``).
``python -m evals.run`` is ``evalgate run`` (``__main__``). May import ``evals.suite``,
``evals.results`` and ``evals.common``; never ``compare`` or anything after it."""
