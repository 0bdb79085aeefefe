"""Secret masking applied to everything evalgate writes (docs/spec.md#masking): results, reports, the history
and its own output (:class:`MaskedStream`).

Keys are matched by their words, not substrings, so ``access_token``, ``apiKey`` and
``X-Api-Key`` are masked while ``tokens_in``, ``max_tokens`` and ``tokenizer`` are not.
Under a secret key, only strings and containers are masked: a number there (``token_count: 12``)
is not a credential, and masking it would corrupt usage figures.

Names and formats cannot find a secret of an unknown name and shape (a password under
``MY_DB``, a key under ``MAPS``). So the values of every environment variable the target or the
judge can read are masked as literals wherever they appear, whatever the variable's name, except
the few of :data:`HARMLESS_ENV` (paths, the locale, the commit a job runs on: no secret, and text
is full of them); a command target's own ``env:`` reaches the runner as extra values (the target's
``secrets``). They are read once per process and matched with one compiled matcher; values
shorter than :data:`MIN_SECRET_CHARS` are left to the names and patterns (``WORKERS=4`` or
``DEBUG=true`` would otherwise mask every ``4`` and ``true``). Masking is on the runner's hot
path: text is clipped to what will be stored before it is masked (:func:`clip_masked`)."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from pydantic import BaseModel

from evals.common.textstream import TextStreamWrapper
from evals.results.model import OUTPUT_LIMIT_BYTES, CaseResult, Results, clip_output

MASK = "***"
# Environment variable values this short are not taken for secrets (see the module docstring).
MIN_SECRET_CHARS = 8
# Variables whose values are masked nowhere: no secret, and masking them would shred ordinary
# text (paths in every traceback and message, the locale, the repository and commit a job runs
# on, evalgate's own settings such as the reset reason). GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN,
# ACTIONS_ID_TOKEN_REQUEST_TOKEN and EVALGATE_HISTORY_URL are deliberately not here.
HARMLESS_ENV = frozenset(
    {
        # the shell and the system
        *("PATH", "HOME", "PWD", "OLDPWD", "USER", "LOGNAME", "SHELL", "HOSTNAME", "SHLVL", "_", "MAIL"),
        *("LANG", "LANGUAGE", "TZ", "TERM", "TERM_PROGRAM", "COLORTERM", "LS_COLORS", "EDITOR", "PAGER"),
        *("TMPDIR", "TMP", "TEMP", "DISPLAY", "CI", "DEBIAN_FRONTEND", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH"),
        # Python and actions/setup-python
        *("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONUTF8"),
        *("PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "pythonLocation", "Python_ROOT_DIR", "Python3_ROOT_DIR"),
        # GitHub Actions' default variables, the token's aside
        *("GITHUB_ACTIONS", "GITHUB_ACTION", "GITHUB_ACTION_PATH", "GITHUB_ACTION_REF", "GITHUB_ACTION_REPOSITORY"),
        *("GITHUB_ACTOR", "GITHUB_ACTOR_ID", "GITHUB_TRIGGERING_ACTOR", "GITHUB_API_URL", "GITHUB_GRAPHQL_URL"),
        *("GITHUB_SERVER_URL", "GITHUB_BASE_REF", "GITHUB_HEAD_REF", "GITHUB_REF", "GITHUB_REF_NAME"),
        *("GITHUB_REF_PROTECTED", "GITHUB_REF_TYPE", "GITHUB_SHA", "GITHUB_REPOSITORY", "GITHUB_REPOSITORY_ID"),
        *("GITHUB_REPOSITORY_OWNER", "GITHUB_REPOSITORY_OWNER_ID", "GITHUB_RUN_ID", "GITHUB_RUN_NUMBER"),
        *("GITHUB_RUN_ATTEMPT", "GITHUB_RETENTION_DAYS", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_JOB"),
        *("GITHUB_WORKFLOW", "GITHUB_WORKFLOW_REF", "GITHUB_WORKFLOW_SHA", "GITHUB_WORKSPACE", "GITHUB_ENV"),
        *("GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY", "ImageOS", "ImageVersion"),
        *("RUNNER_ARCH", "RUNNER_DEBUG", "RUNNER_ENVIRONMENT", "RUNNER_NAME", "RUNNER_OS", "RUNNER_TEMP"),
        *("RUNNER_TOOL_CACHE", "RUNNER_WORKSPACE"),
        # evalgate's own settings (action.yml passes its inputs so)
        *("EVALGATE_MODE", "EVALGATE_CONFIG", "EVALGATE_RESULTS", "EVALGATE_RESULTS_FORMAT", "EVALGATE_SLICE_KEYS"),
        *("EVALGATE_BASELINE_STORE", "EVALGATE_BASELINE_TAG", "EVALGATE_TOLERANCE", "EVALGATE_REASON"),
        *("EVALGATE_COMMENT", "EVALGATE_PR_NUMBER", "EVALGATE_REPORT_DIR", "EVALGATE_OUT_DIR", "EVALGATE_PYTHON"),
        *("EVALGATE_ALLOW_PULL_REQUEST_TARGET", "EVALGATE_HISTORY", "EVALGATE_MAX_INFLATED_MB"),
        *("EVALGATE_GITHUB_LOGIN", "EVALGATE_GITHUB_RETRIES", "EVALGATE_GITHUB_TIMEOUT", "EVALGATE_GITHUB_BACKOFF"),
        "EVALGATE_GITHUB_MAX_WAIT",
        "EVALGATE_GATE_ID",
        *("EVALGATE_SEED", "EVALGATE_CACHE_INPUT", "EVALGATE_ALLOW_WRITE_TOKEN_WITH_SUITE"),
        *("EVALGATE_EVIDENCE_SIDE", "EVALGATE_EVIDENCE", "EVALGATE_EVIDENCE_DIGEST"),
    }
)
HARMLESS_ENV_PREFIXES = ("LC_", "XDG_")  # the locale's categories, the desktop's folders
# No single string is masked beyond this many characters: masking costs ~0.3 µs a character, and
# nothing this long is stored whole (outputs keep 8 KiB). The rest is cut, and the cut says so.
MAX_MASKED_CHARS = 1 << 20
# Below this length one regex alternation finds literal secrets fastest; above it, one substring
# search per secret does (measured: 0.15 µs vs 1.2 µs on 16 characters, 155 µs vs 39 µs on 8 KB).
_SHORT_TEXT = 256

_SECRET_WORDS = frozenset(
    {
        *("password", "passwords", "passwd", "passphrase", "passphrases", "secret", "secrets", "token"),
        *("auth", "authorization", "apikey", "credential", "credentials"),
    }
)
_KEY_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

# Where a secret written inside text ends: what cannot be part of it in a URL, JSON, markdown or prose.
_END = r"\s\"'<>()\[\]{}|,;`"
# Secrets written inside text: (words, pattern). A pattern runs only on text whose case-folded
# form holds one of its words (a superset of what it matches): most text holds none of them, and a
# substring search is far cheaper than a pattern that tries every word boundary (measured on 9 KB
# of prose: ~6 µs a word against ~500 µs a pattern). Each pattern keeps its first group (the label)
# and masks the rest.
_TEXT_PATTERNS = [
    # password=..., "api_key": "...", Authorization: Bearer ..., MY_AUTH=...  (the scheme word is
    # masked too); a boolean or null there says whether, not what (persist-credentials: false), and
    # a bare "..." is a hint's placeholder (export OPENAI_API_KEY=...), not a value.
    (
        ("pass", "secret", "token", "api", "auth", "credential"),
        re.compile(
            r"(?i)(\b(?:\w+[_-])?(?:pass(?:word|wd|phrase)|secret|token|api[_-]?key|auth(?:orization)?|credentials?)"
            r"\b[\"']?\s*[:=]\s*[\"']?)(?!(?:true|false|null|none)\b|\.\.\.(?:[\s\"'&,;]|$))"
            r"(?:(?:bearer|basic|token)\s+)?[^\s\"'&,;]+"
        ),
    ),
    (("bearer",), re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]+=*")),
    (("basic",), re.compile(r"(?i)(\bbasic\s+)[A-Za-z0-9+/]{8,}=*")),
    # A private key block, whole (to the end of the text when its END line is cut off).
    (
        ("private key",),
        re.compile(
            r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)[\s\S]*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\Z)"
        ),
    ),
    # JSON Web Tokens: a base64url JSON header and payload ("eyJ" is how '{"' encodes), and a signature.
    (("eyj",), re.compile(r"()\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    # Well-known key formats: OpenAI/Anthropic sk-, GitHub, Slack, Google, Stripe, GitLab, npm,
    # PyPI, Hugging Face, Google OAuth, AWS access key ids.
    (("sk-",), re.compile(r"(\bsk-)[A-Za-z0-9_\-]{16,}")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"(\b(?:ghp|gho|ghu|ghs|ghr)_)[A-Za-z0-9]{20,}")),
    (("github_pat_",), re.compile(r"(\bgithub_pat_)[A-Za-z0-9_]{20,}")),
    (("xox", "xapp-"), re.compile(r"(\b(?:xox[abeoprs]|xapp)-)[A-Za-z0-9\-]{10,}")),
    (("aiza",), re.compile(r"(\bAIza)[0-9A-Za-z_\-]{30,}")),
    (("sk_", "rk_"), re.compile(r"(\b(?:sk|rk)_(?:live|test)_)[0-9A-Za-z]{16,}")),
    (
        ("glpat-", "npm_", "pypi-", "hf_", "ya29."),
        re.compile(r"(\b(?:glpat-|npm_|pypi-|hf_|ya29\.))[A-Za-z0-9_\-]{20,}"),
    ),
    (("akia", "asia"), re.compile(r"(\b)(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    # URL user-info, user and password alike: a Sentry DSN's key is its user name
    # (https://KEY@o1.ingest.sentry.io/42 → https://***@o1.ingest.sentry.io/42). Up to the last "@"
    # before the path, so a password with an unencoded "@", "#" or "?" in it goes whole.
    (("@",), re.compile(rf"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^{_END}/@]+(?:@[^{_END}/@]+)*(?=@)")),
    # Webhook URLs, whose path is the secret: hooks.slack.com/services/T../B../..., any hooks.*
    # host (Zapier), and a /webhooks/, /webhookb2/ or /hooks/ segment (Discord, Teams, GitLab).
    (("hooks.",), re.compile(rf"(\bhttps?://hooks\.[^{_END}/]+/)[^{_END}]+")),
    (("hook",), re.compile(rf"(\bhttps?://[^{_END}/]+/(?:[^{_END}/?#]+/)*?(?:webhooks?|webhookb2|hooks)/)[^{_END}]+")),
]
# Any of the patterns' words: text holding none of them needs no pattern run at all. One substring
# search per word beats one regex alternation of them all but on the shortest text (measured: 2.7
# vs 3.8 µs on 36 characters, 231 vs 692 µs on 9 KB of prose; 1.6 vs 0.9 µs on 4 characters).
_WORDS = tuple(dict.fromkeys(w for words, _ in _TEXT_PATTERNS for w in words))
# Masked short text is remembered (per set of literal secrets): the runner masks the same text
# several times a case (a case's input is also its first trace message; the role names, step lines
# and metadata keys come back in every case). Bounded: emptied when full.
_MEMO_CHARS = 256
_MEMO_SIZE = 4096


def _any_word(folded: str) -> bool:
    # A loop, not any(<generator>): the generator costs more than the searches on short text.
    for word in _WORDS:  # noqa: SIM110
        if word in folded:
            return True
    return False


@functools.lru_cache(maxsize=4096)  # the same few keys come back in every case
def is_secret_key(key: str) -> bool:
    words = [w.lower() for w in _KEY_WORDS.findall(key)]
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(a in ("api", "private") and b == "key" for a, b in itertools.pairwise(words))


def harmless_env(name: str) -> bool:
    return name in HARMLESS_ENV or name.startswith(HARMLESS_ENV_PREFIXES)


def env_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values in ``environ`` (default: this process's environment) masked wherever they
    appear: every variable's but :func:`harmless_env` ones', stripped, and each line of a
    multi-line value too (a key file pasted into a variable, printed a line at a time), those at
    least :data:`MIN_SECRET_CHARS` long."""
    env = os.environ if environ is None else environ
    found = set()
    for name, value in env.items():
        if harmless_env(name):
            continue
        for part in (value, *value.splitlines()):
            if len(part.strip()) >= MIN_SECRET_CHARS:
                found.add(part.strip())
    return tuple(sorted(found))


