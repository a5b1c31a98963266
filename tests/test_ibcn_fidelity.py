"""IBCN's prediction half judged the paper's way and by errors that can rank models: the
paper's signed Eq. 11, WAPE and MSE on hand-computed series; the persistence,
training-mean and all-zero baselines; one row per switch; both collection regimes; and
one restart rule for both halves."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isthmus.experiments import Results
from isthmus.predict import make, score
from isthmus.simulation import Simulation
from isthmus.studies.ibcn import congestion, prediction
from isthmus.studies.ibcn import study as ibcn_study

torch.set_num_threads(1)


def test_eq11_wape_and_mse_equal_their_hand_computed_values():
    actual = np.array([[2.0, 0.0, 4.0]])
    predicted = np.array([[1.0, 1.0, 6.0]])
    e = prediction.errors(actual, predicted)
    # Eq. 11 over the non-zero actuals: ((2 - 1) / 2 + (4 - 6) / 4) / 2 = 0: the signed
    # errors cancel although no forecast is right.
    assert e["eq11_pct"] == pytest.approx(0.0)
    assert e["wape_pct"] == pytest.approx(100 * (1 + 1 + 2) / (2 + 0 + 4))
    assert e["mse"] == pytest.approx((1 + 1 + 4) / 3)
    assert e["abs_relative_pct"] == pytest.approx(50.0)
    under = prediction.errors(np.array([4.0, 10.0]), np.array([3.0, 5.0]))
    assert under["eq11_pct"] == pytest.approx(100 * (0.25 + 0.5) / 2)
    empty = prediction.errors(np.zeros(3), np.ones(3))
    assert np.isnan(empty["eq11_pct"]) and np.isnan(empty["wape_pct"]) and empty["mse"] == 1.0


def test_the_baselines_forecast_the_last_poll_the_training_mean_and_zero():
    history = np.array([[1.0, 10.0], [3.0, 20.0], [5.0, 60.0]])
    options = {"window": 2, "horizon": 3, "targets": [0, 1]}
    built = {
        name: make(factory, **options).fit(history)
        for name, factory in prediction.BASELINES.items()
    }
    for forecaster in built.values():
        forecaster.update(np.array([[7.0, 8.0]]))
    assert built["persistence"].predict().tolist() == [[7.0, 8.0]] * 3
    assert built["training_mean"].predict().tolist() == [[3.0, 30.0]] * 3
    assert built["zero"].predict().tolist() == [[0.0, 0.0]] * 3
    built["persistence"].reset(np.array([[2.0, 4.0], [9.0, 9.0]]))
    assert built["persistence"].predict().tolist() == [[9.0, 9.0]] * 3


def _series(rows: int = 400) -> np.ndarray:
    """Two queues around 30 and 12 packets, and one switch that never queues."""
    rng = np.random.default_rng(5)
    t = np.arange(rows)
    a = 30 + 10 * np.sin(t / 7) + rng.normal(0, 2, rows)
    b = 12 + rng.normal(0, 3, rows)
    return np.column_stack([np.clip(a, 0, None), np.clip(b, 0, None), np.zeros(rows)])


def test_all_zeros_wins_by_no_error_that_can_rank_on_a_series_with_a_nonzero_mean():
    scored = prediction.scores(_series(), dict(prediction.BASELINES))
    models = scored["models"]
    assert scored["targets"] == ["core0", "agg0"], "the never-queued column is left out"
    zero, mean = models["zero"], models["training_mean"]
    # Eq. 11 gives all zeros exactly 100 % whatever the data.
    assert zero["eq11_pct"] == pytest.approx(100.0)
    assert zero["wape_pct"] == pytest.approx(100.0)
    for key in ("wape_pct", "mse"):
        assert mean[key] < zero[key] and models["persistence"][key] < zero[key], key
    # Per switch too.
    for switch in scored["targets"]:
        assert mean["switches"][switch]["wape_pct"] < zero["switches"][switch]["wape_pct"]


def test_forecasts_are_scored_at_the_origins_and_on_the_values_score_uses():
    data = _series()
    targets = prediction.queued(data)
    mine = prediction.scores(data, {"arar": "arar", **prediction.BASELINES})["models"]
    theirs = score(
        data,
        ["arar", *prediction.BASELINES.values()],
        prediction.WINDOW,
        horizon=prediction.HORIZON,
        targets=targets,
        fractions=prediction.SPLIT,
    )["models"]
    for name in ("arar", *prediction.BASELINES):
        assert mine[name]["mse"] == pytest.approx(theirs[name]["mse"], rel=1e-9), name
        assert mine[name]["abs_relative_pct"] == pytest.approx(theirs[name]["mae_pct"], rel=1e-9)


def _results(records: list[dict]) -> Results:
    settings = {"polls": 300, "epochs": 1, "layers": ()}
    return Results("ibcn", True, [1], settings, records)


def test_the_per_switch_table_has_one_row_per_switch():
    queues = prediction.run_queues(1, 300, "BCN on")
    scored = prediction.run_forecasters(queues, epochs=1)
    fields = {"variant": "", "scheme": "", "seed": 1}
    results = _results(
        [
            {**fields, "experiment": "queues", "scheme": "BCN on", "result": queues},
            {**fields, "experiment": "forecasters", "variant": "BCN on", "result": scored},
        ]
    )
    header, rows = prediction.switch_table(results, "BCN on")
    assert [row[0].split(" | ")[1] for row in rows] == list(prediction.SWITCHES)
    assert all(len(row) == len(header) for row in rows)
    assert header[2:] == [*prediction.MODEL_OPTIONS, *prediction.BASELINES]
    by_switch = {row[0].split(" | ")[1]: row for row in rows}
    assert by_switch["core0"][2:] == ["n/a"] * (len(header) - 2), "core0 never queues"
    assert by_switch["agg0"][-1] == "100.0", "all zeros: a WAPE of 100 % on any switch"


def test_both_collection_regimes_run_the_same_rates_and_only_one_manages_them():
    fixed = prediction.collect(1, 200, "fixed rate")
    managed = prediction.collect(1, 200, "BCN on")
    edge0 = prediction.SWITCHES.index("edge0")
    # Unmanaged, 48 sources at 10 Mb/s-1 Gb/s hold the destinations' edge at its buffer.
    assert fixed[:, edge0].mean() > 190
    assert managed[:, edge0].mean() < 0.5 * fixed[:, edge0].mean()
    with pytest.raises(ValueError, match="regime is one of"):
        prediction.collect(1, 10, "tcpreplay")
    jobs = prediction.jobs({"polls": 10, "epochs": 1, "layers": (1, 4)}, [1, 2])
    forecasters = [j for j in jobs if j.experiment == "forecasters"]
    assert {j.variant for j in forecasters} == set(prediction.REGIMES)
    assert {j.variant for j in jobs if j.experiment == "LSTM depth"} == {prediction.MAIN_REGIME}
    assert prediction.MAIN_REGIME == "fixed rate"
    sensitivity = [d.sensitivity for d in ibcn_study.DEPARTURES if d.aspect == "training data"]
    assert any("BCN on" in s for s in sensitivity)


def test_one_restart_rule_for_both_halves(monkeypatch):
    seen: list[str] = []
    add_bcn_flow, regulate = Simulation.add_bcn_flow, Simulation.regulate_with_bcn

    def recording_flow(self, *args, **kwargs):
        seen.append(("prediction", kwargs["fair_share"]))
        return add_bcn_flow(self, *args, **kwargs)

    def recording_regulator(self, *args, **kwargs):
        seen.append(("congestion", kwargs["fair_share"]))
        return regulate(self, *args, **kwargs)

    monkeypatch.setattr(Simulation, "add_bcn_flow", recording_flow)
    monkeypatch.setattr(Simulation, "regulate_with_bcn", recording_regulator)
    prediction.collect(1, 2, "BCN on")
    sim = congestion.network(1, "bcn")
    congestion.add_sources(sim, "bcn", congestion.QUICK_SCALED, 0.01, congestion.Workload())
    assert prediction.RESTART_BPS == 1e9 / 40
    assert {rate for _, rate in seen} == {"25000000bps"}
    assert {half for half, _ in seen} == {"prediction", "congestion"}
