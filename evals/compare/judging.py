"""The judge's noise and its agreement with people (docs/spec.md#judge-noise, docs/spec.md#human-labels).

- **Self-agreement**: a judge with ``repeats: k`` keeps its k verdicts of each output
  (``metadata.judge.repeats``). Per run: the share of outputs whose verdicts all agree, the mean
  share of an output's pairs of verdicts that agree (``1 −`` the flip rate of evals.compare.flaky,
  read over the k verdicts instead of the attempts), and Fleiss' κ (Fleiss 1971, "Measuring nominal
  scale agreement among many raters": the k verdicts as k raters of each output; with P̄ the mean
  pair agreement and p the share of passing verdicts, κ = (P̄ − P_e)/(1 − P_e), P_e = p² + (1 − p)²;
  None when every verdict is the same, as Cohen's κ in evals.compare.agreement).
- **People**: a case's ``metadata.human_verdict`` (true/false, or "pass"/"fail") against the
  judge's own verdict (``metadata.judge.passed``; with several attempts their majority, a tie
  passing), by evals.compare.agreement. ``metrics.judge_agreement: {min}`` is a floor on that
  share, judged like every floor (evals.compare.floors) on its Wilson interval at 1 − 2α; with
  fewer labelled cases than ``min_cases`` it cannot be judged and the gate cannot pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evals.compare.agreement import agreement
from evals.compare.flaky import attempt_flip_rate
from evals.compare.judge_checks import HumanAgreement, JudgeChecks, SelfAgreement
from evals.compare.model import FloorResult, Verdict
from evals.compare.runs import Run
from evals.compare.stats import norm_ppf
from evals.results.model import CaseResult
from evals.results.summary import wilson
from evals.suite.config import SuiteConfig
from evals.suite.gate import GateSpec
from evals.suite.scoring import JUDGE_AGREEMENT, JudgeAgreementSpec

LISTED = 50  # cases listed by name in the comparison (the counts are whole)
_WORDS = {"pass": True, "true": True, "yes": True, "fail": False, "false": False, "no": False}


def human_verdict(metadata: Mapping[str, Any]) -> bool | None:
    """A case's human verdict: a bool, or one of pass/fail (true/false, yes/no) in any case; else None."""
    value = metadata.get("human_verdict")
    if isinstance(value, bool):
        return value
    return _WORDS.get(value.strip().lower()) if isinstance(value, str) else None


def judge_passed(metadata: Mapping[str, Any]) -> bool | None:
    """The judge's verdict of one attempt (of its repeats together), whatever other scorers said."""
    judge = metadata.get("judge")
    passed = judge.get("passed") if isinstance(judge, dict) else None
    return passed if isinstance(passed, bool) else None


def judge_verdicts(metadata: Mapping[str, Any]) -> list[bool]:
    """The judge's k verdicts of one attempt with ``repeats``; none without."""
    judge = metadata.get("judge")
    repeats = judge.get("repeats") if isinstance(judge, dict) else None
    if not isinstance(repeats, list):
        return []
    return [r["passed"] for r in repeats if isinstance(r, dict) and isinstance(r.get("passed"), bool)]


def judge_flip_rate(case: CaseResult) -> float:
    """How often two of the judge's verdicts of one of this case's outputs disagree (mean over its
    attempts with repeats; 0 without)."""
    counts = [(sum(v), len(v)) for v in (judge_verdicts(a.metadata) for a in case.attempts) if len(v) >= 2]
    if not counts:
        return 0.0
    passed, judged = np.array(counts, dtype=float).T
    return float(attempt_flip_rate(passed, judged).mean())


