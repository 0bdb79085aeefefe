"""The command-line parsers of the typed options (``evals.suite.options``): each declared option
becomes its argparse flag here, and a parsed command line becomes the model the library reads.
An option with an ``EVALGATE_*`` variable takes its default from it, which is how the GitHub
Action's inputs reach ``evalgate gate`` (action.yml sets the variables, no shell builds flags)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any, TypeVar

from evals.common.errors import UsageError
from evals.suite.flags import Flag, Options, choices_of, flags_of, is_list, value_type
from evals.suite.options import StoreOptions

M = TypeVar("M", bound=Options)


def add_options(parser: argparse.ArgumentParser, model: type[Options], env: Mapping[str, str] = os.environ) -> None:
    """One argparse flag per option of ``model`` (nested models included), in declaration order."""
    for name, decl, annotation, default in flags_of(model):
        kind = value_type(annotation)
        # On by default or unset (--summary, --promote): --no-... turns it off; else a plain switch.
        negatable = kind is bool and default is not False
        given = env.get(decl.env, "").strip() if decl.env else ""
        if given:
            default = _from_env(decl, annotation, kind, given)
        extra: dict[str, Any] = {"dest": name, "help": decl.help}
        if decl.required and default is None:
            extra["required"] = True
        if kind is bool:
            extra["action"] = argparse.BooleanOptionalAction if negatable else "store_true"
        else:
            if is_list(annotation):
                extra["action"] = "append"
            if kind is not str:
                extra["type"] = kind
            extra["metavar"] = decl.metavar
            extra["choices"] = choices_of(annotation)
        if default is not None or kind is bool:
            extra["default"] = list(default) if isinstance(default, list) else default
        parser.add_argument(*decl.flags, **extra)


def _from_env(decl: Flag, annotation: Any, kind: Any, text: str) -> Any:
    if decl.from_env is not None:
        return decl.from_env(text)
    choices = choices_of(annotation)
    if choices is not None and text not in choices:
        raise UsageError(f"{decl.env}={text!r}: {decl.name} is one of {', '.join(choices)}")
    try:
        return kind(text)
    except ValueError:
        what = {int: "a whole number", float: "a number"}.get(kind, kind.__name__)
        raise UsageError(f"{decl.env}={text!r}: {decl.name} takes {what}") from None


def options_of(model: type[M], args: argparse.Namespace) -> M:
    """The typed options of a parsed command line."""
    return model.from_values(vars(args))


def add_store_options(parser: argparse.ArgumentParser) -> None:
    add_options(parser, StoreOptions)


def store_options(args: argparse.Namespace) -> StoreOptions:
    return options_of(StoreOptions, args)
