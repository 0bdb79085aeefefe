"""The ``target:`` of ``evalgate.yml`` (docs/spec.md#targets): what is evaluated — a Python callable, a
process, or an OpenAI-compatible chat endpoint (with the tools it runs itself)."""

from __future__ import annotations

import re
import urllib.parse
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Discriminator, Field, Tag

from evals.suite.strict import StrictModel

_CALLABLE = r"^[\w.]+:[\w.]+$"
_PROVIDER_MODEL = r"^[\w.\-]+:.+$"


def _provider_model(value: str) -> str:
    if not re.match(_PROVIDER_MODEL, value):
        name = value.strip() or "gpt-4o-mini"
        raise ValueError(
            f"{value!r} names no provider: a model is written provider:model_name, e.g. openai:{name} for any "
            "OpenAI-compatible endpoint; only the part after the colon is sent to the endpoint, the whole string "
            "is what results and reports name the model by"
        )
    return value


def _base_url(value: str) -> str:
    """An OpenAI-format base URL is the API's root: the client appends the route to it."""
    parts = urllib.parse.urlsplit(value.strip())
    path = parts.path.rstrip("/")
    for route in ("/chat/completions", "/completions", "/responses"):
        if path.endswith(route):
            root = urllib.parse.urlunsplit(parts._replace(path=path[: -len(route)], query=""))
            raise ValueError(
                f"{value!r} ends in {route}, which evalgate appends itself: write the API's root, {root!r} "
                "(the base URL as OpenAI's SDKs take it, e.g. https://api.openai.com/v1)"
            )
    if parts.query:
        raise ValueError(
            f"{value!r} has a query (?{parts.query}): evalgate appends /chat/completions to the base URL, so a "
            "query cannot go there; Azure OpenAI's v1 API takes https://<resource>.openai.azure.com/openai/v1 "
            "with no api-version (docs/providers.md)"
        )
    return value


# The root of an OpenAI-format API, checked not to hold the route or a query (a common mistake:
# ``.../v1/chat/completions`` copied from a curl example answers 404 to every request).
BaseURL = Annotated[str, AfterValidator(_base_url)]


def _callable(value: str) -> str:
    if not re.match(_CALLABLE, value):
        raise ValueError(
            f"{value!r} is not a callable's address: write package.module:function (e.g. bot:answer), the module "
            "importable from the config's folder or target.path, the function after the colon"
        )
    return value


# ``module:function``, with an error that says so in words.
CallableName = Annotated[str, AfterValidator(_callable), Field(json_schema_extra={"pattern": _CALLABLE})]

# ``provider:model_name``, with an error that says so in words (a pattern's error would show the regex).
ModelName = Annotated[
    str,
    AfterValidator(_provider_model),
    Field(description="provider:model_name", json_schema_extra={"pattern": _PROVIDER_MODEL}),
]


class PythonTarget(StrictModel):
    """A callable ``module:function`` (sync or async) called with the case input."""

    python: CallableName
    path: list[str] = Field(default_factory=list, description="Extra import paths, relative to the config.")


class CommandTarget(StrictModel):
    """A process: the case as one JSON object on stdin, ``{"output": ...}`` on stdout."""

    command: list[str] | str
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class OpenAIParams(StrictModel):
    base_url: BaseURL = "https://api.openai.com/v1"
    model: ModelName
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    system_prompt: str | None = Field(default=None, description="Path of a file holding the system prompt.")
    headers: dict[str, str] = Field(default_factory=dict)
    price_in_per_mtok: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="USD per million input tokens: with it (and price_out_per_mtok) each attempt records cost_usd "
        "from the usage the endpoint reports; without either, cost is unknown (limits.max_cost_usd needs them).",
    )
    price_out_per_mtok: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="USD per million output tokens (see price_in_per_mtok)."
    )
    tools: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")], CallableName] = Field(
        default_factory=dict,
        description="Tools the target runs itself: {name: package.module:function}, sync or async; the model "
        "gets each as a function whose parameters come from the signature, and the loop runs up to max_steps.",
    )
    max_steps: Annotated[int, Field(ge=1)] = Field(
        default=8, description="Model calls per attempt at most, with tools: (a step past it is not run)."
    )
    tool_timeout_s: Annotated[float, Field(gt=0)] = Field(
        default=30, description="Seconds one tool call may take; past it the model is told the tool timed out."
    )

    @property
    def model_name(self) -> str:
        return self.model.split(":", 1)[1]


class OpenAITarget(StrictModel):
    openai: OpenAIParams


def _target_kind(value: Any) -> str | None:
    keys = value.keys() if isinstance(value, dict) else vars(value).keys() if isinstance(value, BaseModel) else ()
    found = [k for k in ("python", "command", "openai") if k in keys]
    return found[0] if len(found) == 1 else None


Target = Annotated[
    Annotated[PythonTarget, Tag("python")]
    | Annotated[CommandTarget, Tag("command")]
    | Annotated[OpenAITarget, Tag("openai")],
    Discriminator(
        _target_kind,
        custom_error_type="target_kind",
        custom_error_message="a target has exactly one of the keys python, command, openai",
    ),
]
