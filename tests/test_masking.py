"""Secret masking before anything is written (SPEC §3)."""

from __future__ import annotations

from evals.masking import MASK, mask_secrets
from evals.results import Attempt, AttemptError


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
