"""evals.github.publish: the sticky PR comment against the local GitHub stand-in, and the runner files
(GITHUB_STEP_SUMMARY, GITHUB_OUTPUT) as real files."""

from __future__ import annotations

import io

import pytest
from fakes.github_server import MAX_COMMENT_CHARS, GitHubServer, github_api_fixture  # noqa: F401
from fakes.suites import read_output_file

from evals.common.errors import UsageError
from evals.github.models import ACTIONS_BOT_LOGIN, App, Comment, Identity, User
from evals.github.publish import (
    MAX_SUMMARY_BYTES,
    comment_marker,
    emit_annotations,
    set_outputs,
    sticky_body,
    upsert_sticky_comment,
    upsert_sticky_comment_or_warn,
    write_step_summary,
)
from evals.github.transport import GitHubError
from evals.results.console import RELAYED_ENV

PR = 42


@pytest.fixture
def in_actions(monkeypatch):
    """Inside Actions a warning is a ``::warning`` workflow command (evals.results.console)."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv(RELAYED_ENV, raising=False)


def _patches(gh: GitHubServer) -> list:
    return [r for r in gh.requests if r.method == "PATCH"]


def test_sticky_comment_after_150_others_is_created_then_updated_then_left_alone(github_api: GitHubServer):
    gh = github_api
    for i in range(150):
        gh.add_comment(PR, f"review comment {i}", login=f"user{i % 7}")
    client = gh.client()

    first = upsert_sticky_comment(client, PR, "## Verdict: fail", "smoke")
    assert first.action == "created" and first.url and first.url.endswith(f"#issuecomment-{first.comment_id}")
    assert len(gh.comments(PR)) == 151

    second = upsert_sticky_comment(client, PR, "## Verdict: pass", "smoke")
    assert (second.action, second.comment_id) == ("updated", first.comment_id)
    ours = [c for c in gh.comments(PR) if c["user"]["login"] == ACTIONS_BOT_LOGIN]
    assert len(ours) == 1 and ours[0]["body"].endswith("## Verdict: pass")
    assert ours[0]["body"].startswith(comment_marker("smoke"))

    patches_before = len(_patches(gh))
    third = upsert_sticky_comment(client, PR, "## Verdict: pass", "smoke")
    assert (third.action, third.comment_id) == ("unchanged", first.comment_id)
    assert len(_patches(gh)) == patches_before  # not touched
    # Our comment sits on page 2 of 100: the search read both pages every time.
    comment_pages = [r for r in gh.requests if r.method == "GET" and r.path.endswith(f"/issues/{PR}/comments")]
    assert [r.query.get("page") for r in comment_pages].count(["2"]) == 3


def test_our_comment_deep_in_the_list_is_found_and_updated_in_place(github_api: GitHubServer):
    gh = github_api
    for i in range(120):
        gh.add_comment(PR, f"early {i}")
    mine = gh.add_comment(PR, sticky_body("old report", "full")[0], login=ACTIONS_BOT_LOGIN)
    for i in range(80):
        gh.add_comment(PR, f"late {i}")
    result = upsert_sticky_comment(gh.client(), PR, "new report", "full")
    assert (result.action, result.comment_id) == ("updated", mine["id"])
    assert len(gh.comments(PR)) == 201


def test_same_marker_from_another_login_is_not_ours(github_api: GitHubServer):
    gh = github_api
    text = sticky_body("impostor", "smoke")[0]
    other = gh.add_comment(PR, text, login="other-bot[bot]")
    quoted = gh.add_comment(PR, "> " + text, login="a-human")
    result = upsert_sticky_comment(gh.client(), PR, "real report", "smoke")
    assert result.action == "created"
    by_id = {c["id"]: c for c in gh.comments(PR)}
    assert by_id[other["id"]]["body"] == text and by_id[quoted["id"]]["body"] == "> " + text
    assert by_id[result.comment_id]["user"]["login"] == ACTIONS_BOT_LOGIN


def test_an_identity_owns_only_its_own_kind_of_comment():
    """An app's identity owns a bot's comment with its login made via that app (GitHub may leave
    ``performed_via_github_app`` out); a person's identity owns that person's comments only."""

    def comment(login: str, kind: str, via: str | None) -> Comment:
        app = App(slug=via) if via else None
        return Comment(id=1, body="", user=User(login=login, type=kind), performed_via_github_app=app)

    app = Identity(login="evalgate-app[bot]", app=True)
    assert app.wrote(comment("evalgate-app[bot]", "Bot", "evalgate-app"))
    assert app.wrote(comment("evalgate-app[bot]", "Bot", None))
    assert not app.wrote(comment("evalgate-app[bot]", "Bot", "another-app"))
    assert not app.wrote(comment("evalgate-app[bot]", "User", None))
    assert not app.wrote(comment("other-app[bot]", "Bot", "other-app"))
    person = Identity(login="octo-user", app=False)
    assert person.wrote(comment("octo-user", "User", None))
    assert not person.wrote(comment("someone-else", "User", None))


def test_gate_ids_keep_separate_comments_and_cannot_collide(github_api: GitHubServer):
    gh = github_api
    client = gh.client()
    ids = ["smoke", "smoke-extra", "x --> <!-- evalgate:gate=smoke -->", "ünïcode/gate"]
    results = [upsert_sticky_comment(client, PR, f"report for {i}", i) for i in ids]
    assert len({r.comment_id for r in results}) == len(ids)
    assert all(r.action == "created" for r in results)
    for gate_id in ids:
        marker = comment_marker(gate_id)
        assert marker.count("-->") == 1 and marker.endswith(" -->") and "--" not in marker[4:-3]
    # A report that quotes another gate's marker does not become that gate's comment.
    upsert_sticky_comment(client, PR, "text\n" + comment_marker("other"), "smoke")
    assert upsert_sticky_comment(client, PR, "other gate", "other").action == "created"
    # Running again updates each in place; no gate's marker matches another's comment.
    again = [upsert_sticky_comment(client, PR, f"report 2 for {i}", i) for i in ids]
    assert [r.comment_id for r in again] == [r.comment_id for r in results]
    assert all(r.action == "updated" for r in again)
    assert len(gh.comments(PR)) == len(ids) + 1


def test_oversized_body_is_trimmed_with_a_note_and_accepted(github_api: GitHubServer):
    gh = github_api
    body = "## Report\n\n<details><summary>all units</summary>\n\n```\n" + ("row | 1 | 2\n" * 9000)
    assert len(body) > MAX_COMMENT_CHARS
    result = upsert_sticky_comment(gh.client(), PR, body, "smoke")
    assert result.trimmed and result.action == "created"
    posted = gh.comments(PR)[0]["body"]
    assert len(posted) <= MAX_COMMENT_CHARS
    assert "Trimmed by evalgate" in posted
    assert posted.count("```") % 2 == 0 and posted.count("<details>") == posted.count("</details>")


def test_server_rejects_bodies_over_the_limit(github_api: GitHubServer):
    with pytest.raises(GitHubError, match="too long") as info:
        github_api.client().create_issue_comment(PR, "x" * (MAX_COMMENT_CHARS + 1))
    assert info.value.status == 422


def test_read_only_token_gives_a_warning_naming_the_permission_not_an_error(
    github_api: GitHubServer, in_actions, capsys
):
    gh = github_api
    hint = "The comment is in out/comment.md;\npost it with mode: comment."
    result = upsert_sticky_comment_or_warn(gh.client(gh.read_token), PR, "report", "smoke", hint=hint)
    assert result is None
    line = capsys.readouterr().err
    assert line.startswith("::warning title=evalgate::") and line.count("\n") == 1
    assert "pull-requests: write" in line and "verdict is unaffected" in line
    assert line.rstrip("\n").endswith("out/comment.md;%0Apost it with mode: comment.")  # one command line
    assert gh.comments(PR) == []


def test_comment_faults_end_in_one_comment(github_api: GitHubServer):
    gh = github_api
    client = gh.client()
    gh.faults.add("GET", rf"/issues/{PR}/comments$", "502")
    gh.faults.add("POST", rf"/issues/{PR}/comments$", "reset-after")
    assert upsert_sticky_comment(client, PR, "v1", "smoke").action == "created"
    gh.faults.add("PATCH", r"/issues/comments/\d+$", "secondary", retry_after=1)
    gh.faults.add("PATCH", r"/issues/comments/\d+$", "reset-after")
    assert upsert_sticky_comment(client, PR, "v2", "smoke").action == "updated"
    assert gh.faults.pending() == []
    assert [c["body"].split("\n", 1)[1] for c in gh.comments(PR)] == ["v2"]


def test_unreachable_github_is_a_warning_too(github_api: GitHubServer, in_actions, capsys):
    gh = github_api
    gh.faults.add("GET", r"/comments$", "500", times=10)
    assert upsert_sticky_comment_or_warn(gh.client(max_retries=1), PR, "r", "smoke") is None
    warning = capsys.readouterr().err.splitlines()[-1]
    assert warning.startswith("::warning") and "500" in warning


# -- runner files ----------------------------------------------------------------------------------


def test_step_summary_appends_and_outside_actions_does_nothing(tmp_path):
    path = tmp_path / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(path)}
    assert write_step_summary("# one", env) and write_step_summary("# two\n", env)
    assert path.read_text() == "# one\n# two\n"
    assert write_step_summary("# three", {}) is False


def test_step_summary_is_kept_within_one_mib_counting_what_is_there(tmp_path):
    path = tmp_path / "summary.md"
    path.write_text("earlier step output\n" * 1000)
    big = "| ü | 1 |\n" * 200_000  # multibyte characters: the limit is in bytes
    assert write_step_summary(big, {"GITHUB_STEP_SUMMARY": str(path)})
    assert path.stat().st_size <= MAX_SUMMARY_BYTES
    text = path.read_text(encoding="utf-8")
    assert text.startswith("earlier step output") and "Trimmed by evalgate" in text


def test_step_summary_write_failure_is_a_warning(tmp_path, in_actions, capsys):
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path)}  # a directory: open() fails
    assert write_step_summary("# x", env) is False
    assert capsys.readouterr().err.startswith("::warning title=evalgate::")


def test_outputs_survive_multiline_and_hostile_values(tmp_path):
    path = tmp_path / "output"
    path.write_text("earlier=1\n")
    hostile = "line1\nverdict=pass\nghadelimiter_x\n::set-output name=x::y\n<<EOF"
    set_outputs(
        {"verdict": "fail", "report-path": "out/report.md", "reason": hostile, "comment-url": None},
        {"GITHUB_OUTPUT": str(path)},
    )
    assert read_output_file(path) == {
        "earlier": "1",
        "verdict": "fail",
        "report-path": "out/report.md",
        "reason": hostile,
        "comment-url": "",
    }
    set_outputs({"verdict": "pass"}, {})  # outside Actions: nothing, no error


def test_output_names_are_checked(tmp_path):
    with pytest.raises(UsageError):
        set_outputs({"bad\nname": "x"}, {"GITHUB_OUTPUT": str(tmp_path / "o")})


def test_annotations_cannot_break_into_a_second_command():
    stream = io.StringIO()
    emit_annotations(["::error title=regression::slice a dropped", "::warning::x\n::error::injected"], stream)
    assert stream.getvalue().splitlines() == [
        "::error title=regression::slice a dropped",
        "::warning::x%0A::error::injected",
    ]
