"""Which imported errors are infrastructure failures (docs/spec.md#attempt-errors): a request that never got an
answer says nothing about the model, so it must not count as a wrong answer, and a run made of
them gates ``incomplete`` (exit 3), never ``fail``.

The patterns are the texts the harnesses really write (where each comes from is in
tests/fixtures/README.md, "Error messages"):

- promptfoo: ``API call error: Error: Request failed after 4 retries: TypeError: fetch failed
  (Cause: Error: getaddrinfo ENOTFOUND host)`` (src/util/fetch/index.ts ``fetchWithRetries``;
  Node's undici names ``ECONNREFUSED``, ``ECONNRESET``, ``UND_ERR_*_TIMEOUT``), ``Rate limited:
  429 Too Many Requests``, ``Request timed out after N ms``, ``API error: 503 Service Unavailable``.
- inspect_ai: ``exception_message()`` is the exception's ``message`` or its ``repr``: openai's
  ``Connection error.`` / ``Request timed out.`` / ``Error code: 429 - {...}``, httpx's
  ``ReadTimeout(...)``, requests' ``ConnectionError(MaxRetryError(... NameResolutionError ...))``;
  the traceback's last line names the class (``openai.APITimeoutError: Request timed out.``).
- OpenAI evals: ``error`` events ``{"type": <exception class>, "message": str(exc)}``.
- Harbor: exception types are classified by Harbor's own policy (evals/importers/harbor.py); an unknown
  type falls back to these patterns.
- JUnit: the ``<error>`` message and text.

A bare status code is only trusted next to the words that make it one (``Error code: 503``,
``API error: 502``, ``HTTP 504``, ``500 Internal Server Error``): "took 500 ms" is not a 5xx."""

from __future__ import annotations

import functools
import re

from evals.results.model import ErrorKind

# cause -> pattern, checked in this order (a DNS failure wrapped in "fetch failed" is "dns").
_CAUSES: dict[str, str] = {
    "rate-limit": r"rate.?limit|too many requests|\b(?:error code|status(?: code)?|api error|http)[: ]+429\b"
    r"|\b429 too many|resource.?exhausted",
    "dns": r"getaddrinfo|enotfound|eai_again|nameresolutionerror|name or service not known|nodename nor servname"
    r"|temporary failure in name resolution|name resolution",
    "connection": r"econnrefused|connection refused|econnreset|connection reset|connection aborted|econnaborted"
    r"|remotedisconnected|server disconnected|remoteprotocolerror|fetch failed|socket hang up|epipe|broken pipe"
    r"|apiconnectionerror|\bconnection error\b|connecterror|connection(?:reset|refused|aborted)?error"
    r"|max retries exceeded"
    r"|network is unreachable|enetunreach|ehostunreach|no route to host|und_err_socket|other side closed",
    "timeout": r"apitimeouterror|request timed out|read timed out|timed out while|(?:connect|read|write|pool)timeout"
    r"|etimedout|und_err_(?:connect|headers|body)_timeout|headers timeout|gateway time-?out",
    "server-error": r"\b(?:error code|status(?: code)?|api error|http(?: error)?|internal server error)[: ]+5\d\d\b"
    r"|\b5\d\d (?:internal server error|bad gateway|service unavailable|gateway timeout)"
    r"|internalservererror|serviceunavailable|service unavailable|bad gateway|\boverloaded",
    # inspect_ai records a sample stopped because a sibling failed as the CancelledError's repr.
    "cancelled": r"cancelled ?error|\bcancell?ed\b",
}


@functools.cache  # compiled on first use (~5 ms): a run's summary asks only when an attempt erred
def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    return [(cause, re.compile(pattern, re.IGNORECASE)) for cause, pattern in _CAUSES.items()]


def infra_cause(*texts: str | None) -> str | None:
    """The infra cause the texts name (``rate-limit``, ``dns``, ``connection``, ``timeout``,
    ``server-error``, ``cancelled``), or None."""
    text = "\n".join(t for t in texts if t)
    for cause, pattern in _patterns():
        if pattern.search(text):
            return cause
    return None


def error_kind(*texts: str | None, default: ErrorKind = "target") -> ErrorKind:
    """Infra when the texts (message, exception type, traceback tail) name a transport or
    provider-capacity failure or a cancellation, else ``default``: only infra errors are excused
    from the pass rate, so guessing infra needs evidence."""
    return "infra" if infra_cause(*texts) else default
