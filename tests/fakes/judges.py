"""Judge models for tests/fakes/openai_server.py, chosen by the model a judge asks for: ``lenient``
passes every output, ``strict`` only an output that holds the reference answer. Each reads the
judge's prompt as the judge scorer frames it (evals/run/scorers/templates/judge_framed.md.j2) and
replies with that call's nonce, so its verdict is taken."""

from __future__ import annotations

import json
import re
from typing import Any

_NONCE = re.compile(r'The nonce is (\w+): reply \{"nonce"')


def _block(prompt: str, nonce: str, name: str) -> str:
    found = re.search(rf"<<<{nonce} BEGIN {name}>>>\n(.*?)\n<<<{nonce} END {name}>>>", prompt, re.DOTALL)
    return found.group(1) if found else ""


def lenient_or_strict(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    found = _NONCE.search(prompt)
    assert found is not None, "not a judge's prompt"
    nonce = found.group(1)
    reference, output = _block(prompt, nonce, "REFERENCE ANSWER"), _block(prompt, nonce, "OUTPUT")
    ok = body["model"] == "lenient" or (reference != "" and reference in output)
    verdict = {"nonce": nonce, "verdict": "pass" if ok else "fail", "score": int(ok), "reasoning": body["model"]}
    return json.dumps(verdict)
