"""The ``target:`` of ``evalgate.yml`` (docs/spec.md#targets): what is evaluated — a Python callable, a
process, or a model behind an API in one of the wire formats of docs/spec.md#model-targets (``openai``:
OpenAI Chat Completions; ``anthropic``: Anthropic Messages, on Anthropic, Bedrock or Vertex), with
the tools it runs itself."""

from __future__ import annotations

import re
import urllib.parse
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Discriminator, Field, Tag, model_validator

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


def _route_in(value: str, routes: tuple[str, ...]) -> tuple[str, str] | None:
    """The route of ``routes`` that ``value``'s path ends in, and the root before it (a
    base URL copied from a request example holds the route evalgate appends), else None."""
    parts = urllib.parse.urlsplit(value.strip())
    path = parts.path.rstrip("/")
    for route in routes:
        if path.endswith(route):
            return route, urllib.parse.urlunsplit(parts._replace(path=path[: -len(route)], query=""))
    return None


def _base_url(value: str) -> str:
    """An OpenAI-format base URL is the API's root: the client appends the route to it."""
    if found := _route_in(value, ("/chat/completions", "/completions", "/responses")):
        route, root = found
        raise ValueError(
            f"{value!r} ends in {route}, which evalgate appends itself: write the API's root, {root!r} "
            "(the base URL as OpenAI's SDKs take it, e.g. https://api.openai.com/v1)"
        )
    parts = urllib.parse.urlsplit(value.strip())
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


Price = Annotated[float, Field(ge=0)] | None


