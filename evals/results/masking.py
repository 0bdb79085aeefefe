"""Secret masking applied to everything the runner and the importers write (SPEC §3).

Keys are matched by their words, not substrings, so ``access_token``, ``apiKey`` and
``X-Api-Key`` are masked while ``tokens_in``, ``max_tokens`` and ``tokenizer`` are not.
Under a secret key, only strings and containers are masked: a number there (``token_count: 12``)
is not a credential, and masking it would corrupt usage figures.

Besides keys and known formats, the values of environment variables whose names look secret
(:data:`SECRET_ENV_NAME`: ``AWS_SECRET_ACCESS_KEY``, ``AZURE_OPENAI_KEY``, ``PGPASSWORD`` ...) are
masked as literals wherever they appear. They are read once per process and matched with one
compiled matcher; values shorter than :data:`MIN_SECRET_CHARS` are left alone (``KEY_ID=1`` or
``TOKEN=x`` would otherwise mask every ``1`` and ``x``). Masking is on the runner's hot path:
text is clipped to what will be stored before it is masked (:func:`clip_masked`)."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from evals.results.model import OUTPUT_LIMIT_BYTES, clip_output

MASK = "***"
# Environment variable values this short are not taken for secrets (see the module docstring).
MIN_SECRET_CHARS = 8
# A name part ending in KEY, SECRET, TOKEN, PASSWORD/PASSWD or CREDENTIAL (plural too):
# AWS_SECRET_ACCESS_KEY, AZURE_OPENAI_KEY, HF_TOKEN, PGPASSWORD; not TOKENIZERS_PARALLELISM.
SECRET_ENV_NAME = re.compile(r"(?i)(?:^|[_.-])[A-Z0-9]*(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL)S?(?:$|[_.-])")
# No single string is masked beyond this many characters: masking costs ~0.3 µs a character, and
# nothing this long is stored whole (outputs keep 8 KiB). The rest is cut, and the cut says so.
MAX_MASKED_CHARS = 1 << 20
# Below this length one regex alternation finds literal secrets fastest; above it, one substring
# search per secret does (measured: 0.15 µs vs 1.2 µs on 16 characters, 155 µs vs 39 µs on 8 KB).
_SHORT_TEXT = 256

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
    # Credentials in URLs: postgres://app:pw@db → postgres://***@db (a user alone is kept).
    re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@:\"'<>]*:[^\s/?#@\"'<>]+(?=@)"),
]
# Every pattern above needs one of these words, searched in the case-folded text (a superset of
# what the patterns' case-insensitive matching finds). Most text has none, and one search is far
# cheaper than running every pattern; on folded text without (?i) it is ~9× cheaper again
# (measured: 48 µs → 5 µs on 232 characters).
_ANY_TRIGGER = re.compile(
    r"pass|secret|token|api|authorization|bearer|basic|sk-|gh[opusr]_|github_pat_|xox|hf_|akia|://[^\s/@]*@"
)


@functools.lru_cache(maxsize=4096)  # the same few keys come back in every case
def is_secret_key(key: str) -> bool:
    words = [w.lower() for w in _KEY_WORDS.findall(key)]
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(a in ("api", "private") and b == "key" for a, b in itertools.pairwise(words))


def env_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Values of the variables in ``environ`` (default: this process's environment) whose names
    look secret, at least :data:`MIN_SECRET_CHARS` long."""
    env = os.environ if environ is None else environ
    return tuple(
        sorted({v for k, v in env.items() if SECRET_ENV_NAME.search(k) and len(v.strip()) >= MIN_SECRET_CHARS})
    )


@functools.cache
def _process_env_secrets() -> tuple[str, ...]:
    return env_secrets()


class _Literals:
    """Literal secrets and one matcher for all of them (longest first, so a secret that contains
    another is masked whole)."""

    def __init__(self, values: Iterable[str]):
        self.values = tuple(sorted({v for v in values if v and v.strip()}, key=len, reverse=True))
        self.pattern = re.compile("|".join(map(re.escape, self.values))) if self.values else None

    def mask(self, text: str) -> str:
        if self.pattern is None:
            return text
        if len(text) <= _SHORT_TEXT:
            found = self.pattern.search(text) is not None
        else:
            found = any(v in text for v in self.values)
        return self.pattern.sub(MASK, text) if found else text


@functools.lru_cache(maxsize=16)  # the runner masks every value with the same few secrets
def _literals(extra: tuple[str, ...]) -> _Literals:
    return _Literals((*_process_env_secrets(), *extra))


def _literals_for(extra_values: Iterable[str]) -> _Literals:
    return _literals(tuple(extra_values))


def mask_text(text: str, extra_values: Iterable[str] = ()) -> str:
    return _mask_text(text, _literals_for(extra_values))


def _mask_text(text: str, literals: _Literals, cap: int = MAX_MASKED_CHARS) -> str:
    if len(text) > cap:
        text = text[:cap] + f"… [{len(text) - cap:,} characters cut before masking]"
    # Literal secrets first: a pattern might otherwise mask only part of one and leave the rest.
    text = literals.mask(text)
    if _ANY_TRIGGER.search(text.casefold()) is None:
        return text
    for pattern in _TEXT_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def mask_secrets(value: Any, extra_values: Iterable[str] = ()) -> Any:
    """A copy of ``value`` (str, dict, list, tuple, pydantic model, scalar) with secrets replaced by
    ``***``: values under keys like password/token/secret/api_key/authorization, ``Bearer ...``
    credentials, well-known key formats (``sk-...``) and ``user:password@`` in URLs inside text,
    and every literal in ``extra_values`` (e.g. the API key read from the environment) or in a
    secret-looking environment variable, wherever it appears. Empty or whitespace-only extra
    values are ignored."""
    return _mask(value, _literals_for(extra_values))


def clip_masked(value: Any, extra_values: Iterable[str] = (), limit: int = OUTPUT_LIMIT_BYTES) -> tuple[Any, str, bool]:
    """``results.clip_output`` of ``value`` masked: (stored value, sha256, truncated?), masking only
    what is stored. A value that fits is masked whole and hashed masked, as before. A longer one is
    hashed as produced and each of its strings cut to ``limit`` plus a margin (the longest literal
    secret, so none is cut in half and left partly visible) before masking: a 50 MB output costs
    a hash, not ~15 s of regex."""
    literals = _literals_for(extra_values)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return clip_output(_mask(value, literals), limit)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    cap = limit + 4 * max(map(len, literals.values), default=0) + 64
    masked = _mask(value, literals, cap)
    text = masked if isinstance(masked, str) else json.dumps(masked, ensure_ascii=False, default=str)
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore"), digest, True


def _mask(value: Any, literals: _Literals, cap: int = MAX_MASKED_CHARS) -> Any:
    if isinstance(value, str):
        return _mask_text(value, literals, cap)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            masked_key = _mask_text(key, literals, cap) if isinstance(key, str) and literals.values else key
            if isinstance(key, str) and is_secret_key(key) and isinstance(item, str | dict | list | tuple):
                out[masked_key] = MASK if item != "" else item
            else:
                out[masked_key] = _mask(item, literals, cap)
        return out
    if isinstance(value, list):
        return [_mask(item, literals, cap) for item in value]
    if isinstance(value, tuple):
        return tuple(_mask(item, literals, cap) for item in value)
    if isinstance(value, BaseModel):
        return type(value).model_validate(_mask(value.model_dump(), literals, cap))
    return value
