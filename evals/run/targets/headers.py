"""The HTTP headers a model target sends (docs/spec.md#target-headers): ``headers:`` values with
``${NAME}`` references to environment variables, expanded when the run starts and never written
expanded anywhere, and the key of ``api_key_env`` only in the header its wire format uses.

An expanded value is a secret wherever it came from: the runner masks it in everything it writes
(the target's ``secrets``) and it is registered with the process's masking, so evalgate's own
output masks it too, whatever its length or its variable's name (an environment variable's value
is otherwise masked from 8 characters on, and not at all under a harmless name such as ``USER``).
A literal value that holds a credential sits in the config in clear text, in the repository and
every fork of it: that is a warning naming the header and the variable to use instead."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from evals.common.errors import UsageError
from evals.results import console
from evals.results.masking import is_secret_key, mask_text, register_secrets

if TYPE_CHECKING:
    from evals.run.targets.formats import WireFormat

# ``${NAME}``: a POSIX shell variable name between the braces. Anything else after ``${`` is an
# error rather than text sent as it is (``${1KEY}`` or ``${ KEY }`` is a mistyped reference).
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def request_headers(
    wire: WireFormat,
    headers: Mapping[str, str],
    key_env: str | None,
    where: Callable[..., str] | None,
    *,
    label: str,
    named: bool,
) -> tuple[dict[str, str], tuple[str, ...], dict[str, str]]:
    """What a model target or a judge of format ``wire`` sends with every request: the config's
    ``headers`` expanded, the format's own, and the key of ``key_env`` only in the one header the
    format carries it in (``x-api-key`` for Anthropic, never ``Authorization``); the secrets to
    mask (the key, the expanded values); and the expanded config headers alone (what the response
    cache keys on, :func:`headers_digest`). ``named``: ``api_key_env`` was written in the config
    (else ``key_env`` is the format's default), for the error of an unset variable."""
    given, secrets = expand_headers(headers, where, key_header=wire.key_header if key_env else None, label=label)
    sent = {"Content-Type": "application/json", **given, **wire.fixed_headers}
    if not key_env:
        return sent, secrets, given
    key = os.environ.get(key_env)
    if not key:
        place = f"{where('api_key_env')}: " if where is not None else ""
        raise UsageError(
            f"{place}{label}.api_key_env {'names' if named else 'is by default'} {key_env}, which is not set: "
            f"export {key_env}=... (the key is never read from the config file), or set api_key_env: null for an "
            "endpoint without a key"
        )
    sent[wire.key_header] = wire.key_value(key)
    return sent, (key, *secrets), given


def expand_headers(
    headers: Mapping[str, str],
    where: Callable[..., str] | None,
    *,
    key_header: str | None,
    label: str = "target.openai",
    environ: Mapping[str, str] = os.environ,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """``headers`` with their ``${NAME}`` references expanded, and the expanded values (secrets).
    ``where(*key)`` is the config line of ``headers.<key>`` (None: the caller names the place);
    ``key_header`` the header the format
    sends ``api_key_env``'s key in (None: no key is sent). A reference to an unset or empty
    variable, a header named twice, or one that would carry the key beside the target's own is
    a usage error naming the header's line."""
    seen: dict[str, str] = {}
    expanded: dict[str, str] = {}
    secrets: list[str] = []
    for name, value in headers.items():
        here = f"{label}.headers.{name}" if where is None else f"{where('headers', name)}: {label}.headers.{name}"
        if name.lower() in seen:
            raise UsageError(f"{here} names the header {seen[name.lower()]!r} again (header names ignore case)")
        seen[name.lower()] = name
        if key_header is not None and name.lower() == key_header.lower():
            raise UsageError(
                f"{here}: the key of api_key_env already goes in {key_header}; set api_key_env: null to send "
                "your own, or drop this header"
            )

        def expand(match: re.Match[str], here: str = here) -> str:
            variable = match.group(1)
            if not _NAME.fullmatch(variable):
                raise UsageError(f"{here}: {match.group(0)!r} is not a variable reference: write ${{NAME}}")
            found = environ.get(variable)
            if not found:
                raise UsageError(
                    f"{here} names ${{{variable}}}, which is not set (or empty): export {variable}=... (in a "
                    "workflow, a secret passed in the step's env:)"
                )
            secrets.append(found)
            return found

        expanded[name] = _REFERENCE.sub(expand, value)
        if any(c in expanded[name] for c in "\r\n\0"):  # a value that ends the header would inject others
            raise UsageError(f"{here}: its value holds a line break, which no header value may")
        if _REFERENCE.search(value) is None and value.strip() and _clear_text_secret(name, value):
            console.warning(
                f"{here} holds a credential in clear text in the config (it is in the repository and every "
                f"fork of it): keep it in a secret and write ${{{_variable_for(name)}}} instead",
                source="run",
            )
    register_secrets(secrets)
    return expanded, tuple(secrets)


def headers_digest(headers: Mapping[str, str]) -> str | None:
    """What of ``headers`` the response cache keys on (docs/spec.md#response-cache): a header
    that can change the answer (a deployment, an organisation, a feature flag) changes the key,
    by the sha256 of the names and expanded values (never the values). Credentials are left out
    (a rotated key asks the same question), and so is a target without headers, whose keys stay
    what they were."""
    kept = sorted((name.lower(), value) for name, value in headers.items() if not is_secret_key(name))
    if not kept:
        return None
    return "sha256:" + hashlib.sha256(repr(kept).encode("utf-8")).hexdigest()


def _clear_text_secret(name: str, value: str) -> bool:
    """A credential written as it is: under a header named like one (``Authorization``,
    ``api-key``, ``X-Api-Key``), or of a shape masking knows (``sk-…``, ``Bearer …``, a JWT)."""
    return is_secret_key(name) or mask_text(value, ()) != value


def _variable_for(header: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", header).strip("_").upper() or "HEADER_VALUE"
