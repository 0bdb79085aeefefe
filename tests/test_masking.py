"""Secret masking before anything is written (SPEC §3)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap

from suites import echo_cases, write_suite

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


def test_secret_environment_names():
    env = {
        **ENV_SECRETS,
        "TOKENIZERS_PARALLELISM": "false-but-long",
        "KEYCLOAK_URL": "https://auth.example",
        "PATH": "/usr/local/bin:/usr/bin",
        "SHORT_KEY": "1234567",  # under MIN_SECRET_CHARS: masking it would mask ordinary text
        "app.client-secret": "a-dotted-secret",
        "DB_CREDENTIALS": "user:hunter2hunter2",
    }
    assert set(env_secrets(env)) == {*ENV_SECRETS.values(), "a-dotted-secret", "user:hunter2hunter2"}
    assert all(len(v) >= MIN_SECRET_CHARS for v in env_secrets(env))


def test_passwords_in_urls():
    text = "connect postgres://app:pw@db:5432/x or https://user:p%40ss@h.example/a; ssh://git@github.com stays"
    assert (
        mask_secrets(text) == "connect postgres://***@db:5432/x or https://***@h.example/a; ssh://git@github.com stays"
    )


def test_secret_environment_values_never_reach_results_or_the_report(tmp_path):
    """A real ``evalgate run`` whose target prints the environment's secrets (in output, error and
    metadata), then ``evalgate compare --report``: neither file holds any of them."""
    (tmp_path / "target.py").write_text(
        textwrap.dedent(
            """
            import json, os, sys
            case = json.load(sys.stdin)
            secrets = " ".join(os.environ[k] for k in NAMES)
            if case["id"] == "c001":
                sys.stderr.write("failed with " + secrets + " via postgres://app:pw@db")
                sys.exit(3)
            print(json.dumps({"output": "leak: " + secrets + " postgres://app:pw@db", "metadata": {"env": secrets}}))
            """
        ).replace("NAMES", repr(sorted(ENV_SECRETS)))
    )
    config = write_suite(tmp_path, echo_cases(3), target={"command": [sys.executable, "target.py"]}, slices=[])
    env = {**os.environ, **ENV_SECRETS}
    evalgate = [sys.executable, "-m", "evals"]
    done = subprocess.run(
        [*evalgate, "run", "--config", str(config), "-o", str(tmp_path / "r.json")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    subprocess.run(
        [*evalgate, "compare", "--candidate", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.md")],
        env=env,
        capture_output=True,
        check=False,
    )
    written = (tmp_path / "r.json").read_text() + (tmp_path / "r.md").read_text()
    assert "leak: " in written and "failed with" in written
    for value in [*ENV_SECRETS.values(), ":pw@"]:
        assert value not in written, value


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
