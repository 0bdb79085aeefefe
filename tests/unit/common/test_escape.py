"""Escaping of case data (docs/spec.md#escaping): an injection corpus through each helper and through whole
reports built by the real ``compare`` from results files, checked by a markdown scanner."""

from __future__ import annotations

import html
import re

import pytest
from fakes.mdcheck import lines_by_kind, problems, split_cells
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evals.common import escape
from evals.compare.analysis import compare
from evals.report.ci_outputs import annotation_lines, junit_xml
from evals.report.markdown import render_markdown
from evals.results.model import Attempt, AttemptError, CaseResult, Results, RunInfo

TOKEN = "EVIL"

CORPUS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(document.cookie)</script>",
    "</details></summary><details open><summary>fake verdict: PASS</summary>",
    "[click me](javascript:alert(1))",
    "![pixel](http://evil.example/x.png)",
    "![ref][logo]\n\n[logo]: http://evil.example/logo.png",
    "<http://evil.example/autolink> https://evil.example/bare www.evil.example",
    "a | b | c",
    "```\nbroke out of the fence\n```",
    "````\nquadruple\n````",
    "~~~\ntilde fence\n~~~",
    "`code` and ``double``",
    "@octocat please look, cc @my-org/security-team",
    "mail me: someone@example.com, or team@.example",
    # cmark-gfm links these although no word boundary precedes the scheme or "www":
    "9http://evil.example _www.evil.example x_https://evil.example",
    "fixes #123 and GH-456 and org/repo#7",
    "<!-- hide the rest",
    "-->",
    "line1\r\nline2\rline3\nline4",
    "nul\x00 bell\x07 esc\x1b[31m del\x7f c1\x85",
    "\u202eRTL override\u202c and \u2066isolate\u2069",
    "**bold** _em_ ~~strike~~ $x^2$ $$\\int$$",
    "# heading\n---\n===\n> quote\n- item\n1. one\n+ plus",
    "\\| escaped pipe \\` escaped tick \\",
    "&lt;already&gt; &#60;img&#62; &amp;",
    ":::: %%{init: {'theme':'dark'}}%% \"]; click A href",
    "[^1]: footnote\n[^1]",
    "<details><summary>x</summary>",
    "\ud800 lone surrogate",
]
LONG_LINE = "A" * 100_000


def evil(text: str) -> str:
    return f"{TOKEN} {text} {TOKEN}"


# ------------------------------------------------------------------------------------ helpers


@pytest.mark.parametrize("payload", [*CORPUS, LONG_LINE])
def test_inline_and_cell_are_inert(payload: str) -> None:
    for rendered in (escape.inline(evil(payload)), escape.cell(evil(payload))):
        assert "\n" not in rendered and "\r" not in rendered
        assert problems(rendered, TOKEN) == []
        # Inside a table row it stays one cell.
        assert len(split_cells(f"| {rendered} | x |")) == 4


@pytest.mark.parametrize("payload", CORPUS)
def test_code_block_cannot_be_broken_out_of(payload: str) -> None:
    block = escape.code_block(evil(payload))
    kinds = [kind for kind, _ in lines_by_kind(block)]
    assert kinds[0] == "fence" and kinds[-1] == "fence"
    assert set(kinds[1:-1]) <= {"code"}, kinds
    assert problems(block) == []


def test_fence_is_longer_than_any_backtick_run() -> None:
    assert escape.fence_for("no ticks") == "```"
    assert escape.fence_for("a ``` b") == "````"
    assert escape.fence_for("x" + "`" * 9) == "`" * 10
    # Tildes cannot close a backtick fence, so they do not lengthen it.
    assert escape.fence_for("~~~~~~") == "```"


def test_html_text_for_summary_lines() -> None:
    out = escape.html_text(evil('<b onclick="x">@someone</b> & #12\n</summary>'))
    assert "<" not in out and ">" not in out and '"' not in out
    assert "\n" not in out
    assert problems("<details><summary>" + out + "</summary>") == []
    # What a reader sees is what the case said.
    text = "[x](y) #12 @a `b` *c* | $d$ \\"
    assert html.unescape(escape.html_text(text)).replace(escape.ZWJ, "") == text


def test_long_text_is_cut_with_a_marker() -> None:
    out = escape.inline(LONG_LINE, limit=300)
    assert len(out) < 400
    assert "cut 99,700 chars" in out
    block = escape.code_block("\n".join(["x" * 5000] * 500))
    assert max(len(line) for line in block.split("\n")) < 500
    assert len(block) < 2100 and "[cut " in block
    many = escape.code_block("\n".join(["y" * 10] * 500))
    assert "cut 460 more lines" in many


def test_cut_happens_before_escaping() -> None:
    # Cutting after escaping could leave a dangling backslash or half an entity.
    out = escape.inline("<" * 10, limit=5)
    assert out.startswith("&lt;" * 5) and not re.search(r"&\w*$|\\$", out.split("…")[0])


def test_controls_and_bidi_overrides_are_made_visible() -> None:
    out = escape.inline("a\x00b\u202ec\x1bd")
    assert out == "a\ufffdb\ufffdc\ufffdd"