@functools.cache
def _process_env_secrets() -> tuple[str, ...]:
    return (*env_secrets(), *_registered)


# Values this process was told are secrets (a target's ``${NAME}`` header values): masked like the
# environment's, whatever their length or their variable's name.
_registered: set[str] = set()


def register_secrets(values: Iterable[str]) -> None:
    """Mask ``values`` in everything this process masks from now on, its own output included."""
    new = {v for v in values if v and v.strip()} - _registered
    if new:
        _registered.update(new)
        _process_env_secrets.cache_clear()
        _literals.cache_clear()


class _Literals:
    """Literal secrets and one matcher for all of them (longest first, so a secret that contains
    another is masked whole)."""

    def __init__(self, values: Iterable[str]):
        self.values = tuple(sorted({v for v in values if v and v.strip()}, key=len, reverse=True))
        self.pattern = re.compile("|".join(map(re.escape, self.values))) if self.values else None
        self.memo: dict[str, str] = {}  # short text → masked (see _MEMO_CHARS)

    def safe_cut(self, text: str, cap: int) -> int:
        """Where to cut ``text`` near ``cap`` so no literal secret is cut in half (a half is not
        matched by :meth:`mask` and would be stored): past the end of one that spans ``cap``."""
        if self.pattern is None:
            return cap
        longest = len(self.values[0])
        start = max(0, cap - longest)
        for m in self.pattern.finditer(text, start, cap + longest):
            if m.start() < cap < m.end():
                return m.end()
        return cap

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
    # Text no longer than ``cap`` is not cut, so what it masks to depends on the text alone.
    if len(text) <= _MEMO_CHARS and len(text) <= cap:
        memo = literals.memo
        masked = memo.get(text)
        if masked is None:
            masked = _mask_whole(text, literals, cap)
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[text] = masked
        return masked
    return _mask_whole(text, literals, cap)


