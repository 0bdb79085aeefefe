"""benchmarks/sim_mde.py at a small, fixed-seed size: its vectorised gate is the real one (every
checked replicate replayed through decide/gate_verdict, every cached MDE re-derived), the slice
alone is caught exactly at the configured power at the MDE ``plan`` prints, and the whole gate
about so (docs/spec.md#mde). The full grid (10,000 replicates a cell) is the benchmark's job."""

from __future__ import annotations

import re
import subprocess
import sys

from fakes.paths import ROOT


def test_a_drop_equal_to_the_printed_mde_is_caught_at_the_power_on_the_300_layout():
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "sim_mde.py"),
            *("--replicates", "600", "--check", "15", "--layouts", "300", "--psi", "0", "0.2"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "end-to-end disagreements: 0;" in done.stdout, done.stdout
    rows = [line.split("|") for line in done.stdout.splitlines() if re.match(r"\s+300\s+100\s", line)]
    assert len(rows) == 2, done.stdout
    for _, plan, report, _ in rows:
        alone, caught = plan.split()[-2:]
        assert abs(float(alone) - 0.8) < 0.005, plan  # exact: the MDE is where the power reaches 0.8
        assert abs(float(caught) - 0.8) < 0.06, plan  # 600 replicates: ±0.05 is 3 standard errors
        assert abs(float(report.split()[-2]) - 0.8) < 0.06, report
