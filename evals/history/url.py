"""Where the history is (docs/spec.md#history-store), in each form its location may take, and one redactor for all
of them, used wherever the location is printed or logged.

- ``postgresql://`` (or ``postgres://``) URLs: a password in the user-info (``u:pw@``) or in the
  query (``?password=pw``). libpq reads the user-info up to the first ``/``, so a password may hold
  an unencoded ``#``, ``?``, ``@`` or space; the redactor hides everything up to the last ``@``
  before that ``/``.
- libpq keyword strings (``host=db user=app password=pw``), which psycopg accepts as well: a
  PostgreSQL history, never a file name.
- anything else: a SQLite file (``sqlite:///relative``, ``sqlite:////absolute`` or a plain path).

Redacting works on the text alone, so a location no parser accepts (``postgresql://u:p@[::1/db``)
is redacted like any other; libpq's own errors quote the location in part or whole, which is what
:func:`redact_text` is for."""

from __future__ import annotations

import re
from urllib.parse import unquote

from evals.results.masking import MASK, mask_text

POSTGRES_SCHEMES = ("postgresql", "postgres")
# How a libpq keyword string starts: a keyword, then "=".
_KEYWORD_STRING = re.compile(r"\s*[A-Za-z_]+\s*=")
# One keyword and its value, as libpq reads them: quoted with '...' (backslash escapes), or up to
# the next space. A missing "=" is matched too (libpq refuses it, quoting the words around it).
_KEYWORD_VALUE = re.compile(r"([A-Za-z_]\w*)(?:\s*=\s*|\s+)('(?:[^'\\]|\\.)*'?|(?:[^\s\\]|\\.)+)")
_QUERY_VALUE = re.compile(r"([^&=]+)=([^&]*)")
# libpq's parameters whose values are no secret; any other's (password, sslpassword, a misspelt
# "pasword", one libpq does not know) is redacted.
_LIBPQ_PLAIN = frozenset(
    {
        *("host", "hostaddr", "port", "dbname", "user", "passfile", "service", "options", "connect_timeout"),
        *("client_encoding", "application_name", "fallback_application_name", "target_session_attrs"),
        *("load_balance_hosts", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count"),
        *("tcp_user_timeout", "replication", "gssencmode", "gsslib", "gssdelegation", "krbsrvname"),
        *("channel_binding", "require_auth", "requirepeer", "sslmode", "sslcompression", "sslcert", "sslkey"),
        *("sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "ssl_min_protocol_version"),
        "ssl_max_protocol_version",
    }
)


def is_keyword_string(url: str) -> bool:
    return "://" not in url and _KEYWORD_STRING.match(url) is not None


def is_postgres(url: str) -> bool:
    """A PostgreSQL location: a ``postgresql://`` URL or a libpq keyword string."""
    return url.split("://", 1)[0].lower() in POSTGRES_SCHEMES if "://" in url else is_keyword_string(url)


def _secret_name(name: str) -> bool:
    return name.strip().lower() not in _LIBPQ_PLAIN


def _secret_spans(url: str) -> list[tuple[int, int]]:
    """Where ``url`` holds a password or another secret, in order."""
    if is_keyword_string(url):
        return [m.span(2) for m in _KEYWORD_VALUE.finditer(url) if _secret_name(m.group(1))]
    scheme, sep, rest = url.partition("://")
    if not sep:
        return []
    start = len(scheme) + len(sep)
    spans = []
    authority = rest.split("/", 1)[0]
    at = authority.rfind("@")
    colon = authority.find(":", 0, max(at, 0))
    if at >= 0 and colon >= 0:
        spans.append((start + colon + 1, start + at))
    query = url.find("?", start + max(at, 0))
    if query >= 0:
        for m in _QUERY_VALUE.finditer(url, query + 1):
            if _secret_name(unquote(m.group(1))):
                spans.append(m.span(2))
    return spans


def redact_url(url: str) -> str:
    """``url`` with every password and other secret in it replaced by ``***``, whatever its form."""
    out, end = [], 0
    for a, b in _secret_spans(url):
        out += [url[end:a], MASK]
        end = b
    return "".join(out) + url[end:]


def _secrets(url: str) -> list[str]:
    """The secrets of ``url`` as written, and as a parser would decode them."""
    found = []
    for a, b in _secret_spans(url):
        raw = url[a:b]
        found += [raw, unquote(raw), raw.strip("'").replace("\\'", "'").replace("\\\\", "\\")]
    return [s for s in found if s]


def redact_text(text: str, url: str) -> str:
    """``text`` (an error message of the database driver, say) without ``url``'s secrets: the
    whole location redacted where it is quoted, and its secrets masked wherever they appear, a
    short one too (a message with a letter masked too many is better than a password shown)."""
    return mask_text(text.replace(url, redact_url(url)), _secrets(url))
