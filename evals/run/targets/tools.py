"""The tools a model target runs itself (``target.<format>.tools``, docs/spec.md#tool-loop): Python callables,
sync or async, offered to the model as functions whose JSON Schema comes from their signature (each
wire format wraps it in its own ``tools`` entry), and called with the arguments the model chose.

Whatever goes wrong in a call — arguments that are not a JSON object or do not fit the signature,
a tool the config does not have, an exception, the per-call timeout — is the model's trajectory
going wrong, not the world's: ``run_tool`` returns it as the error text the model reads back (and
the trace records as a ``tool_error``), never raises it."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError, create_model

from evals.common import jsonsafe
from evals.common.errors import UsageError
from evals.run.containment import DaemonThreads
from evals.run.targets.loading import import_callable

# A tool's result goes back to the model whole up to this many characters: a tool that returns a
# 50 MB file would otherwise be sent with every later step of the loop (and paid for).
MAX_RESULT_CHARS = 64 * 1024


@dataclass(frozen=True)
class Tool:
    name: str
    ref: str  # module:function, as the config says
    fn: Callable[..., Any]
    signature: inspect.Signature | None

    @functools.cached_property
    def arguments(self) -> type[BaseModel] | None:
        """The model of the keyword arguments, from the annotations: what the schema the model is
        given says, and what its arguments are checked against (None: no signature)."""
        return _arguments_model(self.signature)

    @functools.cached_property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments, which every format's ``tools`` entry carries."""
        return _parameters(self.arguments)

    @functools.cached_property
    def description(self) -> str | None:
        """The docstring's first paragraph: what the model is told the tool does."""
        doc = inspect.getdoc(self.fn)
        return doc.split("\n\n", 1)[0].strip() if doc else None


def _arguments_model(signature: inspect.Signature | None) -> type[BaseModel] | None:
    if signature is None:
        return None
    fields: dict[str, Any] = {}
    for p in signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            continue
        annotation = Any if p.annotation is p.empty else p.annotation
        fields[p.name] = (annotation, ... if p.default is p.empty else p.default)
    return create_model("Arguments", **fields)


def _parameters(model: type[BaseModel] | None) -> dict[str, Any]:
    """JSON Schema of the keyword arguments a signature takes (pydantic reads the annotations)."""
    if model is None:
        return {"type": "object", "properties": {}}
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


def load_tools(spec: dict[str, str], root: Path, where: Callable[[], str], label: str) -> dict[str, Tool]:
    """The configured tools, imported with the config folder importable. ``where()``: the config's
    ``file:line`` of ``tools:``, which every error names (asked for only on the way to an error);
    ``label`` the config's key of the target (``target.openai``)."""
    tools = {}
    for name, ref in spec.items():
        try:
            fn = import_callable(ref, root, [], f"tool {name}")
        except UsageError as exc:
            raise UsageError(f"{where()}: {label}.tools: {exc}") from None
        try:
            signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            signature = None  # builtins without one: called with what the model sends
        if signature is not None and any(p.kind == p.POSITIONAL_ONLY for p in signature.parameters.values()):
            raise UsageError(
                f"{where()}: {label}.tools: tool {name} ({ref}) takes positional-only parameters; the model "
                "passes arguments by name, so make them ordinary parameters"
            )
        tools[name] = Tool(name, ref, fn, signature)
    return tools


async def run_tool(
    tools: dict[str, Tool], name: str, arguments: Any, timeout_s: float, threads: DaemonThreads
) -> tuple[bool, str]:
    """Call one tool as the model asked: ``(True, result text)`` or ``(False, error text)``.
    A sync tool runs on one of ``threads`` so the other attempts go on; past the timeout its thread
    is left to finish on its own (Python cannot stop it), its result unused — a daemon thread, so a
    tool that never returns cannot hold the end of the run (``asyncio.to_thread``'s executor is
    joined when the loop closes: ``time.sleep(40)`` under ``tool_timeout_s: 1`` held the run 40 s,
    and a tool that never returns held the job to its timeout, with no results written)."""
    tool = tools.get(name)
    if tool is None:
        return False, f"unknown tool {name!r}: the tools are {', '.join(sorted(tools))}"
    try:
        args = jsonsafe.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError as exc:
        return False, f"the arguments are not JSON ({exc}): {str(arguments)[:200]}"
    if args is None or args == "":
        args = {}
    if not isinstance(args, dict):
        return False, f"the arguments must be a JSON object, got {type(args).__name__}"
    if tool.signature is not None:
        try:
            tool.signature.bind(**args)
        except TypeError as exc:
            return False, f"bad arguments for {name}: {exc}"
        problem = _check_types(tool, args)
        if isinstance(problem, str):
            return False, f"bad arguments for {name}: {problem}"
        args = problem
    try:
        async with asyncio.timeout(timeout_s) as deadline:
            if inspect.iscoroutinefunction(tool.fn):
                value = await tool.fn(**args)
            else:
                value = await threads.call(lambda: tool.fn(**args))
                if inspect.isawaitable(value):
                    value = await value
    except TimeoutError as exc:
        if deadline.expired():
            return False, f"{name} did not return within tool_timeout_s={timeout_s:g}"
        return False, f"TimeoutError: {exc}"
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return True, _capped(text)


def _check_types(tool: Tool, args: dict[str, Any]) -> dict[str, Any] | str:
    """``args`` checked against the schema the model was given, strictly as JSON reads: ``"false"``
    for a ``bool`` is an error the model reads, not ``True`` in the tool's hands. Returns the
    arguments with the checked values (a declared model or date arrives as one), or the error."""
    model = tool.arguments
    if model is None:
        return args
    try:
        checked = model.model_validate_json(json.dumps(args, default=str), strict=True)
    except ValidationError as exc:
        return "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}" for error in exc.errors()
        )
    return {**args, **{key: getattr(checked, key) for key in checked.model_fields_set}}


def _capped(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return (
        text[:MAX_RESULT_CHARS] + f"\n[evalgate: the tool's result was cut at {MAX_RESULT_CHARS:,} of "
        f"{len(text):,} characters]"
    )
