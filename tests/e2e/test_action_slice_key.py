"""The action's `slice-key` input reaches `evalgate gate` as `--slice-key` arguments: through the
step's `env:` (never `${{ }}` inside `run:`), split on spaces and commas, none when empty. The
step's own bash script from action.yml runs here with a stand-in for the Python interpreter that
prints the arguments it was given."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest
import yaml
from fakes.paths import ROOT

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def gate_step() -> dict:
    steps = [s for s in ACTION["runs"]["steps"] if "EVALGATE_SLICE_KEYS" in (s.get("env") or {})]
    assert len(steps) == 1, "one step passes the slice-key input on"
    return steps[0]


def test_input_is_declared_and_passed_through_env():
    assert "slice-key" in ACTION["inputs"] and ACTION["inputs"]["slice-key"].get("default", "") == ""
    step = gate_step()
    assert step["env"]["EVALGATE_SLICE_KEYS"] == "${{ inputs.slice-key }}"
    assert "${{" not in step["run"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", []), ("language", ["language"]), ("language, category  topic", ["language", "category", "topic"])],
)
def test_slice_keys_become_arguments(tmp_path, value, expected):
    fake = tmp_path / "python"
    fake.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    step = gate_step()
    env = {k: "" for k in step["env"]}
    env |= {
        "PATH": os.environ["PATH"],
        "EVALGATE_PYTHON": str(fake),
        "EVALGATE_MODE": "compare",
        "EVALGATE_CONFIG": "evalgate.yml",
        "EVALGATE_OUT_DIR": str(tmp_path / "out"),
        "EVALGATE_COMMENT": "off",
        "EVALGATE_SLICE_KEYS": value,
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "RUNNER_TEMP": str(tmp_path),
    }
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    argv = done.stdout.splitlines()
    got = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--slice-key"]
    assert got == expected, argv
