"""How an option is declared once (docs/architecture.md): a field of an :class:`Options` model whose
:class:`Flag` says its command-line spelling and help, the ``EVALGATE_*`` variable read when the
flag is absent, and the action.yml input that sets that variable. ``evals.cli.options`` builds the
parsers from these declarations and :func:`argv_of` spells a child's command line from them; the
commands' own option models are in ``evals.suite.options``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict


@dataclass(frozen=True)
class Flag:
    """How one option is spelled outside Python. ``env``: the variable read when the flag is not
    given (an empty value counts as unset); ``action_input``: the action.yml input that sets it;
    ``from_env``: how that variable's text becomes the value, when not the field's own type."""

    flags: tuple[str, ...]
    help: str
    metavar: str | None = None
    required: bool = False
    env: str | None = None
    action_input: str | None = None
    from_env: Callable[[str], Any] | None = None

    @property
    def name(self) -> str:
        return self.flags[0]


def flag(*flags: str, help: str, **more: Any) -> Flag:
    return Flag(flags=flags, help=help, **more)


class Options(BaseModel):
    """Base of the option models: frozen (an option is read, never rewritten on the way down)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def declared(cls) -> Iterator[tuple[str, Flag | None, Any]]:
        """``(field, its Flag, its annotation)`` in declaration order; a nested model's Flag is None."""
        for name, info in cls.model_fields.items():
            decl = next((m for m in info.metadata if isinstance(m, Flag)), None)
            yield name, decl, info.annotation

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> Any:
        """The model from a flat mapping of every option (what a parsed command line holds); nested
        models take their own fields from the same mapping."""
        data: dict[str, Any] = {}
        for name, decl, annotation in cls.declared():
            if decl is None and isinstance(annotation, type) and issubclass(annotation, Options):
                data[name] = annotation.from_values(values)
            elif name in values:
                data[name] = values[name]
        return cls(**data)


def flags_of(model: type[Options]) -> Iterator[tuple[str, Flag, Any, Any]]:
    """Every declared option of ``model`` and its nested models: ``(field, Flag, annotation, default)``."""
    for name, decl, annotation in model.declared():
        if decl is None:
            yield from flags_of(annotation)
        else:
            info = model.model_fields[name]
            yield name, decl, annotation, None if info.is_required() else info.default


def is_list(annotation: Any) -> bool:
    """A repeatable option: ``list[str]`` or ``list[str] | None``."""
    return get_origin(annotation) is list or any(get_origin(a) is list for a in get_args(annotation))


def choices_of(annotation: Any) -> tuple[str, ...] | None:
    """The values a ``Literal`` option takes (``Literal["on", "off"]``, also inside ``| None``), else None:
    the flag's choices come from the type, never declared twice."""
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    return next((get_args(a) for a in get_args(annotation) if get_origin(a) is Literal), None)


def value_type(annotation: Any) -> Any:
    """The scalar type of an option's annotation: ``int | None`` → int, ``list[str]`` → str."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is list:
        return args[0]
    if get_origin(annotation) is Literal:
        return str
    if args:
        return value_type(args[0])
    return annotation


def negated(name: str) -> str:
    """The spelling that turns off a bool option whose default is on or unset (argparse's
    ``BooleanOptionalAction``): ``--summary`` → ``--no-summary``."""
    return "--no-" + name.removeprefix("--")


def argv_of(options: Options, *, always: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> list[str]:
    """``options`` as a command line: every option that differs from its default (and those named
    in ``always``), in declaration order, spelled by its declaration; ``skip``: left to the caller."""
    argv: list[str] = []
    model = type(options)
    values = {**_flat(options)}
    for name, decl, _annotation, default in flags_of(model):
        value = values[name]
        if name in skip or (value == default and name not in always):
            continue
        if isinstance(value, bool):
            argv.append(decl.name if value else negated(decl.name))
        elif isinstance(value, list):
            argv += [item for v in value for item in (decl.name, str(v))]
        elif isinstance(value, float):
            argv += [decl.name, f"{value:.10g}"]
        else:
            argv += [decl.name, str(value)]
    return argv


def _flat(options: Options) -> dict[str, Any]:
    """Every option's value by field name, nested models' included."""
    out: dict[str, Any] = {}
    for name, decl, _annotation in type(options).declared():
        value = getattr(options, name)
        out |= _flat(value) if decl is None else {name: value}
    return out


def declared_flag(model: type[Options], field: str) -> str:
    """The command-line spelling of ``model``'s option ``field``."""
    return next(decl.name for name, decl, _annotation, _default in flags_of(model) if name == field)
