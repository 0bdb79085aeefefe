"""GitHub Actions expressions (``${{ ... }}``) as tests/fakes/actions.py's simulated runner reads them."""

from __future__ import annotations

import re
from typing import Any


class Expr:
    """A deliberately small evaluator of GitHub Actions expressions: enough for the ones our
    action and workflows use (``==``, ``!=``, ``&&``, ``||``, parentheses; ``&&`` binds tighter
    than ``||`` and each returns the operand that decided, as GitHub's do), and an error for
    anything else."""

    _TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||[()])|(?P<path>[A-Za-z_][\w.-]*))")

    def __init__(self, contexts: dict[str, Any]):
        self.contexts = contexts

    def value(self, text: str) -> Any:
        tokens = self._tokens(text)
        result, rest = self._or(tokens, text)
        if rest:
            raise AssertionError(f"expression not supported by this test's evaluator: {text!r}")
        return result

    def _tokens(self, text: str) -> list[tuple[str, str]]:
        tokens, pos = [], 0
        while pos < len(text.rstrip()):
            match = self._TOKEN.match(text, pos)
            if not match or match.end() == pos:
                raise AssertionError(f"expression not supported by this test's evaluator: {text!r}")
            kind = match.lastgroup or ""
            tokens.append((kind, match.group(kind)))
            pos = match.end()
        return tokens

    def _or(self, tokens: list[tuple[str, str]], text: str) -> tuple[Any, list[tuple[str, str]]]:
        result, tokens = self._and(tokens, text)
        while tokens[:1] == [("op", "||")]:
            right, tokens = self._and(tokens[1:], text)
            result = result or right
        return result, tokens

    def _and(self, tokens: list[tuple[str, str]], text: str) -> tuple[Any, list[tuple[str, str]]]:
        result, tokens = self._comparison(tokens, text)
        while tokens[:1] == [("op", "&&")]:
            right, tokens = self._comparison(tokens[1:], text)
            result = result and right
        return result, tokens

    def _comparison(self, tokens: list[tuple[str, str]], text: str) -> tuple[Any, list[tuple[str, str]]]:
        left, tokens = self._primary(tokens, text)
        if tokens[:1] not in ([("op", "==")], [("op", "!=")]):
            return left, tokens
        op = tokens[0][1]
        right, tokens = self._primary(tokens[1:], text)
        same = str(left).lower() == str(right).lower() if left is not None and right is not None else left == right
        return (same if op == "==" else not same), tokens

    def _primary(self, tokens: list[tuple[str, str]], text: str) -> tuple[Any, list[tuple[str, str]]]:
        if tokens[:1] == [("op", "(")]:
            inner, rest = self._or(tokens[1:], text)
            if rest[:1] != [("op", ")")]:
                raise AssertionError(f"unbalanced parentheses: {text!r}")
            return inner, rest[1:]
        if not tokens or tokens[0][0] == "op":
            raise AssertionError(f"expression not supported by this test's evaluator: {text!r}")
        return self._operand(tokens[0]), tokens[1:]

    def _operand(self, token: tuple[str, str]) -> Any:
        kind, raw = token
        if kind == "str":
            return raw[1:-1].replace("''", "'")
        if raw in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[raw]
        value: Any = self.contexts
        for part in raw.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None and raw.startswith(("vars.", "secrets.")):
            return ""  # GitHub: an unset variable or secret is the empty string
        return value

    def render(self, template: Any) -> str:
        """A string with ``${{ }}`` parts substituted (GitHub turns null into '')."""

        def one(match: re.Match[str]) -> str:
            value = self.value(match.group(1))
            if isinstance(value, bool):
                return "true" if value else "false"
            return "" if value is None else str(value)

        if isinstance(template, bool):  # YAML booleans reach actions as "true"/"false"
            return "true" if template else "false"
        return re.sub(r"\$\{\{(.*?)\}\}", one, str(template))