def _mask_whole(text: str, literals: _Literals, cap: int) -> str:
    if len(text) > cap:
        cut = literals.safe_cut(text, cap)
        text = text[:cut] + f"… [{len(text) - cut:,} characters cut before masking]"
    # Literal secrets first: a pattern might otherwise mask only part of one and leave the rest.
    text = literals.mask(text)
    folded = text.casefold()
    if not _any_word(folded):  # most text: no pattern to run
        return text
    for words, pattern in _TEXT_PATTERNS:
        if any(word in folded for word in words):
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
    return _clip_masked(value, _literals_for(extra_values), limit)


def _clip_masked(value: Any, literals: _Literals, limit: int) -> tuple[Any, str, bool]:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return clip_output(_mask(value, literals), limit)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    cap = limit + 4 * max(map(len, literals.values), default=0) + 64
    masked = _mask(value, literals, cap)
    text = masked if isinstance(masked, str) else json.dumps(masked, ensure_ascii=False, default=str)
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore"), digest, True


class Masker:
    """``mask_secrets`` and ``clip_masked`` with one set of extra values, looked up once: the runner
    masks ~10 values a case with its target's secrets."""

    def __init__(self, extra_values: Iterable[str] = ()):
        self.literals = _literals_for(extra_values)

    def mask(self, value: Any) -> Any:
        return _mask(value, self.literals)

    def clip(self, value: Any, limit: int = OUTPUT_LIMIT_BYTES) -> tuple[Any, str, bool]:
        return _clip_masked(value, self.literals, limit)

    def stored(self, value: Any, limit: int = OUTPUT_LIMIT_BYTES) -> Any:
        """What ``clip`` stores of ``value`` (its first item), without the sha256 of a text that
        fits (a case's input and expected value: stored, their hash is not)."""
        if isinstance(value, str) and len(value.encode("utf-8")) <= limit:
            masked = _mask_text(value, self.literals)
            if len(masked.encode("utf-8")) <= limit:  # masking can lengthen text ("ab" → "***")
                return masked
        return self.clip(value, limit)[0]


