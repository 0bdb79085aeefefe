import pytest

from evals.compare.agreement import agreement


def test_kappa_matches_a_worked_example():
    # 2x2 table a\b: (pass,pass)=20, (pass,fail)=5, (fail,pass)=10, (fail,fail)=15 (n=50):
    # p_o = 0.7, p_a = 0.5, p_b = 0.6, p_e = 0.3 + 0.2 = 0.5, kappa = 0.4.
    rows = (
        [(f"pp{i}", True, True) for i in range(20)]
        + [(f"pf{i}", True, False) for i in range(5)]
        + [(f"fp{i}", False, True) for i in range(10)]
        + [(f"ff{i}", False, False) for i in range(15)]
    )
    got = agreement(rows)
    assert got.n == 50 and got.agreed == 35
    assert got.share == pytest.approx(0.7)
    assert got.kappa == pytest.approx(0.4)
    assert got.bias == pytest.approx(0.1)
    assert got.disagreements == [f"pf{i}" for i in range(5)] + [f"fp{i}" for i in range(10)]


def test_kappa_undefined_when_both_graders_never_vary():
    got = agreement([("a", True, True), ("b", True, True)])
    assert got.share == 1.0 and got.kappa is None


def test_no_cases():
    got = agreement([])
    assert got.n == 0 and got.share is None and got.kappa is None


def test_perfect_disagreement_is_negative():
    got = agreement([("a", True, False), ("b", False, True)])
    assert got.kappa == pytest.approx(-1.0)
