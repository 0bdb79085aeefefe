"""The commands a gate whose candidate a limit stopped names to finish it: the run's resume and the
gate of the finished file, each with this gate's config and flags."""

from __future__ import annotations

from pathlib import Path

from evals.pipeline.candidate import gate_again_command
from evals.suite.options import GateOptions


def test_the_gate_again_keeps_this_gate_s_config_and_flags_on_the_finished_file() -> None:
    options = GateOptions(
        config="suites/chat/evalgate.yml",
        mode="smoke",
        tolerance="5%",
        results="promptfoo.json",
        results_format="promptfoo",
        out_dir="out dir",
    )
    # The imported file was written to the out dir as evalgate results: gated as they are, not imported again.
    assert gate_again_command(options, Path("out dir/results.json")) == (
        "evalgate gate --config suites/chat/evalgate.yml --results 'out dir/results.json' --out-dir 'out dir' "
        "--mode smoke --tolerance 5%"
    )
    assert gate_again_command(GateOptions(), Path(".evalgate/out/results.json")) == (
        "evalgate gate --results .evalgate/out/results.json"
    )