# How a masked case id or slice value ends: the first hex digits of the sha256 of the name as
# written (docs/spec.md#masked-names). Outside the masked text, after a space, so that no pattern
# that masked it takes it in when the name is masked again.
_NAME_DIGEST_CHARS = 8
_NAME_MARK = re.compile(rf" \(masked [0-9a-f]{{{_NAME_DIGEST_CHARS}}}\)\Z")


def _mask_name(name: str, literals: _Literals, *, repeated: bool = False) -> str:
    mark = _NAME_MARK.search(name) if name.endswith(")") else None
    body = name[: mark.start()] if mark else name
    # Slice keys and values come back in every case: remembered (100,000 cases of two tags: 0.16 s
    # CPU against 0.47 s). Ids are unique: remembering them only costs (0.18 s against 0.16 s).
    masked = _mask_text(body, literals) if repeated else _mask_whole(body, literals, MAX_MASKED_CHARS)
    if masked == body:  # no secret, or masked already: a name read again keeps its form
        return name
    digest = hashlib.sha256(name.encode("utf-8", errors="surrogatepass")).hexdigest()[:_NAME_DIGEST_CHARS]
    return f"{masked} (masked {digest})"


def mask_name(name: str, extra_values: Iterable[str] = ()) -> str:
    """A case id or slice value (or slice key) as evalgate stores and shows it
    (docs/spec.md#masked-names): ``name`` itself when it holds no secret, else its masked text and
    a digest of it as written (``test_api[sk-***] (masked 3f9a1c2b)``). The same name masks the
    same way in every run, so pairing with a baseline, ``--resume``, shards, ``--ids`` and the
    history still match it, and two names that differ only in their secret stay two. Masking a
    masked name returns it unchanged."""
    return _mask_name(name, _literals_for(extra_values))


