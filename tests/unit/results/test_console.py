"""What evalgate says goes through one funnel (evals.results.console, docs/architecture.md "What
evalgate says"): its levels and their lines, workflow commands inside Actions (escaped, past the
log guard, plain again when a parent evalgate relays the output), masking before escaping, and a
check that library code writes nothing to stdout or stderr on its own."""

from __future__ import annotations

import ast
import io
import sys
from pathlib import Path

import pytest

import evals
from evals.common.escape import ZWSP, workflow_data
from evals.common.logguard import LogGuard
from evals.results import console
from evals.results.masking import mask_text

PACKAGE = Path(evals.__file__).resolve().parent
# The commands may print their product; the funnel is where everything else is written.
MAY_WRITE = ("cli/", "results/console.py")
KEY = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2"  # the shape of an OpenAI key: masked by its pattern


@pytest.fixture
def local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv(console.RELAYED_ENV, raising=False)


@pytest.fixture
def actions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv(console.RELAYED_ENV, raising=False)


# -- levels --------------------------------------------------------------------------------------


def test_each_level_is_one_line_on_stderr_naming_the_command(local: None, capsys: pytest.CaptureFixture[str]) -> None:
    console.info("promoted abc", source="gate")
    console.notice("the object is the answer", source="run")
    console.warning("history x: could not record it")
    console.error("no such file", source="compare")
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "evalgate gate: promoted abc",
        "evalgate run: note: the object is the answer",
        "evalgate: warning: history x: could not record it",
        "evalgate compare: error: no such file",
    ]


def test_a_result_is_the_commands_product_on_stdout(local: None, capsys: pytest.CaptureFixture[str]) -> None:
    console.result("evalgate run: success, 3/3 cases: out/results.json")
    assert capsys.readouterr() == ("evalgate run: success, 3/3 cases: out/results.json\n", "")


def test_a_multi_line_error_keeps_its_lines_locally(local: None, capsys: pytest.CaptureFixture[str]) -> None:
    console.error("evalgate.yml: 2 problems\n  line 3: x\n  line 4: y", source="run")
    assert capsys.readouterr().err == "evalgate run: error: evalgate.yml: 2 problems\n  line 3: x\n  line 4: y\n"


# -- inside GitHub Actions -----------------------------------------------------------------------


def test_in_actions_notices_warnings_and_errors_are_workflow_commands(
    actions: None, capsys: pytest.CaptureFixture[str]
) -> None:
    console.info("promoted abc", source="gate")  # what happened is a log line, not an annotation
    console.notice("n", source="run")
    console.warning("w")
    console.error("e", source="gate")
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "evalgate gate: promoted abc",
        "::notice title=evalgate run::n",
        "::warning title=evalgate::w",
        "::error title=evalgate gate::e",
    ]


def test_a_command_cannot_be_ended_or_followed_by_what_its_message_quotes(
    actions: None, capsys: pytest.CaptureFixture[str]
) -> None:
    console.warning("slice ko\n::add-mask::leak\r::stop-commands::x 100%")
    err = capsys.readouterr().err
    assert err == "::warning title=evalgate::slice ko%0A::add-mask::leak%0D::stop-commands::x 100%25\n"


def test_commands_go_past_the_log_guard_and_plain_lines_do_not(actions: None, monkeypatch: pytest.MonkeyPatch) -> None:
    written = io.StringIO()
    monkeypatch.setattr(sys, "stderr", LogGuard(written))
    console.info("quoted from a user's file:\n::set-output name=x::y")
    console.warning("w")
    assert written.getvalue().splitlines() == [
        "evalgate: quoted from a user's file:",
        f"{ZWSP}::set-output name=x::y",
        "::warning title=evalgate::w",
    ]


def test_a_relayed_child_speaks_plain_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gate relays its child `evalgate run` through the log guard, which would defuse a command
    the child meant into an unreadable line: a relayed child says warnings as text."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv(console.RELAYED_ENV, "1")
    console.warning("limits: run_timeout_s is now limits.max_duration_s")
    assert capsys.readouterr().err == "evalgate: warning: limits: run_timeout_s is now limits.max_duration_s\n"


def test_relayed_output_is_defused_and_masked(local: None, capsys: pytest.CaptureFixture[str]) -> None:
    console.relayed(f"::add-mask::x {KEY}")
    err = capsys.readouterr().err
    assert err == f"{ZWSP}::add-mask::x sk-***\n"


# -- masking -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["local", "actions"])
def test_a_secret_is_masked_at_every_level(
    mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(console.RELAYED_ENV, raising=False)
    if mode == "actions":
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
    else:
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    for say in (console.info, console.notice, console.warning, console.error):
        say(f"the server said: Authorization: Bearer {KEY[3:]} for {KEY}")
    console.result(f"key {KEY}")
    out, err = capsys.readouterr()
    assert KEY[3:] not in out + err and KEY[3:12] not in out + err
    assert err.count("***") == 8 and out == "key sk-***\n"


def test_masking_comes_before_the_commands_escaping(actions: None, capsys: pytest.CaptureFixture[str]) -> None:
    """A key on the line after another: escaped first, the line break becomes ``%0A`` right before
    ``sk-``, no word boundary is left there and the key's pattern would not match it."""
    message = f"the target printed:\n{KEY}"
    assert KEY in mask_text(workflow_data(message))  # why the order matters
    console.warning(message)
    assert capsys.readouterr().err == "::warning title=evalgate::the target printed:%0Ask-***\n"


# -- the check that keeps it so ------------------------------------------------------------------


def own_writes(source: str) -> list[str]:
    """``print(...)``, ``sys.stdout.write(...)`` and ``sys.stderr.write(...)`` calls in ``source``
    (as ``line: code``): output that would bypass the funnel's levels, Actions mode and masking."""

    def writes(func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            return func.id == "print"
        stream = func.value if isinstance(func, ast.Attribute) and func.attr in ("write", "writelines") else None
        return (
            isinstance(stream, ast.Attribute)
            and stream.attr in ("stdout", "stderr", "__stdout__", "__stderr__")
            and isinstance(stream.value, ast.Name)
            and stream.value.id == "sys"
        )

    calls = (node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call) and writes(node.func))
    return [f"{call.lineno}: {ast.unparse(call)[:80]}" for call in calls]


def test_library_code_says_everything_through_the_funnel() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where.startswith(MAY_WRITE):
            continue
        if found := own_writes(path.read_text(encoding="utf-8")):
            offenders[where] = found
    assert not offenders, (
        "write through evals.results.console (info/notice/warning/error on stderr, result on stdout), "
        f"not print or sys.stdout/sys.stderr: {offenders}"
    )


def test_the_check_finds_each_way_of_writing_on_its_own() -> None:
    source = (
        "import sys\n"
        "print('x')\n"
        "print('y', file=sys.stderr)\n"
        "sys.stderr.write('z')\n"
        "sys.stdout.writelines(['w'])\n"
        "sys.__stderr__.write('v')\n"
        "stream.write('a file or a buffer is not the console')\n"
        "console.warning('fine')\n"
    )
    assert [line.split(":")[0] for line in own_writes(source)] == ["2", "3", "4", "5", "6"]
