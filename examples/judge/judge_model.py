"""The scripted judge model: it reads the prompt evalgate's judge sends (docs/spec.md#judge) and passes an answer
that names the reference city anywhere — lenient: people fail an answer that hedges between two
cities. It is also noisy: one verdict in eight (drawn from the answer and how often it was asked)
comes out the other way, as a sampled judge's would, so ``repeats: 3`` has something to measure."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from typing import Any

FLIP = 1 / 8
_asked: Counter[str] = Counter()
_lock = threading.Lock()


def respond(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    nonce = re.search(r'\{"nonce": "(\w+)"', prompt).group(1)  # type: ignore[union-attr]
    block = dict(re.findall(rf"<<<{nonce} BEGIN ([A-Z ]+)>>>\n(.*?)\n<<<{nonce} END \1>>>", prompt, re.DOTALL))
    output, reference = block["OUTPUT"], block["REFERENCE ANSWER"]
    with _lock:
        n = _asked[output]
        _asked[output] += 1
    draw = int.from_bytes(hashlib.sha256(f"{output}:{n}".encode()).digest()[:8], "big") / 2**64
    ok = (reference.lower() in output.lower()) != (draw < FLIP)
    verdict = {"verdict": "pass" if ok else "fail", "score": float(ok), "reasoning": f"names {reference}: {ok}"}
    return json.dumps({"nonce": nonce, **verdict})
