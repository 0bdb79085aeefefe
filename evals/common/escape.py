"""Make text that came from a case inert in GitHub-flavoured markdown (docs/spec.md#escaping).

Case inputs, outputs, expected values, ids, slice names and error messages are written by
whoever wrote the cases or by the model under test; rendered raw in a PR comment they could
load images (tracking pixels), add links, ping people or teams, break out of a table or a code
fence, or hide the verdict inside an HTML comment. Every helper here returns text that renders
as exactly the characters it was given (minus control characters, plus a visible cut marker),
with nothing clickable, loadable or notifying.

Why each trick:
- ``& < >`` become entities: no HTML tag, comment or entity from the case survives.
- Markdown punctuation gets a backslash: no emphasis, link, image, code span, strikethrough,
  math (``$``), footnote or table pipe can start. GitHub honours ``\\|`` inside table cells.
- ``@name`` and ``#123`` are links GitHub adds *after* rendering markdown, on the final text,
  so backslashes and entities do not stop them; a zero-width joiner after ``@``/``#`` does.
  The same goes for bare URLs (``https://``, ``www.``) and e-mail addresses.
- Control characters (NUL, ESC, ...) and bidirectional overrides (which can make text read
  differently from what it is, "Trojan Source") are replaced by a visible ``�``.
- Long text is cut *before* escaping, so a cut never splits an escape sequence.
"""

from __future__ import annotations

import json
import re
from typing import Any

ZWJ = "\u200d"
REPLACEMENT = "\ufffd"
CUT_MARK = "…[cut {n:,} chars]"

# C0 controls except tab and newline, DEL, C1 controls; bidi embeddings, overrides and isolates;
# line/paragraph separators (they break lines in some renderers), the BOM, and lone surrogates
# (JSON allows "\ud800"; it cannot even be written out as UTF-8).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff\ud800-\udfff]")
_NEWLINES = re.compile(r"\r\n|\r|\n")
# ASCII punctuation that can open inline markdown anywhere in a line (CommonMark lets any of it be
# backslash-escaped). "(" is left alone: it only starts a link target right after "]", which is escaped.
_MD_PUNCT = re.compile(r"([\\`*_\[\]#!|~$])")
# What opens a block only at the start of a line: list markers "-", "+", "1." and "1)", and "="
# (a line of "=" under a paragraph turns that paragraph into a heading).
_BLOCK_MARK = re.compile(r"^([-+=])")
_ORDERED_MARK = re.compile(r"^(\d{1,9})([.)])(?=[ \t]|$)")
# Things GitHub links after rendering: mentions and team mentions, issue refs (#12, GH-12), bare
# URLs and e-mail addresses (both hang off "@" or a scheme/www). No word boundaries: cmark-gfm
# links "9http://x" and "_www.x" too (found by rendering fuzzed text with cmark-gfm).
# After every "@" (cmark-gfm even links "a@.b" as an e-mail address); after "#" before a word.
_AFTER_AT_OR_HASH = re.compile(r"(@|#(?=\w))")
_GH_REF = re.compile(r"(GH)-(?=\d)", re.IGNORECASE)
_SCHEME = re.compile(r"(https?|ftp|mailto|xmpp|javascript|data|vbscript|file)(?=:)", re.IGNORECASE)
_WWW = re.compile(r"(www)(?=\.)", re.IGNORECASE)
_BACKTICK_RUN = re.compile(r"`+")
_MERMAID_UNSAFE = re.compile(r"[^\w .=/+\-]")


def to_text(value: Any) -> str:
    """Any case value as text: strings as they are, everything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except ValueError:  # circular structures cannot come from JSON, but be total anyway
        return repr(value)


def strip_controls(text: str) -> str:
    """Line endings normalised to ``\\n``; control and bidi-override characters made visible as ``�``."""
    return _CONTROL.sub(REPLACEMENT, _NEWLINES.sub("\n", text))


def clip(text: str, limit: int | None) -> str:
    """At most ``limit`` characters plus a marker saying how many were cut."""
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + CUT_MARK.format(n=len(text) - limit)


def _defuse_links(text: str) -> str:
    text = _AFTER_AT_OR_HASH.sub(lambda m: m.group(1) + ZWJ, text)
    text = _GH_REF.sub(lambda m: m.group(1) + ZWJ + "-", text)
    text = _SCHEME.sub(lambda m: m.group(1) + ZWJ, text)
    return _WWW.sub(lambda m: m.group(1) + ZWJ, text)


def _escape_line(text: str) -> str:
    """One line of inline text, escaped for markdown (no newlines in ``text``)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_PUNCT.sub(r"\\\1", text)
    text = _ORDERED_MARK.sub(r"\1\\\2", _BLOCK_MARK.sub(r"\\\1", text))
    return _defuse_links(text)


