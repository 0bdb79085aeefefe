"""A GitHub Actions runner, simulated closely enough to run the action's own ``run:`` steps and
this repository's workflows against the fake GitHub server (``fakes.github_server``) over real
HTTP.

What is simulated and how:
- A workflow run: the jobs of .github/workflows/eval-gate*.yml (or a workflow block of
  docs/github-action.md) whose ``if:`` holds for the event, in file order, matrix jobs once per
  value; ``run:`` steps in bash, upload/download-artifact as copies into a folder per workflow run,
  ``uses: $/.`` (this action) through the action's own steps with the step's ``with:`` as inputs.
  So the workflows the docs show are the ones exercised here.
- ``${{ ... }}`` expressions in ``with:``, ``if:``, input defaults, ``env:`` blocks and
  ``outputs:`` are evaluated by ``Expr`` below: context paths (``inputs.x``,
  ``github.event.pull_request.number``, ``steps.install.outputs.python``, ``runner.temp``,
  ``matrix.shard``), literals, ``==``/``!=``, ``&&``, ``||`` and parentheses. Anything else fails the
  test rather than being guessed.
- A completed run starts, as on GitHub, every workflow whose ``on.workflow_run.workflows`` lists its
  ``name:`` (``triggered_by``), with the run's id, head and conclusion in the event.
- actions/cache as GitHub scopes it: restored at its step (the exact key, then each restore-key prefix,
  newest first, each looked up in the job's own ref, then the default branch's), saved after a job that
  succeeded unless its ref already holds that key; a PR's caches are never seen from another ref.
  actions/cache/restore restores the same way at its step, with its outputs ``cache-hit`` (the exact
  key matched), ``cache-primary-key`` and ``cache-matched-key`` ('' when nothing matched);
  actions/cache/save saves at its step (a key its ref already holds is left as it is, as GitHub's
  immutable entries are).
- ``vars.*`` (the repository's variables, ``Job.variables``) and ``secrets.*``: the repository's
  (``Job.secrets``), and those of the environment a job names in ``environment:``
  (``Job.environments``), which win over the repository's — a job that names no environment never
  sees them. An unset variable or secret is '' (docs.github.com, "Contexts reference").
- A ``run:`` step with an ``id`` sets ``steps.<id>.outputs`` from GITHUB_OUTPUT and its ``outcome``;
  every ``run:`` step's output is kept in ``Runner.logs`` by job name.
- Not run: actions/checkout (each job gets a fresh clone with full history, like fetch-depth: 0),
  actions/setup-python, and the install steps (the action's ``pip install $GITHUB_ACTION_PATH``
  into a fresh virtualenv and of its ``install`` input, the workflows' "Install ..." steps): they
  need the package index, and evalgate and pytest are already installed in the interpreter running
  these tests, which is what the install step's ``python`` output and PATH name. Every other step runs as GitHub runs a
  ``shell: bash`` step: ``bash --noprofile --norc -eo pipefail`` on the script, with only its
  resolved ``env:`` and the runner's variables (GITHUB_EVENT_NAME/PATH, GITHUB_OUTPUT,
  GITHUB_STEP_SUMMARY, GITHUB_API_URL pointing at the fake server, ...).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from fakes.expressions import Expr
from fakes.github_server import GitHubServer
from fakes.paths import ROOT
from fakes.suites import git, read_output_file

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
WORKFLOWS = ROOT / ".github" / "workflows"
TAG = "eval-baseline"
CONFIG = "examples/quickstart/evalgate.yml"
PR = 7

# ------------------------------------------------------------------------------------------ runner

BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]  # GitHub's `shell: bash` (and run-step default)


@dataclass
class Job:
    """One simulated workflow run: an event, a checkout, a token, and which workflow file."""

    event_name: str
    payload: dict[str, Any]
    checkout: Path
    sha: str
    ref: str
    token: str
    workflow: Path = WORKFLOWS / "eval-gate.yml"
    dispatch_inputs: dict[str, str] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)  # `vars.*`
    secrets: dict[str, str] = field(default_factory=dict)  # the repository's `secrets.*`
    environments: dict[str, dict[str, str]] = field(default_factory=dict)  # an environment's secrets, by name


@dataclass
class StepRun:
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    out_dir: Path
    run_id: int = 0  # the workflow run it belonged to (artifacts are per run)
    steps: list[str] = field(default_factory=list)  # the action's steps that ran (or were reached), by id

    @property
    def log(self) -> str:
        return self.stdout + self.stderr


class Runner:
    """Runs the jobs of a workflow file as a GitHub runner would, step by step (see the module
    docstring for what is simulated and what is skipped)."""

    def __init__(self, gh: GitHubServer, tmp: Path):
        self.gh = gh
        self.tmp = tmp
        self.artifacts = tmp / "artifacts"
        self._ids = itertools.count(1)  # next() on it is atomic: concurrent jobs get distinct folders
        self.caches: list[tuple[str, str, Path]] = []  # (ref scope, key, saved folder), oldest first
        self._cache_lock = threading.Lock()
        self.logs: dict[str, str] = {}  # job name -> what its `run:` steps printed (stdout, then stderr)

    def contexts(
        self, job: Job, runner_temp: Path, matrix: dict[str, Any] | None = None, run_id: int = 0
    ) -> dict[str, Any]:
        return {
            "github": {
                "event_name": job.event_name,
                "event": job.payload,
                "sha": job.sha,
                "ref": job.ref,
                "repository": self.gh.repo,
                "actor": "octo-dev",
                "token": job.token,
                "workspace": str(job.checkout),
                "api_url": self.gh.api_url,
                "run_id": str(run_id),
                "run_attempt": "1",
            },
            "inputs": dict(job.dispatch_inputs),
            "runner": {"temp": str(runner_temp), "os": "Linux"},
            "matrix": matrix or {},
            "vars": dict(job.variables),
            "secrets": dict(job.secrets),
        }

    def jobs(self, job: Job, needs: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
        """The workflow's jobs whose ``if:`` holds for this event, in file order; ``needs``: the jobs
        that ran so far (a job's ``if:`` may read their outputs)."""
        workflow = yaml.safe_load(job.workflow.read_text(encoding="utf-8"))
        contexts = self.contexts(job, self.tmp) | {"needs": needs or {}}
        return [(n, spec) for n, spec in workflow["jobs"].items() if Expr(contexts).value(str(spec.get("if", "true")))]

    def run(self, job: Job, **overrides: str) -> StepRun:
        """One workflow run for the event: every job whose ``if:`` holds, in file order (``needs:``
        in our workflows follows that order; a job whose needed job failed or was skipped is skipped,
        and its ``if:`` reads their outputs), matrix jobs once per value. The last use of the action
        (the gate) is returned; every use is in ``self.action_runs``. ``overrides`` change the inputs
        of the action's last use."""
        self.run_jobs(job, **overrides)
        assert self.action_runs, f"{job.workflow.name}: no use of the action on {job.event_name}"
        return self.action_runs[-1]

    def run_jobs(self, job: Job, **overrides: str) -> dict[str, Any]:
        """One workflow run (see ``run``), for a workflow that may not use the action: the jobs
        that ran, as the ``needs`` context holds them (their outputs and result)."""
        run_id = next(self._ids)
        self.action_runs: list[StepRun] = []
        failed: set[str] = set()
        needs_context: dict[str, Any] = {}  # `needs.<job>.outputs.<name>`: each job's outputs, once it ran
        workflow = yaml.safe_load(job.workflow.read_text(encoding="utf-8"))
        for name, spec in workflow["jobs"].items():
            needs = spec.get("needs") or []
            needs = {needs} if isinstance(needs, str) else set(needs)
            if needs & failed or needs - set(needs_context):  # a needed job failed or was skipped
                failed.add(name)
                continue
            # A job's `if:` is evaluated once the jobs it needs have ended, with their outputs.
            if name not in dict(self.jobs(job, needs_context)):
                continue
            matrix = (spec.get("strategy") or {}).get("matrix") or {}
            assert len(matrix) <= 1, "the simulated runner handles one matrix axis"
            values = [{k: v} for k, vs in matrix.items() for v in vs] or [None]
            for value in values:
                result = self.run_job(
                    job, spec, run_id=run_id, matrix=value, overrides=overrides, needs=needs_context, name=name
                )
                if result is not None:
                    result.run_id = run_id
                    self.action_runs.append(result)
                    if result.returncode != 0:
                        failed.add(name)
        return needs_context

    def run_job(
        self,
        job: Job,
        spec: dict[str, Any],
        *,
        run_id: int,
        matrix: dict[str, Any] | None = None,
        overrides: dict[str, str],
        needs: dict[str, Any] | None = None,
        name: str = "",
    ) -> StepRun | None:
        home = self.tmp / f"job{next(self._ids)}"
        runner_temp = home / "runner-temp"
        runner_temp.mkdir(parents=True)
        contexts = self.contexts(job, runner_temp, matrix, run_id) | {"needs": needs or {}, "steps": {}}
        environment = spec.get("environment")
        environment = environment.get("name") if isinstance(environment, dict) else environment
        if environment is not None:  # its secrets, for this job only; they win over the repository's
            contexts["secrets"] |= job.environments.get(Expr(contexts).render(environment), {})
        result = None
        failed = False
        to_save: list[tuple[str, Path]] = []  # actions/cache's post step: (key, folder) once the job succeeds
        for number, step in enumerate(spec["steps"]):
            condition = str(step.get("if", "success()"))
            if condition == "always()":
                pass
            elif failed or (condition != "success()" and not Expr(contexts).value(condition)):
                continue
            uses = step.get("uses", "")
            if uses == "$/.":
                inputs = {k: Expr(contexts).render(v) for k, v in (step.get("with") or {}).items()}
                if inputs.get("mode") != "run":  # the suite's job keeps its inputs; the gate gets the overrides
                    inputs |= overrides
                result = self.action(job, home / f"action{number}", runner_temp, inputs)
                failed = result.returncode != 0
                if "id" in step:
                    contexts["steps"][step["id"]] = {"outputs": result.outputs}
            elif uses.startswith("actions/cache@"):
                key, folder, _ = self.restore_cache(job, step, contexts)
                to_save.append((key, folder))
            elif uses.startswith("actions/cache/restore@"):
                key, _, matched = self.restore_cache(job, step, contexts)
                outputs = {"cache-hit": str(matched == key).lower(), "cache-primary-key": key}
                if "id" in step:
                    contexts["steps"][step["id"]] = {"outputs": outputs | {"cache-matched-key": matched or ""}}
            elif uses.startswith("actions/cache/save@"):
                options = {k: Expr(contexts).render(v) for k, v in step["with"].items()}
                self.save_cache(job, options["key"], job.checkout / options["path"])
            elif uses.startswith("actions/upload-artifact@"):
                self.upload(job, step, contexts, run_id)
            elif uses.startswith("actions/download-artifact@"):
                self.download(step, contexts, run_id)
            elif uses.startswith("actions/checkout@") and (step.get("with") or {}).get("ref"):
                # A checkout of another commit than the event's: this job's own fresh clone of it, where
                # nothing an earlier job of the run did (a hook it planted, files it wrote) is.
                job = self.fresh_checkout(job, Expr(contexts).render(step["with"]["ref"]), home)
                contexts["github"]["workspace"] = str(job.checkout)
            elif uses.startswith(("actions/checkout@", "actions/setup-python@")) or str(
                step.get("name", "")
            ).startswith("Install "):
                continue  # see the module docstring
            elif "run" in step:
                env = {k: Expr(contexts).render(v) for k, v in (step.get("env") or {}).items()}
                assert "${{" not in step["run"], "expressions must reach run: through env:"
                (home / "output").write_text("", encoding="utf-8")  # each step its own GITHUB_OUTPUT
                done = self.bash(
                    step["run"], home / f"step{number}.sh", job, self.runner_env(job, home, runner_temp) | env
                )
                self.logs[name] = self.logs.get(name, "") + done.stdout + done.stderr
                assert done.returncode == 0, f"step {step.get('name')} failed: {done.stdout}{done.stderr}"
                if "id" in step:
                    outputs = read_output_file(home / "output")
                    contexts["steps"][step["id"]] = {"outputs": outputs, "outcome": "success"}
            else:
                raise AssertionError(f"the simulated runner does not know the step {step}")
        if not failed:
            for key, folder in to_save:
                self.save_cache(job, key, folder)
        if needs is not None and not failed:
            outputs = {k: Expr(contexts).render(v) for k, v in (spec.get("outputs") or {}).items()}
            needs[name] = {"outputs": outputs, "result": "success"}
        return result

    def fresh_checkout(self, job: Job, ref: str, home: Path) -> Job:
        """``job`` in a clone of its repository at ``ref`` (full history, like fetch-depth: 0), in this
        job's own folder: git clone copies no hooks."""
        path = home / "checkout"
        git(self.tmp, "clone", "-q", str(job.checkout), str(path))
        git(path, "checkout", "-q", "--detach", ref)
        return replace(job, checkout=path)

    def restore_cache(self, job: Job, step: dict[str, Any], contexts: dict[str, Any]) -> tuple[str, Path, str | None]:
        """Restores into the step's path; its primary key, the path, and the key that matched."""
        options = {k: Expr(contexts).render(v) for k, v in step["with"].items()}
        folder = job.checkout / options["path"]
        key = options["key"]
        prefixes = [line.strip() for line in options.get("restore-keys", "").splitlines() if line.strip()]
        scopes = list(dict.fromkeys([job.ref, "refs/heads/main"]))
        with self._cache_lock:
            caches = list(self.caches)
        for wanted, exact in [(key, True), *((prefix, False) for prefix in prefixes)]:
            for scope in scopes:
                found = [c for c in caches if c[0] == scope and (c[1] == wanted if exact else c[1].startswith(wanted))]
                if found:
                    shutil.copytree(found[-1][2], folder, dirs_exist_ok=True)
                    return key, folder, found[-1][1]
        return key, folder, None

    def save_cache(self, job: Job, key: str, folder: Path) -> None:
        if not folder.is_dir():
            return  # GitHub warns that the path does not exist and saves nothing
        with self._cache_lock:
            if any(c[0] == job.ref and c[1] == key for c in self.caches):
                return  # cache keys are immutable within a scope
            saved = self.tmp / "caches" / str(len(self.caches))
            shutil.copytree(folder, saved)
            self.caches.append((job.ref, key, saved))

    def upload(self, job: Job, step: dict[str, Any], contexts: dict[str, Any], run_id: int) -> None:
        options = {k: Expr(contexts).render(v) for k, v in step["with"].items()}
        target = self.artifacts / str(run_id) / options["name"]
        source = job.checkout / options["path"]
        if not source.exists():
            assert options.get("if-no-files-found") == "ignore", f"nothing to upload at {source}"
            return
        target.mkdir(parents=True)  # artifact names are unique within a workflow run
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target / source.name)

    def download(self, step: dict[str, Any], contexts: dict[str, Any], run_id: int) -> None:
        options = {k: Expr(contexts).render(v) for k, v in step["with"].items()}
        source = self.artifacts / (options.get("run-id") or str(run_id))
        target = Path(options["path"])
        found = sorted(source.glob(options.get("pattern") or options["name"]))
        assert found, f"no artifact {options.get('pattern') or options['name']} in run {source.name}"
        for artifact in found:
            merge = options.get("merge-multiple") == "true" or "name" in options
            shutil.copytree(artifact, target if merge else target / artifact.name, dirs_exist_ok=True)

    def runner_env(self, job: Job, home: Path, runner_temp: Path) -> dict[str, str]:
        return {
            # setup-python + the install steps put this interpreter's scripts (evalgate, pytest) on PATH
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": job.event_name,
            "GITHUB_EVENT_PATH": str(home / "event.json"),
            "GITHUB_OUTPUT": str(home / "output"),
            "GITHUB_STEP_SUMMARY": str(home / "summary.md"),
            "GITHUB_API_URL": self.gh.api_url,
            "GITHUB_REPOSITORY": self.gh.repo,
            "GITHUB_SHA": job.sha,
            "GITHUB_REF": job.ref,
            "GITHUB_ACTOR": "octo-dev",
            "GITHUB_WORKSPACE": str(job.checkout),
            "RUNNER_TEMP": str(runner_temp),
            # Short client timeouts and backoff so fault scenarios stay fast.
            "EVALGATE_GITHUB_TIMEOUT": "2",
            "EVALGATE_GITHUB_BACKOFF": "0.05",
            "EVALGATE_GITHUB_MAX_WAIT": "5",
            **job.extra_env,
        }

    def bash(self, script: str, path: Path, job: Job, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "event.json").write_text(json.dumps(job.payload), encoding="utf-8")
        path.write_text(script, encoding="utf-8")
        return subprocess.run(
            [*BASH, str(path)], cwd=job.checkout, env=env, capture_output=True, text=True, timeout=300, check=False
        )

    def action(self, job: Job, home: Path, runner_temp: Path, given: dict[str, str]) -> StepRun:
        """The composite action's steps, with ``given`` inputs (the rest take their defaults)."""
        home.mkdir(parents=True)
        contexts = self.contexts(job, runner_temp)
        undeclared = set(given) - set(ACTION["inputs"])
        assert not undeclared, f"inputs not declared in action.yml: {undeclared}"
        inputs = {
            name: given[name] if name in given else Expr(contexts).render(spec.get("default", ""))
            for name, spec in ACTION["inputs"].items()
        }
        steps: dict[str, dict[str, Any]] = {
            "python": {"outputs": {"python-path": sys.executable}},
            "install": {"outputs": {"python": sys.executable}},
        }
        contexts |= {"inputs": inputs, "steps": steps}
        env_base = self.runner_env(job, home, runner_temp) | {"GITHUB_ACTION_PATH": str(ROOT)}
        output_file, summary_file = home / "output", home / "summary.md"
        done = None
        ran: list[str] = []
        for step in ACTION["runs"]["steps"]:
            if "if" in step and not Expr(contexts).value(str(step["if"])):
                continue
            if "uses" in step or step.get("id") in ("install", "install-suite"):
                if step.get("id") == "install-suite":
                    ran.append(step["id"])  # reached: it would install the suite's dependencies here
                continue  # setup-python and the install steps: see the module docstring
            ran.append(step["id"])
            assert step.get("shell") == "bash"
            assert "${{" not in step["run"], "expressions must reach run: through env:"
            env = {k: Expr(contexts).render(v) for k, v in (step.get("env") or {}).items()}
            output_file.write_text("", encoding="utf-8")
            done = self.bash(step["run"], home / f"step-{step['id']}.sh", job, env_base | env)
            steps[step["id"]] = {"outputs": read_output_file(output_file)}
            if done.returncode != 0:
                break
        assert done is not None
        outputs = {name: Expr(contexts).render(spec["value"]) for name, spec in ACTION["outputs"].items()}
        summary = summary_file.read_text(encoding="utf-8") if summary_file.exists() else ""
        for secret in (self.gh.write_token, self.gh.read_token):
            assert secret not in done.stdout + done.stderr + summary, "the token leaked into the log"
        return StepRun(done.returncode, done.stdout, done.stderr, outputs, summary, Path(inputs["out-dir"]), steps=ran)
