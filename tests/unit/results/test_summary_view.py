"""What ``evalgate run`` keeps of each case for its summary (``SummaryCase``) summarises exactly as
the cases themselves: every field the summary reads, on attempts of every kind."""

from __future__ import annotations

import random
from typing import Any

from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.results.spend import JudgeUsage
from evals.results.summary import SummaryCase, SummaryView, summarize


def attempt(rng: random.Random, case_id: str) -> Attempt:
    fields: dict[str, Any] = {"latency_ms": rng.choice([None, rng.uniform(1, 900)])}
    kind = rng.choice(["pass", "fail", "infra", "target", "timeout", "scorer"])
    if kind in ("pass", "fail"):
        fields |= {"passed": kind == "pass", "score": rng.choice([None, rng.random()])}
    else:  # messages naming their case, as runners write them: grouped without the id
        fields["error"] = {"kind": kind, "message": f"{kind} failure on {case_id}: HTTP {rng.choice([429, 500])}"}
    if rng.random() < 0.6:
        fields |= {"tokens_in": rng.randint(0, 900), "tokens_out": rng.choice([None, rng.randint(0, 90)])}
    if rng.random() < 0.5:
        fields["cost_usd"] = rng.uniform(0, 0.01)
    fields["cached"] = rng.random() < 0.3
    metadata: dict[str, Any] = {"finish_reason": "stop", "big": "x" * 50}
    if rng.random() < 0.3:
        metadata["judge"] = {"cached": rng.random() < 0.5, "reasoning": "because"}
    if rng.random() < 0.3:
        metadata["tier"] = rng.choice(["batch", "sync"])
    if rng.random() < 0.3:
        metadata["tokens_cache_read"] = rng.randint(0, 100)
    fields["metadata"] = metadata
    if rng.random() < 0.3:
        usage = {"calls": rng.randint(1, 3), "tokens_in": rng.choice([None, 50]), "tokens_out": 5}
        usage |= {"tokens_cache_read": rng.choice([None, 7]), "cost_usd": rng.choice([None, 0.002])}
        fields["judge_usage"] = JudgeUsage(**usage)
    fields["output"] = "an answer"
    return Attempt(**fields)


def test_what_the_run_keeps_summarises_as_its_cases() -> None:
    rng = random.Random(7)
    cases = [
        CaseResult(
            id=f"c{i}",
            slices=rng.choice([{}, {"lang": rng.choice(["ko", "en"])}, {"lang": "ja", "topic": "t1"}]),
            attempts=[attempt(rng, f"c{i}") for _ in range(rng.randint(0, 3))],
        )
        for i in range(400)
    ]
    run = RunInfo(suite="s", status="success", total_cases=400, completed_cases=400)
    kept = SummaryView(run, [SummaryCase(c) for c in cases])
    whole = Results(run=run, cases=cases)
    for keys in (None, ["lang"], ["topic", "lang"]):
        assert summarize(kept, keys) == summarize(whole, keys)
    summary = summarize(whole)  # the draw reaches every branch the summary has
    assert summary.cache_hits and summary.judge_cache_hits and summary.spend.batched and summary.spend.judged
    assert summary.spend.tokens_cache_read and len(summary.errors_by_kind) == 4
    assert all(m.count > 1 and "<case id>" not in m.message for m in summary.error_messages)  # grouped