def _cases(run: Run) -> Iterator[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(id, case metadata, each attempt's metadata) of every case, from a lean run's JSON without
    building its models."""
    judged = getattr(run.cases, "judged", None)
    if judged is None:
        for case in run.cases:
            yield case.id, case.metadata, [a.metadata for a in case.attempts]
        return
    for case in judged:
        yield case["id"], case["metadata"], [a.get("metadata") or {} for a in case["attempts"]]


@dataclass
class _Verdicts:
    """What one pass over a run's cases reads: per output with repeats its passes and verdicts,
    the cases with an output whose verdicts disagree, and (case, people, judge) per labelled case."""

    passed: list[int] = field(default_factory=list)
    judged: list[int] = field(default_factory=list)
    unsure: list[str] = field(default_factory=list)
    pairs: list[tuple[str, bool, bool]] = field(default_factory=list)
    labelled: int = 0


def _read(run: Run) -> _Verdicts:
    found = _Verdicts()
    for case_id, metadata, attempts in _cases(run):
        counts = [(sum(v), len(v)) for v in map(judge_verdicts, attempts) if len(v) >= 2]
        for c, k in counts:
            found.passed.append(c)
            found.judged.append(k)
        if any(0 < c < k for c, k in counts):
            found.unsure.append(case_id)
        human = human_verdict(metadata)
        if human is None:
            continue
        found.labelled += 1
        verdicts = [v for v in map(judge_passed, attempts) if v is not None]
        if verdicts:
            found.pairs.append((case_id, human, 2 * sum(verdicts) >= len(verdicts)))
    return found


def self_agreement(run: Run | _Verdicts) -> SelfAgreement | None:
    """The judge's agreement with itself over the run's outputs; None when no output has repeats."""
    read = run if isinstance(run, _Verdicts) else _read(run)
    if not read.passed:
        return None
    c, k = np.array(read.passed, dtype=float), np.array(read.judged, dtype=float)
    pairs = 1.0 - attempt_flip_rate(c, k)
    p = float(c.sum() / k.sum())
    chance = p * p + (1.0 - p) * (1.0 - p)
    mean_pairs = float(pairs.mean())
    unanimous = int(((c == 0) | (c == k)).sum())
    return SelfAgreement(
        outputs=int(c.size),
        repeats=int(k.max()),
        unanimous=unanimous,
        share=unanimous / c.size,
        pair_agreement=mean_pairs,
        kappa=None if chance >= 1.0 else (mean_pairs - chance) / (1.0 - chance),
        cases=read.unsure[:LISTED],
        n_cases=len(read.unsure),
    )


def human_agreement(run: Run | _Verdicts, spec: JudgeAgreementSpec | None) -> HumanAgreement | None:
    """The judge against the people on the run's labelled cases; None when no case is labelled."""
    read = run if isinstance(run, _Verdicts) else _read(run)
    if not read.labelled:
        return None
    found = agreement(read.pairs)
    return HumanAgreement(
        agreement=found.model_copy(update={"disagreements": found.disagreements[:LISTED]}),
        labelled=read.labelled,
        floor=spec.min if spec else None,
        min_cases=spec.min_cases if spec else None,
    )


def judge_checks(baseline: Run | None, candidate: Run, config: SuiteConfig | None) -> JudgeChecks | None:
    """Both runs' self-agreement and the candidate's agreement with people (one pass over each
    run); None when neither run has either, or the config has no judge (nor a judge_agreement
    floor) to read them for."""
    if not judge_in_play(config):
        return None
    spec = config.judge_agreement if config is not None else None
    cand = _read(candidate)
    checks = JudgeChecks(
        baseline=self_agreement(baseline) if baseline is not None else None,
        candidate=self_agreement(cand),
        humans=human_agreement(cand, spec),
    )
    return checks if checks.baseline or checks.candidate or checks.humans else None


def agreement_floor(checks: JudgeChecks | None, spec: JudgeAgreementSpec, gate: GateSpec) -> FloorResult | str:
    """``metrics.judge_agreement.min`` as a floor (evals.compare.floors' rule on the share's Wilson
    interval), or why it cannot be judged: fewer labelled, judged cases than ``min_cases``."""
    found = checks.humans.agreement if checks is not None and checks.humans is not None else None
    n = found.n if found is not None else 0
    if found is None or found.share is None or n < spec.min_cases:
        return (
            f"metrics.judge_agreement.min {spec.min:g} needs {spec.min_cases} cases with a human verdict the judge "
            f"also graded, and the candidate has {n}: label more cases (metadata.human_verdict) or lower "
            "metrics.judge_agreement.min_cases"
        )
    confidence = 1.0 - 2.0 * gate.alpha
    low, high = wilson(float(found.agreed), n, z=float(norm_ppf(0.5 + confidence / 2.0)))
    return FloorResult(
        unit="overall",
        metric=JUDGE_AGREEMENT,
        bound="min",
        limit=spec.min,
        value=found.share,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        n=n,
        verdict="breached" if high < spec.min else "uncertain" if found.share < spec.min else "met",
    )


def judge_in_play(config: SuiteConfig | None) -> bool:
    """Whether a comparison reads the judge's verdicts (a pass over every case's JSON): a config
    with a judge or a judge_agreement floor, or no config to say there is none."""
    return config is None or config.judge_agreement is not None or any(s.name == "judge" for s in config.scorers)


def with_agreement_floor(
    verdict: Verdict,
    reason: str,
    checks: JudgeChecks | None,
    config: SuiteConfig | None,
    gate: GateSpec,
    warnings: list[str],
    *,
    subset: bool,
) -> tuple[Verdict, str, list[FloorResult]]:
    """The judge_agreement floor as one more floor for evals.compare.floors' rules (a breach fails
    the gate); when it cannot be judged, a gate that would pass is ``inconclusive`` instead, with
    that reason: a floor nobody could check never passes in silence. On a smoke subset, which
    holds only some of the labelled cases, that is a warning: the full run judges the floor."""
    spec = config.judge_agreement if config is not None else None
    if spec is None:
        return verdict, reason, []
    found = agreement_floor(checks, spec, gate)
    if isinstance(found, FloorResult):
        return verdict, reason, [found]
    if verdict == "pass" and not subset:
        return "inconclusive", found, []
    warnings.append(found)
    return verdict, reason, []
