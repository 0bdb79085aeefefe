"""The bundled quickstart suite: it loads, its slices are large enough, and the regressed bot
differs from the normal one on Korean cases only."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter

import pytest
from fakes.paths import ROOT

from evals.run.scorers.builtin import build_scorers, score_attempt
from evals.suite.cases import load_cases
from evals.suite.loading import load_config


@pytest.fixture(scope="module")
def quickstart():
    root = ROOT / "examples" / "quickstart"
    config = load_config(root / "evalgate.yml")
    spec = importlib.util.spec_from_file_location("quickstart_bot", root / "bot.py")
    bot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bot)
    return root, config, load_cases(config), bot


def test_cases_load_with_slices(quickstart):
    _, config, cases, _ = quickstart
    assert len(cases) >= 200
    assert config.slices == ["language", "category"]
    languages = Counter(c.tags["language"] for c in cases)
    assert set(languages) >= {"ko", "en"} and len(languages) >= 4
    assert languages["ko"] >= 60
    assert len({c.tags["category"] for c in cases}) >= 2
    assert config.baseline.store == "local" and config.target.python == "bot:answer"


def test_generator_reproduces_the_cases_file(quickstart, tmp_path):
    root, _, _, _ = quickstart
    script = (root / "make_cases.py").read_text(encoding="utf-8")
    (tmp_path / "make_cases.py").write_text(script, encoding="utf-8")
    subprocess.run([sys.executable, str(tmp_path / "make_cases.py")], check=True, capture_output=True)
    assert (tmp_path / "cases.jsonl").read_bytes() == (root / "cases.jsonl").read_bytes()


def test_regressed_bot_breaks_only_korean(quickstart, monkeypatch):
    _, config, cases, bot = quickstart
    scorers = build_scorers(config.scorers, config.root)

    def outcomes() -> dict[str, tuple[str, bool | None]]:
        out = {}
        for case in cases:
            answer = bot.answer(case.input)
            out[case.id] = (answer, score_attempt(scorers, answer, case).passed)
        return out

    monkeypatch.delenv("QUICKSTART_REGRESS", raising=False)
    normal = outcomes()
    monkeypatch.setenv("QUICKSTART_REGRESS", "ko")
    regressed = outcomes()

    changed = {cid for cid in normal if normal[cid][0] != regressed[cid][0]}
    languages = {c.id: c.tags["language"] for c in cases}
    assert changed and {languages[cid] for cid in changed} == {"ko"}

    def rate(results, lang=None):
        picked = [p for cid, (_, p) in results.items() if lang is None or languages[cid] == lang]
        return sum(bool(p) for p in picked) / len(picked)

    assert 0.80 <= rate(normal) <= 0.92  # realistic, with failures to compare
    assert rate(normal, "ko") - rate(regressed, "ko") >= 0.30
    for lang in ("en", "ja", "es"):
        assert rate(normal, lang) == rate(regressed, lang)
    # Some baseline answers miss the marker, some correct themselves: both GAIA rules are exercised.
    answers = [a for a, _ in normal.values()]
    assert any("FINAL ANSWER" not in a for a in answers) and any(a.count("FINAL ANSWER") == 2 for a in answers)


def test_bot_is_deterministic_and_rejects_unknown_regressions(quickstart, monkeypatch):
    _, _, cases, bot = quickstart
    first = [bot.answer(c.input) for c in cases[:50]]
    assert first == [bot.answer(c.input) for c in cases[:50]]
    monkeypatch.setenv("QUICKSTART_REGRESS", "fr")
    with pytest.raises(ValueError, match="only 'ko'"):
        bot.answer(cases[0].input)


def test_cases_file_is_plain_jsonl(quickstart):
    root, _, cases, _ = quickstart
    lines = (root / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(cases) and all(json.loads(line)["id"] for line in lines)
