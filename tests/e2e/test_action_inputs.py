"""The action's inputs reach `evalgate gate` as its declared options (evals/suite/options.py):
each input through the step's `env:` (never `${{ }}` inside `run:`) into the `EVALGATE_*`
variable its option declares, which evalgate reads itself. The steps' own bash scripts from
action.yml run here with a stand-in for the Python interpreter that parses the gate's command line
as evalgate does and prints the options it got."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakes.paths import ROOT

from evals.cli.app import build_parser
from evals.cli.options import options_of
from evals.results.masking import harmless_env
from evals.suite.flags import flags_of
from evals.suite.options import GateOptions

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
# Inputs of the action alone, no option of evalgate's: how it installs itself, the token, and the
# two guards evalgate reads from the environment (evals.pipeline.exposure) rather than as flags.
# The action's own, and the secrets: a secret reaches the process only through its variable, never a flag.
ACTION_ONLY = {
    "python-version", "install", "github-token", "allow-write-token-with-suite", "allow-pull-request-target",
    "cache-seal-key",
}  # fmt: skip
# What the stand-in interpreter runs: evalgate's own parser on what the step passed after `-m MODULE`.
PROBE = """
import sys
from evals.cli.app import build_parser
from evals.cli.options import options_of
from evals.results.masking import harmless_env
from evals.common.errors import EvalgateError
from evals.suite.options import GateOptions
argv = sys.argv[sys.argv.index("-m") + 2:]
try:
    print(options_of(GateOptions, build_parser(only="gate").parse_args(argv)).model_dump_json())
except EvalgateError as exc:
    print(f"evalgate: error: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
"""


def step(step_id: str) -> dict:
    (found,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == step_id]
    return found


def declared() -> dict[str, str]:
    """action input -> the EVALGATE_* variable of the gate option it sets."""
    return {decl.action_input: decl.env for _, decl, _, _ in flags_of(GateOptions) if decl.action_input and decl.env}


def test_every_declared_input_is_in_action_yml_and_set_into_its_variable():
    env = step("gate")["env"]
    for name, variable in declared().items():
        assert name in ACTION["inputs"], f"{name}: declared in evals/suite/options.py, missing from action.yml"
        assert env.get(variable) == "${{ inputs." + name + " }}", f"{name}: the Gate step does not set {variable}"
    for name, variable in (("mode", "EVALGATE_MODE"), ("reason", "EVALGATE_REASON")):
        assert step("preflight")["env"][variable] == "${{ inputs." + name + " }}"
    assert "${{" not in step("gate")["run"] and "${{" not in step("preflight")["run"]


def test_the_action_s_settings_are_not_masked_as_secrets_and_its_secrets_are():
    """A value the action passes in its environment is masked in every log and file unless its
    variable is known to be harmless: an evidence side's "baseline" read "more evidence, *** side"."""
    env = step("gate")["env"]
    assert {name for name in env if not harmless_env(name)} == {"GITHUB_TOKEN", "EVALGATE_CACHE_SEAL_KEY"}


def test_every_input_of_action_yml_is_declared_or_the_actions_own():
    undeclared = set(ACTION["inputs"]) - set(declared()) - ACTION_ONLY
    assert undeclared == set(), f"action.yml inputs no option declares: {undeclared}"
    assert ACTION_ONLY.isdisjoint(declared())


def run_step(tmp_path: Path, step_id: str, **given: str) -> subprocess.CompletedProcess[str]:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    fake = tmp_path / "python"
    fake.write_text(f'#!/usr/bin/env bash\nexec "{sys.executable}" "{probe}" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    found = step(step_id)
    env = {k: "" for k in found["env"]} | {"PATH": os.environ["PATH"], "EVALGATE_PYTHON": str(fake)}
    # The inputs' defaults, as the runner renders them into the step's env.
    for name, spec in ACTION["inputs"].items():
        variable = declared().get(name)
        if variable in found["env"]:
            env[variable] = str(spec.get("default", ""))
    env |= given
    script = tmp_path / "step.sh"
    script.write_text(found["run"])
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )


def test_the_inputs_defaults_are_the_options_defaults(tmp_path):
    done = run_step(tmp_path, "gate")
    assert done.returncode == 0, done.stderr
    assert GateOptions.model_validate(json.loads(done.stdout)) == GateOptions()


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", []), ("language", ["language"]), ("language, category  topic", ["language", "category", "topic"])],
)
def test_slice_keys_are_split_on_spaces_and_commas(tmp_path, value, expected):
    done = run_step(tmp_path, "gate", EVALGATE_MODE="compare", EVALGATE_SLICE_KEYS=value)
    assert done.returncode == 0, done.stderr
    options = json.loads(done.stdout)
    assert options["slice_keys"] == expected and options["mode"] == "compare"


