"""A small checker for "nothing live" in rendered GitHub markdown, used by the escaping tests.

It follows CommonMark's fenced-code rules to know which lines are code, then looks at every other
line for constructs GitHub would render live: raw HTML other than the report's own few tags,
link/image syntax, autolinks, mentions, issue references, entities, control characters, table
rows with a different number of cells than their header. Text segments that hold ``token`` (the
marker planted in the case data) must also have no unescaped emphasis, code-span, strikethrough,
math or bracket character.
"""

from __future__ import annotations

import re

ALLOWED_TAGS = re.compile(r"</?(details|summary|sub)>")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff\ud800-\udfff]")
_SPECIALS = "`*_~$[]"


def lines_by_kind(md: str) -> list[tuple[str, str]]:
    """(kind, line) with kind "text", "fence" or "code". Asserts every fence is closed."""
    out = []
    fence: str | None = None
    for line in md.split("\n"):
        if fence is not None:
            m = re.match(r"^ {0,3}(`{3,}|~{3,})\s*$", line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
                out.append(("fence", line))
            else:
                out.append(("code", line))
            continue
        m = _FENCE_OPEN.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = m.group(1)
            out.append(("fence", line))
        else:
            out.append(("text", line))
    assert fence is None, "a code fence is never closed"
    return out


def is_escaped(text: str, index: int) -> bool:
    backslashes = 0
    i = index - 1
    while i >= 0 and text[i] == "\\":
        backslashes += 1
        i -= 1
    return backslashes % 2 == 1


def unescaped(text: str, chars: str) -> list[str]:
    return [ch for i, ch in enumerate(text) if ch in chars and not is_escaped(text, i)]


def split_cells(row: str) -> list[str]:
    cells, start = [], 0
    for i, ch in enumerate(row):
        if ch == "|" and not is_escaped(row, i):
            cells.append(row[start:i])
            start = i + 1
    cells.append(row[start:])
    return cells


def problems(md: str, token: str | None = None) -> list[str]:
    """Everything live in ``md``; empty when the markdown is inert."""
    found = []
    if _CONTROL.search(md):
        found.append(f"control character {_CONTROL.search(md).group()!r}")
    table_width: int | None = None
    for kind, line in lines_by_kind(md):
        if kind != "text":
            table_width = None
            continue
        html_block = line.startswith(("<details>", "</details>"))
        for m in re.finditer(r"<[A-Za-z/!?]", line):
            if not ALLOWED_TAGS.match(line, m.start()):
                found.append(f"raw HTML: {line[m.start() : m.start() + 40]!r}")
        for pattern, what in (
            (r"(?<!\\)\]\(", "link or image"),
            (r"(?<!\\)\]\[", "reference link"),
            (r"^ {0,3}\[[^\]]*\]:", "link reference definition"),
            (r"(?i)(https?|ftp)://|www\.", "bare URL"),
            (r"@(?!\u200d)", "mention or e-mail"),
            (r"(?<![\w&])#\d|\bGH-\d", "issue reference"),
            (r"&(?!(amp|lt|gt|quot|#(33|35|36|40|41|42|91|92|93|95|96|124|126));)#?\w+;", "entity"),
        ):
            if what == "link or image" and html_block:
                pattern = r"\]\("
            if re.search(pattern, line):
                found.append(f"{what}: {line[:120]!r}")
        if line.startswith("|"):
            width = len(split_cells(line))
            if table_width is None:
                table_width = width
            elif width != table_width:
                found.append(f"table row with {width - 2} cells, header has {table_width - 2}: {line[:120]!r}")
        else:
            table_width = None
        if token and token in line and not html_block:
            segments = split_cells(line) if line.startswith("|") else [_strip_wrappers(line)]
            for seg in segments:
                if token in seg and unescaped(seg, _SPECIALS):
                    found.append(f"unescaped {unescaped(seg, _SPECIALS)} in case text: {seg[:120]!r}")
    return found


_OWN_MARKUP = re.compile(
    # bold spans the report opens and closes itself (an escaped \*\* from case text is not one),
    # and the interval it prints: [−35.0 pp, −20.0 pp]
    r"(?<!\\)\*\*|\[[−+±]?[\d.,%$]+(?: pp| ms)?, [−+±]?[\d.,%$]+(?: pp| ms)?\]"
)


def _strip_wrappers(line: str) -> str:
    """The report's own markup around case text on one line (bold, intervals, list and quote
    markers)."""
    line = re.sub(r"^(> )?(- )?", "", line)
    return _OWN_MARKUP.sub("", line)
