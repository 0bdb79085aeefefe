"""``evalgate`` command line: one subcommand per stage (docs/spec.md#data-flow). Each subcommand lives in its
own module exposing ``configure(parser)`` and ``main(args) -> int``; modules are imported only
when their command runs, so start-up stays fast (numpy/scipy load only for compare)."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from evals import __version__
from evals.common.errors import EXIT_INFRA, EXIT_USAGE, EvalgateError
from evals.results import console

# command -> (its module in evals.cli, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run the suite on the candidate and write a results file"),
    "merge": ("merge", "join shard results into one run"),
    "compare": ("compare", "compare candidate with baseline; exit code = gate verdict"),
    "gate": ("gate", "run, fetch the baseline, compare, report, publish (and promote on main)"),
    "promote": ("promote", "store a results file as the new baseline if its gate allows"),
    "reset": ("reset", "run the full suite (or take --results) and bless it as baseline, with a reason"),
    "comment": ("comment", "post a stored report to a pull request (two-phase fork flow)"),
    "baseline": ("baseline", "list, show or fetch baseline snapshots"),
    "rejudge": ("rejudge", "re-score a stored run's outputs with the config's judge, and compare the two judges"),
    "import": ("import_", "convert another harness's results to evalgate's format"),
    "flaky": (
        "flaky",
        "the cases whose outcome flips, per slice: across the history's runs, or within a run's attempts",
    ),
    "plan": ("plan", "before a paid run: what this suite can certify, per slice, and the cases a tolerance needs"),
    "show": (
        "show",
        "summarise a results file: pass rate with CI overall and per slice, errors, tokens, cost",
    ),
    "trace": ("trace", "one case's attempts and trace events as a timeline, from a results file or the history"),
    "history": ("history", "the history of runs, gates and baselines: init, add, sync, show, plot"),
    "schema": ("schema", "print or write the JSON Schemas of the config and results files"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalgate", description="Gate LLM and agent changes on their eval suite.")
    parser.add_argument("--version", action="version", version=f"evalgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        sp.set_defaults(_module=f"evals.cli.{module}")
        # Loading every module just to build --help would defeat lazy imports.
        if only is None or only == name:
            importlib.import_module(f"evals.cli.{module}").configure(sp)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    for token in argv:
        if token in COMMANDS:
            return token
        if not token.startswith("-"):
            return None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from evals.cli import closedpipe
    from evals.common import logguard
    from evals.results import masking

    closedpipe.install()  # a reader that closes our output early ends it, not the command
    masking.install()  # nothing we print shows a secret (below the log guard: its commands are masked too)
    logguard.install()  # in Actions, no line we print starts a workflow command we did not mean
    command = _command_of(argv)
    try:
        parser = build_parser(only=command or "")
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        return run_command(args)
    except SystemExit as exc:  # argparse: --help is 0, a usage error is 2
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except EvalgateError as exc:  # an option's EVALGATE_* variable that says nothing it can take
        print(f"evalgate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        closedpipe.flush()  # what is still buffered fails here, ignored, not at exit (which would exit 120)


def run_command(args: argparse.Namespace) -> int:
    module = importlib.import_module(args._module)
    try:
        return int(module.main(args))
    except EvalgateError as exc:
        console.error(str(exc), source=args.command)
        return exc.exit_code
    except KeyboardInterrupt:
        console.info("interrupted", source=args.command)
        return 130
    except Exception:  # a bug, not the user's input: show it, but keep the documented exit codes
        console.error("internal error (please report it):", source=args.command)
        traceback.print_exc()
        return EXIT_INFRA


def module_main(command: str) -> NoReturn:
    """Entry for ``python -m evals.<command>`` (the seed workflow's spelling): that command with
    this process's arguments, and the process ends (``evals.cli.leave``)."""
    from evals.cli.leave import leave

    leave(main([command, *sys.argv[1:]]))
