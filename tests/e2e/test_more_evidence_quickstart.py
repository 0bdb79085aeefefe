"""gate.more_evidence on the bundled quickstart (what more evidence must show on a real suite): its cases, config and
bot, with ``language=es`` cut to 25 cases (the quickstart's smallest slices hold 40) and that
slice made worse. Without more evidence the gate is ``inconclusive``; with it, on the same
candidate run: with the quickstart's python target in a git repository (the baseline side runs in
a worktree of the baseline's commit), a deterministic bot, one batch shows the answers repeat and
more evidence stops, ``inconclusive``; with an
``openai`` target against the local OpenAI-compatible server outside any git repository (the
baseline side is rebuilt from the openai target the baseline's results recorded), where answers
are fresh draws per request so a batch is new evidence, ``fail`` naming ``language=es``, and where
a cost budget stops batches."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakes.openai_server import OpenAIServer, Sampled, unit
from fakes.paths import ROOT
from fakes.suites import git

QUICKSTART = ROOT / "examples" / "quickstart"
ES_CASES = 25


def _spanish(question: str) -> bool:
    return "¿" in question or question.startswith(("Ordena", "Escribe"))


def _copy_quickstart(folder: Path, **config_changes) -> Path:
    """The quickstart's files in ``folder`` (its config without its own baseline store: the test's
    is given on the command line), with the first 25 es cases kept of 40."""
    folder.mkdir(parents=True)
    shutil.copy(QUICKSTART / "bot.py", folder / "bot.py")
    kept, es = [], 0
    for line in (QUICKSTART / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        if json.loads(line)["tags"]["language"] == "es":
            es += 1
            if es > ES_CASES:
                continue
        kept.append(line + "\n")
    (folder / "cases.jsonl").write_text("".join(kept), encoding="utf-8")
    _configure(folder, **config_changes)
    return folder


def _configure(folder: Path, **changes) -> None:
    config = yaml.safe_load((QUICKSTART / "evalgate.yml").read_text(encoding="utf-8"))
    config.pop("baseline")
    config.update(changes)
    (folder / "evalgate.yml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")


def _gate(folder: Path, store: Path, *extra: str) -> tuple[int, dict, str]:
    done = subprocess.run(
        [sys.executable, "-m", "evals", "gate", "--config", "evalgate.yml", "--store", "local",
         "--baseline-dir", str(store), *extra],
        cwd=folder, capture_output=True, text=True, timeout=600, env={**os.environ, "EVALGATE_HISTORY": "off"},
    )  # fmt: skip
    out = Path(extra[extra.index("--out-dir") + 1]) if "--out-dir" in extra else Path(".evalgate/out")
    path = folder / out / "comparison.json"
    return done.returncode, json.loads(path.read_text()) if path.exists() else {}, done.stderr


def _unit_named(comparison: dict, name: str) -> dict:
    return next(u for u in comparison["units"] if u["unit"] == name and u["metric"] == "pass_rate")


# The candidate's change, appended to the quickstart's bot: a new version that errs on other
# questions than the old one (noise both ways, as a real model change has) and whose Spanish
# questions lost part of their handling.
BROKEN_SPANISH = """

_answer_before = answer
_unit_before = _unit


def _unit(text: str, salt: str) -> float:
    return _unit_before(text, "v2" if salt == "baseline" else salt)


def answer(question: str) -> str:
    if ("¿" in question or question.startswith(("Ordena", "Escribe"))) and _unit(question, "regress-es") < 0.30:
        working, _, wrong = _solve(question)
        return f"{working}\\nFINAL ANSWER: {wrong}"
    return _answer_before(question)
"""


# The Spanish regression made stochastic, as a sampled model's (and without the noise elsewhere,
# whose flips both ways a 25-case slice cannot see past): a Spanish answer is wrong at random,
# attempt by attempt (the k-th answer to a question draws from a hash of it and k, k counted in
# files under a folder outside the repository: ``flaky_spanish(folder)``).
FLAKY_SPANISH = """

import pathlib as _pathlib

_answer_before = answer
_CALLS = _pathlib.Path(CALLS_FOLDER)


def answer(question: str) -> str:
    if "¿" in question or question.startswith(("Ordena", "Escribe")):
        counter = _CALLS / hashlib.sha256(question.encode()).hexdigest()
        with counter.open("a") as fh:
            fh.write("x")
        if _unit(question, f"regress-es:{counter.stat().st_size}") < ERROR_RATE:
            working, _, wrong = _solve(question)
            return f"{working}\\nFINAL ANSWER: {wrong}"
    return _answer_before(question)