def inline(value: Any, limit: int | None = 300) -> str:
    """Case text inside a sentence or list item: one line, newlines shown as ``↵``, cut at ``limit``."""
    text = clip(strip_controls(to_text(value)), limit)
    return _escape_line(text.replace("\n", " ↵ ").replace("\t", " "))


def cell(value: Any, limit: int | None = 120) -> str:
    """Case text inside a table cell: like :func:`inline`, never empty (an empty cell is shown as ``–``)
    and cut shorter, since a table row should stay one screen line."""
    escaped = inline(value, limit)
    return escaped if escaped.strip() else "–"


def html_text(value: Any, limit: int | None = 120) -> str:
    """Case text inside our own HTML (``<summary>``): entities only, since markdown is not parsed
    there, plus the mention/link defusing that GitHub applies after rendering."""
    text = _defuse_links(clip(strip_controls(to_text(value)), limit).replace("\n", " ↵ "))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    # Markdown characters as numeric entities too: inert in HTML, and still inert if a template
    # puts this text where markdown is parsed.
    return _MD_PUNCT.sub(lambda m: f"&#{ord(m.group())};", text)


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text`` (at least three), so no line of
    the text can close it. Tildes inside cannot close a backtick fence at all."""
    longest = max((len(m.group()) for m in _BACKTICK_RUN.finditer(text)), default=0)
    return "`" * max(3, longest + 1)


def code_block(value: Any, *, limit: int | None = 2000, line_limit: int = 400, max_lines: int = 40) -> str:
    """Case text as a fenced code block (no trailing newline). Inside a fence nothing renders, so
    only the fence length, control characters and size need care: every line is cut at
    ``line_limit``, the block at ``max_lines`` lines and ``limit`` characters."""
    text = strip_controls(to_text(value)).replace("\t", "    ")
    lines = text.split("\n")
    cut_lines = len(lines) - max_lines
    lines = [clip(line, line_limit) for line in lines[:max_lines]]
    if cut_lines > 0:
        lines.append(f"…[cut {cut_lines:,} more lines]")
    body = clip("\n".join(lines), limit)
    fence = fence_for(body)
    return f"{fence}text\n{body}\n{fence}"


def mermaid_label(value: Any, limit: int = 30) -> str:
    """A label safe inside a double-quoted mermaid string: letters, digits, space and ``.=/+-_``
    only (quotes, brackets, ``%%`` directives, semicolons and backticks all become ``_``)."""
    text = strip_controls(to_text(value)).replace("\n", " ")
    text = _MERMAID_UNSAFE.sub("_", text)
    return text[:limit] if len(text) <= limit else text[: limit - 1] + "…"


def workflow_data(value: Any) -> str:
    """The message part of a GitHub workflow command (``::error ...::MESSAGE``)."""
    return to_text(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(value: Any) -> str:
    """A property value of a workflow command (``title=VALUE``): data escaping plus ``:`` and ``,``."""
    return workflow_data(value).replace(":", "%3A").replace(",", "%2C")


# A line the Actions runner reads as a workflow command: "::name ...::" after any Unicode
# whitespace (.NET TrimStart), lines ending at \r or \n; the older "##[name]" anywhere in a line.
# A zero-width space (not whitespace to .NET) keeps the text and stops the command.
_COMMAND_START = re.compile(r"(?:^|(?<=\r))(\s*)::", re.MULTILINE)
ZWSP = "\u200b"


def log_line(text: str) -> str:
    """``text`` for the job log: no line of it can start a workflow command (``::add-mask::``,
    ``::stop-commands::``, ``::warning ...``), whatever wrote it."""
    return _COMMAND_START.sub(lambda m: m.group(1) + ZWSP + "::", text).replace("##[", "##" + ZWSP + "[")


# What a terminal acts on: the C0 controls but tab, newline and carriage return (a progress line
# is redrawn with \r), DEL, and the C1 controls (U+009B is a CSI by itself on some terminals).
_TERMINAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` for a terminal or the job log: escape sequences and other controls shown as
    ``\\x1b``-style text, so a model's output or a case's field cannot move the cursor, erase a
    line, retitle the window or hide what follows it."""
    return _TERMINAL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def log_value(value: Any, limit: int | None = 300) -> str:
    """An untrusted value (a slice name, a field of a stored report, a message quoting a user's
    file) inside one log line: line breaks shown as ``↵`` so it cannot start a line of its own,
    control characters made visible, cut at ``limit``."""
    text = clip(strip_controls(to_text(value)), limit)
    return log_line(text.replace("\n", " ↵ "))
