"""YAML loading that remembers where each value came from, so validation errors can name the
file, the line and the key (a pydantic error only knows the key path)."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from evals.common.errors import InputFileError

if TYPE_CHECKING:  # imported where used: `evalgate compare` without a config parses no YAML
    import yaml

# Values that aliases may add to a document (each alias counts as the values it stands for): far
# above what a config's anchors (`<<: *defaults`) ever add, far below a "billion laughs".
MAX_ALIAS_EXPANSION = 100_000


class Located:
    """Parsed YAML data plus the node tree it was built from."""

    def __init__(self, data: Any, root: yaml.Node | None, path: Path):
        self.data = data
        self.root = root
        self.path = path

    def line_of(self, loc: Sequence[str | int]) -> int | None:
        """1-based line of the deepest node on the path ``loc`` (a pydantic error location).
        For a key that should not be there, the key's own line."""
        import yaml

        node = self.root
        line = node.start_mark.line + 1 if node is not None else None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    if key_node.value == str(part):
                        line = key_node.start_mark.line + 1
                        node = value_node
                        break
                else:
                    return line
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return line
        return line


def load_yaml(path: Path, text: str | None = None) -> Located:
    """Parse one YAML document. Syntax errors become InputFileError with the line; so do aliases
    that expand past :data:`MAX_ALIAS_EXPANSION` values (the "billion laughs": a few hundred bytes
    that would take minutes and gigabytes to validate)."""
    import yaml

    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputFileError(path, "file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputFileError(path, f"cannot read: {exc}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        check_aliases(root, path)
        # Built from a fresh parse: constructing merges `<<` keys into the nodes, and line_of
        # must see the document as written.
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise InputFileError(where, f"invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise InputFileError(path, f"invalid YAML: {exc}") from None
    except RecursionError:
        raise InputFileError(path, "invalid YAML: nested too deeply") from None
    return Located(data, root, path)


def check_aliases(root: yaml.Node | None, path: Path | str) -> None:
    """Refuse a document whose aliases make it expand to more than ``MAX_ALIAS_EXPANSION`` values
    beyond its own nodes, or refer to themselves: counted on the node graph, without expanding it."""
    if root is None:
        return
    sizes: dict[int, int] = {}  # expanded size of each finished node
    open_nodes: set[int] = set()
    distinct = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] - distinct > MAX_ALIAS_EXPANSION:
                break
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise InputFileError(
                f"{path}:{node.start_mark.line + 1}", "invalid YAML: an alias refers to the node that contains it"
            )
        open_nodes.add(key)
        distinct += 1
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    else:
        return
    raise InputFileError(
        path,
        f"YAML aliases expand this file past {MAX_ALIAS_EXPANSION:,} values beyond its own: refusing to load it",
        "write the values out, or use fewer levels of aliases of aliases",
    )


def _children(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def format_loc(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _keys_at(model: type[BaseModel], loc: Sequence[str | int]) -> set[str]:
    """The keys the models allow where ``loc``'s last part sits (following fields, list items and
    dict values from ``model``)."""
    here: list[Any] = [model]
    for part in loc[:-1]:
        ahead: list[Any] = []
        for annotation in here:
            for option in _options(annotation):
                if isinstance(option, type) and issubclass(option, BaseModel):
                    field = option.model_fields.get(str(part))
                    ahead += [field.annotation] if field is not None else []
                elif typing.get_origin(option) in (list, tuple) and isinstance(part, int):
                    ahead += list(typing.get_args(option))[:1]
                elif typing.get_origin(option) is dict:
                    ahead += list(typing.get_args(option))[1:2]
        here = ahead
    return {
        name
        for annotation in here
        for option in _options(annotation)
        if isinstance(option, type) and issubclass(option, BaseModel)
        for name in option.model_fields
    }


def _options(annotation: Any) -> list[Any]:
    """The types an annotation allows: ``X | None``, ``Annotated[X, ...]`` and unions unwrapped."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _options(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [o for arg in typing.get_args(annotation) for o in _options(arg)]
    return [annotation]


def did_you_mean(key: str, keys: Iterable[str]) -> str | None:
    """The hint "did you mean 'expected'?" for a misspelt key, or None when no key is close: the one
    suggestion of every file evalgate reads (the config's keys, a case's)."""
    close = difflib.get_close_matches(key, sorted(keys), n=1, cutoff=0.7)
    return f"did you mean {close[0]!r}?" if close else None


def _unknown_key(model: type[BaseModel] | None, loc: Sequence[str | int]) -> str:
    hint = "check the spelling; see the JSON Schema shipped with evalgate"
    if model is not None and loc and isinstance(loc[-1], str):
        keys = _keys_at(model, loc)
        close = did_you_mean(loc[-1], keys)
        if close:
            hint = close
        elif keys:
            hint = f"valid keys here: {', '.join(sorted(keys))}"
    return f"unknown key ({hint})"


def value_error_text(err: Any) -> str:
    """A pydantic error's message; for one our validators raised, its own sentence without
    pydantic's "Value error, " in front."""
    if err["type"] == "value_error" and "error" in err.get("ctx", {}):
        return str(err["ctx"]["error"])
    return str(err["msg"])


def validation_error(
    src: Located, exc: ValidationError, what: str, union_tags: Sequence[str] = (), model: type[BaseModel] | None = None
) -> InputFileError:
    """One InputFileError for the first problem, pointing at its line, listing the others.
    ``union_tags``: tags of discriminated unions, which pydantic puts into the location although
    they are not keys of the file. ``model``: what was validated, to suggest the key meant."""
    problems = []
    first_line = None
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "union[")))]
        # A tag is followed by the key it names (target.openai.openai.model): drop the tag, keep the key.
        loc = [p for i, p in enumerate(loc) if not (p in union_tags and i + 1 < len(loc) and loc[i - 1] != p)]
        line = src.line_of(loc)
        if first_line is None:
            first_line = line
        key = format_loc(loc) or "(top level)"
        msg = value_error_text(err)
        if err["type"] == "extra_forbidden":
            msg = _unknown_key(model, loc)
        problems.append(f"line {line}: {key}: {msg}" if line else f"{key}: {msg}")
    where = f"{src.path}:{first_line}" if first_line else str(src.path)
    head = problems[0].split(": ", 1)[1] if first_line else problems[0]
    rest = "".join(f"\n  also {p}" for p in problems[1:])
    return InputFileError(where, f"invalid {what}: {head}{rest}")