"""


def flaky_spanish(calls: Path, rate: float = 0.35) -> str:
    calls.mkdir(parents=True, exist_ok=True)
    return FLAKY_SPANISH.replace("CALLS_FOLDER", repr(str(calls))).replace("ERROR_RATE", repr(rate))


def test_quickstart_python_target_answers_the_same_so_more_evidence_stops_after_one_batch(tmp_path):
    """The quickstart's bot is deterministic: a batch's answers, on both sides, are the first
    look's again. Taking each as a new observation failed this gate after 4 batches of the same
    700 answers (the e-value 2.3 → 3,290); the first look's question — do these cases stand for
    worse inputs? — has not changed, so the gate stays inconclusive and says why, after one batch."""
    repo, store = _copy_quickstart(tmp_path / "quickstart"), tmp_path / "store"
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "baseline")
    _, seeded, err = _gate(repo, store, "--seed")
    assert seeded["verdict"] == "no-baseline", err
    with (repo / "bot.py").open("a", encoding="utf-8") as fh:
        fh.write(BROKEN_SPANISH)
    git(repo, "commit", "-qam", "candidate: breaks Spanish")

    code, first, err = _gate(repo, store)
    assert (code, first["verdict"]) == (0, "inconclusive"), err
    es = _unit_named(first, "language=es")
    assert es["n"] == ES_CASES and es["verdict"] == "inconclusive" and es["delta"] < -0.2

    _configure(repo, gate={"more_evidence": {"max_batches": 10}})
    code, c, err = _gate(repo, store, "--results", ".evalgate/out/results.json")
    assert (code, c["verdict"]) == (0, "inconclusive"), err
    me = c["more_evidence"]
    sentence = "the target answered the same: more attempts cannot help; more cases can"
    assert me["ended"] == "inconclusive" and me["summary"] == f"stopped after batch 1: {sentence}"
    assert me["baseline_side"].startswith("re-run at the baseline's commit")
    assert len(me["looks"]) == 2 and me["looks"][1]["repeated"] and "language=es" in me["looks"][1]["units"]
    assert not any(v["rejected"] for v in me["looks"][1]["values"])
    assert sentence in err
    report = (repo / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
    assert sentence in report and "of re-runs" not in report.split("\n\n", 1)[0]
    # Both sides re-ran every case of the slices that looked worse, and answered as before: the
    # baseline side ran the baseline commit's bot (the unchanged quickstart's answers).
    folder = repo / ".evalgate" / "out" / "more-evidence"
    base = json.loads((folder / "baseline-1.json").read_text())
    assert len(base["cases"]) == me["looks"][1]["cases"] >= ES_CASES
    spec = importlib.util.spec_from_file_location("quickstart_bot", QUICKSTART / "bot.py")
    bot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bot)
    assert all(a["output"] == bot.answer(case["input"]) for case in base["cases"] for a in case["attempts"])
    first_look = {case["id"]: case["attempts"][0]["output"] for case in first_results(repo)["cases"]}
    cand = json.loads((folder / "candidate-1.json").read_text())
    assert all(a["output"] == first_look[case["id"]] for case in cand["cases"] for a in case["attempts"])


def first_results(repo: Path) -> dict:
    """The candidate's results file: the first look's attempts (and the batch's, marked)."""
    results = json.loads((repo / ".evalgate" / "out" / "results.json").read_text(encoding="utf-8"))
    for case in results["cases"]:
        case["attempts"] = [a for a in case["attempts"] if not a.get("batch")]
    return results


# --------------------------------------------------------------------------- the openai target

PROMPT = "Answer the question. Show your working, then end with a line `FINAL ANSWER: <answer>`.\n"


def _quickstart_model() -> Sampled:
    """The local server as a model behind the quickstart's questions: version v1 answers each
    question right with its own probability (0.80–0.99, a hash of the question); v2 (the
    candidate) the same, except Spanish questions, 0.35 less likely right."""
    spec = importlib.util.spec_from_file_location("quickstart_bot_model", QUICKSTART / "bot.py")
    bot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bot)

    def answers(question: str) -> tuple[str, str]:
        working, right, wrong = bot._solve(question)
        return f"{working}\nFINAL ANSWER: {right}", f"{working}\nFINAL ANSWER: {wrong}"

    def p_right(model: str, question: str) -> float:
        p = 0.80 + 0.19 * unit(f"p:{question}")
        return max(0.0, p - 0.35) if model == "v2" and _spanish(question) else p

    # The draws are fixed by the seed. A 25-case slice's first look is a coin toss by design: with
    # seeds 1, 3, 4 and 5 it already fails (es, or by chance another slice); seed 2 is a draw where
    # it is inconclusive, the case more evidence is for. What follows from there is not chosen.
    return Sampled(answers, p_right, seed=2)


def _openai(server: OpenAIServer, version: str) -> dict:
    return {
        "openai": {
            "base_url": server.url,
            "model": f"quickstart:{version}",
            "api_key_env": None,
            "temperature": 0.7,
            "system_prompt": "prompt.md",
            "price_in_per_mtok": 2.0,
            "price_out_per_mtok": 8.0,
        }
    }


