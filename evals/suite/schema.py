"""JSON Schemas of the suite config and the results file, generated from the pydantic models.
The copies shipped in ``evals/schemas/`` are checked against the models by the tests."""

from __future__ import annotations

import json
from pathlib import Path

from evals.results.model import results_json_schema
from evals.suite.config import config_json_schema

# Shipped at evals/schemas/ (a path the docs give for editors' schema settings).
SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"
SCHEMAS = {
    "config": ("evalgate.schema.json", config_json_schema),
    "results": ("results.schema.json", results_json_schema),
}


def render(which: str) -> str:
    name, build = SCHEMAS[which]
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": name, **build()}
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
