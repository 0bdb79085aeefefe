"""``cache:`` in ``evalgate.yml`` (docs/spec.md#response-cache): the response cache's folder, what it serves and its
size cap. The store itself is ``evals.run.cache``; docs/config.md says when a cached answer is
stale and how to start afresh."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from evals.common.errors import InputFileError
from evals.suite.strict import StrictModel

if TYPE_CHECKING:
    from evals.suite.yamlsource import Located

CacheableKind = Literal["openai", "anthropic", "python", "command"]

# Kinds that opt in with cache.key: their code's files are in the key, but not what else their
# answers depend on (a value in their env, a data file, a model behind an API they call).
KEYED_KINDS = ("python", "command")
DEFAULT_MAX_BYTES = 512 << 20


def _model_targets() -> list[CacheableKind]:  # a def, not a lambda: mypy types the lambda's list as list[str]
    return ["openai", "anthropic"]


class CacheSpec(StrictModel):
    """The response cache, on by default for the model targets (openai, anthropic) and the judge;
    the config's ``cache: false`` turns it off."""

    dir: str = Field(
        default=".evalgate/cache",
        description="Folder of the entries, relative to the config file's folder (like history.path); the "
        "folder to give actions/cache.",
    )
    targets: list[CacheableKind] = Field(
        default_factory=_model_targets,
        description="Target kinds served from the cache (a kind or a list). openai and anthropic are keyed by "
        "their exact request; python and command only with `key` set (their code's files are keyed, what else "
        "they read is not); [] for none.",
    )
    judge: bool = Field(default=True, description="Serve the judge scorer's verdicts from the cache too.")
    key: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description="Mixed into every entry's key: change it to start afresh. Required when targets lists python "
        "or command — change it whenever their code, or anything else their answer depends on, changes.",
    )
    max_bytes: Annotated[int, Field(ge=1 << 20)] = Field(
        default=DEFAULT_MAX_BYTES,
        description="Size cap of the folder in bytes (at least 1 MiB); after a run that wrote entries, the least "
        "recently used are removed down to it.",
    )

    @field_validator("targets", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    def serves(self, kind: str) -> bool:
        return kind in self.targets


def check_cache_key(cache: CacheSpec | None, target: BaseModel | None, src: Located) -> None:
    """A python or command target served from the cache must carry ``cache.key``: its code's files
    are keyed (``evals.run.targets.identity``), but not what else its answers depend on — its
    environment's values, a data file, a model behind an API it calls. An error naming the line,
    with the fix. (Given the config's parts, not the config: ``evals.suite.config`` imports this
    module.)"""
    if cache is None or target is None:
        return
    kind = next((k for k in KEYED_KINDS if getattr(target, k, None) is not None), None)
    if kind is not None and cache.serves(kind) and cache.key is None:
        line = src.line_of(["cache", "targets"]) or src.line_of(["cache"])
        raise InputFileError(
            f"{src.path}:{line}" if line else src.path,
            f"cache.targets lists {kind}, but cache.key is not set: a {kind} target's answers may depend on more "
            "than its code (its env values, data files, a model behind an API it calls), which only the key can say",
            f'add cache: {{key: "v1"}} and change it whenever any of those changes, or drop {kind} from cache.targets',
        )
