"""A user's own ``evals/`` package (targets, scorers, tools named ``evals.*``) loads from the config's
folder and ``path:``, although evalgate's import package is also named ``evals``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import evals
from evals.common.errors import UsageError
from evals.run.targets.loading import import_callable

EVALGATE = Path(sys.executable).with_name("evalgate")


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """sys.path, evals.__path__ and the user's modules as they were before the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(evals, "__path__", list(evals.__path__))
    yield
    for name, module in list(sys.modules.items()):
        if name.startswith("evals.") and str(tmp_path) in str(getattr(module, "__file__", "")):
            del sys.modules[name]


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


# The user's package: a target that imports a sibling helper through its absolute `evals.` name.
USER_EVALS = {
    "evals/__init__.py": "raise RuntimeError('a user evals/__init__.py is not run')\n",
    "evals/helpers.py": "def shout(text):\n    return text.upper() + '!'\n",
    "evals/bot.py": """\
        from evals.helpers import shout

        def answer(text):
            return shout(text)
        """,
    "evals/scoring.py": """\
        def exclaims(output, expected):
            return output == expected
        """,
}


def test_an_evals_module_of_the_user_loads_from_the_config_folder(tmp_path: Path, isolated_imports) -> None:
    write(tmp_path, USER_EVALS)
    answer = import_callable("evals.bot:answer", tmp_path, [], "target")
    assert answer("hi") == "HI!"
    assert sys.modules["evals.helpers"].__file__ == str(tmp_path / "evals" / "helpers.py")
    # Evalgate's own modules stay evalgate's: the user's folder is searched after them.
    ours = import_callable("evals.scorers:normalize_text", tmp_path, [], "scorer")
    assert ours.__module__ == "evals.run.scorers.builtin"
    assert Path(evals.__path__[0]) == Path(evals.__file__).parent


def test_an_evals_module_of_the_user_loads_from_a_path_entry(tmp_path: Path, isolated_imports) -> None:
    write(tmp_path / "src", USER_EVALS)
    (tmp_path / "suite").mkdir()
    scorer = import_callable("evals.scoring:exclaims", tmp_path / "suite", ["../src"], "scorer")
    assert scorer("A!", "A!") is True


def test_a_user_module_named_like_one_of_evalgates_is_refused_with_its_file(tmp_path: Path, isolated_imports) -> None:
    write(tmp_path, {**USER_EVALS, "evals/run.py": "def go():\n    pass\n"})
    with pytest.raises(UsageError) as err:
        import_callable("evals.bot:answer", tmp_path, [], "target")
    said = str(err.value)
    assert str(tmp_path / "evals" / "run.py") in said and "evals.run" in said and "rename your run.py" in said
    assert str(tmp_path / "evals") not in evals.__path__


def test_a_data_folder_named_like_one_of_evalgates_modules_is_no_module(tmp_path: Path, isolated_imports) -> None:
    write(tmp_path, {**USER_EVALS, "evals/results/latest.json": "{}"})
    assert import_callable("evals.bot:answer", tmp_path, [], "target")("a") == "A!"


def test_a_missing_evals_module_says_where_evalgate_looked(tmp_path: Path, isolated_imports) -> None:
    with pytest.raises(UsageError, match=r"in an evals/ folder next to the config or in path:"):
        import_callable("evals.bot:answer", tmp_path, [], "target")
    write(tmp_path, USER_EVALS)
    with pytest.raises(UsageError, match=r"cannot import module 'evals.bots'.*did you mean 'bot'"):
        import_callable("evals.bots:answer", tmp_path, [], "target")


@pytest.mark.e2e
def test_evalgate_run_with_the_users_evals_package(tmp_path: Path) -> None:
    """The whole command, as a user runs it from their repository's root."""
    write(tmp_path, USER_EVALS)
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"c{i}", "input": w, "expected": w.upper() + "!"}) + "\n" for i, w in enumerate("ab"))
    )
    (tmp_path / "evalgate.yml").write_text(
        "suite: own-evals\ncases: cases.jsonl\ntarget: {python: evals.bot:answer}\n"
        "scorers: [{python: 'evals.scoring:exclaims', name: exclaims}]\n"
    )
    env = {**os.environ, "EVALGATE_HISTORY": "off"}
    done = subprocess.run(
        [str(EVALGATE), "run", "--output", "out.json", "--no-summary"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    cases = json.loads((tmp_path / "out.json").read_text())["cases"]
    assert [a["output"] for c in cases for a in c["attempts"]] == ["A!", "B!"]
    assert all(a["passed"] for c in cases for a in c["attempts"])
