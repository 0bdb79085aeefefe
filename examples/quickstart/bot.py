"""The quickstart's candidate: a tiny offline "model" that answers GAIA-style (``FINAL ANSWER: ...``).

It solves the four kinds of question in cases.jsonl by rule, and gets some deterministically
wrong, as a real model would: about 3% without the FINAL ANSWER line, about 9% with a wrong
answer, and some that correct themselves (only the last FINAL ANSWER counts). Which cases go
wrong depends only on a hash of the question, so every run gives the same outputs.

``QUICKSTART_REGRESS=ko`` simulates a change that broke Korean handling: about 40% of the Korean
questions are answered wrongly in addition; every other answer stays exactly the same."""

from __future__ import annotations

import hashlib
import os
import re

_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_ARITHMETIC = re.compile(r"(\d+)\s*([+\-×])\s*(\d+)")
_PRICE = re.compile(r"\$([\d,]+)")
_PERCENT = re.compile(r"(\d+)%")
_QUOTED = re.compile(r"'([^']+)'")


def _unit(text: str, salt: str) -> float:
    """A number in [0, 1) fixed by the text: the bot's only source of 'randomness'."""
    digest = hashlib.sha256(f"{salt}:{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _solve(question: str) -> tuple[str, str, str]:
    """(working, right answer, a plausible wrong answer)."""
    if match := _PRICE.search(question):
        price = int(match.group(1).replace(",", ""))
        pct = int(_PERCENT.search(question).group(1))
        sale = price * (100 - pct) // 100
        return f"${price:,} minus {pct}% is ${sale:,}.", f"${sale:,}", f"${price:,}"
    if ":" in question:
        numbers = [int(n) for n in re.findall(r"\d+", question.rsplit(":", 1)[1])]
        ordered = sorted(numbers)
        return f"Sorted: {ordered}.", ", ".join(map(str, ordered)), ", ".join(map(str, reversed(ordered)))
    if match := _ARITHMETIC.search(question):
        a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
        value = a + b if op == "+" else a - b if op == "-" else a * b
        return f"{a} {op} {b} = {value}.", str(value), str(value + 1)
    if match := _QUOTED.search(question):
        word = match.group(1)
        return f"Reading '{word}' from the end.", word[::-1], word
    return "I do not understand the question.", "unknown", "unknown"


def answer(question: str) -> str:
    working, right, wrong = _solve(question)
    regress = os.environ.get("QUICKSTART_REGRESS", "")
    if regress not in ("", "ko"):
        raise ValueError(f"QUICKSTART_REGRESS={regress!r}: only 'ko' is supported")
    if regress == "ko" and _HANGUL.search(question) and _unit(question, "regress-ko") < 0.40:
        return f"{working} FINAL ANSWER: {wrong}"
    u = _unit(question, "baseline")
    if u < 0.03:
        return f"{working} The answer is {right}."
    if u < 0.12:
        return f"{working} FINAL ANSWER: {wrong}"
    if u < 0.18:
        return f"FINAL ANSWER: {wrong}\nWait, let me check that again. {working}\nFINAL ANSWER: {right}"
    return f"{working}\nFINAL ANSWER: {right}"
