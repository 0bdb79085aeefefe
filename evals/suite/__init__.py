"""The suite (docs/spec.md#config): ``evalgate.yml`` as pydantic models with file:line errors (``config``,
``yamlsource``), the cases it names (``cases``), slice keys, and the JSON Schemas generated from
the models (``schema``). May import ``evals.results`` (a case's hash is the results file's) and
``evals.common``."""