@pytest.fixture
def quickstart_openai(tmp_path):
    """The quickstart with an openai target on the local server, outside git: a baseline of v1
    seeded, the config then moved to v2."""
    model = _quickstart_model()
    with OpenAIServer(responder=model) as server:
        folder, store = _copy_quickstart(tmp_path / "quickstart", target=_openai(server, "v1")), tmp_path / "store"
        (folder / "prompt.md").write_text(PROMPT, encoding="utf-8")
        os.remove(folder / "bot.py")  # the model is the server: no code of the suite's own
        _, seeded, err = _gate(folder, store, "--seed")
        assert seeded["verdict"] == "no-baseline", err
        recorded = json.loads((folder / ".evalgate" / "out" / "results.json").read_text())["run"]["target"]
        assert recorded["system_prompt"] == PROMPT and recorded["model"] == "quickstart:v1"
        _configure(folder, target=_openai(server, "v2"))
        yield folder, store, server, model


def test_quickstart_openai_target_outside_git_rebuilds_the_baseline_from_its_record(quickstart_openai):
    folder, store, server, model = quickstart_openai
    code, first, err = _gate(folder, store)
    assert (code, first["verdict"]) == (0, "inconclusive"), err
    es = _unit_named(first, "language=es")
    assert es["n"] == ES_CASES and es["verdict"] == "inconclusive" and es["delta"] < -0.2
    asked_v1 = sum(n for (m, _), n in model.asked.items() if m == "v1")

    _configure(folder, target=_openai(server, "v2"), gate={"more_evidence": {"max_batches": 10}})
    code, c, err = _gate(folder, store, "--results", ".evalgate/out/results.json")
    assert (code, c["verdict"]) == (1, "fail"), err
    assert "language=es" in c["reason"] and _unit_named(c, "language=es")["verdict"] == "regressed"
    me = c["more_evidence"]
    assert "not in a git checkout" not in me["baseline_side"]
    assert me["baseline_side"] == (f"re-run from the baseline's recorded openai target (quickstart:v1 at {server.url})")
    batches, rerun = len(me["looks"]) - 1, sum(look["cases"] for look in me["looks"])
    assert batches >= 1 and me["attempts"] == 2 * rerun
    assert all("language=es" in look["units"] for look in me["looks"][1:])
    # The baseline side asked the server as v1 (its system prompt included) once per case a batch
    # re-ran: every es question once more per batch.
    es_questions = {
        json.loads(line)["input"]
        for line in (folder / "cases.jsonl").read_text(encoding="utf-8").splitlines()
        if json.loads(line)["tags"]["language"] == "es"
    }
    assert all(model.asked[("v1", q)] == 1 + batches for q in es_questions)
    assert sum(n for (m, _), n in model.asked.items() if m == "v1") == asked_v1 + rerun
    v1_requests = [r for r in server.requests if r["model"] == "v1"]
    assert all(r["messages"][0] == {"role": "system", "content": PROMPT} for r in v1_requests)
    assert all(r["temperature"] == 0.7 for r in v1_requests)
    # Cost of both sides is counted and said.
    costs = []
    folder_me = folder / ".evalgate" / "out" / "more-evidence"
    for path in [*folder_me.glob("candidate-*.json"), *folder_me.glob("baseline-*.json")]:
        costs += [a["cost_usd"] for case in json.loads(path.read_text())["cases"] for a in case["attempts"]]
    assert len(costs) == 2 * rerun and me["cost_usd"] == pytest.approx(sum(costs))


def test_quickstart_openai_batches_stop_at_max_cost_usd(quickstart_openai):
    folder, store, server, _ = quickstart_openai
    code, first, err = _gate(folder, store)
    assert first["verdict"] == "inconclusive", err
    # A batch of both sides costs about $0.03 here (the slices that look worse, ~130 cases): the
    # budget is spent after one, before the second batch that fails the gate without a budget.
    budget = 0.02
    spec = {"max_batches": 10, "max_cost_usd": budget}
    _configure(folder, target=_openai(server, "v2"), gate={"more_evidence": spec})
    code, c, err = _gate(folder, store, "--results", ".evalgate/out/results.json")
    me = c["more_evidence"]
    looks = me["looks"]
    per_batch = [look["cost_usd"] for look in looks[1:]]
    assert (code, c["verdict"]) == (0, "inconclusive"), err
    assert len(per_batch) == 1 and budget <= per_batch[0]
    spent = f"${sum(per_batch):.4g}"
    assert me["summary"] == f"still inconclusive after 1 batch (max_cost_usd {budget:g} reached (spent {spent}))"
    report = (folder / ".evalgate" / "out" / "report.md").read_text(encoding="utf-8")
    assert f"max_cost_usd {budget:g} reached (spent {spent})" in report.replace("\\", "")  # markdown escapes
