"""``--html``: one self-contained HTML report, opened in a real headless Chromium
(@sparticuz/chromium driven by puppeteer-core, installed by the test itself with npm into a cache
folder outside the repository): it renders the verdict and the per-slice table, its search box
filters the case rows, it makes no request beyond the page itself (request interception), and
text from cases carrying HTML, scripts and image links stays inert. Without node/npm, or when
the packages or the browser cannot be obtained, the browser tests skip and say why."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.paths import BROWSER, ROOT

from evals.report.html import render_html
from evals.results.files import save_results
from evals.results.model import Attempt, AttemptError, CaseResult, Results, RunInfo
from evals.results.summary import summarize

QUICKSTART = ROOT / "examples" / "quickstart" / "evalgate.yml"
CHECK = BROWSER / "check_report.mjs"
RENDER = BROWSER / "render_comment.mjs"
FIT = BROWSER / "measure_fit.mjs"
# marked + marked-alert: a GFM renderer with GitHub's alert syntax, to see the PR comment drawn.
PACKAGES = ["@sparticuz/chromium@^147.0.0", "puppeteer-core@^24.43.1", "marked@^18", "marked-alert@^2"]
# Under the virtualenv by default (sys.prefix): outside the sources, gone with the venv.
CACHE = Path(os.environ.get("EVALGATE_BROWSER_CACHE") or Path(sys.prefix) / "evalgate-browser")
HOSTILE = '<img src="http://127.0.0.1:9/pixel.png"><script>fetch("http://127.0.0.1:9/x")</script>'


@pytest.fixture(scope="session")
def browser() -> Path:
    """The folder holding node_modules with the two packages, after checking the browser starts."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("browser test: node and npm are needed to install @sparticuz/chromium + puppeteer-core")
    modules = CACHE / "node_modules"
    CACHE.mkdir(parents=True, exist_ok=True)
    # Test workers (pytest -n) start at once on a fresh venv: one installs, the others wait for it
    # rather than finding half-made package folders.
    with (CACHE / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((modules / name.rsplit("@", 1)[0]).is_dir() for name in PACKAGES):
            _install(npm)
    return CACHE


def _install(npm: str) -> None:
    try:
        done = subprocess.run(
            [npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--loglevel=error", *PACKAGES],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"browser test: npm install {' '.join(PACKAGES)} took over 15 minutes")
    if done.returncode != 0:
        pytest.skip(f"browser test: npm install {' '.join(PACKAGES)} failed: {done.stderr.strip()[-500:]}")


def open_in_browser(browser: Path, page: Path, screenshot: Path, query: str) -> dict:
    return _node(browser, CHECK, str(page.resolve()), str(screenshot), query)


def comment_in_browser(browser: Path, comment: Path, screenshot: Path) -> dict:
    """The PR comment as GitHub draws it (GFM with alerts), what is on screen without a click."""
    return _node(browser, RENDER, str(comment.resolve()), str(comment.with_suffix(".html").resolve()), str(screenshot))


def comment_in_column(browser: Path, comment: Path, screenshot: Path, column: int) -> dict:
    """The PR comment drawn in a column ``column`` px wide, plus (``fit``) with every fold open:
    each table's scroll and drawn widths, and how many lines each interval cell takes."""
    html = str(comment.with_suffix(".html").resolve())
    return _node(browser, RENDER, str(comment.resolve()), html, str(screenshot), str(column))


def fit_in_browser(browser: Path, page: Path, shots: Path, widths: list[int]) -> dict:
    """Per window width: the column's right edge, the page's scroll width, the runs table's right
    edge and what sticks out of the column (outside a box that scrolls it); screenshots
    ``<shots>-<width>.png``."""
    return _node(browser, FIT, str(page.resolve()), str(shots), *map(str, widths))


def keep_screenshot(shot: Path) -> None:
    if os.environ.get("EVALGATE_SCREENSHOT_DIR"):  # to look at the page: the screenshot is kept there
        keep = Path(os.environ["EVALGATE_SCREENSHOT_DIR"])
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, keep / shot.name)


def _node(browser: Path, source: Path, *args: str) -> dict:
    # Each test worker its own folder, below the packages (node looks for them in the parent
    # folders of the script): a script is never rewritten while another worker's node reads it,
    # and Chromium, which unpacks itself into the temp folder with a plain "exists? use it", is
    # never started half-written by one worker while another unpacks it.
    own = browser / f"worker-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    (own / "tmp").mkdir(parents=True, exist_ok=True)
    for module in source.parent.glob("*.mjs"):  # the script and the modules it imports
        shutil.copyfile(module, own / module.name)
    script = own / source.name
    done = subprocess.run(
        ["node", str(script), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "TMPDIR": str(own / "tmp")},
    )
    if done.returncode != 0 and "Failed to launch the browser process" in done.stderr:
        pytest.skip(f"browser test: Chromium does not start here: {done.stderr.strip()[-400:]}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def hostile_results() -> Results:
    """Cases whose ids, slices and outputs carry HTML that would load things if it were not escaped."""
    cases = []
    for i in range(6):
        lang = "ko" if i % 2 else "en"
        cases.append(
            CaseResult(
                id=f"case-{i}" if i else f"case-0 {HOSTILE}",
                slices={"language": lang if i else f"{lang}<b>x</b>"},
                input=f"question {i}",
                expected="42",
                attempts=[
                    Attempt(
                        passed=i % 3 != 0,
                        output=HOSTILE if i == 1 else f"FINAL ANSWER: {40 + i}",
                        latency_ms=10.0 * i,
                        error=AttemptError(kind="infra", message=f"Connection error. {HOSTILE}") if i == 5 else None,
                    )
                ],
            )
        )
    run = RunInfo(suite="hostile", status="success", total_cases=6, completed_cases=5)
    return Results(run=run, cases=cases)


def test_report_is_one_file_that_loads_nothing():
    """Checked on the text itself, browser or not: no external URL in any src/href, a CSP that
    forbids every load, and case text escaped."""
    results = hostile_results()
    page = render_html(results=results, summary=summarize(results))
    assert "default-src 'none'" in page
    assert "<img" not in page and 'src="http' not in page and "href=" not in page
    assert page.count("<script>") == 1  # the search script, nothing from a case
    assert "unsafe-inline" not in page and re.search(r"script-src 'sha256-[A-Za-z0-9+/]+=*';", page)
    assert "&lt;img src=&#34;http://127.0.0.1:9/pixel.png&#34;&gt;" in page


def test_run_html_renders_searches_and_stays_offline(browser, tmp_path):
    results = hostile_results()
    save_results(results, tmp_path / "results.json")
    page = tmp_path / "report.html"
    shown = subprocess.run(
        [sys.executable, "-m", "evals", "show", str(tmp_path / "results.json"), "--html", str(page)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 3, shown.stderr  # one case only has an infra error: a partial run
    seen = open_in_browser(browser, page, tmp_path / "run.png", "ko")
    assert seen["requests"] == [f"file://{page.resolve()}"], seen["requests"]
    assert not seen["errors"]
    assert seen["verdict"] == "complete run" or seen["verdict"] == "partial run"
    assert seen["slices"][0] == "overall" and "language=ko" in seen["slices"]
    assert seen["before"] == {"cases": 6} and seen["after"] == {"cases": 3}
    assert HOSTILE in seen["text"]  # shown as text, not run
    assert seen["scripts"] == 1


def test_gate_html_has_the_verdict_and_a_searchable_case_diff(browser, tmp_path):
    """The quickstart's regressed gate: `fail`, the slice table, and the pass → fail diff that a
    search for one case id narrows to that case."""
    page = tmp_path / "gate.html"
    env = {**os.environ, "QUICKSTART_REGRESS": "ko"}
    command = [sys.executable, "-m", "evals", "gate", "--config", str(QUICKSTART), "--out-dir", str(tmp_path / "out")]
    gated = subprocess.run(
        [*command, "--html", str(page)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd=tmp_path,
    )
    assert gated.returncode == 1, gated.stderr
    comparison = json.loads((tmp_path / "out" / "comparison.json").read_text())
    flipped = comparison["case_diff"]["pass_to_fail"][0]["id"]
    seen = open_in_browser(browser, page, tmp_path / "gate.png", flipped)
    assert seen["requests"] == [f"file://{page.resolve()}"]
    assert not seen["errors"]
    assert seen["verdict"] == "fail"
    assert "language=ko" in seen["slices"]
    d = comparison["case_diff"]
    listed = len(d["pass_to_fail"]) + len(d["fail_to_pass"]) + len(d["score_drops"])
    cut = sum(d[f"n_{k}"] > len(d[k]) for k in ("pass_to_fail", "fail_to_pass", "score_drops"))
    assert seen["before"]["diff"] == listed + cut  # each cut list says "showing N of M" in a row
    assert f"Showing {len(d['pass_to_fail'])} of {d['n_pass_to_fail']} pass → fail cases" in seen["text"]
    assert seen["after"]["diff"] >= 1 and seen["after"]["diff"] < seen["before"]["diff"]
    assert seen["after"]["cases"] == 1
    # The history's trend of a regressed unit (comparison.trends, docs/spec.md#trends) is drawn when present.
    from evals.compare.model import Comparison, SliceTrend

    with_trend = Comparison.model_validate(comparison)
    with_trend.trends = [
        SliceTrend(unit="language=ko", metric="pass_rate", labels=["abc1234", "def5678", "candidate"],
                   values=[0.9, 0.8875, 0.5])
    ]  # fmt: skip
    trend_page = render_html(comparison=with_trend)
    assert "<summary>Trends (1)</summary>" in trend_page and "pass_rate on language=ko" in trend_page
    assert trend_page.count("<circle") == 3 and ">abc1234<" in trend_page and ">50.0%<" in trend_page
    assert "<summary>Trends" not in render_html(comparison=Comparison.model_validate(comparison))
    keep_screenshot(tmp_path / "gate.png")


def test_a_breached_floor_is_on_the_html_page_too():
    """docs/spec.md#html-report: the page says what the markdown says — here the absolute floor a first run missed."""
    from evals.compare.analysis import compare
    from evals.suite.config import SuiteConfig
    from evals.suite.scoring import MetricSpec

    cases = [CaseResult(id=f"c{i}", attempts=[Attempt(passed=i < 5)]) for i in range(20)]
    results = Results(run=RunInfo(suite="s", status="success", total_cases=20, completed_cases=20), cases=cases)
    config = SuiteConfig(suite="s", cases=[], metrics={"pass_rate": MetricSpec(min=0.9)})
    comparison = compare(None, results, config)
    page = render_html(results=results, summary=summarize(results), comparison=comparison)
    assert "Beyond an absolute floor (1)" in page and "pass_rate on overall below its floor min 0.9: 0.25" in page
    assert "· 20 cases" in page
