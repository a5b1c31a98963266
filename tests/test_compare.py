"""Comparing sets of runs: Welch intervals, and differences that matter across seeds."""

import textwrap

import numpy as np
from scipy import stats
from typer.testing import CliRunner

from isthmus.cli import app
from isthmus.compare import compare, welch_interval

runner = CliRunner()


def test_the_welch_interval_agrees_with_welchs_t_test():
    rng = np.random.default_rng(4)
    a, b = rng.normal(10, 1, 8), rng.normal(11, 3, 5)
    low, high = welch_interval(a, b)
    # The 95% interval's edge is where Welch's two-sided test has p = 0.05.
    for edge in (low, high):
        p = stats.ttest_ind(b - edge, a, equal_var=False).pvalue
        assert abs(p - 0.05) < 1e-9
    assert welch_interval(a[:1], b) is None


SCENARIO = textwrap.dedent(
    """
    name = "cmp"
    seed = 1
    [topology]
    kind = "leaf_spine"
    spines = 1
    leaves = 2
    hosts_per_leaf = 4
    [network]
    ecn_threshold = "20pkts"
    [[traffic]]
    kind = "flows"
    pattern = "random"
    arrivals = { kind = "poisson", load = 0.1 }
    sizes = { min = "100KB", max = "100KB" }
    stop = "10ms"
    [run]
    duration = "1s"
    stop_when = "flows_finished"
    """
)


def test_heavier_load_is_a_significant_change_and_a_rerun_is_not(tmp_path):
    (tmp_path / "s.toml").write_text(SCENARIO)
    for name, load in (("light", "0.1"), ("heavy", "0.7"), ("light-again", "0.1")):
        args = ["sweep", str(tmp_path / "s.toml"), "--set", f"load={load}", "--seeds", "4"]
        result = runner.invoke(app, [*args, "--out", str(tmp_path / name), "--workers", "2"])
        assert result.exit_code == 0, result.output
    differences = {d.figure: d for d in compare(tmp_path / "light", tmp_path / "heavy")}
    fct = differences["mean_fct_us"]
    assert fct.significant and fct.delta > 0 and fct.low > 0
    same = compare(tmp_path / "light", tmp_path / "light-again")
    assert not any(d.significant for d in same)
    assert all(d.delta == 0 for d in same)
    result = runner.invoke(app, ["compare", str(tmp_path / "light"), str(tmp_path / "heavy")])
    assert result.exit_code == 0 and "mean FCT" in result.output and "significant" in result.output
    result = runner.invoke(app, ["compare", str(tmp_path / "light"), str(tmp_path / "light-again")])
    assert "No figure differs significantly" in result.output


def test_holm_rejects_step_down_and_stops_at_the_first_acceptance():
    from isthmus.compare import holm

    # Sorted: 0.01 <= 0.05/4 rejects; 0.03 > 0.05/3 stops, so 0.04 is kept too.
    assert holm([0.01, 0.04, 0.03, 0.5]) == [True, False, False, False]
    assert holm([0.001, 0.01, None, 0.02]) == [True, True, False, True]
    assert holm([]) == []
