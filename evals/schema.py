"""JSON Schemas of the suite config and the results file, generated from the pydantic models.
The copies shipped in ``evals/schemas/`` are checked against the models by the tests."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evals.config import config_json_schema
from evals.results import results_json_schema

SCHEMA_DIR = Path(__file__).parent / "schemas"
SCHEMAS = {
    "config": ("evalgate.schema.json", config_json_schema),
    "results": ("results.schema.json", results_json_schema),
}


def render(which: str) -> str:
    name, build = SCHEMAS[which]
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": name, **build()}
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("which", nargs="?", choices=sorted(SCHEMAS), help="print one schema")
    parser.add_argument("--write", metavar="DIR", help="write both schemas into DIR")


def main(args: argparse.Namespace) -> int:
    if args.write:
        out = Path(args.write)
        out.mkdir(parents=True, exist_ok=True)
        for which, (name, _) in SCHEMAS.items():
            (out / name).write_text(render(which), encoding="utf-8")
            print(out / name)
        return 0
    print(render(args.which or "results"), end="")
    return 0
