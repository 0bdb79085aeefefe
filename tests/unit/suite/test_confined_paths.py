"""Paths a config names stay inside its repository (docs/spec.md#trust-boundaries): the gate job
posts what it renders and writes where the config says, and on a pull request the config is the
PR author's. ``report.template: /proc/self/environ`` (or a committed symlink to it) posted the
job's whole environment as the comment; ``history.url: sqlite:///<venv>/…/zz.pth`` broke every
later Python start in that venv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakes.suites import echo_cases, write_suite

from evals.common.errors import InputFileError
from evals.history.settings import history_url
from evals.report.markdown import _load_template
from evals.run.scorers.judge import JudgeParams, make_judge
from evals.suite.loading import load_config


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    return repo


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"report": {"template": "/proc/self/environ"}}, "report.template"),
        ({"report": {"template": "../outside.md.j2"}}, "report.template"),
        ({"report": {"template": "~/.bashrc"}}, "report.template"),
        ({"baseline": {"path": "/tmp/elsewhere"}}, "baseline.path"),
        ({"cache": {"dir": "../../cache"}}, "cache.dir"),
        ({"history": {"path": "/usr/lib/python3/zz.pth"}}, "history.path"),
        ({"cases": "/etc/passwd"}, "cases"),
    ],
)
def test_a_path_out_of_the_repository_is_refused_at_its_line(tmp_path, extra, key):
    repo = _repo(tmp_path)
    (tmp_path / "outside.md.j2").write_text("{{ c.verdict }}", encoding="utf-8")
    config = write_suite(repo, echo_cases(2), target={"python": "bot:answer"})
    text = config.read_text(encoding="utf-8")
    if "cases" in extra:
        text = text.replace("cases: cases.jsonl", f"cases: {extra.pop('cases')}")
    config.write_text(text + (yaml.safe_dump(extra) if extra else ""), encoding="utf-8")
    with pytest.raises(InputFileError) as err:
        load_config(config)
    said = str(err.value)
    assert said.startswith(f"{config}:") and key in said and "inside its repository" in said


def test_a_committed_symlink_out_is_refused_and_one_inside_is_fine(tmp_path):
    repo = _repo(tmp_path)
    (repo / "templates").mkdir()
    (repo / "templates" / "mine.md.j2").write_text("{{ c.verdict }}", encoding="utf-8")
    os.symlink("/proc/self/environ", repo / "env.md.j2")
    os.symlink(repo / "templates" / "mine.md.j2", repo / "alias.md.j2")
    config = write_suite(repo, echo_cases(2), target={"python": "bot:answer"}, report={"template": "env.md.j2"})
    with pytest.raises(InputFileError, match="leads outside the repository"):
        load_config(config)
    config = write_suite(repo, echo_cases(2), target={"python": "bot:answer"}, report={"template": "alias.md.j2"})
    assert load_config(config).report.template == "alias.md.j2"


def test_a_subfolder_config_may_name_files_elsewhere_in_its_repository(tmp_path):
    repo = _repo(tmp_path)
    suite = repo / "evals" / "suite"
    suite.mkdir(parents=True)
    config = write_suite(suite, echo_cases(2), target={"python": "bot:answer"}, baseline={"path": "../../.baselines"})
    assert load_config(config).baseline.path == "../../.baselines"


def test_an_include_that_leads_out_of_the_templates_folder_is_not_found(tmp_path):
    folder = tmp_path / "tpl"
    folder.mkdir()
    os.symlink("/proc/self/environ", folder / "env.txt")
    (folder / "mine.md.j2").write_text('{% include "env.txt" %}', encoding="utf-8")
    (folder / "part.md.j2").write_text("part", encoding="utf-8")
    (folder / "ok.md.j2").write_text('{% include "part.md.j2" %}', encoding="utf-8")
    template = _load_template(folder / "mine.md.j2")
    with pytest.raises(Exception, match="leads out of the template's folder"):
        template.render(c=None)
    assert _load_template(folder / "ok.md.j2").render() == "part"


def test_a_sqlite_history_url_out_of_the_repository_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALGATE_HISTORY_URL", raising=False)
    monkeypatch.delenv("EVALGATE_HISTORY", raising=False)
    repo = _repo(tmp_path)
    venv_pth = Path(sys.prefix) / "lib" / "zz.pth"
    config = write_suite(repo, echo_cases(2), target={"python": "bot:answer"}, history={"url": f"sqlite:///{venv_pth}"})
    with pytest.raises(InputFileError, match=r"history\.url is an absolute path"):
        history_url(load_config(config))
    assert not venv_pth.exists()
    config = write_suite(repo, echo_cases(2), target={"python": "bot:answer"}, history={"url": "sqlite:///h.sqlite"})
    assert history_url(load_config(config)) == str((repo / "h.sqlite").resolve())
    config = write_suite(
        repo, echo_cases(2), target={"python": "bot:answer"}, history={"url": "postgresql://u@db.example/evals"}
    )
    assert history_url(load_config(config)) == "postgresql://u@db.example/evals"
    # The workflow's own URL (the environment) is not the PR's: not checked.
    monkeypatch.setenv("EVALGATE_HISTORY_URL", f"sqlite:///{tmp_path / 'elsewhere.sqlite'}")
    assert history_url(load_config(config)).endswith("elsewhere.sqlite")


def test_a_judges_rubric_file_out_of_the_repository_is_refused(tmp_path):
    """The rubric goes to the judge's endpoint, which the config names too."""
    repo = _repo(tmp_path)
    (repo / "rubric.md").write_text("Be strict.", encoding="utf-8")
    params = {"model": "local:judge", "api_key_env": None}
    assert make_judge(JudgeParams(**params, rubric_file="rubric.md"), repo).rubric == "Be strict."
    for raw in ("/proc/self/environ", "../../etc/passwd"):
        with pytest.raises(InputFileError, match="rubric_file"):
            make_judge(JudgeParams(**params, rubric_file=raw), repo)
