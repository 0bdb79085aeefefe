"""Secret masking before anything is written (docs/spec.md#masking)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import textwrap

import pytest
from fakes.suites import echo_cases, write_suite

from evals.results.masking import MASK, MAX_MASKED_CHARS, MIN_SECRET_CHARS, clip_masked, env_secrets, mask_secrets
from evals.results.model import Attempt, AttemptError, clip_output


def test_secret_keys_masked_at_any_depth_case_insensitive():
    value = {
        "api_key": "sk-live-123",
        "Password": "hunter2",
        "nested": [{"accessToken": "abc"}, {"headers": {"Authorization": "Bearer xyz", "X-Api-Key": "k"}}],
        "client_secret": {"value": "s"},
        "PRIVATE_KEY": "-----BEGIN",
    }
    assert mask_secrets(value) == {
        "api_key": MASK,
        "Password": MASK,
        "nested": [{"accessToken": MASK}, {"headers": {"Authorization": MASK, "X-Api-Key": MASK}}],
        "client_secret": MASK,
        "PRIVATE_KEY": MASK,
    }


def test_usage_fields_and_look_alike_keys_are_kept():
    value = {
        "tokens_in": 120,
        "tokens_out": 14,
        "max_tokens": 256,
        "token_count": 3,
        "tokenizer": "gpt2",
        "author": "kim",
    }
    assert mask_secrets(value) == value


def test_secrets_inside_text():
    text = (
        'curl -H "Authorization: Bearer eyJhbGciOi.J9" "https://api.example/v1?access_token=zzz123&q=1" '
        'key=sk-proj-ABCDEFGHIJKLMNOPQRSTUV password: hunter2 {"api_key": "qq-1"} ghp_abcdefghijklmnopqrstuvwxyz0123 '
        "max_tokens=256 tokens: 12"
    )
    masked = mask_secrets(text)
    for secret in ("eyJhbGciOi", "zzz123", "ABCDEFGHIJKLMNOP", "hunter2", "qq-1", "ghp_abcdefghij"):
        assert secret not in masked, secret
    assert "Authorization: ***" in masked and "&q=1" in masked
    assert "max_tokens=256 tokens: 12" in masked
    assert mask_secrets("Bearer abc.def-ghi") == "Bearer ***"


def test_extra_values_redacted_everywhere_including_keys():
    key = "my-very-own-key-42"
    value = {"output": f"the key is {key}!", "list": [f"x{key}x", 7], key: "v", "t": (key,)}
    assert mask_secrets(value, [key, "", "  "]) == {
        "output": "the key is ***!",
        "list": ["x***x", 7],
        MASK: "v",
        "t": (MASK,),
    }


def test_plain_values_unchanged_and_input_not_modified():
    value = {"answer": "FINAL ANSWER: 42", "n": 1.5, "ok": True, "none": None, "apikey": ""}
    assert mask_secrets(value) == value
    original = {"password": "p"}
    mask_secrets(original)
    assert original == {"password": "p"}


def test_pydantic_models_keep_their_type():
    attempt = Attempt(
        output="Authorization: Bearer abcdef123",
        error=AttemptError(kind="target", message="bad key sk-abcdefghijklmnopqrstu"),
    )
    masked = mask_secrets(attempt, ["abcdef123"])
    assert isinstance(masked, Attempt)
    assert masked.output == "Authorization: ***" and masked.error.message == "bad key sk-***"


# ------------------------------------------------------------- secrets outside the known patterns

ENV_SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AZURE_OPENAI_KEY": "3f9c1d2e8a7b4c6d9e0f1a2b3c4d5e6f",
    "PGPASSWORD": "correct-horse-battery",
    "HF_TOKEN": "hf-internal-value-77",
}


# Secrets no environment variable holds, in the shapes a leak takes: found by their patterns alone.
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I3PXYwJVkV0vMw"
PEM_BODY = "MIIEowIBAAKCAQEA1cOuV2nQvY3xK8u0rHhZl"
SHAPES = [
    "https://f00dfeedbeefcafe@o1.ingest.sentry.io/42",
    "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "https://discord.com/api/webhooks/1234567890/webhook-secret-part",
    "AIzaSyD-neutral-google-key-0123456789abc",
    JWT,
    f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----",
]
SHAPE_SECRETS = [
    "f00dfeedbeefcafe",
    "T0000/B0000",
    "XXXXXXXXXXXX",
    "webhook-secret-part",
    "neutral-google-key",
    JWT[:40],
    JWT[-20:],
    PEM_BODY,
]


def test_every_environment_value_is_secret_but_the_harmless_ones():
    env = {
        **ENV_SECRETS,
        "MY_DB": "a-value-of-no-known-shape",  # no secret-looking name: masked all the same
        "GITHUB_TOKEN": "ghs_runnerTokenValue0123456789",
        "ACTIONS_RUNTIME_TOKEN": "eyJ0eXAiOiJKV1Q-runtime",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "request-token-value",
        "EVALGATE_HISTORY_URL": "postgresql://u:s3cretpw@db/h",
        "PEM": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n",
        "PATH": "/usr/local/bin:/usr/bin",
        "HOME": "/home/runner",
        "LANG": "en_US.UTF-8",
        "LC_ALL": "en_US.UTF-8",
        "GITHUB_SHA": "4f2c" * 10,
        "GITHUB_WORKSPACE": "/home/runner/work/app/app",
        "RUNNER_TEMP": "/home/runner/work/_temp",
        "EVALGATE_REASON": "first baseline",
        "WORKERS": "4",
        "SHORT_KEY": "1234567",  # under MIN_SECRET_CHARS: masking it would mask ordinary text
        "PADDED": "  padded-secret-value\n",
    }
    assert set(env_secrets(env)) == {
        *ENV_SECRETS.values(),
        "a-value-of-no-known-shape",
        "ghs_runnerTokenValue0123456789",
        "eyJ0eXAiOiJKV1Q-runtime",
        "request-token-value",
        "postgresql://u:s3cretpw@db/h",
        env["PEM"].strip(),
        *("-----BEGIN PRIVATE KEY-----", "MIIEvQIBADANBgkq", "-----END PRIVATE KEY-----"),  # printed line by line
        "padded-secret-value",
    }
    assert all(len(v) >= MIN_SECRET_CHARS for v in env_secrets(env))


def test_a_hints_placeholder_is_not_masked_but_a_value_that_starts_like_one_is():
    """`export OPENAI_API_KEY=...` is how evalgate tells a user to set a key; masking it to `=***`
    made the hint read as if a key had leaked. Only the bare placeholder is spared."""
    hint = "not set: export OPENAI_API_KEY=... (the key is never read from the config file)"
    assert mask_secrets(hint) == hint
    assert mask_secrets('token: "..."') == 'token: "..."'
    for leaked in ("OPENAI_API_KEY=...sk-live-1234", "password=...x", "api_key: ....."):
        assert mask_secrets(leaked).endswith(MASK), leaked


def test_secrets_of_unknown_names_and_shapes_inside_text():
    text = " ".join(SHAPES) + " MY_PASSPHRASE=horse-staple svc_auth: opaque99 persist-credentials: false"
    masked = mask_secrets(text)
    for secret in [*SHAPE_SECRETS, "horse-staple", "opaque99"]:
        assert secret not in masked, secret
    assert "https://***@o1.ingest.sentry.io/42" in masked and "https://hooks.slack.com/***" in masked
    assert "-----BEGIN RSA PRIVATE KEY-----***" in masked and "persist-credentials: false" in masked
    assert mask_secrets({"svcAuth": "x", "passphrase": "y", "credential": "z", "author": "kim"}) == {
        "svcAuth": MASK,
        "passphrase": MASK,
        "credential": MASK,
        "author": "kim",
    }


def test_passwords_in_urls():
    text = "connect postgres://app:pw@db:5432/x or https://user:p%40ss@h.example/a; ssh://git@github.com stays"
    # The user goes too: a Sentry DSN's key is its user name.
    assert (
        mask_secrets(text) == "connect postgres://***@db:5432/x or https://***@h.example/a; ssh://***@github.com stays"
    )
    unencoded = "postgresql://u:p@ss#w?rd@db.internal/h and postgresql://u@db/h?sslmode=require"
    assert mask_secrets(unencoded) == "postgresql://***@db.internal/h and postgresql://***@db/h?sslmode=require"


# Secrets of unknown names and shapes (docs/spec.md#masking), in the environment the target reads.
UNKNOWN_ENV_SECRETS = {
    "SENTRY_DSN": "https://abc123def4567890@o1.ingest.sentry.io/42",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T000/B000/ZZZZZZZZZZZZZZZZ",
    "MY_PASSPHRASE": "correct horse battery staple",
    "MAPS": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "SERVICE_AUTH": "opaque-auth-value-99",
    "NEUTRAL_SETTING": "zq8v7w6x5y4u3t",
}
TARGET_ENV_SECRET = "only-in-target-env-42"  # in target.env, not in evalgate's own environment


def _written(folder) -> dict[str, bytes]:
    """Every file under ``folder`` but the suite's own: gzip inflated (baseline snapshots), the
    SQLite history as its SQL dump (rows may still be in its write-ahead log)."""
    import gzip
    import sqlite3

    out = {}
    for path in folder.rglob("*"):
        if path.is_file() and path.name not in ("target.py", "evalgate.yml", "cases.jsonl"):
            data = path.read_bytes()
            out[str(path.relative_to(folder))] = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    with contextlib.closing(sqlite3.connect(folder / ".evalgate" / "history.sqlite")) as db:
        out["history rows"] = "\n".join(db.iterdump()).encode()
    return out


@pytest.mark.e2e
def test_secrets_of_any_name_or_shape_reach_nothing_evalgate_writes(tmp_path):
    """Two real gates on a command target: one seeds the baseline, then the target prints every
    secret above, and the JWT, private key, DSN, webhook and AIza key of SHAPES, in its outputs,
    metadata, trace and stderr (a failed case). None of them is in results.json, report.md,
    comment.md, comparison.json, the HTML report, the baseline store, the SQLite history or what
    evalgate printed; the outputs themselves are there."""
    (tmp_path / "target.py").write_text(
        textwrap.dedent(
            """
            import json, os, sys
            case = json.load(sys.stdin)
            if not os.environ.get("LEAK"):
                print(json.dumps({"output": case["input"]}))
                sys.exit(0)
            secrets = " | ".join([*(os.environ[k] for k in NAMES), *SHAPES])
            if case["id"] == "c001":
                sys.stderr.write("failed with " + secrets)
                sys.exit(3)
            trace = [{"kind": "log", "name": "env", "content": secrets}]
            print(json.dumps({"output": "leak: " + secrets, "metadata": {"env": secrets}, "trace": trace}))
            """
        )
        .replace("NAMES", repr([*UNKNOWN_ENV_SECRETS, "TARGET_ONLY"]))
        .replace("SHAPES", repr(SHAPES))
    )
    target = {"command": [sys.executable, "target.py"], "env": {"TARGET_ONLY": TARGET_ENV_SECRET}}
    config = write_suite(tmp_path, echo_cases(4), target=target, slices=[], baseline={"on_missing": "seed"})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALGATE_"))}
    env = {**env, **UNKNOWN_ENV_SECRETS}
    gate = [sys.executable, "-m", "evals", "gate", "--config", str(config), "--out-dir", str(tmp_path / "out")]
    seeded = subprocess.run([*gate, "--comment", "off"], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert seeded.returncode == 0, seeded.stderr
    leaked = subprocess.run(
        [*gate, "--comment", "off", "--html", str(tmp_path / "out" / "report.html")],
        env={**env, "LEAK": "1"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert leaked.returncode == 1, leaked.stderr  # every case regressed
    written = _written(tmp_path)
    for name in ("results.json", "report.md", "comment.md", "comparison.json", "report.html"):
        assert b"leak: " in written[f"out/{name}"], name
    assert b"leak: " in written["history rows"] and b"command exit 3" in written["out/results.json"]
    assert "command exit 3" in leaked.stderr
    written["stdout/stderr"] = (seeded.stdout + seeded.stderr + leaked.stdout + leaked.stderr).encode()
    for secret in [*UNKNOWN_ENV_SECRETS.values(), TARGET_ENV_SECRET, *SHAPE_SECRETS]:
        for name, data in written.items():
            assert secret.encode() not in data, f"{secret!r} in {name}"


# ------------------------------------------------------------------------- bounded masking (#11.6)


def test_long_outputs_are_clipped_before_masking_and_no_secret_is_cut_in_half():
    secret = "my-own-api-key-0123456789abcdef"
    limit = 1000
    # The secret straddles the limit: clipping first would store its first half.
    output = "x" * (limit - 10) + secret + " tail " * 2_000_000
    stored, digest, truncated = clip_masked(output, [secret], limit=limit)
    assert truncated and len(stored.encode()) <= limit
    assert secret[:10] not in stored
    assert stored.startswith("x" * (limit - 10) + MASK + " tail ")
    assert digest == "sha256:" + hashlib.sha256(output.encode()).hexdigest()  # the full output, as produced


def test_values_that_fit_are_masked_and_hashed_as_before():
    value = {"accessToken": "abc", "text": "Bearer xyz"}
    stored, digest, truncated = clip_masked(value)
    assert (stored, truncated) == ({"accessToken": MASK, "text": "Bearer ***"}, False)
    assert (stored, digest, truncated) == clip_output(mask_secrets(value))


def test_large_structured_outputs_keep_key_based_masking():
    value = {"accessToken": "abc-def-ghi", "blob": "y" * 50_000}
    stored, _, truncated = clip_masked(value, limit=200)
    assert truncated and "abc-def-ghi" not in stored and f'"accessToken": "{MASK}"' in stored


def test_masking_a_huge_string_is_bounded():
    text = "password=hunter2 " + "z" * (MAX_MASKED_CHARS + 5)
    masked = mask_secrets(text)
    assert masked.startswith("password=*** ") and "hunter2" not in masked
    assert len(masked) < MAX_MASKED_CHARS + 100 and masked.endswith("characters cut before masking]")


def test_upper_case_text_is_found_by_the_cheap_prefilter_too():
    text = "PASSWORD=hunter22 AUTHORIZATION: BEARER abc.def SECRET_TOKEN: zz9 HTTPS://ME:PW@HOST"
    masked = mask_secrets(text)
    for secret in ("hunter22", "abc.def", "zz9", "ME:PW"):
        assert secret not in masked, secret


def test_a_results_file_another_harness_wrote_is_masked_before_a_gate_stores_or_reports_it(tmp_path):
    """``gate --results`` with files in evalgate's format that evalgate did not make (no
    run.evalgate_version): the first is seeded (`--seed`) as the baseline, the second regresses and is
    reported. Neither the baseline store's snapshots nor the reports nor the history hold the
    secrets their outputs and errors carried."""
    from evals.results.files import save_results
    from evals.results.model import Attempt, AttemptError, CaseResult, Results, RunInfo

    leak = f"leak: {UNKNOWN_ENV_SECRETS['MY_PASSPHRASE']} {' '.join(SHAPES)}"

    def results(passed: bool) -> Results:
        cases = [
            CaseResult(
                id=f"c{i}",
                input="q",
                attempts=[
                    Attempt(
                        passed=passed, output=leak, error=None if passed else AttemptError(kind="target", message=leak)
                    )
                ],
            )
            for i in range(4)
        ]
        return Results(run=RunInfo(suite="other", status="success", total_cases=4, completed_cases=4), cases=cases)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALGATE_"))}
    env = {**env, **UNKNOWN_ENV_SECRETS}
    done = []
    for name, sha, passed in (("seed.json", "a" * 40, True), ("next.json", "b" * 40, False)):
        save_results(results(passed), tmp_path / name)
        gate = ["gate", "--results", name, "--sha", sha, "--out-dir", "out", "--html", "out/report.html"]
        gate += ["--seed"] if passed else []
        done.append(subprocess.run([sys.executable, "-m", "evals", *gate], env=env, cwd=tmp_path, capture_output=True))
    assert [d.returncode for d in done] == [0, 1], done[1].stderr
    written = {k: v for k, v in _written(tmp_path).items() if k not in ("seed.json", "next.json")}
    snapshots = [k for k in written if k.endswith(".json.gz")]
    assert snapshots and all(b"leak: " in written[k] for k in snapshots)
    assert b"leak: " in written["out/report.html"] and b"leak: " in written["history rows"]
    for secret in [UNKNOWN_ENV_SECRETS["MY_PASSPHRASE"], *SHAPE_SECRETS]:
        for name, data in written.items():
            assert secret.encode() not in data, f"{secret!r} in {name}"


def test_no_part_of_a_secret_survives_the_cut_of_a_long_output() -> None:
    """A long output is cut before it is masked; a cut inside a secret left its first part
    unmatched, and masking the earlier copies to *** pulled that part inside the stored 8 KiB
    (320 of these 400 offsets leaked 8+ characters of it). The cut now moves past a secret it
    would split."""
    secret = "Zq8vN3kLp0Xa7Rt2Yw5Bm9Cd4Ef6Gh1Ij3Kl5Mn7"
    for pad in range(400):
        stored, _, truncated = clip_masked("x" * pad + secret * 260, [secret])
        assert truncated
        assert not any(secret[:k] in stored or secret[-k:] in stored for k in range(8, len(secret) + 1)), pad


KEY_ID = "test_api[sk-live-9Qx7Lm2Np4Rt6Vw8Yz0Ab]"
URL_ID = "test_db[postgres://app:pa55-Word-7Kq@db.internal/app]"


def test_a_name_holding_a_secret_keeps_its_text_and_a_digest_and_masks_once():
    """docs/spec.md#masked-names: deterministic (pairs, resumes, selects), distinct per secret, and
    the same when masked again (a merge, a stored baseline, an import of evalgate's own file)."""
    from evals.results.masking import mask_name, mask_slices

    masked = mask_name(KEY_ID)
    assert masked == f"test_api[sk-***] (masked {hashlib.sha256(KEY_ID.encode()).hexdigest()[:8]})"
    assert mask_name(KEY_ID) == masked and mask_name(masked) == masked
    other = mask_name(KEY_ID.replace("9Qx7", "0000"))
    assert other != masked and other.startswith("test_api[sk-***] (masked ")
    url = mask_name(URL_ID)
    assert url.startswith("test_db[postgres://***@db.internal/app] (masked ") and mask_name(url) == url
    pem = "k[-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkq]"  # a pattern that masks to the end of the text
    assert "MIIE" not in mask_name(pem) and mask_name(mask_name(pem)) == mask_name(pem)
    assert mask_name("q-001") == "q-001" and mask_name("a *** b") == "a *** b"
    env_value = "tenant-7f3a9c1e5b"
    assert mask_name(f"{env_value}/q1", [env_value]).startswith("***/q1 (masked ")
    sliced = mask_slices({"tenant": env_value, f"owner-{env_value}": "x", "language": "ko"}, [env_value])
    assert sliced["tenant"].startswith("*** (masked ") and sliced["language"] == "ko"
    assert all(env_value not in k for k in sliced) and len(sliced) == 3


def test_a_file_an_older_evalgate_wrote_has_its_names_masked_as_it_is_taken_in():
    from evals.results.masking import mask_name, mask_results
    from evals.results.model import CaseResult, Results, RunInfo

    def run(*cases: CaseResult) -> Results:
        info = RunInfo(suite="s", status="success", total_cases=len(cases), completed_cases=len(cases))
        return Results(run=info.model_copy(update={"evalgate_version": "0.9.0"}), cases=list(cases))

    old = run(CaseResult(id=KEY_ID, slices={"db": URL_ID}), CaseResult(id="q", slices={"db": "none"}))
    masked = mask_results(old)
    assert [c.id for c in masked.cases] == [mask_name(KEY_ID), "q"]
    assert masked.cases[0].slices == {"db": mask_name(URL_ID)} and masked.cases[1] is old.cases[1]
    clean = run(CaseResult(id="q"))
    assert mask_results(clean) is clean
