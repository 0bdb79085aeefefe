"""How an evalgate process ends (evals/cli/leave.py): its exit code, its atexit handlers (coverage
data is written by one) and its buffered output kept; the interpreter's teardown skipped; a normal
exit while another thread still runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import atexit, sys, threading, time
from pathlib import Path
from evals.cli.leave import leave

out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))

class Finalised:
    def __del__(self):
        (out / "teardown").write_text("ran")

kept = Finalised()
if sys.argv[2] == "thread":
    threading.Thread(target=lambda: (time.sleep(0.2), (out / "thread").write_text("done"))).start()
sys.stdout.write("buffered, no newline")
leave(3)
"""


def run(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), mode], capture_output=True, text=True)


def test_leave_keeps_the_code_the_handlers_and_the_output_and_skips_the_teardown(tmp_path: Path) -> None:
    done = run(tmp_path, "alone")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered, no newline"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert not (tmp_path / "teardown").exists()  # what a command keeps open, it closes itself


def test_leave_is_a_normal_exit_while_another_thread_runs(tmp_path: Path) -> None:
    done = run(tmp_path, "thread")
    assert done.returncode == 3, done.stderr
    assert (tmp_path / "thread").read_text() == "done"  # waited for, as a normal exit waits
    assert (tmp_path / "atexit").read_text() == "ran"
