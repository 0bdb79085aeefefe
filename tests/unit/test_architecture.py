"""The package's shape (docs/architecture.md): the layer contract (import-linter, configured in
pyproject.toml) holds and fails on a violation; no import cycles among ``evals`` modules, counting
the imports inside functions too (a lazy import is still a dependency: it only hides the cycle
until run time); the top level holds only the entry points and the public shims."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.paths import ROOT

PACKAGE = ROOT / "evals"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# What may stay at evals/ top level: the entry points and the documented public names.
TOP_LEVEL = {"__init__.py", "__main__.py", "scorers.py", "targets.py", "trace.py", "stats.py"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parents, *([base] if base else [])])
                named = [f"{base}.{alias.name}" for alias in node.names]  # `from pkg import module`
                targets = [n if n in modules else base for n in named]
            graph[name].update(t for t in map(owner, targets) if t is not None and t != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.e2e
def test_no_import_cycles_even_through_function_level_imports() -> None:
    graph = _graph()
    assert "evals.history.record" in graph["evals.history.sync"]  # the walk sees the imports
    assert "evals.history.trends" in graph["evals.history"]  # ... the ones inside functions too
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the ``evals`` package found at ``root`` (first on the path, so a copy
    wins over the installed package), with that copy's pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_layer_contract_holds() -> None:
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # compare never imports github, even inside a function
        ("compare/decide.py", "def _leak():\n    from evals.github.client import GitHubClient\n", "evals.github"),
        # the history is reached only from the pipeline and the commands
        ("store/promotion.py", "import evals.history\n", "evals.history"),
        # the library never imports a command
        ("report/html.py", "from evals.cli import options\n", "evals.cli"),
        # nothing inside evals leans on the public shims
        ("run/runner.py", "from evals.scorers import Score\n", "evals.scorers"),
        # the library reads typed options, never a command line (evals.suite.options)
        ("pipeline/flows.py", "def _parse():\n    import argparse\n", "argparse"),
    ],
)
def test_the_layer_contract_fails_on_a_violation(tmp_path: Path, module: str, line: str, broken: str) -> None:
    shutil.copytree(PACKAGE, tmp_path / "evals", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "evals" / module
    target.write_text(target.read_text(encoding="utf-8") + "\n\n" + line, encoding="utf-8")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0, done.stdout
    assert "BROKEN" in done.stdout
    name = "evals." + module.removesuffix(".py").replace("/", ".")
    assert f"{name} -> {broken}" in done.stdout, done.stdout


def test_the_top_level_holds_only_entry_points_and_public_shims() -> None:
    modules = {p.name for p in PACKAGE.glob("*.py")}
    assert modules == TOP_LEVEL
    for name in ("scorers", "targets", "trace", "stats"):
        tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
        # A shim re-exports and holds no code of its own.
        assert all(isinstance(n, ast.Expr | ast.ImportFrom | ast.Assign) for n in tree.body), name


def test_the_public_shims_are_the_library_s_own_objects() -> None:
    import evals.scorers
    import evals.stats
    import evals.targets
    import evals.trace
    from evals.compare import stats
    from evals.results import trace
    from evals.run.scorers import base
    from evals.run.targets import base as target_base

    assert evals.scorers.Score is base.Score
    assert evals.targets.TargetFailure is target_base.TargetFailure
    assert evals.trace.TraceEvent is trace.TraceEvent
    assert evals.stats.weighted_holm is stats.weighted_holm
    for shim in (evals.scorers, evals.targets, evals.trace, evals.stats):
        assert all(hasattr(shim, name) for name in shim.__all__)


def test_every_subpackage_says_what_it_holds_and_may_import() -> None:
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent == PACKAGE or init.parent.name in ("migrations",):
            continue
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc) > 80, f"{init.relative_to(ROOT)}: no docstring saying what the package holds"
        if init.parent.parent == PACKAGE:
            assert "import" in doc.lower(), f"{init.relative_to(ROOT)}: the docstring does not say what it may import"


def test_no_two_sibling_modules_need_a_suffix_to_tell_them_apart() -> None:
    """``report.py`` beside ``reportfmt.py``, ``compare.py`` beside ``compare_cmd.py``: one stem
    that only a suffix tells from the other is what this layout removed."""
    for folder in {p.parent for p in PACKAGE.rglob("*.py")}:
        stems = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("__"))
        stems += sorted(p.name for p in folder.iterdir() if (p / "__init__.py").exists())
        clashes = [(a, b) for a in stems for b in stems if a != b and (b.startswith(a) or b.endswith(a))]
        assert clashes == [], f"{folder.relative_to(ROOT)}: {clashes}"


def test_every_command_lives_in_cli() -> None:
    from evals.cli.app import COMMANDS

    for name, (module, _) in COMMANDS.items():
        assert (PACKAGE / "cli" / f"{module}.py").exists(), name
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "cli":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert not {"configure", "main"} <= defined, f"{path.relative_to(ROOT)} is a command outside evals/cli"
