"""The typed options (evals/suite/options.py): one declaration gives the flag, the child run's
argv and the config overrides, and the overrides return a copy (evals/suite/overrides.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from fakes.suites import echo_cases, load_suite

from evals.cli.app import build_parser
from evals.cli.options import options_of
from evals.common.errors import UsageError
from evals.compare.compatibility import reset_command
from evals.suite.options import GateOptions, ResetOptions, RunOptions, StoreOptions, run_argv
from evals.suite.overrides import with_overrides


def parsed(command: str, model: type, *argv: str):
    return options_of(model, build_parser(only=command).parse_args([command, *argv]))


@pytest.mark.parametrize(
    "options",
    [
        RunOptions(),
        RunOptions(config="s/evalgate.yml", output="out/r.json", smoke=True, resume=True, summary=False),
        RunOptions(ids="batch-1.ids", attempts=1, attempt_offset=3, target="t.json", progress="lines"),
        RunOptions(max_cost_usd=0.1234567891, max_tokens=900, max_duration_s=12.5, no_cache=True),
        RunOptions(filters=["lang=ko", "c0*"], limit=5, concurrency=2, grace_s=0.5, shard="2/3", html="r.html"),
    ],
)
def test_the_child_runs_argv_parses_back_to_the_same_options(options):
    """What a gate starts (`evalgate run` + run_argv) is what `evalgate run` reads."""
    assert parsed("run", RunOptions, *run_argv(options)) == options


def test_the_child_runs_argv_names_only_what_differs_from_the_defaults():
    assert run_argv(RunOptions(output="r.json")) == ["--config", "evalgate.yml", "--output", "r.json"]
    assert run_argv(RunOptions(summary=False, attempts=1))[-3:] == ["--attempts", "1", "--no-summary"]


def test_the_reset_a_comparison_names_parses_back_to_its_options():
    """The no-baseline reason's `evalgate reset ...` is what `evalgate reset` reads."""
    store = StoreOptions(store="local", baseline_tag="t", baseline_dir="b d")
    said = reset_command("out/r.json", config="s.yml", sha="abc", store=store)
    assert said == (
        "evalgate reset --config s.yml --sha abc --store local --baseline-tag t --baseline-dir 'b d' "
        "--results out/r.json --reason 'first baseline'"
    )
    expected = ResetOptions(config="s.yml", results="out/r.json", reason="first baseline", sha="abc", store=store)
    assert parsed("reset", ResetOptions, *shlex.split(said)[2:]) == expected
    assert reset_command("r.json") == "evalgate reset --results r.json --reason 'first baseline'"


def test_a_gate_on_the_command_line_is_its_typed_options():
    got = parsed("gate", GateOptions, "--results", "r.json", "--slice-key", "a", "--slice-key", "b", "--no-promote")
    assert got.results == "r.json" and got.slice_keys == ["a", "b"] and got.promote is False
    assert parsed("gate", GateOptions, "--store", "local", "--baseline-dir", "b").store == StoreOptions(
        store="local", baseline_dir="b"
    )
    assert parsed("reset", ResetOptions, "--reason", "why", "--actor", "me").actor == "me"


def test_overrides_return_a_copy_and_leave_the_config_as_read(tmp_path):
    config = load_suite(
        tmp_path,
        echo_cases(2, lang=["en", "ko"]),
        slices=["lang"],
        metrics={"pass_rate": {"tolerance": 0.02}, "latency_p95_ms": {"tolerance": "10%"}},
        limits={"max_tokens": 1000},
    )
    before = config.model_dump()
    gate = GateOptions(slice_keys=["topic", "lang"], seed=True, tolerance="5%", store=StoreOptions(baseline_dir="b"))
    changed = with_overrides(config, gate)
    assert config.model_dump() == before
    assert changed.slices == ["lang", "topic"]
    assert changed.baseline.on_missing == "seed"
    assert changed.baseline.store == "local" and changed.baseline.path == str(Path("b").resolve())
    assert changed.metrics["pass_rate"].tolerance == "5%" and changed.metrics["latency_p95_ms"].tolerance == "10%"
    assert changed.path == config.path  # still the file's config: its paths resolve as before
    ran = with_overrides(config, RunOptions(concurrency=3, attempts=2, max_tokens=5000, max_cost_usd=1.0))
    assert (ran.concurrency, ran.attempts) == (3, 2)
    assert (ran.limits.max_tokens, ran.limits.max_cost_usd) == (1000, 1.0)  # a cap never raises a limit
    assert config.model_dump() == before


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (RunOptions(concurrency=0), "--concurrency must be at least 1"),
        (RunOptions(attempts=0), "--attempts must be at least 1"),
        (RunOptions(max_tokens=-1), "--max-tokens must be > 0"),
        (GateOptions(tolerance="abc"), "--tolerance 'abc'"),
    ],
)
def test_an_override_the_config_cannot_take_is_a_usage_error(tmp_path, options, said):
    config = load_suite(tmp_path, echo_cases(1))
    with pytest.raises(UsageError, match=said):
        with_overrides(config, options)
