"""Keeping the GitHub token away from the code under test (docs/spec.md#trust-boundaries, docs/github-action.md "Threat
model").

The strong boundary is the two-job layout: the suite runs in a job that holds no write token at
all. Inside one process tree these helpers still do what can be done: the token is moved out of
the environment block other processes can read (``isolate_token``), the suite's child gets an
environment without it (``suite_env``), and this process is made non-dumpable (``seal_process``).
They are not a boundary against code running as the same user (it can rewrite our modules, or
read our memory as root), which is why a job that runs the suite with a token that can write is
refused unless the workflow accepts it (``evals.pipeline.exposure``)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping, MutableMapping

from evals.common.errors import UsageError
from evals.results import console

# Where a GitHub token can sit in our environment: the action's `github-token` input (as
# GITHUB_TOKEN), the gh CLI's names, and INPUT_* variables a runner sets for action inputs.
TOKEN_VARS = ("GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
TOKEN_FD_VAR = "EVALGATE_TOKEN_FD"
MIN_TOKEN_CHARS = 16  # GitHub's tokens are 40+ characters


def isolate_token(env: MutableMapping[str, str] = os.environ) -> None:
    """Make sure the environment this process was started with holds no GitHub token: a child
    can read that block from ``/proc/<pid>/environ`` even after ``os.environ`` forgets it. If it
    does (``GITHUB_TOKEN``, the gh CLI's names, ``INPUT_*TOKEN*``, or another variable with the
    same value), this process re-executes itself without those variables, handing the token over
    on a pipe (``EVALGATE_TOKEN_FD``); the new image keeps it only in ``os.environ`` (which that
    file does not show) for the client and the store."""
    fd_text = env.pop(TOKEN_FD_VAR, None)
    if fd_text:
        try:
            with os.fdopen(int(fd_text), encoding="utf-8") as handle:
                token = handle.read()
        except (ValueError, OSError) as exc:
            raise UsageError(f"{TOKEN_FD_VAR}={fd_text!r}: cannot read the GitHub token from it ({exc})") from None
        if token:
            env["GITHUB_TOKEN"] = token
        return
    clean = suite_env(env)
    if os.name != "posix" or not any(value for name, value in env.items() if name not in clean):
        return
    removed = sorted(name for name in env if name not in clean)
    console.info(f"kept out of the suite's environment: {', '.join(removed)}")
    token = next((env[name] for name in TOKEN_VARS if env.get(name)), "")
    read_end, write_end = os.pipe()
    os.write(write_end, token.encode("utf-8"))  # a pipe holds far more than a token: no blocking
    os.close(write_end)
    os.set_inheritable(read_end, True)
    sys.stdout.flush()
    sys.stderr.flush()
    # -P: however this process was started (`python -m evals` puts the working folder first on
    # sys.path), the new image never imports from the user's checkout (an `evals/` or `yaml.py`
    # there would run with the token).
    argv = [sys.orig_argv[0], "-P", *sys.orig_argv[1:]]
    os.execve(sys.executable, argv, {**clean, TOKEN_FD_VAR: str(read_end)})


def suite_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the GitHub token: the token variables, any ``INPUT_*TOKEN*`` variable, and
    any variable whose value contains one of those tokens (the same token under another name;
    only for token-length values, so a placeholder like "x" does not take PATH with it). The
    suite's own secrets (an API key for the model under test) stay."""
    named = [env[name] for name in TOKEN_VARS if env.get(name)]
    named += [v for k, v in env.items() if k.upper().startswith("INPUT_") and "TOKEN" in k.upper()]
    tokens = {token for token in named if len(token) >= MIN_TOKEN_CHARS}
    return {
        name: value
        for name, value in env.items()
        if name not in TOKEN_VARS
        and not (name.upper().startswith("INPUT_") and "TOKEN" in name.upper())
        and not any(token in value for token in tokens)
    }


def seal_process() -> None:
    """Linux: PR_SET_DUMPABLE 0, which makes this process's /proc files (environ, mem) unreadable
    to other processes of the same user — the suite's child among them. Elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
