"""``evalgate schema [config|results] [--write DIR]``: print or write the JSON Schemas of the
suite config and the results file (``evals.suite.schema``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evals.suite.schema import SCHEMAS, render


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
