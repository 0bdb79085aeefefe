"""Config errors name the file, the line and the key; the shipped JSON Schemas match the models."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evals.common.errors import InputFileError
from evals.suite import schema
from evals.suite.config import SuiteConfig
from evals.suite.loading import load_config


def config_error(tmp_path: Path, text: str) -> InputFileError:
    path = tmp_path / "evalgate.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        load_config(path)
    return info.value


@pytest.mark.parametrize(
    ("text", "line", "fragments"),
    [
        (
            "suite: s\ncases: c.jsonl\nmetrics:\n  pass_rate:\n    tolerance: 0.02\n    tolerence: 1\n",
            6,
            ["metrics.pass_rate.tolerence", "unknown key (did you mean 'tolerance'?)"],
        ),
        ("suite: s\ncases: c.jsonl\nconcurency: 4\n", 3, ["concurency", "unknown key (did you mean 'concurrency'?)"]),
        (
            "suite: s\ncases: c.jsonl\ntarget: {python: bot:answer, pathh: [.]}\n",
            3,
            ["target.pathh", "did you mean 'path'?"],
        ),
        ("suite: s\ncases: c.jsonl\ntolerance: 0.1\n", 3, ["unknown key (valid keys here: attempts, baseline,"]),
        ("suite: s\ncases: c.jsonl\nmetrics:\n  pass_rate: {tolerance: ten}\n", 4, ["tolerance", '"10%"']),
        ("suite: s\ncases: c.jsonl\nmetrics:\n  pass_rate: {tolerance: -0.1}\n", 4, ["tolerance must be >= 0"]),
        ("suite: s\ncases: c.jsonl\nscorers:\n  - exact\n  - fuzzy\n", 5, ["unknown scorer 'fuzzy'", "final_answer"]),
        (
            "suite: s\ncases: c.jsonl\ntarget:\n  python: bot:answer\n  command: [python, bot.py]\n",
            3,
            ["target", "exactly one of the keys python, command, openai"],
        ),
        ("suite: s\ncases: c.jsonl\ngate: {alpha: 2}\n", 3, ["gate.alpha"]),
        ("suite: s\ncases: c.jsonl\nattempts: 0\n", 3, ["attempts"]),
        # absolute floors (docs/spec.md#absolute-floors): a floor above its ceiling, a rate's floor written in percent
        (
            "suite: s\ncases: c.jsonl\nmetrics:\n  pass_rate: {min: 0.9, max: 0.5}\n",
            4,
            ["metrics.pass_rate", "min 0.9 is above max 0.5"],
        ),
        (
            "suite: s\ncases: c.jsonl\nmetrics:\n  pass_rate:\n    tolerance: 0.02\n    min: 80\n",
            6,
            ["metrics.pass_rate.min is 80", "a rate in [0, 1]", "min: 0.8"],
        ),
        ("suite: s\ncases: c.jsonl\nmetrics:\n  score: {max: -0.1}\n", 4, ["metrics.score.max is -0.1"]),
        ("suite: s\ncases: c.jsonl\nmetrics:\n  pass_rate: {per_slice: true}\n", 4, ["set min or max too"]),
        # a model or callable in the wrong form: a sentence with the fix at the key's own line, not a regex
        (
            "suite: s\ncases: c.jsonl\ntarget:\n  openai:\n    base_url: http://x\n    model: gpt-4o-mini\n",
            6,
            ["target.openai.model: 'gpt-4o-mini' names no provider", "e.g. openai:gpt-4o-mini"],
        ),
        (
            "suite: s\ncases: c.jsonl\ntarget:\n  python: bot answer\n",
            4,
            ["target.python: 'bot answer' is not a callable's address", "package.module:function"],
        ),
        # a rate's tolerance of 1 or more: a band no drop can leave, so the gate could never fail
        (
            "suite: s\ncases: c.jsonl\nmetrics:\n  pass_rate:\n    gate: true\n    tolerance: 2\n",
            6,
            ["tolerance 2 on pass_rate", "200 percentage points", "tolerance: 0.02 for 2 pp", '"2%"'],
        ),
        ("suite: s\ncases: c.jsonl\nmetrics:\n  error_rate: {tolerance: 1}\n", 4, ["tolerance: 0.01 for 1 pp"]),
        (
            "suite: s\ncases: c.jsonl\nscorers: [final_answer]\nmetrics:\n"
            "  format_valid: {tolerance: 5, gate: false}\n",
            5,
            ["tolerance 5 on format_valid"],
        ),
    ],
)
def test_config_errors_name_file_line_and_key(tmp_path, text, line, fragments):
    err = config_error(tmp_path, text)
    assert err.where == f"{tmp_path / 'evalgate.yml'}:{line}"
    for fragment in fragments:
        assert fragment in str(err)


def test_yaml_syntax_error_names_line(tmp_path):
    err = config_error(tmp_path, "suite: s\ncases: c.jsonl\nslices: [language\nattempts: 2\n")
    assert "invalid YAML" in err.problem
    assert err.where.rsplit(":", 1)[1] in {"3", "4"}  # the open list (3) or where the parser noticed (4)
    err = config_error(tmp_path, "suite: s\ncases: c.jsonl\n  attempts: 2\n")
    assert err.where.endswith(":3") and "invalid YAML" in err.problem


def test_missing_required_keys_and_non_mapping(tmp_path):
    assert "cases" in str(config_error(tmp_path, "suite: s\n"))
    assert "must be a YAML mapping" in str(config_error(tmp_path, "- a\n- b\n"))
    with pytest.raises(InputFileError, match="config file not found"):
        load_config(tmp_path / "nope.yml")


@pytest.mark.parametrize(
    ("scorers", "fragments"),
    [
        ("[exact, fuzzy]", ["evalgate.yml:4: ", "unknown scorer 'fuzzy'"]),
        ("[{regex: {patern: x}}]", ["scorers[0]: scorer 'regex': patern: unknown parameter"]),
    ],
)
def test_cli_reports_config_error_as_one_line_exit_2(tmp_path, python_exe, repo_root, scorers, fragments):
    bad = tmp_path / "evalgate.yml"
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x"}\n', encoding="utf-8")
    bad.write_text(f"suite: s\ncases: c.jsonl\ntarget: {{command: [echo]}}\nscorers: {scorers}\n", encoding="utf-8")
    proc = subprocess.run(
        [python_exe, "-m", "evals", "run", "--config", str(bad), "--output", str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        cwd=repo_root,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    for fragment in fragments:
        assert fragment in proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_quickstart_config_is_valid(repo_root):
    config = load_config(repo_root / "examples" / "quickstart" / "evalgate.yml")
    assert config.suite == "quickstart" and config.root == (repo_root / "examples" / "quickstart").resolve()


@pytest.mark.parametrize("which", sorted(schema.SCHEMAS))
def test_shipped_schemas_match_models(which):
    name, _ = schema.SCHEMAS[which]
    shipped = (schema.SCHEMA_DIR / name).read_text(encoding="utf-8")
    assert shipped == schema.render(which), f"regenerate: evalgate schema --write evals/schemas ({name} is stale)"


def test_config_hash_covers_what_scores_mean_and_nothing_else():
    base = SuiteConfig(suite="s", cases="c.jsonl", scorers=["final_answer"], metrics={"pass_rate": {"tolerance": 0.02}})
    same = [
        {"metrics": {"pass_rate": {"tolerance": 0.05}}},
        {"metrics": {"pass_rate": {"tolerance": 0.02, "gate": False}}},
        {"metrics": {"pass_rate": {"direction": "higher"}}},
        {"metrics": {"pass_rate": {}, "latency_p95_ms": {"direction": "lower", "tolerance": "20%", "gate": False}}},
        {"attempts": 3, "concurrency": 50, "slices": ["language"]},
    ]
    for change in same:
        other = SuiteConfig.model_validate({**base.model_dump(), **change})
        assert other.config_hash() == base.config_hash(), change
    different = [
        {"scorers": ["exact"]},
        {"scorers": [{"final_answer": {"abs_tol": 0.5}}]},
        {"metrics": {"pass_rate": {}, "latency_p95_ms": {"direction": "higher"}}},
    ]
    for change in different:
        other = SuiteConfig.model_validate({**base.model_dump(), **change})
        assert other.config_hash() != base.config_hash(), change


def test_tolerances_of_one_or_more_stay_legal_where_they_mean_something(tmp_path):
    path = tmp_path / "evalgate.yml"
    path.write_text(
        "suite: s\ncases: c.jsonl\nmetrics:\n  pass_rate: {tolerance: 0.99}\n  score: {tolerance: '200%'}\n"
        "  latency_p95_ms: {tolerance: 250}\n  tokens: {tolerance: 50}\n  cost_usd: {tolerance: 1}\n"
    )
    tolerances = {name: spec.tolerance for name, spec in load_config(path).metrics.items()}
    assert tolerances == {"pass_rate": 0.99, "score": "200%", "latency_p95_ms": 250, "tokens": 50, "cost_usd": 1}


def test_floors_of_unbounded_metrics_take_their_own_units(tmp_path):
    path = tmp_path / "evalgate.yml"
    path.write_text("suite: s\ncases: c.jsonl\nmetrics:\n  latency_p95_ms: {max: 2500, per_slice: true}\n")
    spec = load_config(path).metrics["latency_p95_ms"]
    assert (spec.max, spec.per_slice) == (2500, True)
