"""Secret masking applied to everything the runner writes (SPEC §3).

Keys are matched by their words, not substrings, so ``access_token``, ``apiKey`` and
``X-Api-Key`` are masked while ``tokens_in``, ``max_tokens`` and ``tokenizer`` are not.
Under a secret key, only strings and containers are masked: a number there (``token_count: 12``)
is not a credential, and masking it would corrupt usage figures."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

MASK = "***"

_SECRET_WORDS = frozenset(
    {"password", "passwords", "passwd", "secret", "secrets", "token", "authorization", "apikey", "credentials"}
)
_KEY_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

# Secrets written inside text. Each pattern keeps its first group (the label) and masks the rest.
_TEXT_PATTERNS = [
    # password=..., "api_key": "...", Authorization: Bearer ...  (the scheme word is masked too)
    re.compile(
        r"(?i)(\b(?:\w+[_-])?(?:pass(?:word|wd)|secret|token|api[_-]?key|authorization)\b[\"']?\s*[:=]\s*[\"']?)"
        r"(?:(?:bearer|basic|token)\s+)?[^\s\"'&,;]+"
    ),
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]+=*"),
    re.compile(r"(?i)(\bbasic\s+)[A-Za-z0-9+/]{8,}=*"),
    # Well-known key formats: OpenAI/Anthropic sk-, GitHub, Slack, Hugging Face, AWS access key ids.
    re.compile(r"(\bsk-)[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(\b(?:ghp|gho|ghu|ghs|ghr)_)[A-Za-z0-9]{20,}"),
    re.compile(r"(\bgithub_pat_)[A-Za-z0-9_]{20,}"),
    re.compile(r"(\bxox[abprs]-)[A-Za-z0-9\-]{10,}"),
    re.compile(r"(\bhf_)[A-Za-z0-9]{20,}"),
    re.compile(r"(\b)AKIA[0-9A-Z]{16}\b"),
]
# Every pattern above needs one of these words (matched case-insensitively: a superset). Most text
# has none, and one search is far cheaper than running every pattern.
_ANY_TRIGGER = re.compile(
    r"(?i)pass|secret|token|api|authorization|bearer|basic|sk-|gh[opusr]_|github_pat_|xox|hf_|akia"
)


@functools.lru_cache(maxsize=4096)  # the same few keys come back in every case
def is_secret_key(key: str) -> bool:
    words = [w.lower() for w in _KEY_WORDS.findall(key)]
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(a in ("api", "private") and b == "key" for a, b in itertools.pairwise(words))


def mask_text(text: str, extra_values: Iterable[str] = ()) -> str:
    # Literal secrets first: a pattern might otherwise mask only part of one and leave the rest.
    for secret in extra_values:
        if secret in text:
            text = text.replace(secret, MASK)
    if _ANY_TRIGGER.search(text) is None:
        return text
    for pattern in _TEXT_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def mask_secrets(value: Any, extra_values: Iterable[str] = ()) -> Any:
    """A copy of ``value`` (str, dict, list, tuple, pydantic model, scalar) with secrets replaced by
    ``***``: values under keys like password/token/secret/api_key/authorization, ``Bearer ...``
    credentials and well-known key formats (``sk-...``) inside text, and every literal in
    ``extra_values`` (e.g. the API key read from the environment) wherever it appears.
    Empty or whitespace-only extra values are ignored."""
    secrets = sorted({s for s in extra_values if s and s.strip()}, key=len, reverse=True) if extra_values else []
    return _mask(value, secrets)


def _mask(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return mask_text(value, secrets)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            masked_key = mask_text(key, secrets) if isinstance(key, str) and secrets else key
            if isinstance(key, str) and is_secret_key(key) and isinstance(item, str | dict | list | tuple):
                out[masked_key] = MASK if item != "" else item
            else:
                out[masked_key] = _mask(item, secrets)
        return out
    if isinstance(value, list):
        return [_mask(item, secrets) for item in value]
    if isinstance(value, tuple):
        return tuple(_mask(item, secrets) for item in value)
    if isinstance(value, BaseModel):
        return type(value).model_validate(_mask(value.model_dump(), secrets))
    return value