def test_mentions_references_and_urls_are_defused_but_readable() -> None:
    out = escape.inline("@octocat #12 https://x.example www.y.example a@b.example")
    # Readers still see the same characters (the joiner is zero-width).
    assert out.replace(escape.ZWJ, "").replace("\\", "") == "@octocat #12 https://x.example www.y.example a@b.example"
    assert problems(out) == []


@pytest.mark.parametrize("text", ["- item", "+ item", "1. one", "2) two", "===", "---", "> quote", "# h", "***"])
def test_block_starters_are_escaped(text: str) -> None:
    # A template may put case text at the start of a line (or right after "- ").
    out = escape.inline(text)
    assert out[0] in "\\&" or out[1] == "\\", out


def test_plain_text_stays_plain() -> None:
    assert escape.inline("language=ko") == "language=ko"
    assert escape.cell("") == "–"
    assert escape.inline({"q": 1}) == '{"q": 1}'


def test_mermaid_labels_cannot_break_the_chart() -> None:
    label = escape.mermaid_label('ko"]\n  click A href "javascript:x" %%{init}%% `')
    assert re.fullmatch(r"[\w .=/+\-…]*", label)
    assert len(escape.mermaid_label("x" * 100)) <= 30


def test_workflow_command_escaping() -> None:
    assert escape.workflow_data("50%\r\n::error::x") == "50%25%0D%0A::error::x"
    assert escape.workflow_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


_ALPHABET = st.sampled_from([*"`~*_[]()<>!|#@&$\\:/.-+=\"' \n\r\t\x00\u202eaZ09", "http://", "www.", "```"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_any_text_renders_inert(text: str) -> None:
    payload = evil(text)
    assert problems(escape.inline(payload), TOKEN) == []
    assert problems(f"| {escape.cell(payload)} | x |\n|---|---|\n| {escape.cell(payload)} | y |", TOKEN) == []
    block = escape.code_block(payload)
    assert [k for k, _ in lines_by_kind(block)][-1] == "fence"
    assert problems(block) == []


# ------------------------------------------------------------------------------------ whole reports


def _results(sha: str, *, fail_evil: bool, status: str = "success") -> Results:
    """60 cases whose every case-derived string is a corpus payload; on the candidate the
    "evil" slice regresses from all-pass to all-fail."""
    cases = []
    for i in range(60):
        payload = evil(CORPUS[i % len(CORPUS)])
        # pydantic refuses lone surrogates in str fields (ids, messages); Any fields keep them.
        text = payload.encode("utf-8", "replace").decode()
        is_evil_slice = i % 2 == 0
        passed = not (fail_evil and is_evil_slice)
        cases.append(
            CaseResult(
                id=f"{TOKEN}-{i} " + text[5:45],
                slices={"lang": evil("<b>@team | ko</b>") if is_evil_slice else "en"},
                input={"prompt": payload},
                expected=payload,
                attempts=[
                    Attempt(
                        passed=passed,
                        score=1.0 if passed else 0.0,
                        output=payload + "\n" + LONG_LINE[:3000],
                        error=AttemptError(kind="target", message=text) if not passed and i < 6 else None,
                    )
                ],
            )
        )
    return Results(
        run=RunInfo(
            suite=evil("suite @x"),
            status=status,
            total_cases=60,
            completed_cases=60,
            git_sha=sha,
            config_hash="sha256:same",
            message=evil("<img src=x>"),
        ),
        cases=cases,
    )


@pytest.fixture(scope="module")
def evil_comparison():
    return compare(_results("a" * 40, fail_evil=False), _results("b" * 40, fail_evil=True), tolerance=0.02)


@pytest.mark.parametrize("kind", ["full", "comment", "summary"])
def test_report_from_injection_corpus_is_inert(evil_comparison, kind: str) -> None:
    md = render_markdown(evil_comparison, kind=kind)
    assert problems(md, TOKEN) == []
    assert md.count(TOKEN) > 50  # the case data really is in the report
    assert "\u202e" not in md and "\x00" not in md
    assert max(len(line) for line in md.split("\n")) < 5000
    # The excerpts are there, each inside a fence that holds.
    assert sum(1 for kind_, line in lines_by_kind(md) if kind_ == "code" and TOKEN in line) > 20


def test_hostile_slice_name_is_still_named(evil_comparison) -> None:
    md = render_markdown(evil_comparison, kind="full")
    marker, first = md.split("\n", 2)[:2]
    assert marker == "> [!CAUTION]" and first.startswith("> **❌ evalgate FAIL:** ")
    assert "&lt;b&gt;@\u200dteam \\| ko&lt;/b&gt;" in md


def test_annotations_from_hostile_data_stay_single_commands(evil_comparison) -> None:
    lines = annotation_lines(evil_comparison)
    assert lines and all("\n" not in line and "\r" not in line for line in lines)
    for line in lines:
        m = re.fullmatch(r"::(error|warning) title=([^:]*)::(.*)", line)
        assert m, line
        assert "," not in m.group(2)


def test_junit_from_hostile_data_is_valid_xml(evil_comparison) -> None:
    import xml.etree.ElementTree as ET

    root = ET.fromstring(junit_xml(evil_comparison))
    assert root.tag == "testsuite"
    assert int(root.get("failures")) >= 1