@pytest.mark.parametrize(
    ("value", "no_cache", "code"), [("on", False, 0), ("", False, 0), ("off", True, 0), ("of", False, 2)]
)
def test_the_cache_input_becomes_no_cache(tmp_path, value, no_cache, code):
    done = run_step(tmp_path, "gate", EVALGATE_MODE="run", EVALGATE_CACHE_INPUT=value)
    assert done.returncode == code, done.stderr
    if code:
        assert "the cache input is on or off, not 'of'" in done.stderr
    else:
        assert json.loads(done.stdout)["no_cache"] is no_cache


def test_every_input_reaches_its_option(tmp_path):
    done = run_step(
        tmp_path,
        "gate",
        EVALGATE_MODE="reset",
        EVALGATE_CONFIG="suite/evalgate.yml",
        EVALGATE_RESULTS="r.json",
        EVALGATE_RESULTS_FORMAT="promptfoo",
        EVALGATE_SEED="true",
        EVALGATE_BASELINE_STORE="local",
        EVALGATE_BASELINE_TAG="bl",
        EVALGATE_TOLERANCE="5%",
        EVALGATE_REASON="new model",
        EVALGATE_COMMENT="off",
        EVALGATE_PR_NUMBER="12",
        EVALGATE_REPORT_DIR="stored",
        EVALGATE_OUT_DIR="out",
    )
    assert done.returncode == 0, done.stderr
    got = GateOptions.model_validate(json.loads(done.stdout))
    assert (got.mode, got.config, got.results, got.results_format, got.seed) == (
        "reset", "suite/evalgate.yml", "r.json", "promptfoo", True,
    )  # fmt: skip
    assert (got.store.store, got.store.baseline_tag, got.tolerance, got.reason) == ("local", "bl", "5%", "new model")
    assert (got.comment, got.pr, got.report_dir, got.out_dir) == ("off", 12, "stored", "out")


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("EVALGATE_MODE", "fast", "--mode is one of auto, smoke"),
        ("EVALGATE_PR_NUMBER", "twelve", "--pr takes a whole number"),
        ("EVALGATE_BASELINE_STORE", "s3", "--store is one of local, github-release"),
    ],
)
def test_a_variable_its_option_cannot_take_is_a_usage_error(tmp_path, variable, value, said):
    done = run_step(tmp_path, "gate", **{variable: value})
    assert done.returncode == 2
    assert f"{variable}={value!r}: {said}" in done.stderr


def test_the_preflight_step_passes_the_mode_and_reason(tmp_path):
    done = run_step(tmp_path, "preflight", EVALGATE_MODE="reset", EVALGATE_REASON="why")
    assert done.returncode == 0, done.stderr
    options = json.loads(done.stdout)
    assert (options["mode"], options["reason"], options["preflight"]) == ("reset", "why", True)


def test_a_flag_wins_over_its_variable(monkeypatch):
    monkeypatch.setenv("EVALGATE_SLICE_KEYS", "language")
    monkeypatch.setenv("EVALGATE_COMMENT", "off")
    args = build_parser(only="gate").parse_args(["gate", "--comment", "on", "--slice-key", "topic"])
    options = options_of(GateOptions, args)
    assert options.comment == "on" and options.slice_keys == ["language", "topic"]
