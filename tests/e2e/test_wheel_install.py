"""The distribution as a release builds it: sdist and wheel pass ``twine check``, the wheel carries
its data files, installs into a fresh virtualenv and gates the quickstart as the README says
(.ci/wheel-smoke); and with another distribution owning ``evals`` installed beside it, the
``evalgate`` command says so in one line and exits 2."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from evals import __version__

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def sh(*argv: str | Path, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = sh(sys.executable, "-m", "build", "--outdir", out, ROOT)
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def the(dist: Path, pattern: str) -> Path:
    (found,) = dist.glob(pattern)
    return found


def test_sdist_and_wheel_pass_twine_and_carry_what_the_package_reads(dist: Path) -> None:
    wheel, sdist = the(dist, "evalgate_action-*.whl"), the(dist, "evalgate_action-*.tar.gz")
    assert wheel.name == f"evalgate_action-{__version__}-py3-none-any.whl"
    checked = sh(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    files = set(zipfile.ZipFile(wheel).namelist())
    for needed in [
        "_evalgate_launch.py",
        "evals/schemas/evalgate.schema.json",
        "evals/schemas/results.schema.json",
        "evals/report/templates/report.md.j2",
        "evals/report/templates/report.html.j2",
        "evals/report/templates/report.css",
        "evals/report/templates/report.js",
        "evals/run/scorers/templates/judge.md.j2",
        "evals/history/migrations/0001_runs.sqlite.sql",
        "evals/history/migrations/0001_runs.postgresql.sql",
        f"evalgate_action-{__version__}.dist-info/licenses/LICENSE",
    ]:
        assert needed in files
    # Every file of the source tree's package is in the wheel (a data file missing from
    # package-data would only show when a user's run needs it).
    source = {p.relative_to(ROOT).as_posix() for p in (ROOT / "evals").rglob("*") if p.is_file()}
    assert {f for f in source if "__pycache__" not in f} <= files
    with tarfile.open(sdist) as tar:
        members = {m.split("/", 1)[1] for m in tar.getnames() if "/" in m}
    assert {"pyproject.toml", "README.md", "LICENSE", "_evalgate_launch.py"} <= members
    entry_points = zipfile.ZipFile(wheel).read(f"evalgate_action-{__version__}.dist-info/entry_points.txt")
    assert b"evalgate = _evalgate_launch:main" in entry_points


def test_the_wheel_in_a_fresh_virtualenv_gates_the_quickstart_as_documented(dist: Path) -> None:
    smoke = sh(ROOT / ".ci" / "wheel-smoke", dist)
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert "evalgate gate: pass: " in smoke.stdout and "evalgate gate: fail: regression: " in smoke.stdout


def fake_evals_wheel(folder: Path) -> Path:
    """A distribution named ``evals`` whose ``evals/__init__.py`` fails to import, as OpenAI's does
    without its dependencies."""
    files = {
        "evals/__init__.py": b"from evals.api import CompletionFn\n",
        "evals/api.py": b"raise ModuleNotFoundError(\"No module named 'openai'\", name='openai')\n",
        "evals-3.0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: evals\nVersion: 3.0.1\n",
        "evals-3.0.1.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        "evals-3.0.1.dist-info/top_level.txt": b"evals\n",
    }
    rows = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for name, data in files.items()
    ]
    files["evals-3.0.1.dist-info/RECORD"] = ("\n".join([*rows, "evals-3.0.1.dist-info/RECORD,,"]) + "\n").encode()
    wheel = folder / "evals-3.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel


@pytest.mark.parametrize("theirs_last", [True, False], ids=["theirs-installed-last", "ours-installed-last"])
def test_another_distribution_owning_evals_is_one_line_naming_the_fix(
    dist: Path, tmp_path: Path, theirs_last: bool
) -> None:
    venv = tmp_path / "venv"
    assert sh(sys.executable, "-m", "venv", venv).returncode == 0
    ours, theirs = the(dist, "evalgate_action-*.whl"), fake_evals_wheel(tmp_path)

    def install(wheel: Path, *flags: str) -> None:
        # --no-deps: the check runs before anything of evals (or its dependencies) is imported.
        done = sh(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", *flags, wheel)
        assert done.returncode == 0, done.stderr

    install(ours)
    alone = sh(venv / "bin" / "python", "-c", "import _evalgate_launch; print(_evalgate_launch.conflict())")
    assert alone.stdout.strip() == "None", alone.stderr
    install(theirs)
    if not theirs_last:
        install(ours, "--force-reinstall")

    for argv in (["--version"], ["gate", "--config", "evalgate.yml"]):
        done = sh(venv / "bin" / "evalgate", *argv, cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stdout == "" and "Traceback" not in done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        line = done.stderr
        assert line.startswith("evalgate: the distribution 'evals' 3.0.1 also installed the package `evals`")
        assert "`pipx install evalgate-action`" in line and "`uv tool install evalgate-action`" in line