def mask_slices(slices: Mapping[str, str], extra_values: Iterable[str] = ()) -> dict[str, str]:
    """A case's slices with keys and values masked as :func:`mask_name` masks an id: both can
    come from the case's own text (an imported test's properties, a parameter)."""
    return _mask_slices(slices, _literals_for(extra_values))


def _mask_slices(slices: Mapping[str, str], literals: _Literals) -> dict[str, str]:
    return {
        _mask_name(key, literals, repeated=True): _mask_name(value, literals, repeated=True)
        for key, value in slices.items()
    }


def mask_case_names(case: CaseResult) -> CaseResult:
    """``case`` with its id and slices masked (:func:`mask_name`); the same object when neither
    holds a secret."""
    literals = _literals_for(())
    case_id = _mask_name(case.id, literals)
    slices = _mask_slices(case.slices, literals)
    if case_id == case.id and slices == case.slices:
        return case
    return case.model_copy(update={"id": case_id, "slices": slices})


def mask_names(results: Results) -> Results:
    """``results`` with every case's id and slices masked (:func:`mask_case_names`): a file an
    older evalgate wrote holds them as written. The same object when none holds a secret."""
    cases = [mask_case_names(case) for case in results.cases]
    changed = any(new is not old for new, old in zip(cases, results.cases, strict=True))
    return results.model_copy(update={"cases": cases}) if changed else results


def mask_results(results: Results) -> Results:
    """A results file as evalgate takes it in: its case ids and slices masked (:func:`mask_names`),
    and, when evalgate did not make it (no ``run.evalgate_version``: another harness wrote it in
    this format, and nothing has masked it yet), what its cases and attempts say too, as the
    runner masks what it writes (inputs, expected values, outputs, errors, traces, metadata). The
    run's header stays as it is."""
    if results.run.evalgate_version:
        return mask_names(results)
    literals = _literals_for(())
    cases = [
        mask_case_names(case).model_copy(
            update={
                "input": _mask(case.input, literals),
                "expected": _mask(case.expected, literals),
                "metadata": _mask(case.metadata, literals),
                "attempts": [_mask(attempt, literals) for attempt in case.attempts],
            }
        )
        for case in results.cases
    ]
    return results.model_copy(update={"cases": cases})


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


class MaskedStream(TextStreamWrapper):
    """A text stream that masks what is written to it: evalgate's own output, whose messages quote
    what it does not control (a target's stderr, a user's file, a database driver's exception).
    Each write is masked on its own; ``print`` writes its text in one call."""

    def write(self, text: str) -> int:
        self.inner.write(mask_text(text))
        return len(text)


def install(streams: tuple[str, ...] = ("stdout", "stderr")) -> None:
    """Mask ``sys.stdout`` and ``sys.stderr`` (once)."""
    for name in streams:
        stream: TextIO | None = getattr(sys, name)
        if stream is not None and not isinstance(stream, MaskedStream):
            setattr(sys, name, MaskedStream(stream))