class ModelParams(StrictModel):
    """What every model target takes, whatever its wire format: the model, the key, the system
    prompt, headers, prices and tools (docs/config.md#targets)."""

    model: ModelName
    api_key_env: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    system_prompt: str | None = Field(default=None, description="Path of a file holding the system prompt.")
    headers: dict[str, str] = Field(default_factory=dict)
    price_in_per_mtok: Price = Field(
        default=None,
        description="USD per million input tokens: with it (and price_out_per_mtok) each attempt records cost_usd "
        "from the usage the endpoint reports; without either, cost is unknown (limits.max_cost_usd needs them).",
    )
    price_out_per_mtok: Price = Field(
        default=None, description="USD per million output tokens (see price_in_per_mtok)."
    )
    price_cache_read_per_mtok: Price = Field(
        default=None,
        description="USD per million input tokens read from the provider's prompt cache; unset: priced as "
        "price_in_per_mtok.",
    )
    price_cache_write_per_mtok: Price = Field(
        default=None,
        description="USD per million input tokens written to the provider's prompt cache (Anthropic's "
        "cache_creation_input_tokens); unset: priced as price_in_per_mtok.",
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
    batch: bool = Field(
        default=False,
        description="Full gates and resets send their requests to the provider's batch API (OpenAI Batch, "
        "Anthropic Message Batches) and a later `evalgate run --resume` collects them (docs/spec.md#batch-pricing); "
        "smoke runs and more-evidence batches run synchronously.",
    )
    price_batch_discount: Annotated[float, Field(ge=0, lt=1)] | None = Field(
        default=None,
        description="The share of the price a batched request does not pay; unset: 0.5 (both providers' batch "
        "APIs cost half the list price).",
    )

    @model_validator(mode="after")
    def _batch_one_step(self) -> ModelParams:
        # A tool loop's next request needs the reply to the last one: a batch (answered within 24 h)
        # per step would make an 8-step agent take days, so it is refused rather than stepped through.
        if self.batch and self.tools:
            raise ValueError(
                "batch: true sends one request per attempt, and a tool loop (tools:) needs each reply before its "
                "next request: drop batch for this target, or its tools"
            )
        return self

    @property
    def model_name(self) -> str:
        return self.model.split(":", 1)[1]


class OpenAIParams(ModelParams):
    base_url: BaseURL = "https://api.openai.com/v1"
    api: Literal["chat", "responses"] = Field(
        default="chat",
        description="chat: Chat Completions (POST <base_url>/chat/completions); responses: the Responses API "
        "(POST <base_url>/responses, stateless: store false, the conversation sent with every step).",
    )
    api_key_env: str | None = "OPENAI_API_KEY"
    seed: int | None = Field(default=None, description="Chat Completions only.")
    max_tokens: int | None = Field(default=None, description="Chat Completions only (responses: max_output_tokens).")
    max_output_tokens: Annotated[int, Field(ge=1)] | None = Field(default=None, description="Responses only.")

    @model_validator(mode="after")
    def _api_params(self) -> OpenAIParams:
        other = {"chat": ("max_output_tokens",), "responses": ("seed", "max_tokens")}[self.api]
        if given := [key for key in other if getattr(self, key) is not None]:
            instead = {"max_tokens": " (write max_output_tokens)", "max_output_tokens": " (write max_tokens)"}
            raise ValueError(
                f"{given[0]} is not a parameter of api: {self.api}{instead.get(given[0], '')}: the "
                f"{'Responses API has no seed' if given[0] == 'seed' else 'API refuses it'}"
            )
        return self


def _anthropic_root(value: str | None) -> str | None:
    """Anthropic's base URL is the host root, as its SDKs take it: evalgate appends /v1/messages."""
    if value is None:
        return None
    if found := _route_in(value, ("/v1/messages", "/messages", "/v1")):
        route, root = found
        raise ValueError(
            f"{value!r} ends in {route}: an anthropic base_url is the host root, as Anthropic's SDKs take it "
            f"(evalgate appends /v1/messages, or the Bedrock or Vertex route): write {root!r}"
        )
    parts = urllib.parse.urlsplit(value.strip())
    if parts.query:
        raise ValueError(f"{value!r} has a query (?{parts.query}): write the host root, the route is appended to it")
    return value


# Where each platform's key comes from when api_key_env is not given: Anthropic's own variable,
# AWS's for a Bedrock API key (the one its SDKs read), and an access token a prior step printed.
ANTHROPIC_KEY_ENV = {
    "anthropic": "ANTHROPIC_API_KEY",
    "bedrock": "AWS_BEARER_TOKEN_BEDROCK",
    "vertex": "VERTEX_ACCESS_TOKEN",
}


class AnthropicParams(ModelParams):
    base_url: Annotated[str | None, AfterValidator(_anthropic_root)] = Field(
        default=None,
        description="The host root: https://api.anthropic.com (platform anthropic), "
        "https://bedrock-runtime.<region>.amazonaws.com (bedrock), https://<region>-aiplatform.googleapis.com "
        "(vertex) when unset.",
    )
    platform: Literal["anthropic", "bedrock", "vertex"] = Field(
        default="anthropic",
        description="anthropic: POST /v1/messages with x-api-key; bedrock: InvokeModel with a Bedrock API key as "
        "bearer; vertex: rawPredict with an access token as bearer.",
    )
    api_key_env: str | None = Field(
        default=None,
        description="The variable holding the key: ANTHROPIC_API_KEY (anthropic), AWS_BEARER_TOKEN_BEDROCK "
        "(bedrock), VERTEX_ACCESS_TOKEN (vertex) when unset.",
    )
    region: str | None = Field(
        default=None, description="Bedrock's AWS region or Vertex's location (us-east5, global)."
    )
    project: str | None = Field(default=None, description="The Google Cloud project (vertex).")
    max_tokens: Annotated[int, Field(ge=1)] = Field(
        default=1024, description="The most tokens an answer may have (the Messages API requires it)."
    )
    stop_sequences: list[str] | None = None
    cache_prompt: bool = Field(
        default=True,
        description="Mark the end of the tools and system prompt as a prompt-cache breakpoint, so every case after "
        "the first reads that prefix from Anthropic's cache (priced by price_cache_read_per_mtok).",
    )

    @model_validator(mode="after")
    def _platform_needs(self) -> AnthropicParams:
        if self.base_url is None and self.platform != "anthropic" and not self.region:
            raise ValueError(f"platform {self.platform} needs region: (or base_url:) to know its host")
        if self.platform == "vertex" and not self.project:
            raise ValueError("platform vertex needs project: (the Google Cloud project of the rawPredict URL)")
        if self.batch and self.platform != "anthropic":
            raise ValueError(
                f"batch: true speaks Anthropic's Message Batches API (platform anthropic); platform {self.platform} "
                "batches through its own cloud's jobs, which evalgate does not run: drop batch"
            )
        return self

    @property
    def key_env(self) -> str | None:
        return self.api_key_env if "api_key_env" in self.model_fields_set else ANTHROPIC_KEY_ENV[self.platform]

    @property
    def root(self) -> str:
        if self.base_url is not None:
            return self.base_url.rstrip("/")
        if self.platform == "bedrock":
            return f"https://bedrock-runtime.{self.region}.amazonaws.com"
        if self.platform == "vertex":
            host = (
                "aiplatform.googleapis.com" if self.region == "global" else f"{self.region}-aiplatform.googleapis.com"
            )
            return f"https://{host}"
        return "https://api.anthropic.com"


class OpenAITarget(StrictModel):
    openai: OpenAIParams


class AnthropicTarget(StrictModel):
    anthropic: AnthropicParams


ModelTarget = OpenAITarget | AnthropicTarget
MODEL_KINDS = ("openai", "anthropic")
TARGET_KINDS = ("python", "command", *MODEL_KINDS)


def model_params(target: Any) -> ModelParams | None:
    """The params of a model target (its kind is the one key it has), None for code."""
    if isinstance(target, OpenAITarget):
        return target.openai
    if isinstance(target, AnthropicTarget):
        return target.anthropic
    return None


def _target_kind(value: Any) -> str | None:
    keys = value.keys() if isinstance(value, dict) else vars(value).keys() if isinstance(value, BaseModel) else ()
    found = [k for k in TARGET_KINDS if k in keys]
    return found[0] if len(found) == 1 else None


Target = Annotated[
    Annotated[PythonTarget, Tag("python")]
    | Annotated[CommandTarget, Tag("command")]
    | Annotated[OpenAITarget, Tag("openai")]
    | Annotated[AnthropicTarget, Tag("anthropic")],
    Discriminator(
        _target_kind,
        custom_error_type="target_kind",
        custom_error_message="a target has exactly one of the keys python, command, openai, anthropic",
    ),
]
